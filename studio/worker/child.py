"""The worker child: one process runs one job that the host has claimed for it, then exits.

``python -m studio.worker run PROJECT JOB_ID [--parent-pid PID [--die-with-parent]]
[--device DEVICE]`` (``analogy-studio worker run ...`` in the bundle); ``run PROJECT --spare``
starts warm and waits for the job (:func:`await_job`). PROJECT is a project file
or a database URL; a URL that carries a password comes in the environment
(:data:`~studio.worker.host.LOCATION_ENV`), never on the command line. The host claims the job
and hands it to this process's pid just after it starts; the child waits a moment for that and
leaves a job it does not own untouched. It runs the kind's function with a
:class:`~studio.worker.context.DbContext` whose work folder is
:func:`~studio.store.jobs.job_work_dir` (``<project>.jobs/<job_id>/`` beside a file), and
records the end itself (only while the job is still this process's: a job requeued as lost and
claimed by another worker is not ended here):

- ``done`` with the function's result (its ``puzzle_flags`` stored with it);
- ``cancelled`` on :class:`~studio.worker.context.JobCancelled` (the job saw the database flag
  or SIGTERM, which the child turns into a cancel);
- ``interrupted`` when the studio (``--parent-pid``) died while the job ran;
- ``failed`` with the exception and the tail of its traceback; "out of memory: ..." first when
  the job could not allocate (a ``MemoryError``, a library that no longer maps under
  ``ulimit -v``): a little memory is held back from the start and let go before the failure is
  written, so writing it does not fail the same way.

A death the child cannot record (SIGKILL, ``os._exit``, a segfault) is recorded by the host.
With ``--die-with-parent`` (Linux) the kernel kills the child when the studio dies, even while
the job is stuck in native code; the next studio start records the job interrupted (resumable
from its checkpoint). Without it (other systems) the watcher thread notices the studio's death
and stops the job cooperatively, and ends the process itself when the job does not stop in
:data:`~studio.worker.context.INTERRUPT_GRACE` seconds. After recording its end the child
leaves with ``os._exit``: no non-daemon thread a library started, nor an ``atexit`` hook, can
keep a finished worker alive. stdout and stderr go to ``worker.log`` in the work folder (the
host opens it). ``python -m studio.worker list PROJECT`` prints the project's jobs with their
pid, peak memory, memory limit and whether they are stalled.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from studio.core.errors import StudioError
from studio.store.dbfile import is_database_url, safe_location
from studio.store.jobs import JobQueue, JobRecord, job_work_dir
from studio.worker.context import DbContext, JobCancelled
from studio.worker.kinds import resolve_kind
from studio.worker.limits import die_with_parent, mb, out_of_memory_text, own_peak_rss

__all__ = ["await_job", "failure_text", "job_lines", "main", "output_to", "run_claimed_job"]

#: Exit codes: 0 done; 1 failed, cancelled or interrupted (recorded); 2 the project cannot be
#: opened; 3 the job was not handed to this process.
EXIT_DONE, EXIT_ENDED, EXIT_NO_PROJECT, EXIT_NOT_MINE = 0, 1, 2, 3
#: Bytes held back from the start and let go before a failure is recorded (formatting the
#: traceback and writing the row need memory the job may have used up).
_RESERVE_BYTES = 4 * 1024 * 1024


def failure_text(error: BaseException, limit: int = 4000) -> str:
    """``Type: message`` and the tail of the traceback (the frames nearest the error); an
    error that means the process ran out of memory is named so first."""
    head = f"{type(error).__name__}: {error}"
    oom = out_of_memory_text(error)
    if oom is not None:
        head = f"{oom}\n{head}"
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
        # queued, or claimed by the host and not yet handed over (no pid): wait for it
        waiting = job.status == "queued" or (job.status == "running" and job.pid is None)
        if not waiting or time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def resolve_location(project: str | Path) -> str | Path:
    """The project a child was given: a file path as is; a URL without its password is
    completed from :data:`~studio.worker.host.LOCATION_ENV` when that names the same database
    (the host puts a URL with a password there, off the command line)."""
    from studio.worker.host import LOCATION_ENV

    full = os.environ.get(LOCATION_ENV, "")
    if is_database_url(str(project)):
        if full and safe_location(full) == safe_location(str(project)):
            return full
        return str(project)
    return Path(project)


def run_claimed_job(
    project_path: str | Path,
    job_id: int,
    *,
    parent_pid: int | None = None,
    claim: bool = False,
    claim_timeout: float = 15.0,
    device: str | None = None,
) -> int:
    """Run job ``job_id`` of the project (a file or a database URL) in this process and record
    how it ended; returns the exit code. With ``claim`` the child claims the job itself (to
    run one by hand). ``device``: what the job gets when it asks for ``auto``."""
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
        return _run(queue, job, project_path, parent_pid, device)
    finally:
        queue.close()


def _run(
    queue: JobQueue,
    job: JobRecord,
    project_path: str | Path,
    parent_pid: int | None,
    device: str | None = None,
) -> int:
    reserve: bytearray | None = bytearray(_RESERVE_BYTES)
    ctx = DbContext(queue, job, queue.work_dir(job.id), project_path, default_device=device)
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
        reserve = None  # let the held-back memory go: the lines below need some
        gc.collect()
        try:
            error = failure_text(e)
        except MemoryError:
            error = out_of_memory_text(e) or f"{type(e).__name__} (no memory left to say more)"
        _print_err(error)
    finally:
        try:
            ctx.close()
        except Exception as e:  # the record below matters more than the last progress
            print(f"worker: could not write the last progress: {e}", file=sys.stderr, flush=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    del reserve
    try:
        queue.record_peak_memory(job.id, own_peak_rss())
    except Exception as e:  # the peak is bookkeeping; the end below is what matters
        print(f"worker: could not record the peak memory: {e}", file=sys.stderr, flush=True)
    try:
        _finish(queue, job, status, result, error)
    except StudioError as e:  # a result that is not JSON, a malformed flag
        status = "failed"
        _finish(queue, job, "failed", None, f"the job's result cannot be stored: {e}")
    print(f"worker: job {job.id} {status}", flush=True)
    return EXIT_DONE if status == "done" else EXIT_ENDED


def _print_err(text: str) -> None:
    """Print to stderr (worker.log); a full disk or a closed stream is not worth a crash."""
    with suppress(OSError, ValueError, MemoryError):
        print(text, file=sys.stderr, flush=True)


def _finish(
    queue: JobQueue, job: JobRecord, status: str, result: dict[str, Any] | None, error: str
) -> None:
    """Record the end, once more after a garbage collection when memory or the file failed
    (a locked file, an allocation); a second failure leaves it to the host, which records how
    the process ended and the tail of worker.log."""
    try:
        queue.finish(job.id, status, result, error, pid=os.getpid(), worker=job.worker)
    except StudioError:
        raise
    except Exception:
        gc.collect()
        time.sleep(0.2)
        queue.finish(job.id, status, result, error, pid=os.getpid(), worker=job.worker)


def job_lines(project_path: str | Path, limit: int | None = 50) -> list[str]:
    """The project's newest jobs, one line each: id, kind, status (``running, stalled`` when no
    progress came for its stall time), pid, peak memory and limit, progress and message."""
    with JobQueue(project_path) as queue:
        jobs = queue.jobs(limit)
    lines = [f"{'id':>5}  {'kind':<10} {'status':<17} {'pid':>7} {'peak/limit MB':>15}  progress"]
    for j in jobs:
        status = "running, stalled" if j.stalled else j.status
        peak = "-" if j.peak_rss is None else str(mb(j.peak_rss))
        limit_mb = "-" if j.memory_limit is None else str(mb(j.memory_limit))
        memory = f"{peak}/{limit_mb}"
        pid = "-" if j.pid is None else str(j.pid)
        msg = f"  {j.message}" if j.message else ""
        lines.append(
            f"{j.id:>5}  {j.kind[:10]:<10} {status:<17} {pid:>7} {memory:>15}"
            f"  {j.progress:4.0%}{msg}"
        )
    return lines


def await_job(device: str | None, stdin: IO[str] | None = None) -> int | None:
    """A warm spare's wait (``run --spare``): start what a job of this worker starts
    (:func:`~studio.worker.kinds.warm_kinds`: torch, the GPU's context and kernels, the job
    kinds' modules), say so, then read the id of the job to run, one line from the host.
    None at the end of input (the host closed the pipe: it stopped, or let this spare go).

    A baseline job's first seconds on a GPU server are imports and the GPU's start, not its
    work: on the H200 server measured, importing torch took 3.5–5.4 s and the GPU's context
    and first kernels 1.2 s, of a 13.4 s job. A ``worker serve`` keeps one spare ready, so a
    queued job starts with them done (the job itself is unchanged: it runs as ``run JOB_ID``
    would)."""
    from studio.worker.kinds import warm_kinds

    start = time.perf_counter()
    for problem in warm_kinds(device or "auto"):
        print(f"worker: warm spare: {problem}", flush=True)
    print(f"worker: warm spare ready in {time.perf_counter() - start:.1f} s", flush=True)
    line = (stdin if stdin is not None else sys.stdin).readline().strip()
    if not line:
        return None
    try:
        return int(line)
    except ValueError:
        print(f"worker: warm spare: {line!r} is not a job id", flush=True)
        return None


def output_to(path: Path) -> None:
    """Point this process's stdout and stderr (the descriptors, so native code's output and
    that of any process it starts from now on go there too) at the end of ``path``: a warm
    spare's output goes to the log of the job it was handed. (The split readers' fork server,
    which the spare started while it warmed, keeps writing where the spare did: the
    server's log.)"""
    path.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError, AttributeError):
            stream.flush()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # the umask decides
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)


