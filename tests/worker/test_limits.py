"""Workers that cannot outlive or wedge the studio: a child dies with its studio even in native
code, a job over its memory limit or out of address space fails "out of memory", a job without
progress is marked stalled and can be cancelled, nothing a job started outlives it, and the
job rows keep each job's pid, peak memory and limit (format 6)."""

from __future__ import annotations

import resource
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest
from sqlalchemy import create_engine

from studio.store.jobs import JobQueue
from studio.store.migrations import FORMAT_VERSION, MIGRATIONS
from studio.store.project import Project
from studio.worker.child import job_lines
from studio.worker.host import WorkerHost
from studio.worker.limits import (
    MB,
    default_memory_limit,
    die_with_parent,
    out_of_memory_text,
    tree_rss,
    usage_text,
)

from .conftest import poll_until, until_final, wait_gone

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's"
)

STUDIO = textwrap.dedent(
    """
    import sys, threading, time
    from studio.worker.host import WorkerHost

    def drive():
        host = WorkerHost(sys.argv[1])
        host.start()
        while True:
            host.poll()
            time.sleep(0.05)

    if sys.argv[2] == "main":
        drive()
    else:  # a host driven from another thread: no parent-death signal, the watcher notices
        threading.Thread(target=drive, daemon=True).start()
        while True:
            time.sleep(1)
    """
)


def _studio(
    project_path: Path, thread: str = "main", preexec_fn: Callable[[], None] | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", STUDIO, str(project_path), thread], preexec_fn=preexec_fn
    )


@linux_only
def test_a_child_stuck_in_native_code_dies_with_its_studio(project_path: Path) -> None:
    with JobQueue(project_path) as q:
        job_id = q.submit("diagnostic", {"action": "hang"})
        studio = _studio(project_path)
        try:
            job = poll_until(None, q, job_id, lambda j: j.message == "hanging in native code")
            child = psutil.Process(job.pid)
            assert child.ppid() == studio.pid
            assert "--die-with-parent" in child.cmdline()
            studio.kill()  # SIGKILL: the studio cannot tell its child anything
            studio.wait()
            wait_gone(job.pid)  # holding the GIL, the child's own threads could not have
        finally:
            studio.kill()
            studio.wait()
    host = WorkerHost(project_path)
    try:
        assert host.start() == [job_id]  # the next studio records it, resumable
        assert host.queue.job(job_id).status == "interrupted"
    finally:
        host.shutdown()


def test_a_host_on_another_thread_leaves_it_to_the_watcher(project_path: Path) -> None:
    with JobQueue(project_path) as q:
        job_id = q.submit("diagnostic", {"action": "sleep", "seconds": 60.0, "steps": 600})
        studio = _studio(project_path, "thread")
        try:
            job = poll_until(None, q, job_id, lambda j: j.checkpoint.get("step", 0) >= 1)
            assert "--die-with-parent" not in psutil.Process(job.pid).cmdline()
            studio.kill()
            studio.wait()
            job = until_final(None, q, job_id)  # the child noticed and recorded it itself
        finally:
            studio.kill()
            studio.wait()
        assert job.status == "interrupted" and job.checkpoint["step"] >= 1
        wait_gone(job.pid)


@linux_only
def test_die_with_parent_refuses_a_parent_that_is_not_ours() -> None:
    code = "import os, sys; from studio.worker.limits import die_with_parent as d; "
    code += "sys.exit(0 if d(os.getppid()) and not d(os.getppid() + 1) else 1)"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
    if not sys.platform.startswith("linux"):
        assert not die_with_parent(None)


