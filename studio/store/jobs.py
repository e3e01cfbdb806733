"""The background jobs' queue, their logs and the baselines' puzzle flags, in the project file.

A job is a row of ``jobs``: queued, then claimed by the worker host (``running``, with the pid of
the child process that runs it), then ended by that child (``done``, ``failed``, ``cancelled``)
or by the host (the child died: ``failed``; the studio closed: ``interrupted``). The GUI, the
host and each worker child open their own :class:`JobQueue` on the same SQLite file (WAL mode,
a busy timeout), so it is safe from several processes and threads at once.

Every change of state is one conditional ``UPDATE`` (``... WHERE status = 'queued'``), so two
processes racing for the same job cannot both win: :meth:`JobQueue.claim` is atomic, a job
cancelled while queued is never started, and a record the child has ended is never overwritten
by the host. Every public method commits before it returns.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, text

from studio.core.errors import ProjectError, StudioError
from studio.store.dbfile import open_engine, read_project_meta
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
]

#: States a job ends in; only :meth:`JobQueue.resume` takes it out of them.
FINAL_STATES = ("done", "failed", "cancelled", "interrupted")
#: States :meth:`JobQueue.resume` accepts (a done job is re-run with :meth:`JobQueue.restart`).
RESUMABLE_STATES = ("failed", "cancelled", "interrupted")
#: Log lines kept per job; older ones are dropped as new ones arrive (a chatty job cannot grow
#: the project file without bound).
LOG_LIMIT = 5000

_LEVELS = ("debug", "info", "warning", "error")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def job_work_dir(project_path: str | Path, job_id: int) -> Path:
    """The folder of a job's files (``worker.log``, checkpoints, plots, ``report.json``):
    ``<project>.jobs/<job_id>/`` beside the project file. Not created here."""
    return Path(f"{Path(project_path)}.jobs") / str(int(job_id))


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
    " result IS NOT NULL, peak_rss, memory_limit, progress_at, stalled_at"
)


class JobQueue:
    """The jobs of one project file. Open one per process (or share one between threads: its
    engine pools connections); :meth:`close` when done.

    Refuses (:class:`ProjectError`) a file that is not a project of the current format: the
    studio and the CLI open the :class:`~studio.store.project.Project` first, which migrates an
    older one (with a backup)."""

    def __init__(self, project_path: str | Path) -> None:
        self.path = Path(project_path)
        _check_project(self.path)
        self._engine: Engine = open_engine(self.path)
        self._results: dict[int, tuple[tuple[str | None, int], dict[str, Any]]] = {}
        self._results_lock = threading.Lock()

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> JobQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def work_dir(self, job_id: int) -> Path:
        """This project's folder for the job's files (see :func:`job_work_dir`)."""
        return job_work_dir(self.path, job_id)

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
            raise StudioError(f"there is no job {job_id}", self.path)
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
                    " stalled_at FROM jobs WHERE status='running'"
                )
            ).all()
        return [
            RunningJob(int(r[0]), None if r[1] is None else int(r[1]), bool(r[2]), r[3], r[4])
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
                conn.execute(
                    text(
                        "INSERT INTO jobs (kind, title, params, created_at)"
                        " VALUES (:k, :t, :p, :c) RETURNING id"
                    ),
                    {"k": kind, "t": title or kind, "p": params_text, "c": _now()},
                ).scalar_one()
            )

    def claim(self, job_id: int, pid: int, *, memory_limit: int | None = None) -> bool:
        """queued -> running, owned by process ``pid`` (and, when given, under a memory limit
        in bytes, recorded for the listing); False when the job is no longer queued (claimed
        elsewhere, or cancelled meanwhile). Atomic across processes. A new attempt starts with
        no peak memory, no progress time and not stalled."""
        now = _now()
        with self._engine.begin() as conn:
            n = conn.execute(
                text(
                    "UPDATE jobs SET status='running', pid=:pid, started_at=:t, heartbeat_at=:t,"
                    " finished_at=NULL, attempts=attempts+1, cancel_requested=0, error='',"
                    " peak_rss=NULL, memory_limit=:m, progress_at=NULL, stalled_at=NULL"
                    " WHERE id=:i AND status='queued'"
                ),
                {"i": job_id, "pid": int(pid), "t": now, "m": memory_limit},
            ).rowcount
        return n == 1

    def set_progress(self, job_id: int, fraction: float, message: str = "") -> None:
        """Record progress (clamped to 0..1) and the message; doubles as a heartbeat. A new
        fraction or message is progress: it sets ``progress_at`` and clears a stall; the same
        report repeated is only a heartbeat."""
        f = float(fraction)
        f = 0.0 if math.isnan(f) else min(1.0, max(0.0, f))
        with self._engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE jobs SET progress=:f, message=:m, heartbeat_at=:t,"
                    " progress_at=CASE WHEN progress IS NOT :f OR message IS NOT :m THEN :t"
                    " ELSE progress_at END,"
                    " stalled_at=CASE WHEN progress IS NOT :f OR message IS NOT :m THEN NULL"
                    " ELSE stalled_at END"
                    " WHERE id=:i AND status='running'"
                ),
                {"i": job_id, "f": f, "m": message, "t": _now()},
            )

    def mark_stalled(self, job_id: int, cutoff: str) -> bool:
        """Mark a running job stalled when its last progress (or, without any, its start) is
        at or before ``cutoff`` (an ISO time as :func:`_now` writes them); False when it made
        progress since, is already stalled or is no longer running. The job keeps running."""
        with self._engine.begin() as conn:
            n = conn.execute(
                text(
                    "UPDATE jobs SET stalled_at=:t WHERE id=:i AND status='running'"
                    " AND stalled_at IS NULL AND COALESCE(progress_at, started_at) <= :c"
                ),
                {"i": job_id, "t": _now(), "c": cutoff},
            ).rowcount
        return n == 1

    def record_peak_memory(self, job_id: int, rss: int) -> None:
        """Raise the job's recorded peak memory to ``rss`` bytes (never lowers it)."""
        with self._engine.begin() as conn:
            conn.execute(
                text("UPDATE jobs SET peak_rss=MAX(COALESCE(peak_rss, 0), :r) WHERE id=:i"),
                {"i": job_id, "r": int(rss)},
            )

    def heartbeat(self, job_id: int) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                text("UPDATE jobs SET heartbeat_at=:t WHERE id=:i AND status='running'"),
                {"i": job_id, "t": _now()},
            )

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
        with self._engine.begin() as conn:
            conn.execute(
                text("INSERT INTO job_logs (job_id, at, level, line) VALUES (:j, :a, :l, :s)"),
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
            conn.execute(
                text(
                    "UPDATE jobs SET checkpoint=:c, heartbeat_at=:t, progress_at=:t,"
                    " stalled_at=NULL WHERE id=:i"
                ),
                {"i": job_id, "c": state_text, "t": _now()},
            )

    def finish(
        self,
        job_id: int,
        status: str,
        result: dict[str, Any] | None = None,
        error: str = "",
        *,
        pid: int | None = None,
    ) -> bool:
        """End a queued or running job with a final ``status``; False (nothing written) when it
        had already ended. With ``pid``, only while that process still owns it.

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
        with self._engine.begin() as conn:
            n = conn.execute(
                text(
                    "UPDATE jobs SET status=:s, result=:r, error=:e, finished_at=:t,"
                    " progress=CASE WHEN :s='done' THEN 1.0 ELSE progress END,"
                    # a done job is never resumed: its checkpoint (a baseline job's holds every
                    # unit's predictions, megabytes) would only slow every listing down
                    " checkpoint=CASE WHEN :s='done' THEN '{}' ELSE checkpoint END"
                    f" WHERE id=:i AND status IN ('queued', 'running'){owner}"
                ),
                {"i": job_id, "s": status, "r": result_text, "e": error, "t": _now(), "pid": pid},
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
        now = _now()
        with self._engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE jobs SET status='cancelled', cancel_requested=1, finished_at=:t"
                    " WHERE id=:i AND status='queued'"
                ),
                {"i": job_id, "t": now},
            )
            conn.execute(
                text("UPDATE jobs SET cancel_requested=1 WHERE id=:i AND status='running'"),
                {"i": job_id},
            )

    def mark_interrupted(self, alive: Callable[[int], bool]) -> list[int]:
        """Running jobs whose process is gone (``alive(pid)`` is False) become interrupted, as
        when the studio closed or crashed under them; returns their ids."""
        changed = []
        for job_id, pid, _cancel in self.running():
            if pid is not None and alive(pid):
                continue
            with self._engine.begin() as conn:
                n = conn.execute(
                    text(
                        "UPDATE jobs SET status='interrupted', finished_at=:t"
                        " WHERE id=:i AND status='running' AND pid IS :pid"
                    ),
                    {"i": job_id, "t": _now(), "pid": pid},
                ).rowcount
            if n:
                changed.append(job_id)
        return changed

    def resume(self, job_id: int) -> None:
        """Put an interrupted, failed or cancelled job back in the queue with its checkpoint, so
        it continues from the units it completed. Raises StudioError for any other state."""
        with self._engine.begin() as conn:
            n = conn.execute(
                text(
                    "UPDATE jobs SET status='queued', cancel_requested=0, error='',"
                    " result=NULL, finished_at=NULL, pid=NULL"
                    " WHERE id=:i AND status IN ('failed', 'cancelled', 'interrupted')"
                ),
                {"i": job_id},
            ).rowcount
        if n != 1:
            job = self._need(job_id)
            raise StudioError(
                f"job {job_id} is {job.status}; only {', '.join(RESUMABLE_STATES)} jobs can be "
                "resumed (restart runs it again from scratch)",
                self.path,
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


def _check_project(path: Path) -> None:
    """Refuse a path that is not a project of the current format, read-only: a refused file
    is left exactly as it was (not even switched to WAL mode)."""
    meta = read_project_meta(path, quick_check=False)
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
