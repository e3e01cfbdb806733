"""A worker's warm spare (``worker run --spare``): a child started before any job comes, with
torch imported (and, on a GPU, the GPU started), handed the next claimed job. Real processes
on a real SQLite project."""

from __future__ import annotations

import io
import os
import select
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from studio.core.procs import usable_cores
from studio.worker import serve as serve_mod
from studio.worker.child import await_job
from studio.worker.host import WorkerHost, location_argument, worker_command
from studio.worker.kinds import JOB_WARMERS
from tests.worker.conftest import DEADLINE, poll_until, until_final, wait_gone

QUICK = {"action": "sleep", "seconds": 0.2, "steps": 2}


def warm_nothing(device: str) -> None:
    """A warmer for the diagnostic kind in these tests: the host hands the spare only the
    kinds it warmed for (the spare itself warms the real kinds, torch and all)."""


@pytest.fixture
def spare_host(project_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkerHost]:
    monkeypatch.setitem(JOB_WARMERS, "diagnostic", "tests.worker.test_spare:warm_nothing")
    h = WorkerHost(project_path, spare=True)
    h.start()
    yield h
    h.shutdown()


def _a_spare(host: WorkerHost) -> int:
    host.poll()
    pid = host.spare_pid
    assert pid is not None
    return pid


def test_a_queued_job_runs_in_the_warm_spare_and_a_new_spare_follows(
    spare_host: WorkerHost,
) -> None:
    q = spare_host.queue
    spare = _a_spare(spare_host)
    assert "--spare" in psutil.Process(spare).cmdline()
    job_id = q.submit("diagnostic", QUICK)
    job = until_final(spare_host, q, job_id)
    assert job.status == "done" and job.pid == spare and job.result["pid"] == spare
    log = (q.work_dir(job_id) / "worker.log").read_text()
    # the job's own output reached its log, after the host's line naming the spare
    assert f"the warm spare process {spare}" in log
    assert f"worker: job {job_id} (diagnostic, attempt 1) in process {spare}" in log
    assert f"job {job_id} done" in log
    nxt = _a_spare(spare_host)
    assert nxt != spare
    second = q.submit("diagnostic", QUICK)
    assert until_final(spare_host, q, second).pid == nxt


