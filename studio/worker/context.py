"""What a job function receives: its parameters, a place for files, and the ways to report
progress, log, notice a cancel and save resumable state.

A job kind is a function ``run(ctx: JobContext) -> dict`` (the JSON result). It calls
``ctx.check_cancel()`` between units of work (a batch, an epoch, a seed) and
``ctx.save_checkpoint(...)`` after each unit it would not want to redo; on a resumed job
``ctx.checkpoint()`` returns what the previous attempt saved. Two contexts implement it:

- :class:`DbContext`, in the worker child process: progress, logs and checkpoints go to the
  project's job queue, and a background thread watches for a cancel (the database flag, polled
  every 0.2 s, or SIGTERM from the host) and for the studio's death;
- :class:`LocalContext`, in-process and without a database: the CLI's context, reporting progress
  to a callback.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol, TextIO, runtime_checkable

from studio.core.errors import StudioError
from studio.store.dbfile import is_database_url
from studio.store.jobs import JobQueue, JobRecord

__all__ = ["INTERRUPT_GRACE", "DbContext", "JobCancelled", "JobContext", "LocalContext"]

_logger = logging.getLogger("studio.worker.job")

#: Seconds a job may take to stop after the studio died (noticed by the watcher thread, where
#: no parent-death signal ended the process at once) before the watcher records it interrupted
#: and ends the process itself.
INTERRUPT_GRACE = 5.0


class JobCancelled(StudioError):
    """Raised by ``check_cancel`` once a cancel was asked; the job unwinds and is recorded as
    cancelled (or interrupted, when the studio closed under it)."""

    def __init__(self, message: str = "the job was cancelled", path: str | Path | None = None):
        super().__init__(message, path)


@runtime_checkable
class JobContext(Protocol):
    """The job's view of the world; see the module docstring."""

    job_id: int | None
    params: dict[str, Any]
    device: str  # requested: "auto" | "cpu" | "cuda"
    work_dir: Path  # a folder for artifacts (checkpoints, PNGs, report.json)
    project_path: Path | None  # the project file (None: no project, or a database URL)

    def progress(self, fraction: float, message: str = "") -> None: ...
    def log(self, line: str, level: str = "info") -> None: ...
    def check_cancel(self) -> None: ...
    def cancelled(self) -> bool: ...
    def checkpoint(self) -> dict[str, Any]: ...
    def save_checkpoint(self, state: dict[str, Any]) -> None: ...
    def set_device(self, device: str) -> None: ...


def _json_copy(state: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(dict(state), allow_nan=False))
    except (TypeError, ValueError) as e:
        raise StudioError(f"a job checkpoint must be JSON: {e}") from None


