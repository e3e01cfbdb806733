"""KiVA at scale (issue 15): trials per second and ``vet_transform`` milliseconds per pair.

Prints one JSON object. The reference runs in the same process and run: the old path (one
process, every picture drawn anew) against the new one (pictures kept across trials, trials
over every core), on the same seed, with a check that both give the same bytes. ``vet_transform``
is timed per before/after pair (library objects × KiVA specs) with a fresh drawer each time
(cold, as the issue measured it) and with one :class:`PictureCache` kept across the pairs (a
second pass over them: a preview re-vetting the objects it has drawn).

    python bench/run.py kiva [--n 100] [--size 224] [--mode kiva] [--pairs 20]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _digest(items: list) -> str:  # type: ignore[type-arg]
    h = hashlib.sha256()
    for item in items:
        h.update(json.dumps(item.to_json(), sort_keys=True).encode())
        for name, image in sorted([*item.images.items(), ("sheet", item.sheet)]):
            buf = io.BytesIO()
            image.save(buf, format="PNG")
            h.update(name.encode() + buf.getvalue())
    return h.hexdigest()


def _trials(n: int, size: int, mode: str, seed: int, **kw: object) -> tuple[float, str, float]:
    from studio.families.kiva.generator import KivaGenerator

    gen = KivaGenerator(mode=mode, size=size)
    t0, c0 = time.perf_counter(), time.process_time()
    items = list(gen.items(n, seed, **kw))  # type: ignore[arg-type]
    wall = time.perf_counter() - t0
    return wall, _digest(items), time.process_time() - c0


def _vet_pairs(size: int, pairs: int) -> dict[str, float]:
    from studio.families.kiva.ambiguity import vet_transform
    from studio.families.kiva.transforms import PictureCache, StateRenderer, specs, try_apply
    from studio.families.kiva.transforms import StimulusState as S
    from studio.render3d.objects import library_names, library_object
    from studio.render3d.scene import Camera, Renderer

    names = library_names()
    todo = [
        (library_object(names[i % len(names)]), spec)
        for i, spec in enumerate(specs("kiva") * 4)
        if try_apply(spec, S()) is not None
    ][:pairs]
    out: dict[str, float] = {}
    with Renderer(size) as renderer:
        vet_transform(todo[0][0], todo[0][1], renderer=renderer, size=size)  # warm up GL
        t0 = time.perf_counter()
        for obj, spec in todo:
            vet_transform(obj, spec, renderer=renderer, size=size)
        out["vet_transform_ms_per_pair_cold"] = 1000 * (time.perf_counter() - t0) / len(todo)
        cache = PictureCache()
        for obj, spec in todo:  # first pass fills the cache
            drawer = StateRenderer(obj, renderer, Camera(), size, shared=cache)
            vet_transform(obj, spec, drawer=drawer)
        t0 = time.perf_counter()
        for obj, spec in todo:
            drawer = StateRenderer(obj, renderer, Camera(), size, shared=cache)
            vet_transform(obj, spec, drawer=drawer)
        out["vet_transform_ms_per_pair_kept"] = 1000 * (time.perf_counter() - t0) / len(todo)
    out["pairs"] = len(todo)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--mode", default="kiva")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=20)
    args = parser.parse_args()
    from studio.families.kiva.generator import default_workers

    workers = default_workers(args.n, 0)
    old_wall, old_digest, old_cpu = _trials(
        args.n, args.size, args.mode, args.seed, workers=1, keep_pictures=False
    )
    kept_wall, kept_digest, kept_cpu = _trials(
        args.n, args.size, args.mode, args.seed, workers=1, keep_pictures=True
    )
    new_wall, new_digest, _ = _trials(
        args.n, args.size, args.mode, args.seed, workers=workers, keep_pictures=True
    )
    result = {
        "benchmark": "kiva",
        "mode": args.mode,
        "size": args.size,
        "trials": args.n,
        "workers": workers,
        "cores": len(os.sched_getaffinity(0)),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "reference_trials_per_s": round(args.n / old_wall, 2),
        "reference_cpu_s_per_trial": round(old_cpu / args.n, 4),
        "kept_pictures_one_process_trials_per_s": round(args.n / kept_wall, 2),
        "kept_pictures_cpu_s_per_trial": round(kept_cpu / args.n, 4),
        "trials_per_s": round(args.n / new_wall, 2),
        "speedup": round(old_wall / new_wall, 2),
        "same_bytes": old_digest == kept_digest == new_digest,
        "aim_trials_per_s": 15,
    }
    result.update({k: round(v, 1) for k, v in _vet_pairs(args.size, args.pairs).items()})
    result["aim_vet_transform_ms_per_pair"] = 50
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
