"""3D at scale (issue 15): KiVA trials per second, ``vet_transform`` per pair, the spatial
families' items per second.

Prints one JSON object; every figure comes with its reference from the same run (the machine's
load varies, so compare ratios). KiVA: one process drawing every picture anew (the reference)
against pictures kept across trials, then over every core, on one seed, with a check that all
give the same bytes. ``vet_transform`` per before/after pair (library objects × KiVA specs):
*cold* is a fresh drawer each pair (every picture drawn: ~20 rival pictures at the comparison
size and two at full size), timed with pyrender's own way of building a scene per render (the
reference) and with the renderer's kept scene and merged meshes; *kept* is a second pass with
one :class:`PictureCache` (a preview re-vetting the objects it has drawn); the first renderer's
creation is timed apart. Polycube rotation, shape composition and cube nets: items per second
with 1 worker and with 2, the same bytes checked.

    python bench/run.py kiva [--n 100] [--size 224] [--mode kiva] [--pairs 20] [--spatial-n 96]
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


def _spatial(family: str, n: int, seed: int) -> dict[str, float | bool]:
    """Items per second of a spatial family with 1 and 2 workers (the same bytes checked)."""
    from studio.families.cube_net.generator import CubeNetGenerator
    from studio.families.polycube_rotation.generator import PolycubeRotationGenerator
    from studio.families.shape_composition.generator import ShapeCompositionGenerator

    makers = {
        "polycube_rotation": lambda: PolycubeRotationGenerator(level=2),
        "shape_composition": lambda: ShapeCompositionGenerator(pieces=3),
        "cube_net": lambda: CubeNetGenerator(),
    }
    out: dict[str, float | bool] = {}
    digests = []
    for workers in (1, 2):
        t0 = time.perf_counter()
        items = list(makers[family]().items(n, seed, workers=workers))
        out[f"{family}_items_per_s_{workers}_workers"] = round(n / (time.perf_counter() - t0), 2)
        digests.append(_digest(items))
    one, two = (float(out[f"{family}_items_per_s_{w}_workers"]) for w in (1, 2))
    out[f"{family}_speedup"] = round(two / one, 2)
    out[f"{family}_same_bytes"] = digests[0] == digests[1]
    return out


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
    t0 = time.perf_counter()
    renderer = Renderer(size)
    out["renderer_create_ms"] = 1000 * (time.perf_counter() - t0)
    try:
        t0 = time.perf_counter()
        vet_transform(todo[0][0], todo[0][1], renderer=renderer, size=size)  # + the rivals' one
        out["first_pair_ms"] = 1000 * (time.perf_counter() - t0)
        for keep, name in ((False, "reference"), (True, "kept_scene"), (False, "reference")):
            Renderer.keep_scene = keep  # every renderer, the rivals' too
            t0, c0 = time.perf_counter(), time.process_time()
            for obj, spec in todo:
                vet_transform(obj, spec, renderer=renderer, size=size)
            wall = 1000 * (time.perf_counter() - t0) / len(todo)
            cpu = 1000 * (time.process_time() - c0) / len(todo)
            # the reference runs before and after; keep its better time
            out[f"vet_transform_ms_per_pair_cold_{name}"] = min(
                wall, out.get(f"vet_transform_ms_per_pair_cold_{name}", wall)
            )
            out[f"vet_transform_cpu_ms_per_pair_cold_{name}"] = min(
                cpu, out.get(f"vet_transform_cpu_ms_per_pair_cold_{name}", cpu)
            )
        Renderer.keep_scene = True
        cache = PictureCache()
        for obj, spec in todo:  # first pass fills the cache
            drawer = StateRenderer(obj, renderer, Camera(), size, shared=cache)
            vet_transform(obj, spec, drawer=drawer)
        t0 = time.perf_counter()
        for obj, spec in todo:
            drawer = StateRenderer(obj, renderer, Camera(), size, shared=cache)
            vet_transform(obj, spec, drawer=drawer)
        out["vet_transform_ms_per_pair_kept"] = 1000 * (time.perf_counter() - t0) / len(todo)
    finally:
        renderer.close()
    out["pairs"] = len(todo)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--mode", default="kiva")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--spatial-n", type=int, default=96)
    args = parser.parse_args()
    from studio.families.kiva.generator import default_workers

    workers = default_workers(args.n)
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
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
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
    result["spatial_items"] = args.spatial_n
    for family in ("polycube_rotation", "shape_composition", "cube_net"):
        result.update(_spatial(family, args.spatial_n, args.seed))
    result["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    result["gpu"] = "none lent to this task (Mesa llvmpipe on the CPU)"
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
