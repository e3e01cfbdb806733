"""The open project's background jobs, driven from the GUI's main thread, apart from any widget.

:class:`JobController` owns the project's :class:`~studio.worker.host.WorkerHost` (started when
a project opens, shut down when the window closes or the project changes) and the clock that
drives it: every tick calls :meth:`WorkerHost.poll` (start queued jobs, reap, enforce cancels)
and reads the job list. Views (the Baselines tab) listen to its signals and send it commands;
none of them touches the host. Jobs run in child processes, so a training run, a crash or an
out-of-memory kill never stalls or ends the studio.

Every signal fires on the main thread, synchronously inside the call that caused it (a tick of
the timer, :meth:`JobController.refresh`, or a command).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal
from sqlalchemy.exc import SQLAlchemyError

from studio.core.errors import StudioError

if TYPE_CHECKING:
    from studio.store.jobs import JobQueue, JobRecord
    from studio.worker.host import WorkerHost

__all__ = ["JOB_ERRORS", "JobController", "report_set_id"]

#: What starting, reading or commanding the jobs may raise: a locked, vanished or damaged
#: project file, or a child that could not be started. Callers show them; nothing is lost.
JOB_ERRORS: tuple[type[BaseException], ...] = (StudioError, OSError, SQLAlchemyError)

JOBS_SHOWN = 500  # the newest jobs read (older ones stay in the project file)
IDLE_READ_EVERY = 20  # ticks between reads of the whole list while no job runs


def report_set_id(job: Any) -> int | None:
    """The puzzle set a finished baseline job ran on (None for a split folder)."""
    result = job.result if isinstance(job.result, Mapping) else {}
    flags = result.get("puzzle_flags")
    if isinstance(flags, Mapping) and flags.get("set_id") is not None:
        return int(flags["set_id"])
    source = result.get("source") or {}
    if source.get("set_id") is not None:
        return int(source["set_id"])
    params_source = (job.params or {}).get("source") or {}
    if params_source.get("kind") == "project-set" and params_source.get("set_id") is not None:
        return int(params_source["set_id"])
    return None


class JobController(QObject):
    """Owns one project's worker host and its clock; reads the jobs for the views.

    - ``jobs_read(jobs)``: the job list (``list[JobRecord]``, newest first) after a read that
      may have changed it;
    - ``read_failed(message)``: a tick could not read the jobs (the next tick tries again);
    - ``flags_changed(set_id)``: a job that stored puzzle flags for a set has just ended (not
      one already done when the project opened), so the curator's board can re-read them.

    ``worker_command`` overrides how worker children start (tests and the bundle use the
    default). Not thread-safe, like the host: call it from the main thread only."""

    jobs_read = Signal(list)
    read_failed = Signal(str)
    flags_changed = Signal(int)

    def __init__(
        self,
        *,
        poll_interval: int = 250,
        worker_command: Sequence[str] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.worker_command = list(worker_command) if worker_command is not None else None
        self.host: WorkerHost | None = None
        #: jobs a closed studio left running, made interrupted when the host started
        self.interrupted: list[int] = []
        #: the last list read (what the views show)
        self.jobs: list[JobRecord] = []
        self._statuses: dict[int, str] = {}
        self._seen_once = False
        self._ticks = 0
        self.timer = QTimer(self, interval=poll_interval)
        self.timer.timeout.connect(lambda: self.refresh(force=False))

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self, project_path: str | Path, *, run_jobs: bool = True) -> None:
        """Start driving a project's jobs and its clock: jobs a closed studio left running
        become interrupted (:attr:`interrupted`). ``run_jobs`` False: list and cancel jobs,
        run none here (a lab database's jobs, left to its workers). Raises one of
        :data:`JOB_ERRORS` (and then drives nothing) when the project's jobs cannot be
        opened."""
        from studio.worker.host import WorkerHost

        self.shutdown()
        self.jobs = []
        self._statuses = {}
        self._seen_once = False
        try:
            self.host = WorkerHost(
                project_path, command=self.worker_command, max_running=1 if run_jobs else 0
            )
            self.interrupted = self.host.start()
        except JOB_ERRORS:
            self.host = None
            raise
        self.refresh()
        self.timer.start()

    def shutdown(self) -> None:
        """The window closes or the project changes: stop the clock, kill running children
        and record their jobs as interrupted (resumable). Safe to call twice. Raises one of
        :data:`JOB_ERRORS` when recording them failed (the host is dropped all the same)."""
        self.timer.stop()
        if self.host is not None:
            host, self.host = self.host, None
            host.shutdown()

    @property
    def running(self) -> bool:
        """Whether a host drives the jobs (False before :meth:`start`, after a failed start
        and after :meth:`shutdown`)."""
        return self.host is not None

    @property
    def queue(self) -> JobQueue | None:
        return None if self.host is None else self.host.queue

    def waiting_interrupted(self) -> list[int]:
        """The jobs interrupted when the studio closed that nobody touched since."""
        return [i for i in self.interrupted if self._statuses.get(i) == "interrupted"]

    # ---- the clock ---------------------------------------------------------------------------
    def refresh(self, *, force: bool = True) -> None:
        """One tick: let the host start/reap/cancel, then read the jobs and emit ``jobs_read``.
        The whole list is read (one query) when asked (``force``), when the host changed a job
        (started, reaped, cancelled) and every few seconds while nothing runs (a job submitted
        by the CLI); the timer's other ticks re-read only the running jobs, so a long list of
        finished jobs costs nothing while one trains. A failed read emits ``read_failed``."""
        if self.host is None:
            return
        self._ticks += 1
        try:
            changed = self.host.poll()
            running = [j.id for j in self.jobs if j.status == "running"]
            idle_read = not running and self._ticks % IDLE_READ_EVERY == 0
            if force or changed or idle_read or not self._seen_once:
                jobs = self.host.queue.jobs(limit=JOBS_SHOWN)
            elif running:
                fresh = {i: self.host.queue.job(i) for i in running}
                jobs = [fresh.get(j.id) or j for j in self.jobs]
            else:
                return
        except JOB_ERRORS as e:
            self.read_failed.emit(str(e).splitlines()[0] if str(e) else type(e).__name__)
            return
        self._note_transitions(jobs)
        self.jobs = list(jobs)
        self.jobs_read.emit(list(jobs))

    def _note_transitions(self, jobs: Sequence[JobRecord]) -> None:
        """``flags_changed`` for jobs that became done with puzzle flags since the last read
        (not for those already done when the project opened)."""
        first = not self._seen_once
        self._seen_once = True
        for job in jobs:
            before = self._statuses.get(job.id)
            if not first and before != job.status and job.status == "done":
                set_id = report_set_id(job) if isinstance(job.result, Mapping) else None
                if set_id is not None and job.result and "puzzle_flags" in job.result:
                    self.flags_changed.emit(set_id)
            self._statuses[job.id] = job.status

    # ---- commands (each raises one of JOB_ERRORS on failure) ----------------------------------
    def _host(self) -> WorkerHost:
        if self.host is None:
            raise StudioError("background jobs are not running")
        return self.host

    def submit(self, kind: str, params: dict[str, Any], title: str = "") -> int:
        """Queue a job and read the list; the next tick starts it. Returns its id."""
        job_id = self._host().queue.submit(kind, params, title)
        self.refresh()
        return job_id

    def cancel(self, job_id: int) -> None:
        """Cancel a job (see :meth:`WorkerHost.cancel`), then read the list (also when the
        cancel failed: the list shows what happened)."""
        try:
            self._host().cancel(job_id)
        finally:
            self.refresh()

    def restart(self, job_id: int) -> int:
        """A new job with that job's kind and parameters, from scratch. Returns its id."""
        new_id = self._host().queue.restart(job_id)
        self.refresh()
        return new_id

    def resume(self, job_id: int) -> None:
        """Queue a failed, cancelled or interrupted job again from its checkpoint."""
        self._host().queue.resume(job_id)
        self.refresh()
