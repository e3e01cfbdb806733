"""The worker child: one process runs one job that the host has claimed for it, then exits.

``python -m studio.worker run PROJECT JOB_ID [--parent-pid PID]`` (``analogy-studio worker run
...`` in the bundle). The host claims the job with this process's pid before (or just after) it
starts; the child waits a moment for that claim and leaves a job it does not own untouched. It
runs the kind's function with a :class:`~studio.worker.context.DbContext` whose work folder is
``<project>.jobs/<job_id>/``, and records the end itself:

- ``done`` with the function's result (its ``puzzle_flags`` stored with it);
- ``cancelled`` on :class:`~studio.worker.context.JobCancelled` (the job saw the database flag
  or SIGTERM, which the child turns into a cancel);
- ``interrupted`` when the studio (``--parent-pid``) died while the job ran;
- ``failed`` with the exception and the tail of its traceback.

A death the child cannot record (SIGKILL, ``os._exit``, a segfault) is recorded by the host.
stdout and stderr go to ``worker.log`` in the work folder (the host opens it).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
from studio.store.jobs import JobQueue, JobRecord
from studio.worker.context import DbContext, JobCancelled
from studio.worker.kinds import resolve_kind

__all__ = ["failure_text", "main", "run_claimed_job"]

#: Exit codes: 0 done; 1 failed, cancelled or interrupted (recorded); 2 the project cannot be
#: opened; 3 the job was not handed to this process.
EXIT_DONE, EXIT_ENDED, EXIT_NO_PROJECT, EXIT_NOT_MINE = 0, 1, 2, 3


def failure_text(error: BaseException, limit: int = 4000) -> str:
    """``Type: message`` and the tail of the traceback (the frames nearest the error)."""
    head = f"{type(error).__name__}: {error}"
    frames = "".join(traceback.format_exception(error)).rstrip()
    if len(frames) > limit:
        frames = "…" + frames[-limit:]
    return f"{head}\n\n{frames}"


def _wait_for_claim(queue: JobQueue, job_id: int, timeout: float) -> JobRecord | None:
    me = os.getpid()
    deadline = time.monotonic() + timeout
    while True:
        job = queue.job(job_id)
        if job is None:
            return None
        if job.status == "running" and job.pid == me:
            return job
        if job.status != "queued" or time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def run_claimed_job(
    project_path: str | Path,
    job_id: int,
    *,
    parent_pid: int | None = None,
    claim: bool = False,
    claim_timeout: float = 15.0,
) -> int:
    """Run job ``job_id`` of the project in this process and record how it ended; returns the
    exit code. With ``claim`` the child claims the job itself (to run one by hand)."""
    try:
        queue = JobQueue(project_path)
    except StudioError as e:
        print(f"worker: {e}", file=sys.stderr, flush=True)
        return EXIT_NO_PROJECT
    try:
        if claim:
            queue.claim(job_id, os.getpid())
        job = _wait_for_claim(queue, job_id, claim_timeout)
        if job is None:
            print(f"worker: job {job_id} was not handed to process {os.getpid()}", flush=True)
            return EXIT_NOT_MINE
        return _run(queue, job, Path(project_path), parent_pid)
    finally:
        queue.close()


def _run(queue: JobQueue, job: JobRecord, project_path: Path, parent_pid: int | None) -> int:
    ctx = DbContext(queue, job, queue.work_dir(job.id), project_path)
    previous = {
        sig: signal.signal(sig, lambda *_: ctx.request_stop("cancelled"))
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    print(
        f"worker: job {job.id} ({job.kind}, attempt {job.attempts}) in process {os.getpid()}",
        flush=True,
    )
    status, result, error = "failed", None, ""
    ctx.start(parent_pid)
    try:
        fn = resolve_kind(job.kind)
        value: Any = fn(ctx)
        if not isinstance(value, dict):
            raise TypeError(f"job kind {job.kind!r} returned {type(value).__name__}, not a dict")
        status, result = "done", value
    except JobCancelled:
        status = "interrupted" if ctx.stop_reason == "interrupted" else "cancelled"
    except BaseException as e:  # anything the job raises (or exits with) ends it as failed
        error = failure_text(e)
        print(error, file=sys.stderr, flush=True)
    finally:
        try:
            ctx.close()
        except Exception as e:  # the record below matters more than the last progress
            print(f"worker: could not write the last progress: {e}", file=sys.stderr, flush=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    try:
        queue.finish(job.id, status, result, error, pid=os.getpid())
    except StudioError as e:  # a result that is not JSON, a malformed flag
        status = "failed"
        queue.finish(job.id, "failed", None, f"the job's result cannot be stored: {e}")
    print(f"worker: job {job.id} {status}", flush=True)
    return EXIT_DONE if status == "done" else EXIT_ENDED


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; ``argv`` excludes the program (and, in the bundle, the ``worker`` word)."""
    parser = argparse.ArgumentParser(
        prog="analogy-studio worker", description="Run one background job of a project."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a job the studio claimed for this process")
    run.add_argument("project", type=Path)
    run.add_argument("job_id", type=int)
    run.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="stop (as interrupted) when this process, the studio, dies",
    )
    run.add_argument(
        "--claim", action="store_true", help="claim the queued job here (to run one by hand)"
    )
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_claimed_job(args.project, args.job_id, parent_pid=args.parent_pid, claim=args.claim)
