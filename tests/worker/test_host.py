"""The worker host with real child processes: jobs that raise, die or are killed never take the
host down; cancels land within a second; a closed studio leaves resumable jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from studio.store.jobs import JobQueue
from studio.worker.host import WorkerHost, worker_command

from .conftest import poll_until, until_final, wait_gone

SLOW = {"action": "sleep", "seconds": 30.0, "steps": 300}  # 0.1 s a step; cancelled long before


def test_a_job_that_raises_fails_and_the_next_one_runs(host: WorkerHost) -> None:
    q = host.queue
    bad = q.submit("diagnostic", {"action": "raise"}, "raises")
    good = q.submit("diagnostic", {"action": "sleep", "seconds": 0.3, "steps": 3})
    failed = until_final(host, q, bad)
    assert failed.status == "failed"
    assert failed.error.startswith("RuntimeError: diagnostic failure")
    assert "Traceback" in failed.error and "diagnostic.py" in failed.error
    assert any("diagnostic: raise" in line.line for line in q.logs(bad))
    done = until_final(host, q, good)
    assert done.status == "done" and done.progress == 1.0
    assert done.result["completed"] == 3 and done.result["pid"] == done.pid
    assert done.checkpoint == {} and done.attempts == 1  # emptied once done
    assert q.logs(good)[0].line.startswith("diagnostic: sleep")
    log = (q.work_dir(good) / "worker.log").read_text()
    assert f"job {good} done" in log


def test_a_job_killed_by_sigkill_fails_with_the_signal(host: WorkerHost) -> None:
    q = host.queue
    killed = q.submit("diagnostic", {"action": "kill"})
    exited = q.submit("diagnostic", {"action": "exit", "code": 7})
    job = until_final(host, q, killed)
    assert job.status == "failed"
    assert job.error.startswith("the worker process was killed by signal 9 (out of memory?)")
    assert "Last lines of" in job.error and "diagnostic: kill" in job.error  # worker.log's tail
    job = until_final(host, q, exited)
    assert job.status == "failed" and "exited with code 7" in job.error


def test_a_child_killed_from_outside_fails_and_the_host_goes_on(host: WorkerHost) -> None:
    q = host.queue
    victim = q.submit("diagnostic", SLOW)
    after = q.submit("diagnostic", {"action": "sleep", "seconds": 0.1, "steps": 1})
    job = poll_until(host, q, victim, lambda j: j.checkpoint.get("step", 0) >= 1)
    os.kill(job.pid, signal.SIGKILL)  # as the OOM killer would
    job = until_final(host, q, victim)
    assert job.status == "failed" and "signal 9" in job.error
    assert until_final(host, q, after).status == "done"


def test_cancel_lands_within_a_second(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", SLOW)
    waiting = q.submit("diagnostic", SLOW)
    poll_until(host, q, job_id, lambda j: j.checkpoint.get("step", 0) >= 1)
    host.cancel(waiting)  # queued: cancelled at once, never started
    assert q.job(waiting).status == "cancelled" and q.job(waiting).attempts == 0
    t0 = time.monotonic()
    host.cancel(job_id)
    job = until_final(host, q, job_id)
    delay = time.monotonic() - t0
    print(f"cancel delay (cooperative job): {delay * 1000:.0f} ms")
    assert job.status == "cancelled" and job.error == ""
    assert delay < 5.0  # loose on purpose: the design aims under 1 s (measured ~0.05 s here)
    assert f"job {job_id} cancelled" in (q.work_dir(job_id) / "worker.log").read_text()


def test_a_job_that_ignores_the_cancel_is_killed(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", {**SLOW, "check_cancel": False})
    poll_until(host, q, job_id, lambda j: j.checkpoint.get("step", 0) >= 1)
    t0 = time.monotonic()
    host.cancel(job_id)
    job = until_final(host, q, job_id)
    delay = time.monotonic() - t0
    print(f"cancel delay (job that ignores it, SIGKILL after 0.5 s): {delay * 1000:.0f} ms")
    assert job.status == "cancelled" and delay < 5.0


def test_a_cancel_asked_from_another_process_reaches_the_child(
    host: WorkerHost, project_path: Path
) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", SLOW)
    poll_until(host, q, job_id, lambda j: j.checkpoint.get("step", 0) >= 1)
    with JobQueue(project_path) as other:  # e.g. the CLI, without the host's signals
        other.request_cancel(job_id)
    assert until_final(host, q, job_id).status == "cancelled"


def test_shutdown_interrupts_and_a_new_host_resumes_from_the_checkpoint(
    project_path: Path,
) -> None:
    first = WorkerHost(project_path)
    first.start()
    q = first.queue
    job_id = q.submit("diagnostic", {"action": "sleep", "seconds": 2.0, "steps": 20})
    poll_until(first, q, job_id, lambda j: j.checkpoint.get("step", 0) >= 2)
    first.shutdown()
    with JobQueue(project_path) as q:
        job = q.job(job_id)
        assert job.status == "interrupted" and job.checkpoint["step"] >= 2
        saved = job.checkpoint["step"]
    second = WorkerHost(project_path)
    try:
        assert second.start() == []  # already recorded as interrupted by the first
        second.queue.resume(job_id)
        job = until_final(second, second.queue, job_id)
    finally:
        second.shutdown()
    assert job.status == "done" and job.attempts == 2
    assert job.result["started_at_step"] >= saved > 0
    assert job.result["completed"] == 20 - job.result["started_at_step"]


def test_restart_runs_a_fresh_job(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", {"action": "sleep", "seconds": 0.4, "steps": 4}, "again")
    assert until_final(host, q, job_id).status == "done"
    fresh = q.restart(job_id)
    job = until_final(host, q, fresh)
    assert (job.status, job.title, job.result["started_at_step"]) == ("done", "again", 0)
    assert q.work_dir(fresh) != q.work_dir(job_id) and (q.work_dir(fresh) / "worker.log").exists()


def test_start_marks_jobs_of_a_dead_studio_interrupted(project_path: Path) -> None:
    with JobQueue(project_path) as q:
        job_id = q.submit("diagnostic", {})
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        assert q.claim(job_id, gone.pid)  # a child that died with its studio
    host = WorkerHost(project_path)
    try:
        assert host.start() == [job_id]
        assert host.queue.job(job_id).status == "interrupted"
    finally:
        host.shutdown()


STUDIO = textwrap.dedent(
    """
    import sys, time
    from studio.worker.host import WorkerHost
    host = WorkerHost(sys.argv[1])
    host.start()
    while True:
        host.poll()
        time.sleep(0.05)
    """
)


def test_a_child_whose_studio_died_stops_as_interrupted(project_path: Path) -> None:
    with JobQueue(project_path) as q:
        job_id = q.submit("diagnostic", SLOW)
        studio = subprocess.Popen([sys.executable, "-c", STUDIO, str(project_path)])
        try:
            job = poll_until(None, q, job_id, lambda j: j.checkpoint.get("step", 0) >= 1)
            studio.kill()  # the studio crashes; its child lives in its own session
            studio.wait()
            wait_gone(job.pid)  # the kernel's parent-death signal took the child with it
        finally:
            studio.kill()
            studio.wait()
        assert q.job(job_id).status == "running"  # nobody was left to record it
    host = WorkerHost(project_path)  # the next studio
    try:
        assert host.start() == [job_id]
        job = host.queue.job(job_id)
        assert job.status == "interrupted" and job.checkpoint["step"] >= 1
        host.queue.resume(job_id)
        job = poll_until(host, host.queue, job_id, lambda j: j.attempts == 2)
        assert job.checkpoint["step"] >= 1  # resumed from where the dead child left it
    finally:
        host.shutdown()


def test_flags_in_a_result_are_stored_when_the_job_is_done(host: WorkerHost) -> None:
    q = host.queue
    flag = {
        "id": "test-00012",
        "model": "blind",
        "confidence": 0.91,
        "seeds_correct": 3,
        "seeds": 3,
    }
    params = {
        "action": "sleep",
        "seconds": 0,
        "steps": 1,
        "puzzle_flags": {"set_id": 5, "flags": [flag]},
    }
    job_id = q.submit("diagnostic", params)
    assert until_final(host, q, job_id).status == "done"
    [stored] = q.flags(5)["test-00012"]
    assert (stored.job_id, stored.model, stored.confidence) == (job_id, "blind", 0.91)


def test_the_child_leaves_a_job_it_was_not_handed(project_path: Path) -> None:
    with JobQueue(project_path) as q:
        cancelled = q.submit("diagnostic", {})
        q.request_cancel(cancelled)
        by_hand = q.submit("diagnostic", {"action": "sleep", "seconds": 0, "steps": 1})
        cmd = [*worker_command(), "run", str(project_path)]
        out = subprocess.run([*cmd, str(cancelled)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 3 and "not handed" in out.stdout
        assert q.job(cancelled).status == "cancelled"
        out = subprocess.run(
            [*cmd, str(by_hand), "--claim"], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert q.job(by_hand).status == "done"
        out = subprocess.run(
            [*cmd[:-1], str(project_path.with_suffix(".nope")), "1"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2 and "project file not found" in out.stderr


def test_worker_command(monkeypatch: pytest.MonkeyPatch) -> None:
    assert worker_command() == [sys.executable, "-m", "studio.worker"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert worker_command() == [sys.executable, "worker"]
