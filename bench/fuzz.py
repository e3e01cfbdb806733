"""Fuzz the studio's loaders: ``python bench/run.py fuzz [--n 1000] [--loaders schema,csv]``.

For each loader of the table in ``tests/fuzz/fuzz_kit.py`` (schema JSON for ``init --schema``,
the annotation CSV import, the UA folder import, split folders read by ``vet`` and
``baseline``; fonts, meshes and project files are added there as more entries), ``--n``
seeded mutations of real inputs are fed to the studio in this process, each under a
per-input timer. Prints one JSON object per loader (one line each)::

    {"loader": "csv", "tried": 1000, "clean_errors": 873, "accepted": 127, "tracebacks": 0,
     "hangs": 0, "project_files_changed": 0, "seconds": 81.2, "examples": {...}}

``tracebacks``: inputs that raised anything but a StudioError (a bug; the first few are listed
under ``examples`` and saved with ``--keep DIR``); ``hangs``: inputs that ran past
``--timeout`` seconds; ``project_files_changed``: refused inputs after which the project
file's sha256 differed. Aim: 0, 0, 0. Exit status 1 when any is not 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
FUZZ_DIR = REPO_ROOT / "tests" / "fuzz"
for _p in (str(REPO_ROOT), str(FUZZ_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import fuzz_kit  # noqa: E402  (found through FUZZ_DIR)

SPLIT_UNREAD = ("sheets/", "report.json")


def _make_split(work: Path) -> dict[str, bytes]:
    """A real split: the UA annotations imported into a project, 12 puzzles generated."""
    from studio.cli import main

    project, out = str(work / "ua.studio"), work / "split-seed"
    for argv in (  # their reports go to stderr: stdout is the JSON lines
        ["-q", "init", project],
        ["-q", "import-annotations", project, str(fuzz_kit.ua_csv_path())],
        ["-q", "generate", project, str(out), "--n", "12", "--seed", "3"],
    ):
        with contextlib.redirect_stdout(sys.stderr):
            code = main(argv)
        if code != 0:
            raise SystemExit(f"could not make the seed split: {argv}")
    return fuzz_kit.read_tree(out, skip=lambda n: n.startswith(SPLIT_UNREAD))


def _on_alarm(signum: int, frame: Any) -> None:
    raise fuzz_kit.Hang()


def fuzz_loader(
    loader: fuzz_kit.Loader, n: int, seed: int, timeout: float, work: Path, keep: Path | None
) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    ctx = loader.prepare(work)
    prepared = time.perf_counter() - start
    counts: Counter[str] = Counter()
    changed = 0
    examples: dict[str, list[str]] = {"traceback": [], "hang": [], "changed": []}
    start = time.perf_counter()
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        value = loader.make(ctx, rng)
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            outcome = fuzz_kit.classify(lambda v=value: loader.run(ctx, v, work))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        counts[outcome.kind] += 1
        changed += outcome.changed
        bad = outcome.kind in ("traceback", "hang")
        if bad or outcome.changed:
            key = "changed" if outcome.changed else outcome.kind
            if len(examples[key]) < 5:
                examples[key].append(f"#{i}: {outcome.message}")
            if keep is not None:
                loader.save(value, keep / loader.name / f"{key}-{seed}-{i}")
    return {
        "loader": loader.name,
        "tried": n,
        "clean_errors": counts["clean"],
        "accepted": counts["accepted"],
        "tracebacks": counts["traceback"],
        "hangs": counts["hang"],
        "project_files_changed": changed,
        "seconds": round(time.perf_counter() - start, 1),
        "prepare_seconds": round(prepared, 1),
        "per_input_timeout_s": timeout,
        "seed": seed,
        "examples": {k: v for k, v in examples.items() if v},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000, help="inputs per loader (default 1000)")
    p.add_argument("--loaders", default="", help="comma-separated names (default: all)")
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per input")
    p.add_argument("--keep", type=Path, help="save every failing input under this folder")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)

    base = Path(tempfile.mkdtemp(prefix="studio-fuzz-"))
    # the studio's data, settings and crash logs go to the temp folder; the render and font
    # caches stay (content-addressed, and rebuilding them would dominate the run)
    os.environ["XDG_DATA_HOME"] = str(base / "data")
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    os.environ["ANALOGY_STUDIO_SETTINGS"] = str(base / "settings.ini")
    os.environ["ANALOGY_STUDIO_LOG_DIR"] = str(base / "log")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)

    table = fuzz_kit.make_loaders(split_files=_make_split)
    wanted = [x for x in args.loaders.split(",") if x] or [x.name for x in table]
    unknown = set(wanted) - {x.name for x in table}
    if unknown:
        print(f"unknown loader(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    failed = False
    for loader in table:
        if loader.name not in wanted:
            continue
        result = fuzz_loader(loader, args.n, args.seed, args.timeout, base / loader.name, args.keep)
        failed |= bool(result["tracebacks"] or result["hangs"] or result["project_files_changed"])
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
