"""The worker host: lives in the studio (or any long-running front end) and runs the project's
queued jobs, each in its own child process, so a crash, an out-of-memory kill or a CUDA error
ends that process and never the studio.

The GUI calls :meth:`WorkerHost.poll` from a timer on its main thread (every 100-250 ms): it is
cheap (a couple of indexed queries and a ``waitpid`` per child) and never blocks. A poll reaps
children that exited (recording a death the child could not record itself), enforces cancels
(SIGTERM, then SIGKILL 0.5 s later) and starts the oldest queued jobs while fewer than
``max_running`` run. Children get their own session (a terminal's Ctrl+C does not reach them)
and write stdout and stderr to ``<project>.jobs/<job_id>/worker.log`` — a file, never a pipe,
so a chatty child can never block on a full pipe the host forgot to drain.

No child outlives or wedges the studio:

- **Parent death.** A child started from the main thread runs with ``--die-with-parent``: on
  Linux the kernel kills it the moment the studio dies, even while it is stuck in native code
  (the signal follows the thread that started the child, hence the main thread only); the next
  :meth:`WorkerHost.start` records its job interrupted, resumable. Elsewhere the child's
  watcher thread notices and stops it. When a child exits, what is left of its process group
  (helpers it started) is killed before it is reaped.
- **Memory.** Every poll reads the resident memory of each child's process tree (psutil); over
  the job's limit — its ``memory_limit_mb`` parameter, else the host's ``memory_limit``, by
  default half the machine's memory — the host kills the group and records the job failed
  with "out of memory: used X MB, limit Y MB". The peak is kept in the job row (``peak_rss``).
- **Stalls.** A job with no progress (a new fraction, message or checkpoint; heartbeats do not
  count) for its ``stall_seconds`` parameter, else the host's ``stall_after`` (300 s), is
  marked stalled (``stalled_at``): shown, not ended; it can be cancelled, and progress clears
  it.
- **Lingering.** A child whose job record has ended but whose process is still there
  :data:`LINGER_AFTER` seconds later (hung in a library's exit) is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil

from studio.store.jobs import JobQueue, JobRecord
from studio.worker.limits import MB, default_memory_limit, mb, tree_rss

__all__ = [
    "DEFAULT_STALL_AFTER",
    "KILL_AFTER",
    "LINGER_AFTER",
    "WatchedJob",
    "WorkerHost",
    "death_text",
    "worker_alive",
    "worker_command",
]

#: Seconds between SIGTERM (the child records the cancel) and SIGKILL (it did not in time).
KILL_AFTER = 0.5
#: Seconds without progress before a job is marked stalled, unless it or the host says.
DEFAULT_STALL_AFTER = 300.0
#: Seconds a child may stay after its job's record ended before it is killed.
LINGER_AFTER = 5.0
#: Seconds between two reads of the children's memory.
MEMORY_EVERY = 0.1
_TAIL_LINES = 20


def worker_command() -> list[str]:
    """How to start a worker child: ``python -m studio.worker`` from a source or wheel install,
    or the bundle's own executable with ``worker`` (it dispatches to
    :func:`studio.worker.child.main`)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "worker"]
    return [sys.executable, "-m", "studio.worker"]


def worker_alive(pid: int, project_path: str | Path) -> bool:
    """Whether ``pid`` is a live worker child of this project (not merely a live process that
    reused a dead child's pid)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        cmdline = proc.cmdline()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # cannot tell: do not declare a live process dead
        return True
    return "run" in cmdline and str(Path(project_path).resolve()) in cmdline


def death_text(returncode: int) -> str:
    """How a child that did not record its own end died, in words for the job's error."""
    if returncode < 0:
        sig = -returncode
        if sig == signal.SIGKILL:
            return f"the worker process was killed by signal {sig} (out of memory?)"
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "unknown signal"
        return f"the worker process was killed by signal {sig} ({name})"
    return f"the worker process exited with code {returncode} without recording a result"


