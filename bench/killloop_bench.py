"""Benchmark `killloop`: kill -9 the studio's processes mid-work, again and again, and count
what survives.

Set-up (untimed, reported): a project from the shared UA annotations with its glyphs rendered
(``analogy-studio init`` + ``import-annotations --render``) and a small glyph split for the
baseline jobs (``analogy-studio generate``).

Then ``--kills`` rounds (default 100), rotating over five kinds of work, each a real process
killed with SIGKILL after a random delay (seeded):

- **tag**: an editor process tags glyphs one at a time through :class:`Project` and prints
  ``ack`` after each tag is committed;
- **schema**: an editor process adds a value to a concept of the schema (a new schema version)
  and prints ``ack`` after each;
- **import**: ``analogy-studio import-annotations`` of a fresh 400-row CSV (new glyphs, so the
  rows it left can be counted: all or none);
- **generate**: ``analogy-studio generate`` of a small split (render workers included);
- **generate-pooled**: ``generate --n 5000 --workers 2``, past the size where the process
  pool (a forkserver and its workers) starts (issue 25: killing it left them running);
- **export**: ``analogy-studio export-set`` of a curated set of approved puzzles (re-vetted,
  written through a hidden staging folder); after the kill the target must be absent or
  whole, and an export run again to the same target must succeed and leave no staging
  leftovers of the killed one (issue 25);
- **baseline**: a studio process (a :class:`WorkerHost` polled on its main thread) running a
  queued baseline job (context-blind CNN, one seed) in a worker child; the studio is killed.

After each kill: the project must reopen (``Project.open`` and ``PRAGMA quick_check``); every
acknowledged edit (an ``ack`` printed, or an import whose command returned before the kill)
must be there; an import must have left all of its rows or none; no process of the killed
one's session, and no worker child of it, may still run 3 s later (orphans); and for the
studio, the next :meth:`WorkerHost.start` must record its job interrupted (none left
"running").

Prints one JSON object on stdout: ``{"kills": ..., "by_kind": {...}, "projects_reopened":
..., "acknowledged_edits": ..., "acknowledged_edits_lost": ..., "partial_imports": ...,
"orphaned_processes": ..., "jobs_left_running": ..., "seconds": ...}``.
``python bench/run.py killloop [--kills N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from common import ua_csv

REPO = Path(__file__).resolve().parents[1]
KINDS = ("tag", "schema", "import", "generate", "baseline", "generate-pooled", "export")
#: Seconds after a kill within which every process the killed one started must be gone.
ORPHAN_GRACE = 3.0
#: Latest kill time per kind (seconds after the start): long enough to land mid-work.
KILL_WITHIN = {
    "tag": 2.0,
    "schema": 2.0,
    "import": 2.5,
    "generate": 4.0,
    "baseline": 6.0,
    "generate-pooled": 6.0,
    "export": 5.0,
}
#: Puzzles in the curated set the export rounds publish.
EXPORT_PUZZLES = 1500
#: What a finished export folder holds.
EXPORT_FILES = ("README.md", "croissant.json", "puzzles.jsonl", "split.json")
IMPORT_ROWS = 400
IMPORT_FONT = "killloop"

EDITOR = textwrap.dedent(
    """
    import json, random, sys
    from studio.core.keys import GlyphKey
    from studio.core.schema import schema_from_json
    from studio.store.project import Project

    path, kind, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    project = Project.open(path)
    print("open", flush=True)
    if kind == "tag":
        glyphs = [g.key for g in project.glyphs()][:2000]
        pairs = [(c.id, v.id) for c in project.schema.concepts for v in c.values]
        while True:
            key = rng.choice(glyphs)
            concept, value = rng.choice(pairs)
            project.add_tags([key], concept, value, "killloop")
            print("ack", json.dumps([key.codepoint, key.font, concept, value]), flush=True)
    else:
        n = 0
        while True:
            data = json.loads(project.schema.dumps())
            concept = next(
                c for cat in data["categories"] for c in cat["concepts"]
                if c["kind"] == "nominal"
            )
            value = f"kl{seed}x{n}"
            concept["values"].append({"id": value})
            project.set_schema(schema_from_json(data), author="killloop", note=f"add {value}")
            print("ack", json.dumps([concept["id"], value]), flush=True)
            n += 1
    """
)

STUDIO = textwrap.dedent(
    """
    import sys, time
    from studio.worker.host import WorkerHost
    host = WorkerHost(sys.argv[1])
    host.start()
    print("started", flush=True)
    while True:
        host.poll()
        time.sleep(0.05)
    """
)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "studio", "-q", *args]


def _curated_set(project: Path) -> int:
    """A set of :data:`EXPORT_PUZZLES` approved puzzles in ``project``, made in this process
    (untimed set-up)."""
    from studio.app import Studio
    from studio.curation import Curator
    from studio.generate.params import SplitParams
    from studio.splits import generate_and_vet
    from studio.store.project import Project

    params = SplitParams(n=EXPORT_PUZZLES, seed=25, sampling="balanced", holdout="none")
    studio = Studio(Project.open(project), author="killloop")
    try:
        vetted = generate_and_vet(studio, params)
        curator = Curator(studio)
        [set_id] = curator.import_results("killloop", params, vetted.results, vetted.all_verdicts)
        ids = [s.puzzle_id for s in studio.project.puzzle_summaries(set_id)]
        curator.set_status(ids, "approved", "killloop: approved in bulk")
    finally:
        studio.close()
    return set_id


def _export_whole(out: Path) -> bool | None:
    """True: a whole export; None: nothing there; False: anything else (half-written)."""
    if not out.exists():
        return None
    if not all((out / name).is_file() for name in EXPORT_FILES):
        return False
    with (out / "puzzles.jsonl").open() as f:
        return sum(1 for _ in f) == EXPORT_PUZZLES


def _staging_left(out: Path) -> list[Path]:
    return sorted(out.parent.glob(f".{out.name}.*"))


def _setup(tmp: Path) -> tuple[Path, Path, dict[str, float]]:
    times: dict[str, float] = {}
    project = tmp / "kill.studio"
    t = time.perf_counter()
    run = {"check": True, "cwd": REPO, "stdout": subprocess.DEVNULL}
    subprocess.run(_cli("init", str(project)), **run)  # type: ignore[call-overload]
    subprocess.run(  # type: ignore[call-overload]
        _cli("import-annotations", str(project), str(ua_csv()), "--render"), **run
    )
    times["project_s"] = round(time.perf_counter() - t, 1)
    split = tmp / "split"
    t = time.perf_counter()
    args = ["--n", "120", "--seed", "5", "--sampling", "balanced"]
    subprocess.run(_cli("generate", str(project), str(split), *args), **run)  # type: ignore[call-overload]
    times["split_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    # the exports publish from a copy: the tag and import rounds change the annotations, and
    # an export re-vets against them (and rightly refuses puzzles they no longer support)
    shutil.copyfile(project, tmp / "export.studio")
    times["set_id"] = _curated_set(tmp / "export.studio")
    times["curated_set_s"] = round(time.perf_counter() - t, 1)
    return project, split, times


class Victim:
    """A process started in its own session, its stdout lines collected by a thread."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.endswith("\n"):  # a line cut short by the kill was never acknowledged
                self.lines.append(line.strip())

    def kill(self) -> bool:
        """SIGKILL; True when it was still running (False: it had ended on its own)."""
        running = self.proc.poll() is None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._reader.join(timeout=5)
        return running


