"""Workers on other machines (issue 17), on SQLite AND PostgreSQL: claims raced by threads and
processes, heartbeats on the database server's clock, lost workers' jobs requeued, a job of
another machine never taken for dead because its pid is not alive here, and ``worker serve``
killed (SIGKILL: its job comes back and a second worker finishes it) or stopped (SIGTERM: its
job goes back to the queue)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

import studio.store.jobs as jobs_module
from studio.store.dbfile import open_engine
from studio.store.jobs import JobQueue, job_work_dir, machine_name, worker_machine, worker_name
from studio.worker.host import WorkerHost
from tests.worker.conftest import create_project

DEADLINE = 60.0  # bounded waits on conditions, never a timed assertion


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh project: a file, or a database on the session's throwaway PostgreSQL server."""
    if request.param == "sqlite":
        loc = str(tmp_path / "remote.studio")
    else:
        loc = request.getfixturevalue("pg_database")
    create_project(loc)
    return loc


@pytest.fixture
def queue(location: str) -> Iterator[JobQueue]:
    q = JobQueue(location)
    yield q
    q.close()


def wait_for(what: str, check, deadline: float = DEADLINE):  # type: ignore[no-untyped-def]
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {deadline} s")
        time.sleep(0.05)


def test_claim_next_takes_the_oldest_and_hands_it_over(queue: JobQueue) -> None:
    first, second = queue.submit("diagnostic", {}), queue.submit("diagnostic", {})
    me = worker_name(machine="gpu-box-1")
    assert me == f"gpu-box-1 · pid {os.getpid()}" and worker_machine(me) == "gpu-box-1"
    job = queue.claim_next(me)
    assert job is not None
    assert (job.id, job.status, job.worker, job.pid, job.attempts) == (
        first,
        "running",
        me,
        None,
        1,
    )
    assert job.claimed_at and job.heartbeat_at and job.machine == "gpu-box-1"
    assert not queue.attach(first, "someone else · pid 1", 4242, memory_limit=None)
    assert queue.attach(first, me, 4242, memory_limit=100)
    assert not queue.attach(first, me, 4343, memory_limit=100)  # handed over once
    assert queue.job(first).pid == 4242
    queue.request_cancel(second)
    assert queue.claim_next(me) is None  # nothing queued: the cancelled one is not started
    # the child ends it only as its worker's process
    assert not queue.finish(first, "done", {}, pid=4242, worker="someone else · pid 1")
    assert queue.finish(first, "done", {"ok": True}, pid=4242, worker=me)


def _claim_all(location: str, worker: str, won: list[int]) -> None:
    with JobQueue(location) as q:
        while (job := q.claim_next(worker, 1)) is not None:
            won.append(job.id)


def test_claims_raced_by_threads_are_won_once(location: str, queue: JobQueue) -> None:
    n = 80
    for _ in range(n):
        queue.submit("diagnostic", {})
    results: list[list[int]] = [[] for _ in range(6)]
    threads = [
        threading.Thread(target=_claim_all, args=(location, f"box-{i} · pid 1", results[i]))
        for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE)
    won = sorted(x for r in results for x in r)
    assert won == list(range(1, n + 1))  # each job exactly once
    for i, r in enumerate(results):
        assert all(queue.job(j).worker == f"box-{i} · pid 1" for j in r)


CLAIMER = textwrap.dedent(
    """
    import os, sys
    from studio.store.jobs import JobQueue, worker_name
    q = JobQueue(sys.argv[1])
    me = worker_name(machine=sys.argv[2])
    won = []
    while (job := q.claim_next(me, os.getpid())) is not None:
        won.append(job.id)
        q.log(job.id, "claimed by " + me)
    print(",".join(map(str, won)))
    """
)


def test_claims_raced_by_processes_are_won_once(location: str, queue: JobQueue) -> None:
    n = 120
    for _ in range(n):
        queue.submit("diagnostic", {})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, location, f"box-{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    won: list[int] = []
    for p in procs:
        out, err = p.communicate(timeout=DEADLINE)
        assert p.returncode == 0, err
        won += [int(x) for x in out.strip().split(",") if x]
    assert sorted(won) == list(range(1, n + 1))
    for job in queue.jobs():
        [line] = queue.logs(job.id)
        assert job.status == "running" and line.line == f"claimed by {job.worker}"


