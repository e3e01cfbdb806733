"""The job queue in the project file: states, logs, checkpoints, flags (with the probes'
reasons), formats 4 and 5 and their migrations, and claims raced by several processes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from studio.core.errors import ProjectError, StudioError
from studio.core.schema import Schema, bundled_schema_path, load_schema
from studio.store.jobs import JOB_STATES, LOG_LIMIT, JobQueue, job_work_dir
from studio.store.migrations import FORMAT_1_DDL, FORMAT_VERSION, MIGRATIONS
from studio.store.project import Project


def test_the_job_tables_flag_reasons_and_workers(project_path: Path) -> None:
    assert FORMAT_VERSION >= 7 and all(v in MIGRATIONS for v in (3, 4, 5, 6))
    con = sqlite3.connect(project_path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"jobs", "job_logs", "baseline_flags"} <= tables
    columns = {r[1]: r for r in con.execute("PRAGMA table_info(baseline_flags)")}
    assert columns["reason"][2:5] == ("TEXT", 1, "''")  # type, NOT NULL, default
    jobs = {r[1]: r for r in con.execute("PRAGMA table_info(jobs)")}
    assert jobs["worker"][2:5] == ("TEXT", 1, "''") and jobs["claimed_at"][2] == "TEXT"
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        con.execute("INSERT INTO jobs (kind, status, created_at) VALUES ('x', 'bogus', 'now')")
    con.close()
    assert JOB_STATES == ("queued", "running", "done", "failed", "cancelled", "interrupted")


def test_lifecycle_of_a_job(queue: JobQueue) -> None:
    first = queue.submit("diagnostic", {"action": "sleep"}, "first")
    second = queue.submit("diagnostic", {"n": 2})
    assert [j.id for j in queue.jobs()] == [second, first]  # newest first
    job = queue.job(first)
    assert job is not None
    assert (job.status, job.title, job.params, job.attempts) == (
        "queued",
        "first",
        {"action": "sleep"},
        0,
    )
    assert queue.job(second).title == "diagnostic"  # a title by default
    assert queue.next_queued().id == first  # oldest first

    assert queue.claim(first, 4242)
    assert not queue.claim(first, 4343)  # already running
    queue.set_progress(first, 1.7, "step 3/3")  # clamped
    queue.set_device(first, "cpu (1 thread)")
    queue.save_checkpoint(first, {"step": 3})
    job = queue.job(first)
    assert (job.status, job.pid, job.progress, job.message, job.device, job.attempts) == (
        "running",
        4242,
        1.0,
        "step 3/3",
        "cpu (1 thread)",
        1,
    )
    assert job.started_at and job.heartbeat_at and job.checkpoint == {"step": 3}
    assert queue.next_queued().id == second

    assert queue.finish(first, "done", {"answer": 42})
    assert not queue.finish(first, "failed", error="late")  # an ended job stays as it ended
    job = queue.job(first)
    assert (job.status, job.result, job.error, job.final) == ("done", {"answer": 42}, "", True)
    assert queue.job(first).result is job.result  # parsed once, shared between reads
    with pytest.raises(ValueError, match="ends in one of"):
        queue.finish(second, "running")
    with pytest.raises(StudioError, match="not JSON"):
        queue.submit("diagnostic", {"f": object()})
    assert queue.job(999) is None
    assert queue.work_dir(first) == job_work_dir(queue.path, first)
    assert queue.work_dir(first) == Path(f"{queue.path}.jobs") / str(first)


def test_cancel_resume_restart(queue: JobQueue) -> None:
    queued = queue.submit("diagnostic", {})
    queue.request_cancel(queued)  # a queued job is cancelled at once, never started
    job = queue.job(queued)
    assert (job.status, job.attempts) == ("cancelled", 0)
    assert not queue.claim(queued, 1)

    running = queue.submit("diagnostic", {"x": 1}, "sleepy")
    assert queue.claim(running, 1)
    queue.request_cancel(running)  # a running job only gets the flag
    assert queue.job(running).status == "running" and queue.cancel_requested(running)
    queue.save_checkpoint(running, {"step": 2})
    queue.finish(running, "cancelled")
    queue.request_cancel(running)  # nothing to do
    assert queue.job(running).status == "cancelled"

    queue.resume(running)
    job = queue.job(running)
    assert (job.status, job.checkpoint, job.cancel_requested, job.pid) == (
        "queued",
        {"step": 2},
        False,
        None,
    )
    assert queue.claim(running, 2) and queue.job(running).attempts == 2
    with pytest.raises(StudioError, match="running; only failed, cancelled, interrupted"):
        queue.resume(running)
    queue.finish(running, "done", {"ok": True})
    with pytest.raises(StudioError, match="is done"):
        queue.resume(running)

    fresh = queue.restart(running)
    assert fresh != running
    new, old = queue.job(fresh), queue.job(running)
    assert (new.status, new.kind, new.params, new.title, new.checkpoint, new.attempts) == (
        "queued",
        "diagnostic",
        {"x": 1},
        "sleepy",
        {},
        0,
    )
    assert (old.status, old.checkpoint) == ("done", {})  # a done job keeps no checkpoint
    with pytest.raises(StudioError, match="no job 999"):
        queue.restart(999)


def test_mark_interrupted_only_takes_dead_pids(queue: JobQueue) -> None:
    alive, dead = queue.submit("diagnostic", {}), queue.submit("diagnostic", {})
    queue.claim(alive, 100)
    queue.claim(dead, 200)
    assert queue.mark_interrupted(lambda pid: pid == 100) == [dead]
    assert queue.job(dead).status == "interrupted" and queue.job(dead).finished_at
    assert queue.job(alive).status == "running"
    assert queue.mark_interrupted(lambda pid: pid == 100) == []


def test_logs_are_ordered_and_bounded(queue: JobQueue) -> None:
    job = queue.submit("diagnostic", {})
    other = queue.submit("diagnostic", {})
    queue.log(job, "hello")
    queue.log(other, "elsewhere", "warning")
    queue.log(job, "careful", "error")
    lines = queue.logs(job)
    assert [(x.level, x.line) for x in lines] == [("info", "hello"), ("error", "careful")]
    assert queue.logs(job, after=lines[0].seq) == lines[1:]
    queue.log_lines(job, [("info", f"line {i}") for i in range(LOG_LIMIT + 10)])
    kept = queue.logs(job)
    assert len(kept) == LOG_LIMIT and kept[-1].line == f"line {LOG_LIMIT + 9}"
    assert kept[0].line == "line 10"
    assert [x.line for x in queue.logs(other)] == ["elsewhere"]


def test_flags_replace_earlier_jobs_of_the_same_model(queue: JobQueue) -> None:
    first, second = queue.submit("baseline", {}), queue.submit("baseline", {})
    blind = {"model": "blind", "confidence": 0.9, "seeds_correct": 3, "seeds": 3}
    queue.set_flags(first, 7, [{"id": "test-1", **blind}, {"id": "test-2", **blind}])
    queue.set_flags(
        first,
        7,
        [
            {
                "id": "test-1",
                "model": "answers-only",
                "confidence": 0.8,
                "seeds_correct": 3,
                "seeds": 3,
            }
        ],
    )
    queue.set_flags(first, 8, [{"id": "test-1", **blind}])
    flags = queue.flags(7)
    assert sorted(flags) == ["test-1"]  # the same job's second call replaced its first
    # a later blind run replaces blind flags only; ``models`` clears a model that flags nothing
    assert queue.claim(second, 1)
    result = {
        "puzzle_flags": {
            "set_id": 7,
            "flags": [{"id": "test-3", **blind}],
            "models": ["answers-only"],
        }
    }
    assert queue.finish(second, "done", result)  # stored with the job, in one transaction
    flags = queue.flags(7)
    assert sorted(flags) == ["test-3"]
    [f] = flags["test-3"]
    assert (f.job_id, f.set_id, f.model, f.confidence, f.seeds_correct, f.seeds) == (
        second,
        7,
        "blind",
        0.9,
        3,
        3,
    )
    assert f.reason == ""  # a model that does not say why
    assert sorted(queue.flags(8)) == ["test-1"]
    assert queue.flags(9) == {}
    with pytest.raises(StudioError, match="malformed"):
        queue.set_flags(first, 7, [{"model": "blind"}])


def test_a_flag_keeps_its_reason(queue: JobQueue) -> None:
    """An answers-only probe's flag says why (its ``reason`` in the report); the queue stores it
    with the job and gives it back, so the board can show it."""
    job = queue.submit("baseline", {})
    assert queue.claim(job, 1)
    why = "no other answer shares the key's value of intersection-quantity (+2.97)"
    probe = {"model": "probe-tags", "confidence": 0.74, "seeds_correct": 1, "seeds": 1}
    result = {
        "puzzle_flags": {
            "set_id": 3,
            "models": ["blind", "probe-tags"],
            "flags": [
                {"id": "test-1", **probe, "reason": why},
                {"id": "test-2", **probe, "reason": None},  # no reason: stored empty
                {
                    "id": "test-2",
                    "model": "blind",
                    "confidence": 0.9,
                    "seeds_correct": 3,
                    "seeds": 3,
                },
            ],
        }
    }
    assert queue.finish(job, "done", result)
    flags = queue.flags(3)
    assert [(f.model, f.reason) for f in flags["test-1"]] == [("probe-tags", why)]
    assert [(f.model, f.reason) for f in flags["test-2"]] == [("blind", ""), ("probe-tags", "")]
    # a later run replaces the reason with the flag
    queue.set_flags(job, 3, [{"id": "test-1", **probe, "reason": "the key carries ink=low"}])
    assert [f.reason for f in queue.flags(3)["test-1"]] == ["the key carries ink=low"]


def test_refuses_what_is_not_a_current_project(tmp_path: Path, project_path: Path) -> None:
    with pytest.raises(ProjectError, match="not found"):
        JobQueue(tmp_path / "missing.studio")
    assert not (tmp_path / "missing.studio").exists()  # nothing created
    junk = tmp_path / "junk.studio"
    junk.write_text("hello")
    with pytest.raises(ProjectError, match="not an SQLite database"):
        JobQueue(junk)
    foreign = tmp_path / "foreign.db"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(ProjectError, match="not an Analogy Studio project"):
        JobQueue(foreign)
    con = sqlite3.connect(project_path)
    con.execute(f"UPDATE meta SET value='{FORMAT_VERSION + 1}' WHERE key='format_version'")
    con.commit()
    con.close()
    with pytest.raises(ProjectError, match="newer Analogy Studio"):
        JobQueue(project_path)


def write_format_3(path: Path, schema: Schema) -> None:
    """A real format-3 project, as the previous build wrote it: format 1's layout, the 1->2 and
    2->3 steps, a tagged glyph and a puzzle set with one puzzle and its log entry."""
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        for ddl in FORMAT_1_DDL:
            conn.exec_driver_sql(ddl)
        MIGRATIONS[1](conn)
        MIGRATIONS[2](conn)
        conn.exec_driver_sql(
            "INSERT INTO meta VALUES ('application', 'analogy-studio'), ('format_version', '3')"
        )
        conn.exec_driver_sql(
            "INSERT INTO schema_versions VALUES (1, ?, '2026-01-01', '', 'created')",
            (schema.dumps(),),
        )
        conn.exec_driver_sql("INSERT INTO glyphs (id, codepoint, font) VALUES (1, 9676, 'symbola')")
        conn.exec_driver_sql(
            "INSERT INTO tags (glyph_id, concept, value, author, created_at)"
            " VALUES (1, 'aspect', 'tall', 'ann', '2026-01-02')"
        )
        conn.exec_driver_sql(
            "INSERT INTO puzzle_sets (id, name, created_at, author)"
            " VALUES (1, 'drafts', '2026-01-03', 'ann')"
        )
        record = {"id": "test-00000", "rule": "constant", "concept": "aspect", "key": 2}
        conn.exec_driver_sql(
            "INSERT INTO puzzles (set_id, puzzle_id, position, record, layout, rule, concept,"
            " split, status, updated_at, author) VALUES (1, 'test-00000', 0, ?, 'two-row',"
            " 'constant', 'aspect', 'test', 'approved', '2026-01-03', 'ann')",
            (json.dumps(record),),
        )
        conn.exec_driver_sql(
            "INSERT INTO puzzle_events (set_id, at, author, kind) VALUES (1, '2026-01-03', 'ann',"
            " 'import')"
        )
    engine.dispose()


def test_format_3_project_migrates_with_its_data(tmp_path: Path) -> None:
    schema = load_schema(bundled_schema_path())
    path = tmp_path / "three.studio"
    write_format_3(path, schema)
    before = path.read_bytes()
    with pytest.raises(ProjectError, match="format 3, which has no job queue"):
        JobQueue(path)  # the queue never migrates: the project does
    with Project.open(path) as p:
        assert p.format_version == FORMAT_VERSION
        [t] = p.all_tags()
        assert (t.concept, t.value, t.author) == ("aspect", "tall", "ann")
        [s] = p.puzzle_sets()
        assert (s.id, s.name, s.count) == (1, "drafts", 1)
        stored = p.stored_puzzle(1, "test-00000")
        assert stored is not None and stored.status == "approved" and stored.record["key"] == 2
        assert [e.kind for e in p.puzzle_events(1)] == ["import"]
    assert (tmp_path / "three.studio.bak-format3").read_bytes() == before
    with JobQueue(path) as q:
        assert q.jobs() == [] and q.flags(1) == {} and q.logs(1) == []
        job = q.submit("diagnostic", {})
        assert q.job(job).status == "queued"


def write_format_4(path: Path, schema: Schema) -> None:
    """A real format-4 project, as the previous build wrote it: format 3 (above), the 3->4 step,
    a finished baseline job with a log line and its flag on the set's puzzle (no reason: format
    4 had no column for it)."""
    write_format_3(path, schema)
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        MIGRATIONS[3](conn)
        conn.exec_driver_sql("UPDATE meta SET value='4' WHERE key='format_version'")
        conn.exec_driver_sql(
            "INSERT INTO jobs (id, kind, title, status, progress, created_at, finished_at,"
            " result, attempts) VALUES (1, 'baseline', 'blind on drafts', 'done', 1.0,"
            " '2026-01-04', '2026-01-04', '{\"models\":{}}', 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO job_logs (job_id, at, line) VALUES (1, '2026-01-04', 'blind · seed 0')"
        )
        conn.exec_driver_sql(
            "INSERT INTO baseline_flags (job_id, set_id, puzzle_id, model, confidence,"
            " seeds_correct, seeds, created_at) VALUES (1, 1, 'test-00000', 'blind', 0.91, 3, 3,"
            " '2026-01-04')"
        )
    engine.dispose()


def test_format_4_project_migrates_and_its_flags_gain_an_empty_reason(tmp_path: Path) -> None:
    schema = load_schema(bundled_schema_path())
    path = tmp_path / "four.studio"
    write_format_4(path, schema)
    before = path.read_bytes()
    with pytest.raises(ProjectError, match="format 4, older than this studio's"):
        JobQueue(path)  # the queue never migrates: the project does
    assert path.read_bytes() == before  # and a refused file is left as it was
    with Project.open(path) as p:
        assert p.format_version == FORMAT_VERSION
        [t] = p.all_tags()
        assert (t.concept, t.value, t.author) == ("aspect", "tall", "ann")
        stored = p.stored_puzzle(1, "test-00000")
        assert stored is not None and stored.status == "approved"
        [job] = p.jobs.jobs()
        assert (job.id, job.kind, job.status, job.result) == (1, "baseline", "done", {"models": {}})
        assert [x.line for x in p.jobs.logs(1)] == ["blind · seed 0"]
        [flag] = p.jobs.flags(1)["test-00000"]
        assert (flag.job_id, flag.model, flag.confidence, flag.seeds_correct, flag.reason) == (
            1,
            "blind",
            0.91,
            3,
            "",
        )
    assert (tmp_path / "four.studio.bak-format4").read_bytes() == before
    with JobQueue(path) as q:  # the migrated file stores a probe's reason
        job = q.submit("baseline", {})
        why = "no other answer shares the key's value of aspect (+1.80)"
        flag = {"id": "test-00000", "model": "probe-tags", "confidence": 0.7, "reason": why}
        q.set_flags(job, 1, [{**flag, "seeds_correct": 1, "seeds": 1}])
        flags = q.flags(1)["test-00000"]
        assert [(f.model, f.reason) for f in flags] == [("blind", ""), ("probe-tags", why)]


CLAIMER = textwrap.dedent(
    """
    import sys
    from studio.store.jobs import JobQueue
    q = JobQueue(sys.argv[1])
    won = []
    for job_id in range(1, int(sys.argv[2]) + 1):
        if q.claim(job_id, int(sys.argv[3])):
            won.append(job_id)
            q.log(job_id, "claimed by " + sys.argv[3])
            q.set_progress(job_id, 0.5, "half")
    print(",".join(map(str, won)))
    """
)


def test_claims_raced_by_processes_are_won_once(project_path: Path, queue: JobQueue) -> None:
    n = 60
    for _ in range(n):
        queue.submit("diagnostic", {})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(project_path), str(n), str(10_000 + i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    won: list[int] = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        won += [int(x) for x in out.strip().split(",") if x]
    assert sorted(won) == list(range(1, n + 1))  # each job claimed exactly once
    for job in queue.jobs():
        [line] = queue.logs(job.id)
        assert job.status == "running" and line.line == f"claimed by {job.pid}"