def test_the_spare_has_torch_before_its_job(project_path: Path) -> None:
    """What makes it warm: before it is told of any job, the spare has loaded torch's
    library (and, where torch sees a GPU, started it)."""
    cmd = [*worker_command(), "run", location_argument(project_path), "--spare"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "the spare said nothing in 120 s"
        line = proc.stdout.readline()
        assert line.startswith("worker: warm spare ready in "), line
        spare = psutil.Process(proc.pid)
        maps = {Path(m.path).name for m in spare.memory_maps()}
        assert any(name.startswith("libtorch") for name in maps)
        if usable_cores() > 1:  # the split readers' fork server is up, waiting
            forked = [" ".join(c.cmdline()) for c in spare.children()]
            assert any("multiprocessing.forkserver" in c for c in forked), forked
    finally:
        proc.communicate("", timeout=DEADLINE)  # end of input: it leaves without a job
    assert proc.returncode == 0


def test_run_needs_a_job_id_or_spare(project_path: Path) -> None:
    cmd = [*worker_command(), "run", location_argument(project_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=DEADLINE, check=False)
    assert out.returncode == 2 and "give JOB_ID, or --spare without one" in out.stderr


def test_await_job_reads_one_job_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("studio.worker.kinds.JOB_WARMERS", {})
    assert await_job("cpu", io.StringIO("")) is None  # the host let it go
    assert await_job("cpu", io.StringIO("seven\n")) is None
    assert await_job("cpu", io.StringIO("12\n")) == 12


def test_output_to_sends_the_descriptors_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "jobs" / "12" / "worker.log"
    script = (
        "import os, pathlib; from studio.worker.child import output_to; "
        f"output_to(pathlib.Path({str(log)!r})); "
        "print('job 12'); os.write(2, b'native stderr\\n'); "
        "import subprocess, sys; subprocess.run([sys.executable, '-c', 'print(1)'])"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=DEADLINE, umask=0o002)
    assert log.read_text().splitlines() == ["job 12", "native stderr", "1"]
    # the log follows the user's umask (a lab's group may read and write it)
    assert stat.S_IMODE(log.stat().st_mode) == 0o664


def test_a_job_of_a_kind_the_spare_did_not_warm_for_starts_cold(project_path: Path) -> None:
    host = WorkerHost(project_path, spare=True)
    host.start()
    try:
        spare = _a_spare(host)
        job_id = host.queue.submit("diagnostic", QUICK)
        job = until_final(host, host.queue, job_id)
        assert job.status == "done" and job.pid != spare
        assert host.spare_pid == spare  # kept for a job it warmed for
    finally:
        host.shutdown()


def test_a_job_whose_limit_leaves_no_room_beside_the_spare_starts_cold(
    spare_host: WorkerHost,
) -> None:
    q = spare_host.queue
    spare = _a_spare(spare_host)
    job_id = q.submit("diagnostic", {**QUICK, "memory_limit_mb": 200})
    job = until_final(spare_host, q, job_id)
    assert job.status == "done" and job.pid != spare
    assert any("leaves too little room" in e for e in spare_host.take_events())


def test_a_host_that_runs_no_jobs_keeps_no_spare(project_path: Path) -> None:
    host = WorkerHost(project_path, spare=True, max_running=0)
    host.start()
    try:
        host.poll()
        assert host.spare_pid is None
    finally:
        host.shutdown()


def test_a_spare_killed_from_outside_is_replaced(spare_host: WorkerHost) -> None:
    q = spare_host.queue
    spare = _a_spare(spare_host)
    os.kill(spare, signal.SIGKILL)
    wait_gone(spare)
    end = time.monotonic() + DEADLINE
    while spare_host.spare_pid in (None, spare):
        assert time.monotonic() < end
        spare_host.poll()
        time.sleep(0.02)
    assert any(f"warm spare process {spare} ended" in e for e in spare_host.take_events())
    job_id = q.submit("diagnostic", QUICK)
    assert until_final(spare_host, q, job_id).status == "done"


def test_a_job_in_the_spare_is_cancelled(spare_host: WorkerHost) -> None:
    q = spare_host.queue
    spare = _a_spare(spare_host)
    job_id = q.submit("diagnostic", {"action": "sleep", "seconds": 30.0, "steps": 300})
    job = poll_until(spare_host, q, job_id, lambda j: j.checkpoint.get("step", 0) >= 1)
    assert job.pid == spare
    spare_host.cancel(job_id)
    assert until_final(spare_host, q, job_id).status == "cancelled"
    wait_gone(spare)


def test_shutdown_ends_the_spare(project_path: Path) -> None:
    host = WorkerHost(project_path, spare=True)
    host.start()
    spare = _a_spare(host)
    host.shutdown()
    assert host.spare_pid is None
    wait_gone(spare)


def test_spares_that_keep_ending_are_given_up(project_path: Path) -> None:
    host = WorkerHost(project_path, spare=True, command=[sys.executable, "-c", "exit(3)"])
    host.start()
    try:
        end = time.monotonic() + DEADLINE
        while host.spare:
            assert time.monotonic() < end
            host.poll()
            time.sleep(0.02)
        events = host.take_events()
        assert sum("ended (the worker process exited with code 3" in e for e in events) == 3
        assert events[-1] == "warm spares keep ending: jobs start in a fresh process"
        assert host.spare_pid is None
    finally:
        host.shutdown()


def test_serve_keeps_a_spare_unless_once() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    serve_mod.add_serve_arguments(parser)
    assert parser.parse_args(["--db", "x"]).spare is None
    assert parser.parse_args(["--db", "x", "--no-spare"]).spare is False
    assert parser.parse_args(["--db", "x", "--spare"]).spare is True
