"""Benchmark `gpu`: the default baseline job on a GPU, with and without the CUDA speed-ups,
against the same job on the same machine's CPU cores, in one run (issue 26).

Each configuration runs in a process of its own, one after the other, on the same split:

- ``cuda`` — ``--device cuda`` as a lab's GPU server runs it: float32, eager, each model's
  seeds trained together in one batched (``vmap``) call;
  each training step captured once as a CUDA graph and replayed, the batched models taking
  turns step by step, each on a CUDA stream of its own;
- ``cuda-eager`` — the same without the CUDA graphs (each step's kernels launched from
  Python; the models one after another);
- ``cuda-loop`` — the same with the seeds' forward passes one after another (the CPU's way);
- ``cuda-bf16`` — ``--device cuda --cuda-speedups``: bfloat16 autocast and large inference
  batches;
- ``cuda-compile`` — the same with ``--compile`` (``torch.compile`` for the frame encoders);
- ``cpu`` — every core of the machine (the reference the ratios divide).

Per configuration: wall seconds from the job's first import to the report (the job starts
torch's thread first, as the command line does), ``loaded_s`` (until the job says its device:
loading, the training-free models, torch's start), the seconds each model
took (seeds and cross-fits included), the trained models' seconds inside ``fit``, test accuracy
per model, the report's ``compute`` record (code path, GPU name, peak GPU memory) and, while a
GPU job runs, the GPU's utilisation sampled by ``nvidia-smi`` every 0.2 s (mean and the share
of samples above 50%). ``ratios`` divides the CPU's seconds by each GPU configuration's.

``--split DIR`` (repeatable) measures existing split folders; without it a ``--n``-puzzle
split is generated from the shared UA annotations first (needs the full set-up). Skip
configurations with ``--skip cpu`` etc. ``--out FILE`` also writes the JSON there after every
configuration, so a run cut short keeps what it measured. Prints one JSON object on stdout.

``--reference DIR`` names a folder holding an earlier ``studio`` package (``git archive REV
studio | tar -x -C DIR``): the ``cuda`` and ``cpu`` configurations run again with it first on
the path (``cuda@ref``, ``cpu@ref``), so ``ratios_vs_reference`` compares the code against
the earlier code on the same machine in the same run. ``--published`` also runs the
``published`` group (ResNet-18, WReN, SCL; issue 26) on the GPU (``published-cuda``), with
accuracy per rule and concept beside the seconds.

``--with cuda-serve,cuda-serve-cold`` also queues the job on a ``worker serve --device
cuda`` of a fresh project, as a lab's GPU server runs it: with its warm spare (two jobs one
after the other, each submitted once a spare is ready; ``seconds`` is the last one's, from
submission to the job's end) and without (``--no-spare``: the job's process starts cold);
``cpu-serve`` and ``cpu-serve-cold`` do the same on the CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_JOB = "blind,context,similarity,partial"
CONFIGS: dict[str, dict[str, Any]] = {
    "cuda": {"device": "cuda", "speedups": False, "compile": False},
    "cuda-eager": {"device": "cuda", "speedups": False, "compile": False, "graphs": False},
    "cuda-loop": {"device": "cuda", "speedups": False, "compile": False, "ensemble": "loop"},
    "cuda-bf16": {"device": "cuda", "speedups": True, "compile": False},
    "cuda-compile": {"device": "cuda", "speedups": True, "compile": True},
    "cpu": {"device": "cpu", "speedups": False, "compile": False},
    # the same job queued on a `worker serve --device cuda` (a lab's GPU server), with and
    # without its warm spare; seconds from the job's submission to its end
    "cuda-serve": {"device": "cuda", "serve": True, "spare": True},
    "cuda-serve-cold": {"device": "cuda", "serve": True, "spare": False},
    "cpu-serve": {"device": "cpu", "serve": True, "spare": True},
    "cpu-serve-cold": {"device": "cpu", "serve": True, "spare": False},
}
#: configurations measured only when named in --with (each starts a server of its own)
OPTIONAL = {"cuda-serve", "cuda-serve-cold", "cpu-serve", "cpu-serve-cold"}
#: jobs queued one after another on a serve with its spare (the first waits for the spare
#: to be ready, as a job queued on a running server does)
SERVE_JOBS = 2

JOB = """
import json, sys, time
t0 = time.perf_counter()
split, models, seeds, device, speedups, compile_, ensemble, graphs = sys.argv[1:9]
extra = {"ensemble": ensemble} if ensemble != "-" else {}
try:  # as the command line does: torch starts before the baselines' modules are imported
    from studio.baselines import expand_models
    from studio.baselines.start import warm_device
    extra["warm"] = warm_device(device, expand_models(models))
except ImportError:  # an earlier package (--reference) starts it inside run_baselines
    pass
from studio.baselines.run import run_baselines
if graphs == "0":
    extra["cuda_graphs"] = False