def test_a_lost_worker_s_job_goes_back_to_the_queue(queue: JobQueue, location: str) -> None:
    lost_job, live_job = queue.submit("diagnostic", {}), queue.submit("diagnostic", {})
    gone, alive = "gpu-box-1 · pid 11", "gpu-box-2 · pid 22"
    assert queue.claim(lost_job, 111, worker=gone) and queue.claim(live_job, 222, worker=alive)
    queue.save_checkpoint(lost_job, {"step": 3})
    assert queue.requeue_dead(20.0) == []  # both beat just now
    engine = open_engine(location)
    with engine.begin() as conn:  # a heartbeat a minute old, as the rows store times
        old = (datetime.now(UTC) - timedelta(seconds=60)).isoformat(timespec="milliseconds")
        conn.execute(text("UPDATE jobs SET heartbeat_at=:t"), {"t": old})
    engine.dispose()
    assert queue.heartbeat_worker(alive) == 1  # one worker is still there
    assert queue.requeue_dead(20.0, keep="me · pid 1") == [(lost_job, gone)]
    job = queue.job(lost_job)
    assert (job.status, job.pid, job.worker, job.checkpoint, job.attempts) == (
        "queued",
        None,
        "",
        {"step": 3},
        1,
    )
    assert any(f"worker {gone} lost" in x.line for x in queue.logs(lost_job))
    assert queue.job(live_job).status == "running"
    assert queue.requeue_dead(20.0) == []  # once
    again = queue.claim_next("gpu-box-3 · pid 33")
    assert again is not None and again.id == lost_job and again.attempts == 2
    assert again.checkpoint == {"step": 3}  # it resumes


def test_another_machine_s_job_is_not_interrupted_here(location: str, queue: JobQueue) -> None:
    """The studio's host decides a local job is dead from its pid; a pid means nothing for a
    job another machine runs (its heartbeat tells), so that job keeps running."""
    remote, local = queue.submit("diagnostic", {}), queue.submit("diagnostic", {})
    assert queue.claim(remote, 99_999_999, worker="far-away-box · pid 5")
    assert queue.claim(local, 99_999_998, worker=worker_name(7, machine_name()))
    host = WorkerHost(location)
    try:
        assert host.start() == [local]
        assert queue.job(remote).status == "running"
        assert queue.job(local).status == "interrupted"
    finally:
        host.shutdown()
    assert queue.job(remote).status == "running"  # nor is it touched when the studio closes


