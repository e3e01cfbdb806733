"""Fresh projects and polling helpers for the worker tests (real SQLite, real processes)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from studio.core.schema import bundled_schema_path, load_schema
from studio.store.jobs import JobQueue, JobRecord
from studio.store.project import Project
from studio.worker.host import WorkerHost

DEADLINE = 20.0  # generous: the machine may be busy; the tests wait on conditions, not times


def create_project(location: str | Path) -> None:
    """A fresh project (file or database URL) with the bundled schema."""
    Project.create(location, load_schema(bundled_schema_path()), author="ann").close()


@pytest.fixture
def project_path(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.studio"
    create_project(path)
    return path


@pytest.fixture
def queue(project_path: Path) -> Iterator[JobQueue]:
    q = JobQueue(project_path)
    yield q
    q.close()


@pytest.fixture
def host(project_path: Path) -> Iterator[WorkerHost]:
    h = WorkerHost(project_path)
    h.start()
    yield h
    h.shutdown()


def poll_until(
    host: WorkerHost | None,
    queue: JobQueue,
    job_id: int,
    done: Callable[[JobRecord], bool],
    deadline: float = DEADLINE,
) -> JobRecord:
    """Poll the host (when given) until ``done(job)`` holds; fails the test after ``deadline``."""
    end = time.monotonic() + deadline
    while True:
        if host is not None:
            host.poll()
        job = queue.job(job_id)
        assert job is not None
        if done(job):
            return job
        if time.monotonic() > end:
            raise AssertionError(f"job {job_id} still {job.status} after {deadline} s: {job}")
        time.sleep(0.02)


def until_final(host: WorkerHost | None, queue: JobQueue, job_id: int) -> JobRecord:
    return poll_until(host, queue, job_id, lambda j: j.final)


def wait_gone(pid: int, deadline: float = DEADLINE) -> None:
    """Wait until process ``pid`` is gone (or a zombie nobody reaps); fails after ``deadline``."""
    end = time.monotonic() + deadline
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        if time.monotonic() > end:
            raise AssertionError(f"process {pid} still runs after {deadline} s")
        time.sleep(0.02)