units, last, marks = {}, [t0], {}
def log(line):
    now = time.perf_counter()
    if ": " in line and "accuracy" in line:
        model = line.split("/")[0]
        units[model] = round(units.get(model, 0.0) + now - last[0], 2)
        last[0] = now
    elif line.startswith("device"):
        marks["loaded_s"] = round(now - t0, 2)
        last[0] = now
report = run_baselines(split, models, seeds=int(seeds), device=device, log=log,
                       cuda_speedups=speedups == "1", compile=compile_ == "1", **extra)
models_ = report["models"]
import studio
print(json.dumps({
    "seconds": round(time.perf_counter() - t0, 2),
    "studio": studio.__file__,
    **marks,
    "seconds_per_model": units,
    "train_seconds": {m: round(sum(s["train_seconds"] for s in e["per_seed"]), 2)
                      for m, e in models_.items() if e["trained"]},
    "epochs": {m: [s["epochs"] for s in e["per_seed"]] for m, e in models_.items()
               if e["trained"]},
    "accuracy": {m: e["overall"]["accuracy"] for m, e in models_.items()},
    "by_rule": {m: {g: v["accuracy"] for g, v in e["groups"]["rule"].items()}
                for m, e in models_.items()},
    "by_concept": {m: {g: v["accuracy"] for g, v in e["groups"]["concept"].items()}
                   for m, e in models_.items()},
    "device": report["device"],
    "compute": report.get("compute"),
}))
"""


def run_config(
    split: Path,
    name: str,
    models: str,
    seeds: int,
    timeout: float,
    reference: Path | None = None,
) -> dict[str, Any]:
    cfg = CONFIGS[name]
    first = [str(reference)] if reference is not None else []
    path = [*first, str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    # -P: the working folder is not put first on the path, so --reference's package is the
    # one imported (a plain -c run from the checkout imported the checkout's own)
    args = [sys.executable, "-P", "-c", JOB, str(split), models, str(seeds), cfg["device"]]
    args += ["1" if cfg["speedups"] else "0", "1" if cfg["compile"] else "0"]
    args.append(cfg.get("ensemble") or "-")
    args.append("0" if cfg.get("graphs") is False else "1")
    from studio.worker.device import GpuUtilisation

    # the whole process's GPU time (loading included), as the job's report samples its own
    sampler = GpuUtilisation() if cfg["device"] == "cuda" else None
    try:
        with sampler if sampler is not None else contextlib.nullcontext():
            out = subprocess.run(
                args, capture_output=True, text=True, env=env, timeout=timeout, check=False
            )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if out.returncode != 0:
        return {"error": out.stderr[-2000:]}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if sampler is not None:
        result["gpu_utilisation"] = sampler.summary()
    return result


def run_serve(split: Path, name: str, models: str, seeds: int, timeout: float) -> dict[str, Any]:
    """The job queued on a `worker serve` of a fresh project file: seconds from each job's
    submission to its end (its row's), with the spare ready before the first one when the
    configuration keeps one. The server's own start is not counted: it runs before jobs come."""
    import queue as queue_mod
    import signal
    import threading
    import time

    from studio.store.jobs import JobQueue
    from studio.worker.device import GpuUtilisation

    cfg = CONFIGS[name]
    path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONUNBUFFERED": "1"}
    py = [sys.executable, "-P"]
    out: dict[str, Any] = {"jobs": []}
    with tempfile.TemporaryDirectory() as d:
        project = Path(d) / "bench.studio"
        init = [*py, "-m", "studio", "-q", "init", str(project)]
        made = subprocess.run(init, env=env, capture_output=True, text=True, check=False)
        if made.returncode != 0:
            return {"error": f"init: {made.stderr[-2000:]}"}
        spare = "--spare" if cfg["spare"] else "--no-spare"
        cmd = [*py, "-m", "studio.worker", "serve", "--db", str(project), spare]
        server = subprocess.Popen(
            [*cmd, "--device", cfg["device"]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        lines: queue_mod.Queue[str] = queue_mod.Queue()
        said: list[str] = []

        def read() -> None:
            assert server.stdout is not None
            for line in server.stdout:
                said.append(line.rstrip())
                lines.put(line)

        threading.Thread(target=read, daemon=True).start()
        start = time.perf_counter()

        def spare_ready() -> float:
            while True:
                left = timeout - (time.perf_counter() - start)
                line = lines.get(timeout=max(0.1, left))
                if line.startswith("worker: warm spare ready"):
                    return round(time.perf_counter() - start, 2)

        jobs = JobQueue(project)
        try:
            for k in range(SERVE_JOBS if cfg["spare"] else 1):
                if cfg["spare"]:
                    out.setdefault("spare_ready_s", []).append(spare_ready())
                params = {
                    "source": {"kind": "split-dir", "path": str(split)},
                    "models": models.split(","),
                    "seeds": seeds,
                    "device": cfg["device"],
                    "beside_window": False,
                }
                with GpuUtilisation() as sampler:
                    t = time.perf_counter()
                    job_id = jobs.submit("baseline", params, f"bench {k}")
                    while True:
                        job = jobs.job(job_id)
                        assert job is not None
                        if job.final:
                            break
                        if time.perf_counter() - t > timeout:
                            raise TimeoutError(f"job {job_id} still {job.status}")
                        time.sleep(0.02)
                    seconds = round(time.perf_counter() - t, 2)
                if job.status != "done":
                    out["jobs"].append({"error": (job.error or job.status)[-2000:]})
                    break
                report = job.result
                models_ = report["models"]
                out["jobs"].append(
                    {
                        "seconds": seconds,
                        "pid": job.pid,
                        "accuracy": {m: e["overall"]["accuracy"] for m, e in models_.items()},
                        "compute": report.get("compute"),
                        "gpu_utilisation": sampler.summary(),
                    }
                )
        except (TimeoutError, queue_mod.Empty) as e:
            out["error"] = f"{type(e).__name__}: {e}"
        finally:
            jobs.close()
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    out["server_said"] = said[-12:]
    done = [j["seconds"] for j in out["jobs"] if "seconds" in j]
    if done:
        out["seconds"] = done[-1]  # the steady state: the last job, its spare ready
    return out


def torch_facts() -> dict[str, Any]:
    import torch

    facts: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        facts["gpu"] = torch.cuda.get_device_name(0)
    facts["cpu_cores"] = len(os.sched_getaffinity(0))
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--split", action="append", default=[], help="a split folder")
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--models", default=DEFAULT_JOB)
    parser.add_argument("--skip", default="", help="configurations to leave out: cuda,cpu,…")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("--out", help="also write the JSON here after each configuration")
    parser.add_argument("--reference", help="a folder holding an earlier studio package")
    parser.add_argument("--published", action="store_true", help="also the published group")
    parser.add_argument(
        "--with",
        dest="extra",
        default="",
        help=f"also these configurations: {','.join(sorted(OPTIONAL))}",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    known = set(CONFIGS) | {"cuda@ref", "cpu@ref"}
    if skip - known:
        parser.error(f"--skip: unknown configuration(s) {sorted(skip - known)}")
    extra = {s.strip() for s in args.extra.split(",") if s.strip()}
    if extra - OPTIONAL:
        parser.error(f"--with: unknown configuration(s) {sorted(extra - OPTIONAL)}")
    skip |= OPTIONAL - extra

    result: dict[str, Any] = {"facts": torch_facts(), "job": args.models, "seeds": args.seeds}
    if not result["facts"]["cuda"]:
        skip |= {c for c, cfg in CONFIGS.items() if cfg["device"] != "cpu"}
        result["note"] = "torch sees no GPU: only the CPU configurations ran"

    def save() -> None:
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1))

    with tempfile.TemporaryDirectory() as d:
        splits = [Path(s) for s in args.split]
        if not splits:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from worker_bench import make_split

            _, split, setup = make_split(Path(d), args.n, args.seed)
            result["setup"] = {k: round(v, 1) for k, v in setup.items()}
            splits = [split]
        result["splits"] = {}
        for split in splits:
            entry: dict[str, Any] = {}
            result["splits"][split.name] = entry
            reference = Path(args.reference).resolve() if args.reference else None
            runs = [(name, name, None) for name in CONFIGS if name not in skip]
            if reference is not None:
                runs += [
                    (f"{n}@ref", n, reference)
                    for n in ("cuda", "cpu")
                    if n not in skip and f"{n}@ref" not in skip
                ]
            for label, name, ref in runs:
                print(f"gpu bench: {split.name} {label}", file=sys.stderr, flush=True)
                if CONFIGS[name].get("serve"):
                    entry[label] = run_serve(split, name, args.models, args.seeds, args.timeout)
                else:
                    entry[label] = run_config(
                        split, name, args.models, args.seeds, args.timeout, ref
                    )
                save()
            if args.published and "cuda" not in skip:
                print(f"gpu bench: {split.name} published-cuda", file=sys.stderr, flush=True)
                entry["published-cuda"] = run_config(
                    split, "cuda", "published", args.seeds, args.timeout
                )
                save()
            seconds = {k: e["seconds"] for k, e in entry.items() if e.get("seconds")}
            cpu = seconds.get("cpu")
            entry["ratios_vs_cpu"] = {
                name: round(cpu / t, 2)
                for name, t in seconds.items()
                if cpu and name != "cpu" and not name.startswith("published")
            }
            entry["ratios_vs_reference"] = {
                name: round(seconds[f"{name}@ref"] / seconds[name], 2)
                for name in ("cuda", "cpu")
                if name in seconds and f"{name}@ref" in seconds
            }
            save()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
