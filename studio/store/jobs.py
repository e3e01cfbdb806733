"""The background jobs' queue, their logs and the baselines' puzzle flags, in the project's
database: a SQLite file or a lab's PostgreSQL server (one code path, one SQL text for both).

A job is a row of ``jobs``: queued, then claimed by a worker host (``running``, with the
``worker`` that claimed it, "machine · pid N", and the pid of the child process that runs it on
that machine), then ended by that child (``done``, ``failed``, ``cancelled``) or by the host
(the child died: ``failed``; the studio closed: ``interrupted``). The GUI, the hosts (the
studio's, ``worker serve`` on other machines) and each worker child open their own
:class:`JobQueue` on the same database, so it is safe from several processes, threads and
machines at once.

Every change of state is one conditional ``UPDATE`` (``... WHERE status = 'queued'``), so two
processes racing for the same job cannot both win: :meth:`JobQueue.claim` and
:meth:`JobQueue.claim_next` are atomic (on PostgreSQL ``claim_next`` takes the oldest queued row
``FOR UPDATE SKIP LOCKED``: workers on many machines never wait on each other's row), a job
cancelled while queued is never started, and a record the child has ended is never overwritten
by the host. Every public method commits before it returns.

Times are ISO-8601 text (UTC, milliseconds). On PostgreSQL the database server's clock writes
them (``now()``) and computes every cut-off (stalled, dead worker), so a machine whose clock is
off can neither requeue a live job nor look dead itself; on SQLite (one machine) Python's clock
does. A worker whose host stops heartbeating for ``after_s`` seconds is lost:
:meth:`JobQueue.requeue_dead` puts its running job back in the queue, resumable from its
checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Connection, CursorResult, Engine, TextClause, text

from studio.core.errors import ProjectError, StudioError
from studio.store.dbfile import (
    is_database_url,
    open_engine,
    read_database_meta,
    read_project_meta,
    safe_location,
)
from studio.store.migrations import FORMAT_VERSION, JOB_STATES

__all__ = [
    "FINAL_STATES",
    "JOB_STATES",
    "LOG_LIMIT",
    "RESUMABLE_STATES",
    "JobQueue",
    "JobRecord",
    "LogLine",
    "PuzzleFlag",
    "RunningJob",
    "job_work_dir",
    "machine_name",
    "worker_machine",
    "worker_name",
]

#: States a job ends in; only :meth:`JobQueue.resume` takes it out of them.
FINAL_STATES = ("done", "failed", "cancelled", "interrupted")
#: States :meth:`JobQueue.resume` accepts (a done job is re-run with :meth:`JobQueue.restart`).
RESUMABLE_STATES = ("failed", "cancelled", "interrupted")
#: Log lines kept per job; older ones are dropped as new ones arrive (a chatty job cannot grow
#: the project file without bound).
LOG_LIMIT = 5000

_LEVELS = ("debug", "info", "warning", "error")


def _now(offset_s: float = 0.0) -> str:
    t = datetime.now(UTC) + timedelta(seconds=offset_s)
    return t.isoformat(timespec="milliseconds")


#: PostgreSQL's clock as ISO text in :func:`_now`'s format (``2026-01-02T03:04:05.678+00:00``).
_PG_ISO = """'YYYY-MM-DD"T"HH24\\:MI\\:SS.MS"+00\\:00"'"""
_PG_NOW = f"to_char(now() AT TIME ZONE 'UTC', {_PG_ISO})"
_PG_CUTOFF = f"to_char((now() - make_interval(secs => :after_s)) AT TIME ZONE 'UTC', {_PG_ISO})"


def machine_name() -> str:
    """This computer's name as workers record it (the host name)."""
    return socket.gethostname() or "localhost"


def worker_name(pid: int | None = None, machine: str | None = None) -> str:
    """A worker's name as stored in ``jobs.worker``: ``"gpu-box-1 · pid 4242"`` (the machine
    and the process that claimed the job)."""
    return f"{machine or machine_name()} · pid {os.getpid() if pid is None else int(pid)}"


def worker_machine(worker: str) -> str:
    """The machine part of a ``jobs.worker`` value (``""`` for a job nobody claimed)."""
    return worker.rsplit(" · pid ", 1)[0] if worker else ""


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def job_work_dir(location: str | Path, job_id: int) -> Path:
    """The folder of a job's files (``worker.log``, plots, ``report.json``) on this machine:
    ``<project>.jobs/<job_id>/`` beside a project file; for a database URL (no file to sit
    beside, and workers on several machines) a folder in this user's cache, keyed by the
    database (its URL without password) and the job: ``<cache>/jobs/<hash>/<job_id>/``. Not
    created here. What other machines need of a job (its result, checkpoint, log) is in the
    database, never only in this folder."""
    if is_database_url(location):
        key = hashlib.sha256(safe_location(location).encode()).hexdigest()[:16]
        root = Path(platformdirs.user_cache_dir("analogy-studio")) / "jobs" / key
        return root / str(int(job_id))
    return Path(f"{Path(location)}.jobs") / str(int(job_id))