def test_heartbeats_use_the_database_clock(
    queue: JobQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This machine's clock is an hour behind. On PostgreSQL the server's clock writes the
    heartbeats and computes the cut-offs, so a live job is never requeued; on SQLite (one
    machine) the machine's clock is the clock."""
    skewed = datetime.now(UTC) - timedelta(hours=1)
    monkeypatch.setattr(
        jobs_module,
        "_now",
        lambda offset_s=0.0: (skewed + timedelta(seconds=offset_s)).isoformat(
            timespec="milliseconds"
        ),
    )
    job_id = queue.submit("diagnostic", {})
    job = queue.claim_next("skewed-box · pid 1", 1)
    assert job is not None and job.heartbeat_at is not None
    queue.heartbeat_worker("skewed-box · pid 1")
    beat = datetime.fromisoformat(queue.job(job_id).heartbeat_at or "")
    if queue.dialect == "postgresql":
        server_now = datetime.fromisoformat(queue.now())
        assert abs((server_now - beat).total_seconds()) < 30
        assert abs((beat - skewed).total_seconds()) > 3000
    else:
        assert abs((beat - skewed).total_seconds()) < 30
    assert queue.requeue_dead(20.0) == []
    assert not queue.mark_stalled(job_id, 60.0)
    assert queue.job(job_id).status == "running"


# ---- worker serve, as a process --------------------------------------------------------------
def _serve(location: str, name: str, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    with open(log, "wb") as err:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "studio.worker.serve", "--db", location, "--name", name, *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=DEADLINE)


def test_a_killed_worker_s_job_is_finished_by_another(
    location: str, queue: JobQueue, tmp_path: Path
) -> None:
    job_id = queue.submit("diagnostic", {"seconds": 8, "steps": 8}, "slow")
    fast = ("--heartbeat", "1", "--dead-after", "4")
    a = _serve(location, "box-a", tmp_path / "a.log", *fast)
    b: subprocess.Popen[bytes] | None = None
    try:
        job = wait_for(
            "box-a runs the job past its first checkpoint",
            lambda: (j := queue.job(job_id)) and j.checkpoint.get("step", 0) >= 1 and j,
        )
        assert job.status == "running" and job.machine == "box-a" and job.pid is not None
        b = _serve(location, "box-b", tmp_path / "b.log", *fast)
        wait_for("box-b serves", lambda: "serves" in (tmp_path / "b.log").read_text())
        killed_at = time.monotonic()
        os.kill(a.pid, signal.SIGKILL)  # the machine dies: no goodbye
        a.wait(timeout=DEADLINE)
        back = wait_for(
            "box-b takes the job over",
            lambda: (j := queue.job(job_id)) and j.machine == "box-b" and j,
        )
        print(f"requeued and claimed {time.monotonic() - killed_at:.1f} s after the kill")
        assert back.attempts == 2
        done = wait_for("the job ends", lambda: (j := queue.job(job_id)) and j.final and j)
        assert done.status == "done", done.error
        assert done.result is not None and done.result["started_at_step"] >= 1  # resumed
        assert any("worker box-a · pid" in x.line and "lost" in x.line for x in queue.logs(job_id))
        log_b = wait_for(
            "box-b logs the end",
            lambda: f"job {job_id} done" in (t := (tmp_path / "b.log").read_text()) and t,
        )
        assert "box-b: " in log_b and f"job {job_id}: worker box-a" in log_b
    finally:
        _stop(a)
        if b is not None:
            b.send_signal(signal.SIGTERM)
            _stop_after_term(b)


def _stop_after_term(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(timeout=DEADLINE)
    finally:
        _stop(proc)


def test_sigterm_puts_the_running_job_back_in_the_queue(
    location: str, queue: JobQueue, tmp_path: Path
) -> None:
    job_id = queue.submit("diagnostic", {"seconds": 60, "steps": 60}, "long")
    log = tmp_path / "serve.log"
    proc = _serve(location, "box-t", log, "--heartbeat", "1")
    try:
        wait_for(
            "the job passes its first checkpoint",
            lambda: (j := queue.job(job_id)) and j.checkpoint.get("step", 0) >= 1,
        )
        child = queue.job(job_id).pid
        proc.send_signal(signal.SIGTERM)
        assert _stop_after_term(proc) == 0
    finally:
        _stop(proc)
    job = queue.job(job_id)
    assert (job.status, job.worker, job.pid, job.attempts) == ("queued", "", None, 1)
    assert job.checkpoint["step"] >= 1  # resumable
    text_log = log.read_text()
    assert "stopping (SIGTERM)" in text_log and f"job {job_id}: back in the queue" in text_log
    assert child is not None
    wait_for("the child is gone", lambda: not _alive(child))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie nobody reaps counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_serve_once_runs_the_queue_and_exits(
    location: str, queue: JobQueue, tmp_path: Path
) -> None:
    first = queue.submit("diagnostic", {"seconds": 0.2, "steps": 2})
    second = queue.submit("diagnostic", {"action": "raise"})
    log = tmp_path / "once.log"
    proc = _serve(location, "box-o", log, "--once")
    try:
        assert proc.wait(timeout=DEADLINE) == 0
    finally:
        _stop(proc)
    assert queue.job(first).status == "done" and queue.job(second).status == "failed"
    assert queue.job(first).machine == "box-o"
    assert "nothing queued: done (--once)" in log.read_text()


def test_a_url_project_keeps_job_files_in_this_user_s_cache(location: str) -> None:
    folder = job_work_dir(location, 7)
    if location.startswith("postgresql"):
        assert folder.name == "7" and "jobs" in folder.parts and "analogy-studio" in str(folder)
        assert job_work_dir(location.replace("postgres@", "postgres:secret@"), 7) == folder
    else:
        assert folder == Path(f"{location}.jobs") / "7"
