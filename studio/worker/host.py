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
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

from studio.store.jobs import JobQueue, JobRecord

__all__ = ["KILL_AFTER", "WorkerHost", "death_text", "worker_alive", "worker_command"]

#: Seconds between SIGTERM (the child records the cancel) and SIGKILL (it did not in time).
KILL_AFTER = 0.5
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
    term_at: float | None = None  # when SIGTERM went out
    killed: bool = False


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
    ) -> None:
        self.project_path = Path(project_path).resolve()
        self.queue = JobQueue(self.project_path)
        self.max_running = max(1, int(max_running))
        self.command = list(command) if command is not None else worker_command()
        self._children: dict[int, _Child] = {}
        self._closed = False

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
                self._children[job_id] = _Child(job_id, pid, None, log, offset)
        return ids

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
            for job_id, _pid, cancel in self.queue.running():
                child = self._children.get(job_id)
                if child is not None and cancel:
                    self._enforce_cancel(child, now)
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
        cmd = [
            *self.command,
            "run",
            str(self.project_path),
            str(job.id),
            "--parent-pid",
            str(os.getpid()),
        ]
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
        if not self.queue.claim(job.id, proc.pid):  # cancelled or taken meanwhile
            proc.kill()
            proc.wait()
            return
        self._children[job.id] = _Child(job.id, proc.pid, proc, log_path, offset)

    def _exited(self, child: _Child) -> bool:
        if child.proc is not None:
            return child.proc.poll() is not None
        return not self._alive(child.pid)

    def _reap(self, child: _Child) -> None:
        del self._children[child.job_id]
        job = self.queue.job(child.job_id)
        if job is None or job.status != "running" or job.pid != child.pid:
            return  # the child recorded its end (the usual case)
        if job.cancel_requested:
            self.queue.finish(child.job_id, "cancelled", pid=child.pid)
            return
        if child.proc is None:  # adopted: its exit status is not ours to read
            self.queue.finish(child.job_id, "interrupted", pid=child.pid)
            return
        error = death_text(child.proc.returncode)
        tail = _tail(child.log_path, child.log_offset)
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
