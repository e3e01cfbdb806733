"""The in-process context, the job kinds, the device choice, and torch staying out of the
modules the GUI and the host import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.worker import diagnostic
from studio.worker.context import JobCancelled, JobContext, LocalContext
from studio.worker.host import death_text
from studio.worker.kinds import JOB_KINDS, register_kind, resolve_kind


def test_local_context_runs_a_job_in_process(tmp_path: Path) -> None:
    seen: list[tuple[float, str]] = []
    lines: list[tuple[str, str]] = []
    ctx = LocalContext(
        {"action": "sleep", "seconds": 0, "steps": 4},
        work_dir=tmp_path / "out",
        progress=lambda f, m: seen.append((f, m)),
        log=lambda line, level: lines.append((level, line)),
        checkpoint={"step": 1},
    )
    assert isinstance(ctx, JobContext)
    assert (ctx.job_id, ctx.project_path, ctx.device) == (None, None, "auto")
    assert (tmp_path / "out").is_dir()
    result = diagnostic.run(ctx)
    assert result["started_at_step"] == 1 and result["completed"] == 3
    assert seen == [(0.5, "step 2/4"), (0.75, "step 3/4"), (1.0, "step 4/4")]
    assert ctx.checkpoint() == {"step": 4}
    assert lines[0][0] == "info" and lines[-1] == ("info", "resuming after step 1 of 4")
    with pytest.raises(StudioError, match="must be JSON"):
        ctx.save_checkpoint({"bad": object()})


def test_local_context_stops_when_asked(tmp_path: Path) -> None:
    stop = False
    ctx = LocalContext(
        {"action": "sleep", "seconds": 100, "steps": 2},
        work_dir=tmp_path,
        progress=lambda f, m: None,
        should_stop=lambda: stop,
    )
    assert not ctx.cancelled()
    stop = True
    with pytest.raises(JobCancelled, match="cancelled"):
        diagnostic.run(ctx)
    plain = LocalContext({})  # a temporary work folder of its own
    assert plain.work_dir.is_dir() and not plain.cancelled()
    plain.log("to the logger")  # no callback: the studio.worker.job logger
    plain.work_dir.rmdir()


def test_job_kinds_resolve_lazily() -> None:
    assert JOB_KINDS["baseline"] == "studio.baselines.job:run_job"
    assert resolve_kind("diagnostic") is diagnostic.run
    with pytest.raises(StudioError, match="no job kind called 'nope'"):
        resolve_kind("nope")
    with pytest.raises(StudioError, match="registered twice"):
        register_kind("diagnostic", "x:y")
    register_kind("broken-test-kind", "studio.no_such_module:run")
    try:
        with pytest.raises(StudioError, match=r"cannot import studio\.no_such_module"):
            resolve_kind("broken-test-kind")
    finally:
        del JOB_KINDS["broken-test-kind"]


def test_death_text() -> None:
    assert death_text(-9) == "the worker process was killed by signal 9 (out of memory?)"
    assert death_text(-11) == "the worker process was killed by signal 11 (SIGSEGV)"
    assert "exited with code 7" in death_text(7)


DEVICE = textwrap.dedent(
    """
    import json, os, sys
    from studio.worker.device import apply_device, choose_device, cpu_threads
    before = os.nice(0)
    cpu = choose_device("cpu")
    auto = choose_device("auto")
    apply_device(auto)
    apply_device(auto)  # lowers the priority once, not twice
    import torch
    out = {"cpu": [cpu.kind, cpu.name, cpu.threads], "auto": [auto.kind, auto.name],
           "torch_threads": torch.get_num_threads(), "niced": os.nice(0) - before, "before": before,
           "cuda": torch.cuda.is_available(), "expected": cpu_threads()}
    try:
        choose_device("cuda")
        out["cuda_error"] = ""
    except Exception as e:
        out["cuda_error"] = str(e)
    print(json.dumps(out))
    """
)


def test_device_choice_in_a_process_of_its_own() -> None:
    """In a child process: ``apply_device`` lowers the priority of the process it runs in."""
    out = subprocess.run(
        [sys.executable, "-c", DEVICE], capture_output=True, text=True, timeout=120, check=True
    )
    info = json.loads(out.stdout)
    n = info["expected"]
    assert n == max(1, len(os.sched_getaffinity(0)) - 1)
    assert info["cpu"] == ["cpu", f"cpu ({n} thread{'s' if n != 1 else ''})", n]
    if info["cuda"]:
        assert info["auto"][0] == "cuda" and info["auto"][1].startswith("cuda:0 ")
        assert info["cuda_error"] == ""
    else:
        # +10, capped at the lowest priority (19) when the test already runs niced
        assert (
            info["auto"][0] == "cpu"
            and info["niced"] == min(19, info["before"] + 10) - info["before"]
        )
        assert info["torch_threads"] == n
        assert "sees no GPU" in info["cuda_error"]
    with pytest.raises(StudioError, match="unknown device 'tpu'"):
        from studio.worker.device import choose_device

        choose_device("tpu")


def test_the_host_and_the_child_do_not_import_torch() -> None:
    code = (
        "import sys, studio.worker.host, studio.worker.child, studio.worker.device, "
        "studio.worker.__main__; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