def test_a_job_over_its_memory_limit_is_killed_and_fails(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit(
        "diagnostic",
        {"action": "allocate", "chunk_mb": 8, "interval": 0.05, "memory_limit_mb": 200},
    )
    job = until_final(host, q, job_id)
    assert job.status == "failed"
    assert job.error.startswith("out of memory: used ")
    assert "limit 200 MB" in job.error
    used = float(job.error.split("used ")[1].split(" MB")[0])
    assert used > 200
    assert job.memory_limit == 200 * MB
    assert job.peak_rss is not None and job.peak_rss > 200 * MB
    wait_gone(job.pid)


def test_a_use_just_over_the_limit_never_reads_as_the_limit() -> None:
    assert usage_text(200.4 * MB, 200 * MB) == "used 200.4 MB, limit 200 MB"
    assert usage_text(250 * MB, 200 * MB) == "used 250 MB, limit 200 MB"


def test_the_host_limit_applies_when_the_job_names_none(project_path: Path) -> None:
    host = WorkerHost(project_path, memory_limit=180 * MB)
    host.start()
    try:
        q = host.queue
        job_id = q.submit("diagnostic", {"action": "allocate", "chunk_mb": 8})
        job = until_final(host, q, job_id)
        assert job.status == "failed" and "limit 180 MB" in job.error
        small = q.submit("diagnostic", {"action": "allocate", "chunk_mb": 8, "max_mb": 40})
        job = until_final(host, q, small)
        assert job.status == "done" and job.result["held_mb"] == 40
        assert 40 * MB < job.peak_rss < 180 * MB and job.memory_limit == 180 * MB
    finally:
        host.shutdown()
    assert WorkerHost(project_path).memory_limit == default_memory_limit()


def test_a_job_that_cannot_allocate_fails_instead_of_spinning(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", {"action": "allocate", "chunk_mb": 16, "headroom_mb": 120})
    job = until_final(host, q, job_id)
    assert job.status == "failed"
    assert job.error.startswith("out of memory: the job could not allocate memory (MemoryError")
    assert "(ulimit -v)" in job.error
    wait_gone(job.pid)


def _limit_address_space() -> None:
    limit = 300_000 * 1024  # the reviewer's `ulimit -v 300000`
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@linux_only
def test_a_studio_under_ulimit_v_ends_a_starved_job(project_path: Path) -> None:
    with JobQueue(project_path) as q:
        job_id = q.submit("diagnostic", {"action": "allocate", "chunk_mb": 16})
        studio = _studio(project_path, preexec_fn=_limit_address_space)
        try:
            job = until_final(None, q, job_id)
        finally:
            studio.kill()
            studio.wait()
    assert job.status == "failed" and job.error.startswith("out of memory")
    wait_gone(job.pid)


def test_a_job_without_progress_is_stalled_and_can_be_cancelled(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", {"action": "spin", "stall_seconds": 0.5})
    poll_until(host, q, job_id, lambda j: j.message == "spinning")  # its last progress
    job = poll_until(host, q, job_id, lambda j: j.stalled)
    assert job.status == "running" and job.message == "spinning" and job.stalled_at
    assert job.stalled_at > job.progress_at
    assert any("stalled" in line for line in job_lines(q.path))
    host.cancel(job_id)
    job = until_final(host, q, job_id)
    assert job.status == "cancelled" and not job.stalled


def test_progress_clears_a_stall_and_heartbeats_do_not(queue: JobQueue) -> None:
    job_id = queue.submit("diagnostic", {})
    assert queue.claim(job_id, 4242, memory_limit=100 * MB)
    future = (datetime.now(UTC) + timedelta(seconds=60)).isoformat(timespec="milliseconds")
    past = (datetime.now(UTC) - timedelta(seconds=60)).isoformat(timespec="milliseconds")
    assert not queue.mark_stalled(job_id, past)  # it started after the cutoff
    queue.set_progress(job_id, 0.25, "step 1")
    assert queue.mark_stalled(job_id, future)
    assert not queue.mark_stalled(job_id, future)  # once
    queue.heartbeat(job_id)
    queue.set_progress(job_id, 0.25, "step 1")  # the same report again: only a beat
    assert queue.job(job_id).stalled
    queue.set_progress(job_id, 0.5, "step 2")
    job = queue.job(job_id)
    assert not job.stalled and job.progress_at is not None
    assert queue.mark_stalled(job_id, future)
    queue.save_checkpoint(job_id, {"step": 2})  # a saved unit is progress too
    assert not queue.job(job_id).stalled
    [state] = queue.running_state()
    assert (state.id, state.pid, state.stalled_at) == (job_id, 4242, None)
    queue.record_peak_memory(job_id, 300 * MB)
    queue.record_peak_memory(job_id, 200 * MB)  # never lowered
    job = queue.job(job_id)
    assert (job.peak_rss, job.memory_limit) == (300 * MB, 100 * MB)
    assert queue.finish(job_id, "failed", error="x")
    assert queue.resume(job_id) is None and queue.claim(job_id, 4343)
    job = queue.job(job_id)  # a new attempt starts afresh
    assert (job.peak_rss, job.memory_limit, job.progress_at, job.stalled_at) == (
        None,
        None,
        None,
        None,
    )


def test_nothing_a_job_started_outlives_it(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", {"action": "raise", "helper_seconds": 120})
    job = until_final(host, q, job_id)
    assert job.status == "failed"
    [line] = [x.line for x in q.logs(job_id) if "helper process" in x.line]
    helper = int(line.rsplit(" ", 1)[1])
    poll_until(host, q, job_id, lambda j: not host.running_jobs())
    wait_gone(helper)


def test_the_host_watches_pid_and_memory(host: WorkerHost) -> None:
    q = host.queue
    job_id = q.submit("diagnostic", {"action": "allocate", "chunk_mb": 8, "max_mb": 10_000})
    poll_until(host, q, job_id, lambda j: "holding 64 MB" in j.message or j.progress > 0.01)
    [watched] = host.watched()
    assert watched.job_id == job_id and watched.pid == q.job(job_id).pid
    assert watched.peak_rss >= watched.rss > 0 and watched.memory_limit == host.memory_limit
    assert tree_rss(watched.pid) > 0
    lines = job_lines(q.path)
    assert lines[0].split()[:4] == ["id", "kind", "status", "pid"]
    assert str(watched.pid) in lines[1] and "running" in lines[1]
    host.cancel(job_id)
    job = until_final(host, q, job_id)
    assert job.status == "cancelled" and job.peak_rss is not None and job.peak_rss > 64 * MB


def test_out_of_memory_words() -> None:
    try:
        try:
            raise MemoryError()
        except MemoryError as e:
            raise RuntimeError("loading failed") from e
    except RuntimeError as e:
        text = out_of_memory_text(e)
    assert text is not None and text.startswith("out of memory: the job could not allocate")
    err = OSError("libtorch_cpu.so: failed to map segment from shared object")
    assert "failed to map segment" in (out_of_memory_text(err) or "")
    assert out_of_memory_text(ValueError("bad input")) is None


def test_format_6_migration_adds_the_columns_once(project_path: Path, tmp_path: Path) -> None:
    con = sqlite3.connect(project_path)
    columns = {r[1] for r in con.execute("PRAGMA table_info(jobs)")}
    con.close()
    assert {"peak_rss", "memory_limit", "progress_at", "stalled_at"} <= columns
    engine = create_engine(f"sqlite:///{project_path}")
    with engine.begin() as conn:
        MIGRATIONS[5](conn)  # run again on a file that has them: nothing changes, no error
    engine.dispose()
    # a format-5 file (the columns dropped) is upgraded when opened
    old = tmp_path / "old.studio"
    con = sqlite3.connect(project_path)
    con.execute(f"VACUUM INTO '{old}'")
    con.close()
    con = sqlite3.connect(old)
    for name in ("peak_rss", "memory_limit", "progress_at", "stalled_at"):
        con.execute(f"ALTER TABLE jobs DROP COLUMN {name}")
    con.execute("UPDATE meta SET value='5' WHERE key='format_version'")
    con.execute("INSERT INTO jobs (kind, created_at) VALUES ('diagnostic', 'then')")
    con.commit()
    con.close()
    with Project.open(old) as p:
        assert p.format_version == FORMAT_VERSION
    with JobQueue(old) as q:
        [job] = q.jobs()
        assert (job.peak_rss, job.memory_limit, job.stalled_at, job.stalled) == (
            None,
            None,
            None,
            False,
        )


def test_a_childs_peak_is_its_own_not_its_parents() -> None:
    """``ru_maxrss`` survives ``exec``: a worker started by a big studio must not report the
    studio's memory as its own peak."""
    import subprocess
    import sys

    import numpy as np

    held = np.ones(300 * MB, dtype=np.uint8)  # the parent holds 300 MB when it starts the child
    out = subprocess.run(
        [sys.executable, "-c", "from studio.worker.limits import *; print(own_peak_rss())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert held.sum() == 300 * MB
    assert int(out.stdout) < 150 * MB