def _exit_now(code: int) -> None:
    """Leave at once after the job's end is recorded: a library's non-daemon thread or an
    ``atexit`` hook must not keep a finished worker alive (nor spin in it)."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; ``argv`` excludes the program (and, in the bundle, the ``worker`` word)."""
    parser = argparse.ArgumentParser(
        prog="analogy-studio worker", description="Run one background job of a project."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a job the studio claimed for this process")
    run.add_argument("project", help="the project file or database URL")
    run.add_argument("job_id", type=int, nargs="?", default=None)
    run.add_argument(
        "--spare",
        action="store_true",
        help="start warm (torch, the GPU, the job kinds' modules), then run the job whose id "
        "and log file arrive on stdin (a worker keeps one such process ready)",
    )
    run.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="stop (as interrupted) when this process, the studio, dies",
    )
    run.add_argument(
        "--die-with-parent",
        action="store_true",
        help="(Linux) have the kernel kill this process when --parent-pid's thread ends",
    )
    run.add_argument(
        "--claim", action="store_true", help="claim the queued job here (to run one by hand)"
    )
    run.add_argument(
        "--device", default=None, help="what a job asking for 'auto' gets (the worker's device)"
    )
    from studio.worker.serve import add_serve_arguments

    serving = sub.add_parser(
        "serve", help="serve a project's job queue from this machine (a lab's GPU server)"
    )
    add_serve_arguments(serving)
    listing = sub.add_parser("list", help="the project's jobs: pid, peak memory, stalled")
    listing.add_argument("project", help="the project file or database URL")
    listing.add_argument("--limit", type=int, default=50)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command == "serve":
        from studio.worker.serve import cmd_serve

        try:
            return cmd_serve(args)
        except StudioError as e:
            print(f"analogy-studio: error: {e}", file=sys.stderr)
            return EXIT_NO_PROJECT
    if args.command == "list":
        try:
            print("\n".join(job_lines(resolve_location(args.project), args.limit)))
        except StudioError as e:
            print(f"worker: {e}", file=sys.stderr)
            return EXIT_NO_PROJECT
        return 0
    if (args.job_id is None) != args.spare:
        parser.error("run: give JOB_ID, or --spare without one")
    if args.parent_pid is not None:
        if args.die_with_parent:
            die_with_parent(args.parent_pid)
        if os.getppid() != args.parent_pid:  # the studio died while this process started
            print(f"worker: the studio (process {args.parent_pid}) is gone", flush=True)
            _exit_now(EXIT_NOT_MINE)
    job_id = args.job_id
    location = resolve_location(args.project)
    if args.spare:
        job_id = await_job(args.device)
        if job_id is None:  # the host stopped, or let this spare go
            _exit_now(EXIT_DONE)
        with suppress(OSError):  # unwritable: the output stays where it was (the job's
            output_to(job_work_dir(location, job_id) / "worker.log")  # rows still say it)
    code = run_claimed_job(
        location,
        job_id,
        parent_pid=args.parent_pid,
        claim=args.claim,
        device=args.device,
    )
    _exit_now(code)
    return code  # not reached