@dataclass(frozen=True)
class JobRecord:
    """One job as stored. ``params``, ``result`` and ``checkpoint`` are parsed JSON; treat them
    as read-only (a finished job's result is parsed once and shared between reads)."""

    id: int
    kind: str
    title: str
    params: dict[str, Any]
    status: str
    progress: float  # 0..1
    message: str  # the last progress message ("blind · seed 2 · epoch 3/8")
    created_at: str
    started_at: str | None
    finished_at: str | None
    pid: int | None
    device: str  # the device actually used ("cpu (1 thread)", "cuda:0 NVIDIA H100")
    cancel_requested: bool
    result: dict[str, Any] | None  # the job function's return value
    error: str  # failure text: exception and traceback tail, or how the process died
    checkpoint: dict[str, Any]  # resumable state the job saved (completed units)
    attempts: int
    heartbeat_at: str | None = None  # last sign of life from the child (progress or a beat)
    peak_rss: int | None = None  # bytes: the most memory the job's process tree held (format 6)
    memory_limit: int | None = None  # bytes: the limit the host enforced on this attempt
    progress_at: str | None = None  # last progress: a new fraction, message or checkpoint
    stalled_at: str | None = None  # since when no progress came (None: not stalled)
    worker: str = ""  # who claimed it: "machine · pid N" (format 7); "" before any claim
    claimed_at: str | None = None  # when that worker claimed it

    @property
    def machine(self) -> str:
        """The machine that claimed (runs, or ran) the job; ``""`` when none did."""
        return worker_machine(self.worker)

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATES

    @property
    def stalled(self) -> bool:
        """Running, but without progress for the job's stall time (see the worker host)."""
        return self.status == "running" and self.stalled_at is not None


@dataclass(frozen=True, slots=True)
class RunningJob:
    """What the worker host reads of a running job on every poll (one cheap query)."""

    id: int
    pid: int | None
    cancel_requested: bool
    last_progress_at: str | None  # the last progress, else the start of this attempt
    stalled_at: str | None
    worker: str = ""


@dataclass(frozen=True, slots=True)
class LogLine:
    seq: int  # increasing over the whole file: pass the last one seen as ``after``
    at: str
    level: str
    line: str


@dataclass(frozen=True, slots=True)
class PuzzleFlag:
    """A puzzle a baseline (context-blind or partial-input) answered from a shortcut: the key in
    ``seeds_correct`` of ``seeds`` seeds, with mean confidence ``confidence``. ``reason`` is why,
    where the model can say (the answers-only probes name the features that carried the choice,
    so a curator reads what gives the key away); empty otherwise."""

    job_id: int
    set_id: int
    puzzle_id: str
    model: str
    confidence: float
    seeds_correct: int
    seeds: int
    created_at: str
    reason: str = ""


_JOB_COLUMNS = (
    "id, kind, title, params, status, progress, message, created_at, started_at, finished_at,"
    " pid, device, cancel_requested, error, checkpoint, attempts, heartbeat_at,"
    " result IS NOT NULL, peak_rss, memory_limit, progress_at, stalled_at, worker, claimed_at"
)