def _session_members(sids: set[int]) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getsid(proc.pid) in sids and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def _orphans(sids: set[int]) -> int:
    """Processes of these sessions still alive after the grace (killed afterwards, so one
    round's leftovers do not count again in the next)."""
    end = time.monotonic() + ORPHAN_GRACE
    left = _session_members(sids)
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = _session_members(sids)
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    return len(left)


def _reopens(project: Path) -> bool:
    from studio.store.project import Project

    try:
        with Project.open(project):
            pass
        con = sqlite3.connect(project)
        try:
            ok = con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        finally:
            con.close()
    except Exception as e:
        print(f"killloop: {project} does not reopen: {e}", file=sys.stderr)
        return False
    return ok


def _lost_tags(project: Path, acks: list[str]) -> int:
    con = sqlite3.connect(project)
    try:
        lost = 0
        for line in acks:
            cp, font, concept, value = json.loads(line[4:])
            row = con.execute(
                "SELECT 1 FROM tags t JOIN glyphs g ON g.id=t.glyph_id WHERE g.codepoint=?"
                " AND g.font=? AND t.concept=? AND t.value=?",
                (int(cp), font, concept, value),
            ).fetchone()
            lost += row is None
        return lost
    finally:
        con.close()


def _lost_schema_values(project: Path, acks: list[str]) -> int:
    from studio.store.project import Project

    with Project.open(project) as p:
        schema = p.schema
    lost = 0
    for line in acks:
        concept, value = json.loads(line[4:])
        lost += not schema.has_tag(concept, value)
    return lost