class LocalContext:
    """A context for running a job function in this process (the CLI): ``progress(fraction,
    message)`` is called on every report, ``should_stop()`` (when given) is asked by
    ``check_cancel``, log lines go to ``log(line, level)`` or to the ``studio.worker.job``
    logger. Without ``work_dir`` a fresh temporary folder is made (and left for the caller)."""

    def __init__(
        self,
        params: dict[str, Any],
        device: str = "auto",
        work_dir: str | Path | None = None,
        progress: Callable[[float, str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        *,
        log: Callable[[str, str], None] | None = None,
        checkpoint: dict[str, Any] | None = None,
    ) -> None:
        self.job_id: int | None = None
        self.project_path: Path | None = None
        self.location: str | Path | None = None
        self.params = dict(params)
        self.device = device
        if work_dir is None:
            work_dir = tempfile.mkdtemp(prefix="analogy-studio-job-")
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._progress = progress
        self._should_stop = should_stop
        self._log = log
        self._checkpoint = _json_copy(checkpoint or {})
        self.device_used = ""
        self.last_progress: tuple[float, str] = (0.0, "")

    def progress(self, fraction: float, message: str = "") -> None:
        self.last_progress = (float(fraction), message)
        if self._progress is not None:
            self._progress(float(fraction), message)

    def log(self, line: str, level: str = "info") -> None:
        if self._log is not None:
            self._log(line, level)
        else:
            _logger.log(logging.getLevelName(level.upper()) if level else logging.INFO, line)

    def cancelled(self) -> bool:
        return bool(self._should_stop is not None and self._should_stop())

    def check_cancel(self) -> None:
        if self.cancelled():
            raise JobCancelled()

    def checkpoint(self) -> dict[str, Any]:
        return copy.deepcopy(self._checkpoint)

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        self._checkpoint = _json_copy(state)

    def set_device(self, device: str) -> None:
        self.device_used = device


class DbContext:
    """The worker child's context for one job record.

    Progress and log lines are buffered and written every ``flush_interval`` seconds by a
    background thread (a training loop may report per batch; the file must not be written
    hundreds of times a second); checkpoints and the device are written at once. The same thread
    polls the job's cancel flag and, when ``parent_pid`` is given, notices that the studio died
    (then the job stops as *interrupted*, resumable; a job that does not stop within
    :data:`INTERRUPT_GRACE` seconds is recorded interrupted and its process ended by the
    thread). :meth:`request_stop` only sets an attribute, so a signal handler may call it."""

    def __init__(
        self,
        queue: JobQueue,
        job: JobRecord,
        work_dir: str | Path,
        project_path: str | Path,
        *,
        flush_interval: float = 0.2,
        echo: TextIO | None = None,
        default_device: str | None = None,
    ) -> None:
        """``project_path``: the project file or database URL (:attr:`location`; a URL
        leaves :attr:`project_path` None). ``default_device``: what a job whose ``device``
        parameter is ``auto`` (or absent) gets: the worker's ``--device``."""
        self.queue = queue
        self.job_id: int | None = job.id
        self.params = dict(job.params)
        self.device = str(self.params.get("device", "auto"))
        if self.device == "auto" and default_device:
            self.device = default_device
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        url = is_database_url(project_path)
        self.location: str | Path | None = str(project_path) if url else Path(project_path)
        self.project_path: Path | None = None if url else Path(project_path)
        self._worker = job.worker
        self._id = job.id
        self._checkpoint = copy.deepcopy(job.checkpoint)
        self._flush_interval = flush_interval
        self._echo = echo if echo is not None else sys.stdout
        self._lock = threading.Lock()
        self._pending_progress: tuple[float, str] | None = None
        self._pending_logs: list[tuple[str, str]] = []
        self._stop_reason: str | None = None  # "cancelled" | "interrupted"
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._parent_pid: int | None = None

    # ---- the job's side --------------------------------------------------------------------
    def progress(self, fraction: float, message: str = "") -> None:
        with self._lock:
            self._pending_progress = (float(fraction), message)

    def log(self, line: str, level: str = "info") -> None:
        stamp = time.strftime("%H:%M:%S")
        with suppress(OSError, ValueError):  # worker.log unwritable: the database still has it
            print(f"{stamp} {level}: {line}", file=self._echo, flush=True)
        with self._lock:
            self._pending_logs.append((level, line))

    def cancelled(self) -> bool:
        return self._stop_reason is not None

    def check_cancel(self) -> None:
        reason = self._stop_reason
        if reason is not None:
            raise JobCancelled(
                "the studio closed while the job ran"
                if reason == "interrupted"
                else "the job was cancelled"
            )

    def checkpoint(self) -> dict[str, Any]:
        return copy.deepcopy(self._checkpoint)

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        saved = _json_copy(state)
        self.queue.save_checkpoint(self._id, saved)
        self._checkpoint = saved

    def set_device(self, device: str) -> None:
        self.queue.set_device(self._id, device)

    # ---- the child's side ------------------------------------------------------------------
    @property
    def stop_reason(self) -> str | None:
        """None while the job may run; "cancelled" or "interrupted" once it should stop."""
        return self._stop_reason

    def request_stop(self, reason: str = "cancelled") -> None:
        """Ask the job to stop at its next ``check_cancel`` (safe from a signal handler)."""
        if self._stop_reason is None:
            self._stop_reason = reason

    def flush(self) -> None:
        """Write buffered progress and log lines now (the thread does it every interval)."""
        with self._lock:
            progress, self._pending_progress = self._pending_progress, None
            logs, self._pending_logs = self._pending_logs, []
        if logs:
            self.queue.log_lines(self._id, logs)
        if progress is not None:
            self.queue.set_progress(self._id, *progress)

    def start(self, parent_pid: int | None = None) -> None:
        """Start the watcher thread (flush, heartbeat, cancel flag, parent's death)."""
        self._parent_pid = parent_pid
        self._thread = threading.Thread(target=self._watch, name="job-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the watcher and write what is still buffered."""
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.flush()

    def _watch(self) -> None:
        beats = 0
        orphaned_at: float | None = None
        while not self._closing.wait(self._flush_interval):
            try:
                self.flush()
                if self._stop_reason is None and self.queue.cancel_requested(self._id):
                    self.request_stop("cancelled")
                beats += 1
                if beats % 25 == 0:  # every ~5 s, so a quiet job still shows it is alive
                    self.queue.heartbeat(self._id)
            except Exception as e:  # a busy or locked file: try again next round
                print(f"job-watch: {e}", file=sys.stderr, flush=True)
            if self._parent_pid is not None and os.getppid() != self._parent_pid:
                self.request_stop("interrupted")
                now = time.monotonic()
                orphaned_at = now if orphaned_at is None else orphaned_at
                if now - orphaned_at >= INTERRUPT_GRACE:
                    self._abandon()

    def _abandon(self) -> None:
        """The studio is gone and the job does not stop: record it interrupted (resumable from
        its last checkpoint) and end this process."""
        with suppress(Exception):
            self.flush()
        with suppress(Exception):
            self.queue.finish(self._id, "interrupted", pid=os.getpid(), worker=self._worker)
        with suppress(OSError, ValueError):
            print(
                f"worker: job {self._id} did not stop {INTERRUPT_GRACE:.0f} s after the studio "
                "died; ending the process",
                file=self._echo,
                flush=True,
            )
        os._exit(1)
