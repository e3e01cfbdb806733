"""Benchmark `generate` end to end: a glyph split from the shared UA annotations, as the CLI does.

Set-up (untimed, reported): a new project from the shared UA CSV, its glyphs rendered into a
fresh cache.

Timed, each run writing a split folder with ``studio.splits.generate_to_dir`` (what
``analogy-studio generate`` does: generate, strict vetting with image-feature warnings,
statistics, the files):

- **reference** — ``--n`` puzzles (default 10,000) with one worker (everything in this
  process), the reference of this same run;
- **all cores** — the same split with every core this process may use
  (``os.sched_getaffinity``); ``speedup`` = reference seconds / these seconds, and
  ``same_bytes`` says whether the two folders hold the same files byte for byte;
- with ``--big``: **big** — ten times as many puzzles with every core; ``per_puzzle_ratio`` =
  its seconds per puzzle / the all-cores run's (≤ 1: no worse at scale).

Memory: ``peak_mb`` of each run is the largest sum of the resident sets of this process and
all its descendants (pool workers, the fork server), sampled every 50 ms from ``/proc``.

Timings on a shared machine are noisy: read the ratios (same run), not the absolute seconds.
Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ua_csv


def _tree_rss_mb(root: int) -> float:
    """Resident set of ``root`` and all its descendants, in MiB (Linux /proc)."""
    parent: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(fields[1])
        rss[int(d)] = int(fields[21]) * page
    keep = {root}
    grew = True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in keep and pid not in keep:
                keep.add(pid)
                grew = True
    return sum(rss.get(p, 0) for p in keep) / 2**20


class PeakMemory:
    """The largest tree RSS seen while the block runs."""

    def __enter__(self) -> PeakMemory:
        self.peak = _tree_rss_mb(os.getpid())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, _tree_rss_mb(me))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--big", action="store_true", help="also 10 × n puzzles, every core")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        result = run(tmp, ua_csv(), args.n, args.seed, args.big)
    print(json.dumps(result))
    return 0 if result["same_bytes"] and result["invalid"] == 0 else 1


def run(tmp: Path, source: Path, n: int, seed: int, big: bool) -> dict:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.generate.params import SplitParams
    from studio.splits import default_workers, generate_to_dir
    from studio.store.project import Project

    t0 = time.perf_counter()
    studio = Studio(Project.create(tmp / "bench.studio", load_schema(bundled_schema_path())))
    studio.import_annotations(source)
    for _ in studio.render_all():
        pass
    setup_s = time.perf_counter() - t0
    every = default_workers()

    def one(label: str, puzzles: int, workers: int) -> dict:
        params = SplitParams(n=puzzles, seed=seed, sampling="balanced")
        out = tmp / label
        with PeakMemory() as mem:
            t = time.perf_counter()
            summary = generate_to_dir(studio, params, out, workers=workers)
            s = time.perf_counter() - t
        got = {
            "puzzles": summary["puzzles"],
            "workers": workers,
            "seconds": round(s, 3),
            "puzzles_per_s": round(puzzles / s, 1),
            "us_per_puzzle": round(s / puzzles * 1e6, 1),
            "invalid": summary["invalid"],
            "with_warnings": summary["with_warnings"],
            "peak_mb": round(mem.peak, 1),
            "sha256": _digest(out),
        }
        return got

    try:
        ref = one("reference", n, 1)
        par = one("all-cores", n, every)
        bigrun = one("big", 10 * n, every) if big else None
    finally:
        studio.close()
    out: dict = {
        "name": "generate",
        "what": "generate_to_dir end to end (generate, strict vet, image features, write)",
        "source": str(source),
        "sampling": "balanced",
        "reference": ref,
        "all_cores": par,
        "speedup": round(ref["seconds"] / par["seconds"], 3),
        "same_bytes": ref["sha256"] == par["sha256"],
        "invalid": ref["invalid"] + par["invalid"],
        "setup_import_render_s": round(setup_s, 3),
        "cpu_count": os.cpu_count(),
        "cores_usable": every,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "gpu": "none lent to this task (the generator runs on the CPU)",
        "python": sys.version.split()[0],
        "target_puzzles_per_s": 2200,
        "target_peak_mb": 1024,
    }
    if bigrun is not None:
        out["big"] = bigrun
        out["per_puzzle_ratio"] = round(bigrun["us_per_puzzle"] / par["us_per_puzzle"], 3)
        out["invalid"] += bigrun["invalid"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