class JobQueue:
    """The jobs of one project: a file path or a database URL (``postgresql://…``). Open one
    per process (or share one between threads: its engine pools connections); :meth:`close`
    when done.

    Refuses (:class:`ProjectError`) what is not a project of the current format: the studio
    and the CLI open the :class:`~studio.store.project.Project` first, which migrates an older
    one. ``location`` is what was given (a URL may carry a password: never print it);
    :attr:`where` is the form for messages; :attr:`path` the file (None for a URL)."""

    def __init__(self, location: str | Path) -> None:
        self.is_url = is_database_url(location)
        self.location: str | Path = str(location) if self.is_url else Path(location)
        self.path: Path | None = None if self.is_url else Path(location)
        self.where = safe_location(location) if self.is_url else str(location)
        if self.path is not None:
            _check_version(read_project_meta(self.path, quick_check=False), self.where)
        self._engine: Engine = open_engine(self.location)
        if self.path is None:
            try:
                with self._engine.connect() as conn:
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                    meta = read_database_meta(conn, self.where)
                _check_version(meta, self.where)
            except BaseException:
                self._engine.dispose()
                raise
        self.dialect = self._engine.dialect.name
        self._pg = self.dialect == "postgresql"
        self._sql: dict[str, TextClause] = {}
        self._results: dict[int, tuple[tuple[str | None, int], dict[str, Any]]] = {}
        self._results_lock = threading.Lock()

    def _q(self, sql: str) -> TextClause:
        """``sql`` with ``{now}`` (the database's clock on PostgreSQL, else ``:now``) and
        ``{cutoff}`` (``:after_s`` seconds before now) filled in for this dialect; cached."""
        clause = self._sql.get(sql)
        if clause is None:
            if self._pg:
                filled = sql.replace("{now}", _PG_NOW).replace("{cutoff}", _PG_CUTOFF)
            else:
                filled = sql.replace("{now}", ":now").replace("{cutoff}", ":cutoff")
            clause = self._sql[sql] = text(filled)
        return clause

    def _run(
        self, conn: Connection, sql: str, params: dict[str, Any] | None = None
    ) -> CursorResult[Any]:
        """Execute :meth:`_q`'s statement with ``now`` (and, given ``after_s``, ``cutoff``)
        bound where this dialect takes them from Python."""
        values = dict(params or {})
        if not self._pg:
            if "{now}" in sql:
                values["now"] = _now()
            if "{cutoff}" in sql:
                values["cutoff"] = _now(-float(values.pop("after_s")))
        return conn.execute(self._q(sql), values)

    def now(self) -> str:
        """The database's clock now, as the job rows store times (on SQLite, this machine's)."""
        if not self._pg:
            return _now()
        with self._engine.connect() as conn:
            return str(conn.execute(self._q("SELECT {now}")).scalar_one())

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> JobQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def work_dir(self, job_id: int) -> Path:
        """This project's folder for the job's files on this machine (see
        :func:`job_work_dir`)."""
        return job_work_dir(self.location, job_id)

    # ---- reading ---------------------------------------------------------------------------
    def _record(self, conn: Connection, row: Any) -> JobRecord:
        job_id = int(row[0])
        result = self._result(conn, job_id, row[9], int(row[15])) if row[17] else None
        return JobRecord(
            id=job_id,
            kind=row[1],
            title=row[2],
            params=json.loads(row[3]),
            status=row[4],
            progress=float(row[5]),
            message=row[6],
            created_at=row[7],
            started_at=row[8],
            finished_at=row[9],
            pid=None if row[10] is None else int(row[10]),
            device=row[11],
            cancel_requested=bool(row[12]),
            result=result,
            error=row[13],
            checkpoint=json.loads(row[14]),
            attempts=int(row[15]),
            heartbeat_at=row[16],
            peak_rss=None if row[18] is None else int(row[18]),
            memory_limit=None if row[19] is None else int(row[19]),
            progress_at=row[20],
            stalled_at=row[21],
            worker=row[22] or "",
            claimed_at=row[23],
        )

    def _result(
        self, conn: Connection, job_id: int, finished_at: str | None, attempts: int
    ) -> dict[str, Any] | None:
        # A result (a baseline report: megabytes with its predictions) changes only when the job
        # ends, so it is read and parsed once per (finish time, attempt), not on every poll.
        key = (finished_at, attempts)
        with self._results_lock:
            cached = self._results.get(job_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        raw = conn.execute(text("SELECT result FROM jobs WHERE id=:i"), {"i": job_id}).scalar()
        if raw is None:
            return None
        value: dict[str, Any] = json.loads(raw)
        with self._results_lock:
            self._results[job_id] = (key, value)
        return value

    def jobs(self, limit: int | None = None) -> list[JobRecord]:
        """Every job (or the ``limit`` newest), newest first."""
        sql = f"SELECT {_JOB_COLUMNS} FROM jobs ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._engine.connect() as conn:
            return [self._record(conn, r) for r in conn.execute(text(sql)).all()]

    def job(self, job_id: int) -> JobRecord | None:
        with self._engine.connect() as conn:
            row = conn.execute(
                text(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=:i"), {"i": job_id}
            ).first()
            return None if row is None else self._record(conn, row)

    def _need(self, job_id: int) -> JobRecord:
        job = self.job(job_id)
        if job is None:
            raise StudioError(f"there is no job {job_id}", self.where)
        return job

    def next_queued(self) -> JobRecord | None:
        """The oldest queued job (lowest id), or None."""
        with self._engine.connect() as conn:
            row = conn.execute(
                text(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE status='queued' ORDER BY id LIMIT 1")
            ).first()
            return None if row is None else self._record(conn, row)

    def running(self) -> list[tuple[int, int | None, bool]]:
        """``(job id, pid, cancel requested)`` of every running job: one cheap query, for a
        host that polls often."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text("SELECT id, pid, cancel_requested FROM jobs WHERE status='running'")
            ).all()
        return [(int(r[0]), None if r[1] is None else int(r[1]), bool(r[2])) for r in rows]

    def running_state(self) -> list[RunningJob]:
        """Every running job with what the host watches (cancel, progress, stall): one query."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT id, pid, cancel_requested, COALESCE(progress_at, started_at),"
                    " stalled_at, worker FROM jobs WHERE status='running'"
                )
            ).all()
        return [
            RunningJob(
                int(r[0]), None if r[1] is None else int(r[1]), bool(r[2]), r[3], r[4], r[5] or ""
            )
            for r in rows
        ]

    def cancel_requested(self, job_id: int) -> bool:
        """Whether a cancel was asked for the job (cheap: the child polls it)."""
        with self._engine.connect() as conn:
            value = conn.execute(
                text("SELECT cancel_requested FROM jobs WHERE id=:i"), {"i": job_id}
            ).scalar()
        return bool(value)

    # ---- changing state --------------------------------------------------------------------
    def submit(self, kind: str, params: dict[str, Any], title: str = "") -> int:
        """Queue a job; returns its id. ``params`` must be JSON (checked here, not in the
        child)."""
        try:
            params_text = _dumps(dict(params))
        except (TypeError, ValueError) as e:
            raise StudioError(f"the parameters of a {kind!r} job are not JSON: {e}") from None
        with self._engine.begin() as conn:
            return int(
                self._run(
                    conn,
                    "INSERT INTO jobs (kind, title, params, created_at)"
                    " VALUES (:k, :t, :p, {now}) RETURNING id",
                    {"k": kind, "t": title or kind, "p": params_text},
                ).scalar_one()
            )

    #: What a claim sets: a new attempt starts with no peak memory, no progress time, not
    #: stalled, and the worker's heartbeat.
    _CLAIM_SET = (
        "UPDATE jobs SET status='running', pid=:pid, worker=:w, claimed_at={now},"
        " started_at={now}, heartbeat_at={now}, finished_at=NULL, attempts=attempts+1,"
        " cancel_requested=0, error='', peak_rss=NULL, memory_limit=:m, progress_at=NULL,"
        " stalled_at=NULL"
    )

    def claim(
        self,
        job_id: int,
        pid: int,
        *,
        memory_limit: int | None = None,
        worker: str | None = None,
    ) -> bool:
        """queued -> running, owned by process ``pid`` of ``worker`` (by default this machine
        and ``pid``; and, when given, under a memory limit in bytes, recorded for the listing);
        False when the job is no longer queued (claimed elsewhere, or cancelled meanwhile).
        Atomic across processes and machines."""
        with self._engine.begin() as conn:
            n = self._run(
                conn,
                self._CLAIM_SET + " WHERE id=:i AND status='queued'",
                {"i": job_id, "pid": int(pid), "m": memory_limit, "w": worker or worker_name(pid)},
            ).rowcount
        return n == 1

    def claim_next(
        self, worker: str, pid: int | None = None, *, memory_limit: int | None = None
    ) -> JobRecord | None:
        """Claim the oldest queued job for ``worker`` (``"machine · pid N"``, see
        :func:`worker_name`), run by process ``pid`` (None: a child not started yet, see
        :meth:`attach`); None when nothing is queued. One statement, atomic: on PostgreSQL the
        row is taken ``FOR UPDATE SKIP LOCKED``, so workers on several machines claiming at
        once each get a different job and none waits for another's transaction; on SQLite the
        write lock makes the conditional ``UPDATE`` atomic."""
        lock = " FOR UPDATE SKIP LOCKED" if self._pg else ""
        sql = (
            self._CLAIM_SET + " WHERE id = (SELECT id FROM jobs WHERE status='queued'"
            f" ORDER BY id LIMIT 1{lock}) AND status='queued' RETURNING id"
        )
        with self._engine.begin() as conn:
            job_id = self._run(
                conn, sql, {"pid": pid, "m": memory_limit, "w": worker}
            ).scalar_one_or_none()
            if job_id is None:
                return None
            row = conn.execute(
                text(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=:i"), {"i": job_id}
            ).one()
            return self._record(conn, row)

    def attach(self, job_id: int, worker: str, pid: int, *, memory_limit: int | None) -> bool:
        """Hand a job ``worker`` claimed without a process (:meth:`claim_next` with no pid)
        to its child process ``pid``; False when the job is no longer that worker's (cancelled,
        or requeued as lost meanwhile)."""
        with self._engine.begin() as conn:
            n = self._run(
                conn,
                "UPDATE jobs SET pid=:pid, memory_limit=:m, heartbeat_at={now}"
                " WHERE id=:i AND status='running' AND worker=:w AND pid IS NULL",
                {"i": job_id, "pid": int(pid), "m": memory_limit, "w": worker},
            ).rowcount
        return n == 1

    def adopt(self, job_id: int, pid: int, old_worker: str, new_worker: str) -> bool:
        """A host takes over a running child whose own host is gone (the studio crashed, its
        child did not): the job becomes ``new_worker``'s, so its heartbeats cover it. False
        when the job is no longer ``old_worker``'s process ``pid``."""
        with self._engine.begin() as conn:
            n = self._run(
                conn,
                "UPDATE jobs SET worker=:new, heartbeat_at={now}"
                " WHERE id=:i AND status='running' AND pid=:pid AND worker=:old",
                {"i": job_id, "pid": int(pid), "old": old_worker, "new": new_worker},
            ).rowcount
        return n == 1

    def set_progress(self, job_id: int, fraction: float, message: str = "") -> None:
        """Record progress (clamped to 0..1) and the message; doubles as a heartbeat. A new
        fraction or message is progress: it sets ``progress_at`` and clears a stall; the same
        report repeated is only a heartbeat."""
        f = float(fraction)
        f = 0.0 if math.isnan(f) else min(1.0, max(0.0, f))
        # CAST: PostgreSQL must know the parameter's type on both sides of IS DISTINCT FROM
        changed = "(progress IS DISTINCT FROM CAST(:f AS REAL) OR message IS DISTINCT FROM :m)"
        if self._pg:
            changed = changed.replace("AS REAL", "AS DOUBLE PRECISION")
        with self._engine.begin() as conn:
            self._run(
                conn,
                "UPDATE jobs SET progress=:f, message=:m, heartbeat_at={now},"
                f" progress_at=CASE WHEN {changed} THEN {{now}} ELSE progress_at END,"
                f" stalled_at=CASE WHEN {changed} THEN NULL ELSE stalled_at END"
                " WHERE id=:i AND status='running'",
                {"i": job_id, "f": f, "m": message},
            )

    def mark_stalled(self, job_id: int, after_s: float | str) -> bool:
        """Mark a running job stalled when its last progress (or, without any, its start) is
        ``after_s`` seconds old or more by the database's clock (or, given an ISO time as the
        rows store them, at or before that time); False when it made progress since, is
        already stalled or is no longer running. The job keeps running."""
        sql = (
            "UPDATE jobs SET stalled_at={now} WHERE id=:i AND status='running'"
            " AND stalled_at IS NULL AND COALESCE(progress_at, started_at) <= "
        )
        with self._engine.begin() as conn:
            if isinstance(after_s, str):
                n = self._run(conn, sql + ":c", {"i": job_id, "c": after_s}).rowcount
            else:
                n = self._run(conn, sql + "{cutoff}", {"i": job_id, "after_s": after_s}).rowcount
        return n == 1

    def record_peak_memory(self, job_id: int, rss: int) -> None:
        """Raise the job's recorded peak memory to ``rss`` bytes (never lowers it)."""
        with self._engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE jobs SET peak_rss=CASE WHEN COALESCE(peak_rss, 0) >= :r"
                    " THEN peak_rss ELSE :r END WHERE id=:i"
                ),
                {"i": job_id, "r": int(rss)},
            )

    def heartbeat(self, job_id: int) -> None:
        with self._engine.begin() as conn:
            self._run(
                conn,
                "UPDATE jobs SET heartbeat_at={now} WHERE id=:i AND status='running'",
                {"i": job_id},
            )

    def heartbeat_worker(self, worker: str) -> int:
        """The worker host's sign of life: every running job ``worker`` claimed gets a
        heartbeat now (database clock); returns how many. A host that stops calling this for
        longer than the others' ``dead_after`` is lost (see :meth:`requeue_dead`)."""
        with self._engine.begin() as conn:
            return int(
                self._run(
                    conn,
                    "UPDATE jobs SET heartbeat_at={now} WHERE status='running' AND worker=:w",
                    {"w": worker},
                ).rowcount
            )

    def requeue_dead(self, after_s: float, *, keep: str | None = None) -> list[tuple[int, str]]:
        """Running jobs with no heartbeat for ``after_s`` seconds (database clock) go back to
        the queue, their checkpoint kept so the next attempt resumes (one whose cancel was
        pending is cancelled instead); their log says which worker was lost. ``keep``: a
        worker whose jobs are left alone (the caller itself, alive by definition). Returns
        ``(job id, lost worker)``. Safe to run from many workers at once: each job is moved
        once, and a heartbeat that arrives first keeps it running."""
        lost: list[tuple[int, str]] = []
        with self._engine.connect() as conn:
            rows: Sequence[Any] = self._run(
                conn,
                "SELECT id, worker, heartbeat_at, cancel_requested FROM jobs"
                " WHERE status='running'"
                " AND COALESCE(heartbeat_at, claimed_at, started_at, created_at) <= {cutoff}"
                " ORDER BY id",
                {"after_s": float(after_s)},
            ).all()
        for job_id, worker, beat, cancel in rows:
            worker = worker or ""
            if keep is not None and worker == keep:
                continue
            status = "cancelled" if cancel else "queued"
            with self._engine.begin() as conn:
                n = self._run(
                    conn,
                    "UPDATE jobs SET status=:s, pid=NULL, worker='', claimed_at=NULL,"
                    " finished_at=CASE WHEN :s='cancelled' THEN {now} ELSE NULL END,"
                    " stalled_at=NULL WHERE id=:i AND status='running' AND worker=:w"
                    " AND heartbeat_at IS NOT DISTINCT FROM :b",
                    {"i": job_id, "s": status, "w": worker, "b": beat},
                ).rowcount
                if n:
                    what = "back in the queue" if status == "queued" else "cancelled"
                    self._run(
                        conn,
                        "INSERT INTO job_logs (job_id, at, level, line)"
                        " VALUES (:j, {now}, 'warning', :s)",
                        {
                            "j": job_id,
                            "s": f"worker {worker or '(unknown)'} lost: no heartbeat since "
                            f"{beat or 'the claim'} (over {after_s:g} s); {what}",
                        },
                    )
                    lost.append((int(job_id), worker))
        return lost

    def requeue(self, job_id: int, *, pid: int | None, worker: str) -> bool:
        """A running job of ``worker`` (process ``pid``) goes back to the queue, checkpoint
        kept, as when a ``worker serve`` stops (a pending cancel makes it cancelled); False
        when it is no longer that process's."""
        with self._engine.begin() as conn:
            n = self._run(
                conn,
                "UPDATE jobs SET status=CASE WHEN cancel_requested=1 THEN 'cancelled'"
                " ELSE 'queued' END, pid=NULL, worker='', claimed_at=NULL, stalled_at=NULL,"
                " finished_at=CASE WHEN cancel_requested=1 THEN {now} ELSE NULL END"
                " WHERE id=:i AND status='running' AND worker=:w"
                " AND pid IS NOT DISTINCT FROM :pid",
                {"i": job_id, "w": worker, "pid": pid},
            ).rowcount
        return n == 1

    def set_device(self, job_id: int, device: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(text("UPDATE jobs SET device=:d WHERE id=:i"), {"i": job_id, "d": device})

    def log(self, job_id: int, line: str, level: str = "info") -> None:
        self.log_lines(job_id, [(level, line)])

    def log_lines(self, job_id: int, entries: Sequence[tuple[str, str]]) -> None:
        """Append ``(level, line)`` entries in one transaction and drop the job's lines beyond
        the newest :data:`LOG_LIMIT`."""
        if not entries:
            return
        now = _now()
        rows = [
            {"j": job_id, "a": now, "l": level if level in _LEVELS else "info", "s": str(line)}
            for level, line in entries
        ]
        at = _PG_NOW if self._pg else ":a"  # the database's clock, as for every job time
        with self._engine.begin() as conn:
            conn.execute(
                text(f"INSERT INTO job_logs (job_id, at, level, line) VALUES (:j, {at}, :l, :s)"),
                rows,
            )
            conn.execute(
                text(
                    "DELETE FROM job_logs WHERE job_id=:j AND seq <= (SELECT seq FROM job_logs"
                    " WHERE job_id=:j ORDER BY seq DESC LIMIT 1 OFFSET :n)"
                ),
                {"j": job_id, "n": LOG_LIMIT},
            )

    def logs(self, job_id: int, after: int = 0) -> list[LogLine]:
        """The job's log lines with ``seq > after``, oldest first."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT seq, at, level, line FROM job_logs WHERE job_id=:j AND seq>:a"
                    " ORDER BY seq"
                ),
                {"j": job_id, "a": after},
            ).all()
        return [LogLine(int(r[0]), r[1], r[2], r[3]) for r in rows]

    def save_checkpoint(self, job_id: int, state: dict[str, Any]) -> None:
        """Replace the job's resumable state (JSON). Kept by :meth:`resume`."""
        try:
            state_text = _dumps(dict(state))
        except (TypeError, ValueError) as e:
            raise StudioError(f"job {job_id}: the checkpoint is not JSON: {e}") from None
        with self._engine.begin() as conn:  # a saved unit is progress: it clears a stall
            self._run(
                conn,
                "UPDATE jobs SET checkpoint=:c, heartbeat_at={now}, progress_at={now},"
                " stalled_at=NULL WHERE id=:i",
                {"i": job_id, "c": state_text},
            )

    def finish(
        self,
        job_id: int,
        status: str,
        result: dict[str, Any] | None = None,
        error: str = "",
        *,
        pid: int | None = None,
        worker: str | None = None,
    ) -> bool:
        """End a queued or running job with a final ``status``; False (nothing written) when it
        had already ended. With ``pid`` (and ``worker``), only while that process (of that
        worker) still owns it: a job requeued as lost and claimed elsewhere is not ended by the
        old process.

        A ``done`` result that carries ``"puzzle_flags": {"set_id": N, "flags": [...]}`` has the
        flags stored (as :meth:`set_flags` does) in the same transaction, so a job is never done
        without its flags nor its flags there without the job being done."""
        if status not in FINAL_STATES:
            raise ValueError(f"a job ends in one of {', '.join(FINAL_STATES)}, not {status!r}")
        result_text = None
        if result is not None:
            try:
                result_text = _dumps(result)
            except (TypeError, ValueError) as e:
                raise StudioError(f"job {job_id}: the result is not JSON: {e}") from None
        flags = (result or {}).get("puzzle_flags") if status == "done" else None
        owner = " AND pid=:pid" if pid is not None else ""
        owner += " AND worker=:w" if worker is not None else ""
        with self._engine.begin() as conn:
            n = self._run(
                conn,
                "UPDATE jobs SET status=:s, result=:r, error=:e, finished_at={now},"
                " progress=CASE WHEN :s='done' THEN 1.0 ELSE progress END,"
                # a done job is never resumed: its checkpoint (a baseline job's holds every
                # unit's predictions, megabytes) would only slow every listing down
                " checkpoint=CASE WHEN :s='done' THEN '{}' ELSE checkpoint END"
                f" WHERE id=:i AND status IN ('queued', 'running'){owner}",
                {"i": job_id, "s": status, "r": result_text, "e": error, "pid": pid, "w": worker},
            ).rowcount
            if n and isinstance(flags, dict) and "set_id" in flags:
                _replace_flags(
                    conn,
                    job_id,
                    int(flags["set_id"]),
                    list(flags.get("flags") or []),
                    flags.get("models"),
                )
        return n == 1

    def request_cancel(self, job_id: int) -> None:
        """A queued job is cancelled at once; a running one gets the flag its child polls (the
        host also signals the child). Ended jobs are left alone."""
        with self._engine.begin() as conn:
            self._run(
                conn,
                "UPDATE jobs SET status='cancelled', cancel_requested=1, finished_at={now}"
                " WHERE id=:i AND status='queued'",
                {"i": job_id},
            )
            conn.execute(
                text("UPDATE jobs SET cancel_requested=1 WHERE id=:i AND status='running'"),
                {"i": job_id},
            )

    def mark_interrupted(
        self,
        alive: Callable[[int], bool],
        *,
        machine: str | None = None,
        requeue: bool = False,
        claim_grace_s: float = 30.0,
    ) -> list[int]:
        """Running jobs of THIS machine (``machine``, by default :func:`machine_name`; and
        jobs claimed before workers were recorded) whose process is gone (``alive(pid)`` is
        False) become interrupted, as when the studio closed or crashed under them (with
        ``requeue``: queued again, as a ``worker serve`` wants them); returns their ids. A pid
        means nothing on another machine: those jobs are left to :meth:`requeue_dead`. A job
        claimed here without a process yet (:meth:`claim_next` before :meth:`attach`) counts
        as gone only ``claim_grace_s`` seconds after its last heartbeat."""
        here = machine or machine_name()
        changed = []
        with self._engine.connect() as conn:
            rows: Sequence[Any] = self._run(
                conn,
                "SELECT id, pid, worker, COALESCE(heartbeat_at, claimed_at, started_at) <= {cutoff}"
                " FROM jobs WHERE status='running' ORDER BY id",
                {"after_s": float(claim_grace_s)},
            ).all()
        for job_id, pid, worker, old in rows:
            worker = worker or ""
            if worker and worker_machine(worker) != here:
                continue  # another machine's: its heartbeat tells
            if pid is not None and alive(int(pid)):
                continue
            if pid is None and not old:
                continue  # just claimed; its child is starting
            status = "queued" if requeue else "interrupted"
            with self._engine.begin() as conn:
                n = self._run(
                    conn,
                    "UPDATE jobs SET status=:s,"
                    " finished_at=CASE WHEN :s='queued' THEN NULL ELSE {now} END,"
                    " pid=CASE WHEN :s='queued' THEN NULL ELSE pid END,"
                    " worker=CASE WHEN :s='queued' THEN '' ELSE worker END"
                    " WHERE id=:i AND status='running' AND pid IS NOT DISTINCT FROM :pid"
                    " AND worker=:w",
                    {"i": job_id, "s": status, "pid": pid, "w": worker},
                ).rowcount
            if n:
                changed.append(int(job_id))
        return changed

    def resume(self, job_id: int) -> None:
        """Put an interrupted, failed or cancelled job back in the queue with its checkpoint, so
        it continues from the units it completed. Raises StudioError for any other state."""
        with self._engine.begin() as conn:
            n = conn.execute(
                text(
                    "UPDATE jobs SET status='queued', cancel_requested=0, error='',"
                    " result=NULL, finished_at=NULL, pid=NULL, worker=''"
                    " WHERE id=:i AND status IN ('failed', 'cancelled', 'interrupted')"
                ),
                {"i": job_id},
            ).rowcount
        if n != 1:
            job = self._need(job_id)
            raise StudioError(
                f"job {job_id} is {job.status}; only {', '.join(RESUMABLE_STATES)} jobs can be "
                "resumed (restart runs it again from scratch)",
                self.where,
            )

    def restart(self, job_id: int) -> int:
        """A new queued job with the same kind, parameters and title, from scratch (no
        checkpoint); the old record stays as it was. Returns the new id."""
        job = self._need(job_id)
        return self.submit(job.kind, job.params, job.title)

    # ---- flags -----------------------------------------------------------------------------
    def set_flags(
        self,
        job_id: int,
        set_id: int,
        flags: list[dict[str, Any]],
        *,
        models: Iterable[str] | None = None,
    ) -> None:
        """Store a job's puzzle flags for a set. They replace the set's flags from earlier jobs
        of the same models: those named in ``flags``, plus ``models`` (pass every model the job
        ran, so one that no longer flags anything has its old flags cleared). Each flag is a dict
        as a baseline report's ``flags["puzzles"]`` lists them: ``id``, ``model``,
        ``confidence``, ``seeds_correct``, ``seeds`` and, when the model says why, ``reason``."""
        with self._engine.begin() as conn:
            _replace_flags(conn, job_id, set_id, flags, models)

    def flags(self, set_id: int) -> dict[str, list[PuzzleFlag]]:
        """Puzzle id -> its flags (by model) in a set: one indexed query."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT job_id, set_id, puzzle_id, model, confidence, seeds_correct, seeds,"
                    " created_at, reason FROM baseline_flags WHERE set_id=:s"
                    " ORDER BY puzzle_id, model"
                ),
                {"s": set_id},
            ).all()
        out: dict[str, list[PuzzleFlag]] = {}
        for r in rows:
            flag = PuzzleFlag(
                int(r[0]), int(r[1]), r[2], r[3], float(r[4]), int(r[5]), int(r[6]), r[7], r[8]
            )
            out.setdefault(flag.puzzle_id, []).append(flag)
        return out


def _replace_flags(
    conn: Connection,
    job_id: int,
    set_id: int,
    flags: list[dict[str, Any]],
    models: Iterable[str] | None,
) -> None:
    rows: list[dict[str, Any]] = []
    now = _now()
    for f in flags:
        try:
            rows.append(
                {
                    "j": job_id,
                    "s": set_id,
                    "p": str(f["id"]),
                    "m": str(f["model"]),
                    "c": float(f.get("confidence", 0.0)),
                    "k": int(f.get("seeds_correct", 0)),
                    "n": int(f.get("seeds", 0)),
                    "t": now,
                    "r": str(f.get("reason") or ""),
                }
            )
        except (KeyError, TypeError, ValueError) as e:
            raise StudioError(f"job {job_id}: a puzzle flag is malformed ({e!r}): {f!r}") from None
    replaced: set[str] = {r["m"] for r in rows} | {str(m) for m in (models or ())}
    conn.execute(
        text("DELETE FROM baseline_flags WHERE set_id=:s AND job_id=:j"),
        {"s": set_id, "j": job_id},
    )
    for model in sorted(replaced):
        conn.execute(
            text("DELETE FROM baseline_flags WHERE set_id=:s AND model=:m"),
            {"s": set_id, "m": model},
        )
    if rows:
        conn.execute(
            text(
                "INSERT INTO baseline_flags (job_id, set_id, puzzle_id, model, confidence,"
                " seeds_correct, seeds, created_at, reason)"
                " VALUES (:j, :s, :p, :m, :c, :k, :n, :t, :r)"
            ),
            rows,
        )


def _check_version(meta: dict[str, str], path: str) -> None:
    """Refuse a project that is not of the current format, read-only: a refused file is left
    exactly as it was (not even switched to WAL mode)."""
    version = int(meta.get("format_version") or 0)
    if version < FORMAT_VERSION:
        # the job queue came with format 4; a later format is refused all the same (its tables
        # lack columns this build writes, such as a flag's reason in format 5)
        what = "which has no job queue" if version < 4 else "older than this studio's"
        raise ProjectError(
            f"is a project of format {version}, {what} (format {FORMAT_VERSION}); open it in "
            "Analogy Studio first, which upgrades it and keeps a backup",
            path,
        )
    if version > FORMAT_VERSION:
        raise ProjectError(
            f"was written by a newer Analogy Studio (project format {version}; this version "
            f"reads up to {FORMAT_VERSION}). Update the studio to run its jobs.",
            path,
        )