_OOM_TAIL_WORDS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "failed to map segment")


def _positive(value: Any, what: str, default: float) -> float:
    """A job parameter that must be a positive number; ``default`` when absent or unusable."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 else default


@dataclass(frozen=True, slots=True)
class WatchedJob:
    """The host's view of one running child, for a listing: its pid, the resident memory of
    its process tree at the last read, the most seen, and its limit (bytes)."""

    job_id: int
    pid: int
    rss: int
    peak_rss: int
    memory_limit: int


def _tail(path: Path, offset: int, lines: int = _TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return ""
    text = data[-16000:].decode("utf-8", "replace")
    return "\n".join(text.rstrip().splitlines()[-lines:])


@dataclass
class _Child:
    job_id: int
    pid: int
    proc: subprocess.Popen[bytes] | None  # None: adopted from an earlier studio
    log_path: Path
    log_offset: int
    memory_limit: int
    stall_after: float
    term_at: float | None = None  # when SIGTERM went out
    killed: bool = False
    rss: int = 0  # the process tree's resident bytes at the last read
    peak: int = 0
    peak_recorded: int = 0  # what the job row holds
    oom_error: str = ""  # set when the host killed it for its memory
    ended_at: float | None = None  # when its record was first seen ended while it ran on


class WorkerHost:
    """Runs a project's queued jobs in child processes. Call :meth:`start` once, then
    :meth:`poll` regularly, and :meth:`shutdown` when the studio closes. Not thread-safe: drive
    it from one thread (the GUI's main thread)."""

    def __init__(
        self,
        project_path: str | Path,
        *,
        max_running: int = 1,
        command: Sequence[str] | None = None,
        memory_limit: int | None = None,
        stall_after: float = DEFAULT_STALL_AFTER,
    ) -> None:
        """``memory_limit``: bytes a job's process tree may hold unless the job's
        ``memory_limit_mb`` says (default: half the machine's memory); ``stall_after``: seconds
        without progress before a job is marked stalled unless its ``stall_seconds`` says."""
        self.project_path = Path(project_path).resolve()
        self.queue = JobQueue(self.project_path)
        self.max_running = max(1, int(max_running))
        self.command = list(command) if command is not None else worker_command()
        self.memory_limit = int(memory_limit) if memory_limit else default_memory_limit()
        self.stall_after = float(stall_after)
        self._children: dict[int, _Child] = {}
        self._closed = False
        self._memory_read_at = 0.0

    def _limits(self, params: dict[str, Any]) -> tuple[int, float]:
        """The memory limit (bytes) and stall time (seconds) of a job with these parameters."""
        limit = _positive(params.get("memory_limit_mb"), "memory_limit_mb", 0.0)
        stall = _positive(params.get("stall_seconds"), "stall_seconds", self.stall_after)
        return (int(limit * MB) if limit else self.memory_limit), stall

    def _alive(self, pid: int) -> bool:
        return worker_alive(pid, self.project_path)

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> list[int]:
        """Jobs left running by a studio that is gone become interrupted (their ids are
        returned); a job whose worker still runs (the studio crashed, its child did not) is
        adopted: counted, cancellable, and recorded when it dies."""
        ids = self.queue.mark_interrupted(self._alive)
        for job_id, pid, _cancel in self.queue.running():
            if pid is not None and job_id not in self._children:
                work_dir = self.queue.work_dir(job_id)
                log = work_dir / "worker.log"
                offset = log.stat().st_size if log.exists() else 0
                job = self.queue.job(job_id)
                limit, stall = self._limits(job.params if job is not None else {})
                if job is not None and job.memory_limit:
                    limit = job.memory_limit
                self._children[job_id] = _Child(job_id, pid, None, log, offset, limit, stall)
        return ids

    def watched(self) -> list[WatchedJob]:
        """Each running child: pid, memory now and at most, limit (by job id)."""
        return [
            WatchedJob(c.job_id, c.pid, c.rss, c.peak, c.memory_limit)
            for c in sorted(self._children.values(), key=lambda c: c.job_id)
        ]

    def running_jobs(self) -> list[int]:
        """Ids of the jobs whose child this host watches."""
        return sorted(self._children)

    def poll(self) -> list[int]:
        """Reap, enforce cancels, start queued jobs; returns the ids whose state changed."""
        if self._closed:
            return []
        changed: list[int] = []
        for child in list(self._children.values()):
            if self._exited(child):
                self._reap(child)
                changed.append(child.job_id)
        if self._children:
            now = time.monotonic()
            running = {r.id: r for r in self.queue.running_state()}
            for child in list(self._children.values()):
                state = running.get(child.job_id)
                if state is None or state.pid != child.pid:
                    self._linger(child, now)  # its record ended: it should be leaving
                    continue
                if state.cancel_requested:
                    self._enforce_cancel(child, now)
                elif state.stalled_at is None and state.last_progress_at is not None:
                    self._check_stall(child, state.last_progress_at)
            if now - self._memory_read_at >= MEMORY_EVERY:
                self._memory_read_at = now
                for child in list(self._children.values()):
                    self._check_memory(child)
        for _ in range(len(self._children), self.max_running):
            job = self.queue.next_queued()
            if job is None:
                break
            self._spawn(job)
            changed.append(job.id)
        return changed

    def cancel(self, job_id: int) -> None:
        """Cancel a job: a queued one at once; a running one gets the flag and SIGTERM now (the
        child records ``cancelled``), and SIGKILL 0.5 s later if it is still there (the next
        :meth:`poll` sends it and records the cancel). Under a second in all."""
        self.queue.request_cancel(job_id)
        child = self._children.get(job_id)
        if child is not None:
            self._enforce_cancel(child, time.monotonic())

    def shutdown(self) -> None:
        """The studio closes: kill every child, and record their jobs as interrupted (or
        cancelled, when a cancel was pending), resumable from their checkpoints."""
        if self._closed:
            return
        self._closed = True
        for child in self._children.values():
            self._signal(child, signal.SIGKILL, group=True)
        for child in self._children.values():
            if child.proc is not None:
                with suppress(subprocess.TimeoutExpired):
                    child.proc.wait(timeout=5)
            if child.peak > child.peak_recorded:
                self.queue.record_peak_memory(child.job_id, child.peak)
            job = self.queue.job(child.job_id)
            if job is not None and job.status == "running":
                status = "cancelled" if job.cancel_requested else "interrupted"
                self.queue.finish(child.job_id, status, pid=child.pid)
        self._children.clear()
        self.queue.close()

    # ---- internals -------------------------------------------------------------------------
    def _spawn(self, job: JobRecord) -> None:
        work_dir = self.queue.work_dir(job.id)
        log_path = work_dir / "worker.log"
        memory_limit, stall_after = self._limits(job.params)
        cmd = [
            *self.command,
            "run",
            str(self.project_path),
            str(job.id),
            "--parent-pid",
            str(os.getpid()),
        ]
        if threading.current_thread() is threading.main_thread():
            # the kernel's parent-death signal follows the thread that started the child: only
            # the main thread lives as long as the studio
            cmd.append("--die-with-parent")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            work_dir.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab") as log:
                offset = log.tell()
                stamp = time.strftime("%Y-%m-%d %H:%M:%S")
                log.write(f"=== {stamp} attempt {job.attempts + 1}: {' '.join(cmd)}\n".encode())
                log.flush()
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                )
        except OSError as e:
            self.queue.finish(job.id, "failed", error=f"the worker process could not start: {e}")
            return
        if not self.queue.claim(job.id, proc.pid, memory_limit=memory_limit):
            proc.kill()  # cancelled or taken meanwhile
            proc.wait()
            return
        self._children[job.id] = _Child(
            job.id, proc.pid, proc, log_path, offset, memory_limit, stall_after
        )

    def _exited(self, child: _Child) -> bool:
        if child.proc is None:
            return not self._alive(child.pid)
        if child.proc.returncode is not None:
            return True
        waitid = getattr(os, "waitid", None)
        if waitid is not None and hasattr(os, "WNOWAIT"):
            try:  # look without reaping: while the child is a zombie its pid stays ours
                info = waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
            if info is not None and info.si_pid == child.pid:
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)  # helpers it left behind
        return child.proc.poll() is not None

    def _check_memory(self, child: _Child) -> None:
        if child.oom_error or child.killed:
            return
        rss = tree_rss(child.pid)
        child.rss = rss
        if rss > child.peak:
            child.peak = rss
            if rss > child.peak_recorded + max(8 * MB, child.peak_recorded // 10):
                child.peak_recorded = rss
                self.queue.record_peak_memory(child.job_id, rss)
        if rss > child.memory_limit:
            child.oom_error = (
                f"out of memory: used {mb(rss)} MB, limit {mb(child.memory_limit)} MB "
                "(the job's memory_limit_mb, else the studio's limit per job)"
            )
            child.killed = True
            self._signal(child, signal.SIGKILL, group=True)

    def _check_stall(self, child: _Child, last_progress_at: str) -> None:
        cutoff = datetime.now(UTC) - timedelta(seconds=child.stall_after)
        cutoff_text = cutoff.isoformat(timespec="milliseconds")
        if last_progress_at <= cutoff_text:  # same ISO format as the job rows: text order
            self.queue.mark_stalled(child.job_id, cutoff_text)

    def _linger(self, child: _Child, now: float) -> None:
        if child.ended_at is None:
            child.ended_at = now
        elif not child.killed and now - child.ended_at >= LINGER_AFTER:
            child.killed = True
            self._signal(child, signal.SIGKILL, group=True)

    def _reap(self, child: _Child) -> None:
        del self._children[child.job_id]
        if child.peak > child.peak_recorded:
            self.queue.record_peak_memory(child.job_id, child.peak)
        job = self.queue.job(child.job_id)
        if job is None or job.status != "running" or job.pid != child.pid:
            return  # the child recorded its end (the usual case)
        if child.oom_error:
            tail = _tail(child.log_path, child.log_offset)
            error = child.oom_error + (
                f"\n\nLast lines of {child.log_path}:\n{tail}" if tail else ""
            )
            self.queue.finish(child.job_id, "failed", error=error, pid=child.pid)
            return
        if job.cancel_requested:
            self.queue.finish(child.job_id, "cancelled", pid=child.pid)
            return
        if child.proc is None:  # adopted: its exit status is not ours to read
            self.queue.finish(child.job_id, "interrupted", pid=child.pid)
            return
        error = death_text(child.proc.returncode)
        tail = _tail(child.log_path, child.log_offset)
        if any(word in tail for word in _OOM_TAIL_WORDS):
            error = f"out of memory: the job could not allocate memory; {error}"
        if tail:
            error += f"\n\nLast lines of {child.log_path}:\n{tail}"
        self.queue.finish(child.job_id, "failed", error=error, pid=child.pid)

    def _enforce_cancel(self, child: _Child, now: float) -> None:
        if child.term_at is None:
            child.term_at = now
            self._signal(child, signal.SIGTERM)
        elif not child.killed and now - child.term_at >= KILL_AFTER:
            child.killed = True
            self._signal(child, signal.SIGKILL, group=True)

    def _signal(self, child: _Child, sig: int, group: bool = False) -> None:
        if child.proc is not None and child.proc.returncode is not None:
            return  # reaped: the pid may belong to someone else now
        if child.proc is None and not self._alive(child.pid):
            return
        try:
            if group:  # the child leads its own session: take any helpers it started too
                os.killpg(child.pid, sig)
            else:
                os.kill(child.pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:
            if group:
                self._signal(child, sig, group=False)