def _import_csv(folder: Path, round_no: int, rng: random.Random) -> tuple[Path, range]:
    base = 0xF0000 + round_no * IMPORT_ROWS
    codepoints = range(base, base + IMPORT_ROWS)
    pairs = [("aspect", "tall"), ("aspect", "square"), ("aspect", "wide")]
    rows = ["concept,value,codepoint,font"]
    for cp in codepoints:
        concept, value = rng.choice(pairs)
        rows.append(f"{concept},{value},{cp:X},{IMPORT_FONT}")
    path = folder / f"import-{round_no}.csv"
    path.write_text("\n".join(rows) + "\n")
    return path, codepoints


def _imported_rows(project: Path, codepoints: range) -> int:
    con = sqlite3.connect(project)
    try:
        return int(
            con.execute(
                "SELECT COUNT(*) FROM tags t JOIN glyphs g ON g.id=t.glyph_id"
                " WHERE g.font=? AND g.codepoint BETWEEN ? AND ?",
                (IMPORT_FONT, codepoints[0], codepoints[-1]),
            ).fetchone()[0]
        )
    finally:
        con.close()


def run(kills: int, seed: int, keep: bool) -> dict[str, Any]:
    from studio.store.jobs import JobQueue
    from studio.worker.host import WorkerHost

    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="killloop-"))
    project, split, setup = _setup(tmp)
    exports = tmp / "export.studio"
    stats: dict[str, Any] = {
        "kills": 0,
        "killed_mid_work": 0,
        "by_kind": dict.fromkeys(KINDS, 0),
        "projects_reopened": 0,
        "projects_not_reopened": 0,
        "acknowledged_edits": 0,
        "acknowledged_edits_lost": 0,
        "imports_completed_before_kill": 0,
        "partial_imports": 0,
        "orphaned_processes": 0,
        "orphans_by_kind": dict.fromkeys(KINDS, 0),
        "worker_children_started": 0,
        "jobs_left_running": 0,
        "exports_whole": 0,
        "exports_absent": 0,
        "exports_half_written": 0,
        "exports_rerun_failed": 0,
        "staging_left_by_kill": 0,
        "staging_left_after_rerun": 0,
    }
    t0 = time.perf_counter()
    for round_no in range(kills):
        kind = KINDS[round_no % len(KINDS)]
        delay = rng.uniform(0.2, KILL_WITHIN[kind])
        sessions: set[int] = set()
        imported: range | None = None
        job_id = None
        if kind in ("tag", "schema"):
            victim = Victim(
                [sys.executable, "-c", EDITOR, str(project), kind, str(rng.randrange(10**6))]
            )
        elif kind == "import":
            csv_path, imported = _import_csv(tmp, round_no, rng)
            victim = Victim(_cli("import-annotations", str(project), str(csv_path)))
        elif kind in ("generate", "generate-pooled"):
            out = tmp / f"gen-{round_no}"
            args = ["--n", "80", "--seed", str(round_no)]
            if kind == "generate-pooled":  # past the 500 puzzles where the process pool starts
                args = ["--n", "5000", "--seed", str(round_no), "--holdout", "none"]
                args += ["--workers", "2"]
            victim = Victim(_cli("generate", str(project), str(out), *args))
        elif kind == "export":
            out = tmp / f"export-{round_no}"
            set_id = str(int(setup["set_id"]))
            victim = Victim(_cli("export-set", str(exports), set_id, str(out)))
        else:
            with JobQueue(project) as q:
                job_id = q.submit(
                    "baseline",
                    {
                        "source": {"kind": "split-dir", "path": str(split)},
                        "models": ["blind"],
                        "seeds": 1,
                        "epochs": 2,
                        "device": "cpu",
                    },
                    "killloop",
                )
            victim = Victim([sys.executable, "-c", STUDIO, str(project)])
        time.sleep(delay)
        worker_pids: set[int] = set()
        if job_id is not None:
            with JobQueue(project) as q:
                job = q.job(job_id)
                if job is not None and job.pid is not None:
                    worker_pids.add(job.pid)
        mid_work = victim.kill()
        sessions.add(victim.proc.pid)
        sessions |= worker_pids  # a worker child leads its own session
        stats["kills"] += 1
        stats["killed_mid_work"] += mid_work
        stats["by_kind"][kind] += 1
        stats["worker_children_started"] += len(worker_pids)
        orphans = _orphans(sessions)
        stats["orphaned_processes"] += orphans
        stats["orphans_by_kind"][kind] += orphans
        if not _reopens(exports if kind == "export" else project):
            stats["projects_not_reopened"] += 1
            continue
        stats["projects_reopened"] += 1
        acks = [line for line in victim.lines if line.startswith("ack ")]
        stats["acknowledged_edits"] += len(acks)
        if kind == "tag":
            stats["acknowledged_edits_lost"] += _lost_tags(project, acks)
        elif kind == "schema":
            stats["acknowledged_edits_lost"] += _lost_schema_values(project, acks)
        elif kind == "import" and imported is not None:
            n = _imported_rows(project, imported)
            if not mid_work and victim.proc.returncode == 0:
                stats["acknowledged_edits"] += 1
                stats["imports_completed_before_kill"] += 1
                stats["acknowledged_edits_lost"] += n != len(imported)
            if n not in (0, len(imported)):
                stats["partial_imports"] += 1
        elif kind == "export":
            whole = _export_whole(out)
            key = {True: "exports_whole", None: "exports_absent", False: "exports_half_written"}
            stats[key[whole]] += 1
            stats["staging_left_by_kill"] += len(_staging_left(out))
            if whole is None:  # the same target again: it must work, and sweep the leftovers
                again = subprocess.run(
                    _cli("export-set", str(exports), set_id, str(out)),
                    cwd=REPO,
                    capture_output=True,
                    text=True,
                )
                if again.returncode != 0 or not _export_whole(out):
                    stats["exports_rerun_failed"] += 1
                    stats.setdefault("export_rerun_errors", []).append(again.stderr[-500:])
                stats["staging_left_after_rerun"] += len(_staging_left(out))
        elif job_id is not None:
            host = WorkerHost(project)  # the next studio
            try:
                host.start()
                job = host.queue.job(job_id)
                stats["jobs_left_running"] += job is not None and job.status == "running"
                if job is not None and job.status == "queued":
                    host.queue.request_cancel(job_id)  # never started: not for the next round
            finally:
                host.shutdown()
    stats["seconds"] = round(time.perf_counter() - t0, 1)
    stats["setup"] = setup
    stats["seed"] = seed
    if keep:
        stats["folder"] = str(tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    print(json.dumps(run(args.kills, args.seed, args.keep), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
