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
  :data:`LINGER_AFTER` seconds later (hung in a library's exit) is killed; one whose job was
  requeued as lost and claimed by another worker is killed at once.

**Several hosts, several machines.** A host is a *worker* named "machine · pid N"
(:func:`~studio.store.jobs.worker_name`): it claims the oldest queued job with
:meth:`~studio.store.jobs.JobQueue.claim_next` (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), then
hands it to the child it starts. Every :data:`HEARTBEAT_EVERY` seconds it heartbeats its running
jobs (the database's clock); with ``dead_after`` (``worker serve``) it also puts back in the
queue the jobs of workers with no heartbeat for that long. On start it records only THIS
machine's jobs whose process is gone (a pid means nothing elsewhere), and adopts only children
whose host is gone. A project is a file path or a database URL (``postgresql://…``); a URL's
work folders are in this user's cache (see :func:`~studio.store.jobs.job_work_dir`).
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

from studio.store.dbfile import is_database_url, safe_location
from studio.store.jobs import JobQueue, JobRecord, machine_name, worker_machine, worker_name
from studio.worker.limits import MB, default_memory_limit, mb, tree_rss, usage_text

__all__ = [
    "DEFAULT_STALL_AFTER",
    "HEARTBEAT_EVERY",
    "KILL_AFTER",
    "LINGER_AFTER",
    "LOCATION_ENV",
    "WatchedJob",
    "WorkerHost",
    "death_text",
    "location_argument",
    "worker_alive",
    "worker_command",
    "worker_pid",
]

#: Seconds between SIGTERM (the child records the cancel) and SIGKILL (it did not in time).
KILL_AFTER = 0.5
#: Seconds without progress before a job is marked stalled, unless it or the host says.
DEFAULT_STALL_AFTER = 300.0
#: Seconds a child may stay after its job's record ended before it is killed.
LINGER_AFTER = 5.0
#: Seconds between two reads of the children's memory.
MEMORY_EVERY = 0.1
#: Seconds between two heartbeats of a host's running jobs (``worker serve --heartbeat``).
HEARTBEAT_EVERY = 5.0
#: The environment variable that hands a child the full database URL when it carries a
#: password (the command line, which ``ps`` shows everyone, gets the URL without it).
LOCATION_ENV = "ANALOGY_STUDIO_LOCATION"
_TAIL_LINES = 20
#: A warm spare that ends within this many seconds of its start counts as failing to start.
SPARE_YOUNG = 60.0
#: Bytes a job handed to the warm spare must have under its limit beyond the spare's own.
SPARE_ROOM = 256 * MB


def worker_command() -> list[str]:
    """How to start a worker child: ``python -m studio.worker`` from a source or wheel install,
    or the bundle's own executable with ``worker`` (it dispatches to
    :func:`studio.worker.child.main`)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "worker"]
    return [sys.executable, "-m", "studio.worker"]


def location_argument(location: str | Path) -> str:
    """How a child's command line names the project: a file's resolved path, or the URL
    without its password (see :data:`LOCATION_ENV`)."""
    if is_database_url(location):
        return safe_location(location)
    return str(Path(location).resolve())


def worker_pid(worker: str) -> int | None:
    """The process id in a ``jobs.worker`` value (``"machine · pid N"``), or None."""
    try:
        return int(worker.rsplit(" · pid ", 1)[1])
    except (IndexError, ValueError):
        return None


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
    return "run" in cmdline and location_argument(project_path) in cmdline


def _process_alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _close_stdin(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        with suppress(OSError):  # a broken pipe's buffered bytes: nobody reads them now
            proc.stdin.close()


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
        machine: str | None = None,
        heartbeat_every: float = HEARTBEAT_EVERY,
        dead_after: float | None = None,
        requeue_lost: bool = False,
        device: str | None = None,
        spare: bool = False,
    ) -> None:
        """``project_path``: a project file or a database URL. ``memory_limit``: bytes a job's
        process tree may hold unless the job's ``memory_limit_mb`` says (default: half the
        machine's memory); ``stall_after``: seconds without progress before a job is marked
        stalled unless its ``stall_seconds`` says. ``machine``: this worker's machine name
        (default: the host name); ``heartbeat_every``: seconds between heartbeats of its
        running jobs; ``dead_after``: requeue other workers' jobs with no heartbeat for that
        long (None: never, as in the studio's window); ``requeue_lost``: jobs this machine
        lost (a dead host found on start, a :meth:`shutdown`) go back to the queue rather
        than being recorded interrupted; ``device``: what a job asking for ``auto`` gets;
        ``spare``: keep one warm child ready (:meth:`_keep_spare`)."""
        self.is_url = is_database_url(project_path)
        self.project_path: str | Path = (
            str(project_path) if self.is_url else Path(project_path).resolve()
        )
        self.where = location_argument(project_path)
        self.queue = JobQueue(self.project_path)
        # 0: a host that claims nothing (a studio window on a lab database whose jobs are for
        # the lab's workers) but still reads and cancels
        self.max_running = max(0, int(max_running))
        self.command = list(command) if command is not None else worker_command()
        self.memory_limit = int(memory_limit) if memory_limit else default_memory_limit()
        self.stall_after = float(stall_after)
        self.machine = machine or machine_name()
        self.worker = worker_name(os.getpid(), self.machine)
        self.heartbeat_every = max(0.1, float(heartbeat_every))
        self.dead_after = None if dead_after is None else max(0.1, float(dead_after))
        self.requeue_lost = bool(requeue_lost)
        self.device = device
        #: what happened, one line each ("claimed job 3 …", "lost worker …"), for a log; the
        #: caller drains it (:meth:`take_events`)
        self.events: list[str] = []
        self._children: dict[int, _Child] = {}
        self.spare = bool(spare)
        self._spare: subprocess.Popen[bytes] | None = None
        self._spare_started = 0.0
        self._spare_deaths = 0  # spares that ended young, one after another
        self._closed = False
        self._memory_read_at = 0.0
        self._beat_at = time.monotonic()

    def take_events(self) -> list[str]:
        """The event lines since the last call (claims, ends, lost workers), oldest first."""
        events, self.events = self.events, []
        return events

    def _limits(self, params: dict[str, Any]) -> tuple[int, float]:
        """The memory limit (bytes) and stall time (seconds) of a job with these parameters."""
        limit = _positive(params.get("memory_limit_mb"), "memory_limit_mb", 0.0)
        stall = _positive(params.get("stall_seconds"), "stall_seconds", self.stall_after)
        return (int(limit * MB) if limit else self.memory_limit), stall

    def _alive(self, pid: int) -> bool:
        return worker_alive(pid, self.project_path)

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> list[int]:
        """This machine's jobs left running by a host that is gone become interrupted (with
        ``requeue_lost``: queued again; their ids are returned); another machine's are left to
        their heartbeats. A job whose child still runs while its host is gone (the studio
        crashed, its child did not) is adopted: counted, cancellable, heartbeated, and
        recorded when it dies. Children of another live host on this machine are its own."""
        ids = self.queue.mark_interrupted(
            self._alive, machine=self.machine, requeue=self.requeue_lost
        )
        for state in self.queue.running_state():
            job_id, pid = state.id, state.pid
            if pid is None or job_id in self._children:
                continue
            if state.worker and worker_machine(state.worker) != self.machine:
                continue
            owner = worker_pid(state.worker)
            if owner is not None and owner != os.getpid() and _process_alive(owner):
                continue  # a live host here (a `worker serve` beside the studio) runs it
            if not self.queue.adopt(job_id, pid, state.worker, self.worker):
                continue
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

    @property
    def spare_pid(self) -> int | None:
        """The warm spare's process id, while one is kept (``spare``), else None."""
        return None if self._spare is None else self._spare.pid

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
        now = time.monotonic()
        if now - self._beat_at >= self.heartbeat_every:
            self._beat_at = now
            if self._children:
                self.queue.heartbeat_worker(self.worker)
            if self.dead_after is not None:
                for job_id, lost in self.queue.requeue_dead(self.dead_after, keep=self.worker):
                    self.events.append(
                        f"job {job_id}: worker {lost or '(unknown)'} lost (no heartbeat for "
                        f"{self.dead_after:g} s); back in the queue"
                    )
                    changed.append(job_id)
        if self._children:
            running = {r.id: r for r in self.queue.running_state()}
            for child in list(self._children.values()):
                state = running.get(child.job_id)
                if state is not None and state.worker != self.worker and not child.killed:
                    # requeued as lost, and another worker runs it now: stop ours at once
                    self.events.append(f"job {child.job_id}: taken over by {state.worker}")
                    child.killed = True
                    self._signal(child, signal.SIGKILL, group=True)
                    continue
                if state is None or state.pid != child.pid or state.worker != self.worker:
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
            job = self.queue.claim_next(self.worker)
            if job is None:
                break
            self._spawn(job)
            changed.append(job.id)
        if self.spare:
            self._keep_spare()
        return changed

    def cancel(self, job_id: int) -> None:
        """Cancel a job: a queued one at once; a running one gets the flag and SIGTERM now (the
        child records ``cancelled``), and SIGKILL 0.5 s later if it is still there (the next
        :meth:`poll` sends it and records the cancel). Under a second in all."""
        self.queue.request_cancel(job_id)
        child = self._children.get(job_id)
        if child is not None:
            self._enforce_cancel(child, time.monotonic())

    def shutdown(self, *, requeue: bool | None = None) -> None:
        """The studio closes: kill every child, and record their jobs as interrupted (or
        cancelled, when a cancel was pending), resumable from their checkpoints. With
        ``requeue`` (default: the host's ``requeue_lost``, as ``worker serve`` stops) they go
        back to the queue instead, for the next worker to resume."""
        requeue = self.requeue_lost if requeue is None else requeue
        if self._closed:
            return
        self._closed = True
        self._drop_spare()
        for child in self._children.values():
            self._signal(child, signal.SIGKILL, group=True)
        for child in self._children.values():
            if child.proc is not None:
                with suppress(subprocess.TimeoutExpired):
                    child.proc.wait(timeout=5)
            if child.peak > child.peak_recorded:
                self.queue.record_peak_memory(child.job_id, child.peak)
            job = self.queue.job(child.job_id)
            if job is None or job.status != "running":
                continue
            if requeue and not job.cancel_requested:
                if self.queue.requeue(child.job_id, pid=child.pid, worker=self.worker):
                    self.events.append(f"job {child.job_id}: back in the queue (worker stopped)")
                continue
            status = "cancelled" if job.cancel_requested else "interrupted"
            self.queue.finish(child.job_id, status, pid=child.pid, worker=self.worker)
        self._children.clear()
        self.queue.close()

    # ---- internals -------------------------------------------------------------------------
    def _command(self, *args: str) -> list[str]:
        """A child's command line: ``run`` and ``args``, the parent's pid, the device."""
        cmd = [*self.command, "run", self.where, *args, "--parent-pid", str(os.getpid())]
        if self.device:
            cmd += ["--device", self.device]
        if threading.current_thread() is threading.main_thread():
            # the kernel's parent-death signal follows the thread that started the child: only
            # the main thread lives as long as the studio
            cmd.append("--die-with-parent")
        return cmd

    def _env(self) -> dict[str, str]:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop(LOCATION_ENV, None)
        if str(self.project_path) != self.where and self.is_url:
            env[LOCATION_ENV] = str(self.project_path)  # the password stays off the command line
        return env

    def _keep_spare(self) -> None:
        """Keep one warm child ready (``worker run --spare``): started now, it imports torch
        and starts the GPU while no job waits, and the next claimed job is handed to it
        (:meth:`_spawn`) instead of to a process that would start all that then. A spare
        that ends by itself is replaced; after three that ended within
        :data:`SPARE_YOUNG` seconds of their start, jobs start cold again (and the events
        say why)."""
        if self._closed or self.max_running == 0:
            return
        proc = self._spare
        if proc is not None:
            code = proc.poll()
            if code is None:
                return
            self._spare = None
            _close_stdin(proc)
            young = time.monotonic() - self._spare_started < SPARE_YOUNG
            self._spare_deaths = self._spare_deaths + 1 if young else 0
            self.events.append(f"the warm spare process {proc.pid} ended ({death_text(code)})")
            if self._spare_deaths >= 3:
                self.spare = False
                self.events.append("warm spares keep ending: jobs start in a fresh process")
                return
        try:
            self._spare = subprocess.Popen(
                self._command("--spare"),
                stdin=subprocess.PIPE,
                start_new_session=True,
                env=self._env(),
            )
        except OSError as e:
            self.spare = False
            self.events.append(f"no warm spare (it could not start: {e}); jobs start cold")
            return
        self._spare_started = time.monotonic()

    def _spare_for(self, job: JobRecord, memory_limit: int) -> subprocess.Popen[bytes] | None:
        """The warm spare, if it should take ``job``: a job of a kind it warmed for
        (:data:`~studio.worker.kinds.JOB_WARMERS`; any other would carry torch and the GPU's
        context for nothing), whose memory limit leaves room beyond what the spare already
        holds (a job is charged for its whole process). Otherwise the job starts cold and the
        spare waits for the next."""
        from studio.worker.kinds import JOB_WARMERS

        proc = self._spare
        if proc is None or job.kind not in JOB_WARMERS:
            return None
        if tree_rss(proc.pid) + SPARE_ROOM > memory_limit:
            self.events.append(
                f"job {job.id}: its memory limit ({mb(memory_limit)} MB) leaves too little room "
                "beside the warm spare's; it starts in a fresh process"
            )
            return None
        return proc

    def _take_spare(self, job_id: int) -> subprocess.Popen[bytes] | None:
        """Hand a job to the warm spare: its id on the spare's stdin (the spare finds the
        job's log itself). None when there is no live spare (or it died as it was told)."""
        proc, self._spare = self._spare, None
        if proc is None or proc.stdin is None:
            return None
        try:
            if proc.poll() is not None:
                raise BrokenPipeError
            proc.stdin.write(f"{int(job_id)}\n".encode())
            proc.stdin.close()
        except OSError:  # it died meanwhile: a fresh process instead
            _close_stdin(proc)
            with suppress(OSError):
                proc.kill()
            proc.wait()
            return None
        return proc

    def _drop_spare(self) -> None:
        proc, self._spare = self._spare, None
        if proc is None:
            return
        _close_stdin(proc)  # it leaves at the end of its input, or is killed now
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def _spawn(self, job: JobRecord) -> None:
        """Start the child for a job this host has just claimed (no pid yet), or hand it to the
        warm spare, and hand the job to it; a child that cannot start fails the job, one whose
        job was taken meanwhile (cancelled) is killed."""
        work_dir = self.queue.work_dir(job.id)
        log_path = work_dir / "worker.log"
        memory_limit, stall_after = self._limits(job.params)
        cmd = self._command(str(job.id))
        spare = self._spare_for(job, memory_limit)
        try:
            work_dir.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab") as log:
                offset = log.tell()
                stamp = time.strftime("%Y-%m-%d %H:%M:%S")
                how = " ".join(cmd) if spare is None else f"the warm spare process {spare.pid}"
                log.write(f"=== {stamp} attempt {job.attempts}: {how}\n".encode())
                log.flush()
                proc = self._take_spare(job.id) if spare is not None else None
                if proc is None:
                    if spare is not None:
                        log.write(b"(the warm spare had ended: a fresh process instead)\n")
                        log.flush()
                    proc = subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        env=self._env(),
                    )
        except OSError as e:
            self.queue.finish(
                job.id,
                "failed",
                error=f"the worker process could not start: {e}",
                worker=self.worker,
            )
            self.events.append(f"job {job.id}: the worker process could not start: {e}")
            return
        if not self.queue.attach(job.id, self.worker, proc.pid, memory_limit=memory_limit):
            proc.kill()  # cancelled or taken meanwhile
            proc.wait()
            return
        self.events.append(
            f"job {job.id} ({job.kind}, attempt {job.attempts}) claimed; runs in process {proc.pid}"
        )
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
                f"out of memory: {usage_text(rss, child.memory_limit)} "
                "(the job's memory_limit_mb, else the studio's limit per job)"
            )
            child.killed = True
            self._signal(child, signal.SIGKILL, group=True)

    def _check_stall(self, child: _Child, last_progress_at: str) -> None:
        # a cheap look with this machine's clock first (no write on every poll); the database
        # decides with its own clock (the job rows' times are the server's on PostgreSQL)
        cutoff = datetime.now(UTC) - timedelta(seconds=child.stall_after)
        cutoff_text = cutoff.isoformat(timespec="milliseconds")
        if last_progress_at <= cutoff_text:  # same ISO format as the job rows: text order
            self.queue.mark_stalled(child.job_id, child.stall_after)

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
            if job is not None:  # the child recorded its end (the usual case)
                self.events.append(f"job {job.id} {job.status}")
            return
        self.events.append(f"job {job.id}: its process ended without recording its end")
        if child.oom_error:
            tail = _tail(child.log_path, child.log_offset)
            error = child.oom_error + (
                f"\n\nLast lines of {child.log_path}:\n{tail}" if tail else ""
            )
            self.queue.finish(
                child.job_id, "failed", error=error, pid=child.pid, worker=self.worker
            )
            return
        if job.cancel_requested:
            self.queue.finish(child.job_id, "cancelled", pid=child.pid, worker=self.worker)
            return
        if child.proc is None:  # adopted: its exit status is not ours to read
            self.queue.finish(child.job_id, "interrupted", pid=child.pid, worker=self.worker)
            return
        error = death_text(child.proc.returncode)
        tail = _tail(child.log_path, child.log_offset)
        if any(word in tail for word in _OOM_TAIL_WORDS):
            error = f"out of memory: the job could not allocate memory; {error}"
        if tail:
            error += f"\n\nLast lines of {child.log_path}:\n{tail}"
        self.queue.finish(child.job_id, "failed", error=error, pid=child.pid, worker=self.worker)

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
