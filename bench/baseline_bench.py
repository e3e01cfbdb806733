"""Benchmark `baselines`: the default baseline job's wall time, and whether the full-context model
learns more than the context-blind one.

Set-up (untimed, reported): a project from the shared UA annotations, its glyphs rendered, and
a ``--n``-puzzle two-row split written with ``analogy-studio generate --sampling balanced``
(``bench/worker_bench.make_split``).

Timed, each in a process of its own, one after the other in the same run:

- **job** — the default job (``blind,context,similarity,partial``, ``--seeds`` seeds, CPU,
  default epochs, cross-fitting on), as ``analogy-studio baseline`` runs it, from loading the
  arrays to the report. **Reference**: the same job run by the code of ``--reference``
  (a git revision; default ``HEAD``, exported with ``git archive`` into a temporary folder and
  put first on ``PYTHONPATH``). ``ratio`` = reference seconds over ours. Skip the reference with
  ``--reference none``.
- **converge** (``--converge``) — the blind and the full-context model, one seed each, trained
  until the validation loss stops improving (at most ``--max-epochs``); test accuracy with a
  Wilson 95% interval, overall and per rule, and each model's curve.

Prints one JSON object on stdout. Absolute seconds depend on the machine and on what else runs
on it; compare the two timings of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_JOB = "blind,context,similarity,partial"

JOB = """
import json, sys, time
t = time.perf_counter()
from studio.baselines.run import run_baselines
units, last = {}, [t]
def log(line):
    if ": " in line and "accuracy" in line:
        now = time.perf_counter()
        model = line.split("/")[0]
        units[model] = round(units.get(model, 0.0) + now - last[0], 1)
        last[0] = now
    elif line.startswith("device"):
        last[0] = time.perf_counter()
report = run_baselines(sys.argv[1], sys.argv[2], seeds=int(sys.argv[3]), device="cpu", log=log)
print(json.dumps({
    "seconds": round(time.perf_counter() - t, 1),
    "seconds_per_model": units,
    "device": report["device"],
    "accuracy": {m: e["overall"]["accuracy"] for m, e in report["models"].items()},
    "epochs": {m: [s["epochs"] for s in e["per_seed"]] for m, e in report["models"].items()
               if e["trained"]},
}))
"""


def export_revision(revision: str, into: Path) -> Path:
    """The packages of ``revision`` (studio, resources, schemas, plugins) under ``into``."""
    paths = [p for p in ("studio", "resources", "schemas", "plugins") if (REPO / p).exists()]
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision, *paths],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def time_job(split: Path, models: str, seeds: int, code: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(REPO)])}
    out = subprocess.run(
        [sys.executable, "-c", JOB, str(split), models, str(seeds)],
        capture_output=True,
        text=True,
        env=env,
        cwd=code,
        check=False,
    )
    if out.returncode != 0:
        return {"error": out.stderr[-1000:]}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def converge(split: Path, max_epochs: int) -> dict[str, Any]:
    import numpy as np

    from studio.baselines.data import load_source
    from studio.baselines.metrics import accuracy_summary
    from studio.baselines.trained import BlindBaseline, ContextBaseline, DeviceData
    from studio.worker.device import apply_device, choose_device

    apply_device(choose_device("cpu", leave_core_free=False), lower_priority=False)
    data = load_source(split)
    dd = DeviceData(data, "cpu")
    train, val, test = (data.part_indices(p) for p in ("train", "val", "test"))
    rules = data.labels["rule"][test]
    out: dict[str, Any] = {"parts": {"train": len(train), "val": len(val), "test": len(test)}}
    for model in (BlindBaseline(), ContextBaseline()):
        t = time.perf_counter()
        fit = model.fit(dd, train, val, seed=0, rng=np.random.default_rng(0), epochs=max_epochs)
        print(model.id, fit.curve, file=sys.stderr, flush=True)
        right = model.predict(dd, test).argmax(axis=1) == data.keys[test]
        out[model.id] = {
            "overall": accuracy_summary(right[None], data.chance),
            "per_rule": {
                str(r): accuracy_summary(right[rules == r][None], data.chance)
                for r in sorted(set(rules))
            },
            "epochs": fit.epochs,
            "best_epoch": fit.best_epoch,
            "seconds": round(time.perf_counter() - t, 1),
            "curve": fit.curve,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--models", default=DEFAULT_JOB)
    parser.add_argument("--reference", default="HEAD", help="git revision, or none")
    parser.add_argument("--split", help="use this split folder instead of generating one")
    parser.add_argument("--converge", action="store_true")
    parser.add_argument("--max-epochs", type=int, default=30)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from worker_bench import make_split

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for var in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
            os.environ[var] = str(tmp / var.lower())
        os.environ["ANALOGY_STUDIO_SETTINGS"] = str(tmp / "settings.ini")
        setup: dict[str, float] = {}
        if args.split:
            split = Path(args.split)
        else:
            _, split, setup = make_split(tmp, args.n, args.seed)
        result: dict[str, Any] = {
            "split": str(split) if args.split else f"generated: {args.n} puzzles",
            "cpu_cores": len(os.sched_getaffinity(0)),
            "setup": {k: round(v, 1) for k, v in setup.items()},
            "job": {"models": args.models, "seeds": args.seeds},
        }
        ours = time_job(split, args.models, args.seeds, REPO)
        result["job"]["ours"] = ours
        if args.reference != "none":
            code = export_revision(args.reference, tmp / "reference")
            ref = time_job(split, args.models, args.seeds, code)
            result["job"]["reference"] = {"revision": args.reference, **ref}
            if "seconds" in ours and "seconds" in ref:
                result["job"]["ratio"] = round(ref["seconds"] / ours["seconds"], 2)
        if args.converge:
            result["converge"] = converge(split, args.max_epochs)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
