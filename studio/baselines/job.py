"""The worker's ``baseline`` job kind: ``run_job(ctx) -> dict`` (the report).

Parameters (``ctx.params``, as the dashboard submits them)::

    {"source": {"kind": "project-set", "project": "/path/x.studio", "set_id": 3}
               | {"kind": "split-dir", "path": "/path/split"},
     "models": ["blind", "context", "pixel-similarity"],   # ids or group names
               # (default: studio.baselines.DEFAULT_MODELS; the fields and their
               # defaults are studio.baselines.params.BaselineJobParams)
     "seeds": 3, "device": "auto", "epochs": null,
     "cuda_speedups": false,  # bf16 autocast + large inference batches on CUDA (slower when
                              # measured); CPU: ignored
     "compile": false,        # torch.compile the frame encoders on CUDA (slower when measured)
     "cuda_graphs": true}     # on CUDA, replay each batched training step as a CUDA graph

``"beside_window": false`` (set by ``analogy-studio jobs``, which runs jobs with no window
open) lets the job use every core at normal priority.

A relative split path or project path is read against the project's folder. The source
defaults to the context's project for a ``project-set`` without ``project``.

**Resumable.** After each unit — one (model, seed) of a trained model, one run of a
training-free one — its result goes into the job's checkpoint (``{"fingerprint": ...,
"units": {"blind/0": {...}}}``); a resumed job skips the units already there, unless the
source changed since (its fingerprint differs: then everything runs again).

The result is the baseline report (:mod:`studio.baselines.run`), plus ``"puzzle_flags":
{"set_id": N, "models": [...], "flags": [...]}`` for a project set (the worker stores them,
with each probe flag's reason, so the curator's board shows shortcut-prone badges and why).
``report.json`` is written into ``ctx.work_dir``, and the plots (when
:mod:`studio.baselines.plots` is there) into ``ctx.work_dir / "plots"``.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from pathlib import Path
from typing import Any

from studio.baselines import BaselineCancelled
from studio.core.errors import StudioError
from studio.core.fileio import atomic_write_text, json_text
from studio.store.dbfile import is_database_url

REPORT_NAME = "report.json"
#: Seconds between two checkpoint saves while a job's models run (see run_job's on_unit).
CHECKPOINT_EVERY = 10.0


def _source(
    params: dict[str, Any], project_path: Path | None, location: str | Path | None = None
) -> dict[str, Any]:
    """The job's source with its paths made absolute. A project-set source without
    ``project`` is the worker's own project: its file, or its lab database (``location``: the
    URL the worker connected with — a lab database's URL is never stored in the job's
    parameters, which every client can read)."""
    source = params.get("source")
    if not isinstance(source, dict):
        raise StudioError("the job has no source (expected a split-dir or project-set dict)")
    source = dict(source)
    if project_path is None and location is not None and is_database_url(str(location)):
        # a lab's jobs come from any member and run on a colleague's machine: a folder or
        # another project named in a job would be read there, and its puzzles' ids, labels
        # and answers would come back in the report every member reads
        foreign = source.get("kind") != "project-set" or source.get("project") not in (
            None,
            str(location),
        )
        if foreign:
            raise StudioError(
                "a lab database's baseline job reads that database's puzzle sets only (a "
                "split folder or another project would be read on the worker's machine)"
            )
    base = project_path.parent if project_path is not None else None
    if source.get("kind") == "project-set":
        if not source.get("project"):
            own = project_path if project_path is not None else location
            if own is None:
                raise StudioError("a project-set source needs 'project'")
            source["project"] = str(own)
        elif base is not None and not Path(source["project"]).is_absolute():
            source["project"] = str(base / source["project"])
    elif (
        source.get("kind") == "split-dir"
        and source.get("path") is not None
        and base is not None
        and not Path(source["path"]).is_absolute()
    ):
        source["path"] = str(base / source["path"])
    return source


def write_report(report: dict[str, Any], path: Path) -> Path:
    """The report as indented JSON, a puzzle's predictions on a line of their own (atomic
    write; :func:`~studio.core.fileio.json_text`)."""
    atomic_write_text(path, json_text(report) + "\n")
    return path


def try_plots(report: dict[str, Any], out_dir: Path, log: Any = None) -> dict[str, str]:
    """The report's plots (name -> path) when :mod:`studio.baselines.plots` is installed; a
    failure to draw is logged, never fatal (the numbers matter more than the pictures)."""
    try:
        from studio.baselines.plots import write_plots
    except ImportError:
        return {}
    try:
        written = write_plots(report, out_dir)
        # write_plots names each file relative to out_dir's parent
        return {name: str(Path(out_dir).parent / rel) for name, rel in written.items()}
    except Exception as e:  # a plotting bug must not lose the report
        if log is not None:
            log(f"plots could not be drawn: {type(e).__name__}: {e}", "warning")
        return {}


def warm(device: str) -> None:
    """A warm spare's start (:func:`studio.worker.child.await_job`): torch and, where a GPU
    may be used, its context and first kernels (:func:`~studio.baselines.start.warm_device`);
    the modules a baseline job imports (the runner, the loaders, the default models', the
    plots'); the split readers' fork server. The job that comes next starts with its work."""
    from studio.baselines import DEFAULT_MODELS, expand_models
    from studio.baselines.data import start_readers
    from studio.baselines.start import warm_device
    from studio.plugins import registry

    thread = warm_device(device)
    # the runner (numpy, scipy's statistics, the loaders) and torch.nn, torch.func
    for module in ("studio.baselines.run", "studio.baselines.trained"):
        importlib.import_module(module)
    reg = registry("baselines")
    for model in expand_models(DEFAULT_MODELS):
        reg.get(model)
    start_readers()
    with contextlib.suppress(ImportError):  # matplotlib: the plots are optional
        importlib.import_module("studio.baselines.plots")
    if thread is not None:
        thread.join()


def run_job(ctx: Any) -> dict[str, Any]:
    """Run the job described by ``ctx.params`` (module docstring) and return the report."""
    from studio.baselines import expand_models
    from studio.baselines.params import BaselineJobParams
    from studio.baselines.start import load_beside, warm_device

    began = time.perf_counter()
    params = dict(ctx.params)
    job = BaselineJobParams.from_json(params)  # checked, the defaults filled in
    source = _source(params, ctx.project_path, getattr(ctx, "location", None))
    ctx.progress(0.0, "loading the puzzles")
    device = str(params.get("device") or ctx.device or "auto")
    # torch starts first, and the puzzles' reading: the baselines' own modules load beside
    warm = warm_device(device, expand_models(list(job.models)))
    with load_beside(source) as loading:  # a failure meanwhile stops the reading
        from studio.baselines.run import run_baselines

        data = loading.result()
    fingerprint = data.fingerprint()
    saved = ctx.checkpoint() or {}
    units: dict[str, Any] = {}
    old = saved.get("fingerprint")
    # a checkpoint from before the frame bank: its fingerprint hashed the stacks
    if saved.get("units") and old not in (None, fingerprint) and old == data.stack_fingerprint():
        saved = {**saved, "fingerprint": fingerprint}
    if saved.get("fingerprint") == fingerprint:
        units = dict(saved.get("units") or {})
        if units:
            ctx.log(f"resuming: {len(units)} unit(s) done in an earlier attempt")
    elif saved.get("units"):
        ctx.log("the source changed since the last attempt: every unit runs again", "warning")

    saved_at, unsaved = time.monotonic(), False

    def save() -> None:
        nonlocal saved_at, unsaved
        ctx.save_checkpoint({"fingerprint": fingerprint, "units": units})
        saved_at, unsaved = time.monotonic(), False

    def save_due() -> None:
        # a save writes every unit so far, each with its choice per puzzle (18 saves took
        # 0.85 s of a 13 s GPU job, on the thread that launches the GPU's work): at most one
        # every CHECKPOINT_EVERY seconds while models train — looked at after each unit and
        # before each batch, so a unit waits that long at most (a model's seeds end
        # together) — and one whenever the run ends
        if unsaved and time.monotonic() - saved_at >= CHECKPOINT_EVERY:
            save()

    def on_unit(key: str, result: dict[str, Any]) -> None:
        nonlocal unsaved
        units[key] = result
        unsaved = True
        save_due()

    def should_stop() -> bool:
        ctx.check_cancel()  # raises the worker's JobCancelled
        save_due()
        return False

    try:
        report = run_baselines(
            data,
            list(job.models),
            seeds=job.seeds,
            device=device,
            epochs=job.epochs,
            progress=ctx.progress,
            should_stop=should_stop,
            log=ctx.log,
            completed=dict(units),
            on_unit=on_unit,
            # beside the studio's window (the default) a job leaves a core free and runs
            # niced; `analogy-studio jobs` runs jobs with no window to keep responsive
            lower_priority=job.beside_window,
            cross_fit=job.cross_fit,
            cuda_speedups=job.cuda_speedups,
            compile=job.compile,
            cuda_graphs=job.cuda_graphs,
            on_device=ctx.set_device,
            warm=warm,
            loaded_seconds=loading.seconds,
        )
    except BaseException as e:
        if unsaved:
            with contextlib.suppress(Exception):  # the error matters more than the save
                save()
        if isinstance(e, BaselineCancelled):
            ctx.check_cancel()  # the worker's JobCancelled, when that was the reason
        raise
    if unsaved:
        save()
    ctx.set_device(report["device"])
    work = Path(ctx.work_dir)
    start = time.perf_counter()
    plots = try_plots(report, work / "plots", ctx.log)
    report["plots"] = {k: str(Path(v).relative_to(work)) for k, v in plots.items()}
    phases = report.get("compute", {}).get("phases")
    if isinstance(phases, dict):  # the job's whole time, its plots included
        now = time.perf_counter()
        phases.update(plots=round(now - start, 2), total=round(now - began, 2))
    write_report(report, work / REPORT_NAME)
    if source.get("kind") == "project-set":
        # every flag as the report has it (the probes' ``reason`` included: the board shows
        # why), and every model that ran, so one that flags nothing now clears its old flags
        report["puzzle_flags"] = {
            "set_id": int(source["set_id"]),
            "models": sorted(report["models"]),
            "flags": list(report["flags"]["puzzles"]),
        }
    ctx.progress(1.0, "done")
    return report


__all__ = ["REPORT_NAME", "run_job", "try_plots", "write_report"]
