"""``python bench/run.py lab``: a lab's shared database under load (issue 17).

Against one local PostgreSQL server started for the run with a lab server's settings (fsync
and synchronous commit on: what a client is told is stored must survive a crash):

1. **Tagging**: ``--annotators`` processes (default 10), each signed in as its own login, tag
   ``--tags`` glyphs each (default 1,000) from their own assignment (20 % overlap) through
   ``Project.add_tags``, as the tagger does. Reported: tags stored (aim: all acknowledged),
   lost updates (acknowledged tags missing afterwards, plus consensus rows that recomputing
   every glyph from scratch would change; aim 0), tag latency p50/p99 (aim p99 <= 50 ms on
   localhost), and the time until another client — a listener in this process, as the GUI
   runs one — hears of a tag (LISTEN/NOTIFY; aim <= 2 s).
2. **Agreement** over 100,000 tags (bench/lab_agreement.py's synthetic UA ratings; aim <= 1 s),
   and over the tags of step 1 read from the server through ``Project.agreement``.
3. **A worker killed mid-job**: ``analogy-studio worker serve`` runs a job; the whole worker
   is SIGKILLed; a second worker (``--dead-after 20``) puts the job back in the queue and runs
   it. Reported: seconds from the kill until the job is queued again (aim <= 30 s), and until
   it is done.
4. **The server restarted** (``pg_ctl restart -m immediate``, as a crash) while three tagging
   clients and a listener are connected: what the clients were told (the message), how long
   until they wrote again, and whether anything acknowledged was lost (aim: nothing).

Prints one JSON object. ``--quick`` runs a small version (3 annotators x 100 tags).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
for _p in (str(REPO), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def _as(url: str, user: str) -> str:
    return url.replace("//postgres@", f"//{user}@")


# ---- a tagging client (a child process) ------------------------------------------------------
def annotator_main(args: argparse.Namespace) -> int:
    """Tag ``args.tags`` times as ``args.annotator``; retry through lost connections (as a person
    retries after the GUI's message); write latencies, acknowledged tags and messages."""
    from studio.core.errors import StudioError
    from studio.core.keys import GlyphKey
    from studio.store.project import Project

    spec = json.loads(Path(args.spec).read_text())
    glyphs = [(int(g), GlyphKey(int(cp), str(f))) for g, cp, f in spec["glyphs"]]
    values = [tuple(v) for v in spec["values"]]
    rng = random.Random(args.annotator)
    project = Project.open(_as(args.url, args.annotator))
    latencies: list[float] = []
    acked: list[tuple[int, str, str, float]] = []
    messages: list[str] = []
    outage_first_error: float | None = None
    back_after: list[float] = []
    deadline = time.monotonic() + args.seconds if args.seconds else None
    i = 0
    while i < args.tags or (deadline is not None and time.monotonic() < deadline):
        gid, key = rng.choice(glyphs)
        concept, value = rng.choice(values)
        while True:
            start_wall = time.time()
            t0 = time.perf_counter()
            try:
                new = bool(project.add_tags([key], concept, value, args.annotator))
            except StudioError as e:
                if outage_first_error is None:
                    outage_first_error = time.time()
                    messages.append(str(e))
                time.sleep(0.2)
                continue
            latencies.append(time.perf_counter() - t0)
            if outage_first_error is not None:
                back_after.append(time.time() - outage_first_error)
                outage_first_error = None
            acked.append((gid, concept, value, start_wall, new))
            break
        i += 1
        if args.pace:
            time.sleep(args.pace)
    project.close()
    Path(args.out).write_text(
        json.dumps(
            {"latencies": latencies, "acked": acked, "messages": messages, "back": back_after}
        )
    )
    return 0


def _spawn_annotators(
    url: str, people: list[str], specs: dict[str, Path], tags: int, tmp: Path, **extra: Any
) -> list[tuple[str, subprocess.Popen[bytes], Path]]:
    procs = []
    for who in people:
        out = tmp / f"{who}.json"
        cmd = [
            sys.executable,
            __file__,
            "--annotator",
            who,
            "--url",
            url,
            "--spec",
            str(specs[who]),
            "--tags",
            str(tags),
            "--out",
            str(out),
        ]
        for k, v in extra.items():
            cmd += [f"--{k}", str(v)]
        procs.append((who, subprocess.Popen(cmd, cwd=REPO), out))
    return procs


def _collect(procs: list[tuple[str, subprocess.Popen[bytes], Path]]) -> dict[str, Any]:
    results = {}
    for who, proc, out in procs:
        if proc.wait() != 0:
            raise RuntimeError(f"annotator {who} failed (exit {proc.returncode})")
        results[who] = json.loads(out.read_text())
    return results


class _Heard:
    """What the listener heard: arrival times per (who, glyph id)."""

    def __init__(self) -> None:
        self.by: dict[tuple[str, int], list[float]] = defaultdict(list)
        self.states: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def change(self, change: dict[str, Any]) -> None:
        now = time.time()
        if change.get("table") != "annotator_tags":
            return
        with self.lock:
            for g in change.get("glyphs", []):
                self.by[(str(change.get("who")), int(g))].append(now)

    def state(self, text_: str) -> None:
        self.states.append((time.time(), text_))

    def delay(self, who: str, gid: int, sent: float) -> float | None:
        times = self.by.get((who, gid), [])
        i = bisect.bisect_left(times, sent)
        return times[i] - sent if i < len(times) else None


def _lost_and_drift(url: str, results: dict[str, Any]) -> dict[str, int]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT glyph_id, concept, value, annotator FROM annotator_tags")
            ).all()
            stored = {(int(g), str(c), str(v), str(a)) for g, c, v, a in rows}
            lost = sum(
                (gid, c, v, who) not in stored
                for who, r in results.items()
                for gid, c, v, _t, _new in r["acked"]
            )
            acked = len(
                {(gid, c, v, who) for who, r in results.items() for gid, c, v, *_ in r["acked"]}
            )
            # recompute every glyph's consensus from scratch, look, and roll back
            before = set(conn.execute(text("SELECT glyph_id, concept, value FROM tags")).all())
            ids = [int(r[0]) for r in conn.execute(text("SELECT id FROM glyphs"))]
            conn.execute(
                text("SELECT studio_refresh_consensus(CAST(:ids AS bigint[]))"), {"ids": ids}
            )
            after = set(conn.execute(text("SELECT glyph_id, concept, value FROM tags")).all())
            conn.rollback()
    finally:
        engine.dispose()
    return {
        "acknowledged": acked,
        "lost": lost,
        "consensus_drift": len(before ^ after),
        "consensus_rows": len(before),
    }


def _setup(url: str, people: list[str], tmp: Path, seed: int) -> tuple[dict[str, Path], Any]:
    from common import ua_csv

    from studio.core.annotations import read_annotations
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    schema = load_schema(bundled_schema_path())
    project = Project.create(url, schema, author="bench")
    rows = read_annotations(ua_csv(), schema)
    project.import_tags(rows, "ua")
    for who in people:
        project.add_person(who, "annotator")
    project.assign(None, people, overlap=0.2, seed=seed)
    return _specs(project, people, tmp), project


def _specs(project: Any, people: list[str], tmp: Path) -> dict[str, Path]:
    """Each person's assigned glyphs (id, code point, font) and the schema's values, as a
    file the tagging client reads."""
    from sqlalchemy import text

    values = [(c.id, v) for c in project.schema.concepts for v in c.value_ids]
    specs: dict[str, Path] = {}
    with project._engine.connect() as conn:  # a benchmark's look inside
        for who in people:
            glyphs = conn.execute(
                text(
                    "SELECT g.id, g.codepoint, g.font FROM assignment_items a JOIN glyphs g"
                    " ON g.id = a.glyph_id WHERE a.annotator = :a ORDER BY g.id"
                ),
                {"a": who},
            ).all()
            spec = tmp / f"{who}.spec.json"
            spec.write_text(json.dumps({"glyphs": [list(g) for g in glyphs], "values": values}))
            specs[who] = spec
    return specs


def phase_tagging(url: str, n_people: int, tags: int, tmp: Path, seed: int) -> dict[str, Any]:
    people = [f"p{i:02d}" for i in range(n_people)]
    specs, project = _setup(url, people, tmp, seed)
    heard = _Heard()
    listener = project.listen(heard.change, heard.state)
    assert listener is not None and listener.wait_listening(20)
    t0 = time.perf_counter()
    results = _collect(_spawn_annotators(url, people, specs, tags, tmp))
    wall = time.perf_counter() - t0
    time.sleep(2.5)  # the last notifications
    listener.stop()
    latencies = [x for r in results.values() for x in r["latencies"]]
    # a tag the person had already given changes nothing, so nothing is announced: only new ones
    delays = [
        heard.delay(who, gid, sent)
        for who, r in results.items()
        for gid, _c, _v, sent, new in r["acked"]
        if new
    ]
    seen = [d for d in delays if d is not None]
    checks = _lost_and_drift(url, results)
    t1 = time.perf_counter()
    report = project.agreement(n_boot=1000)
    agreement_s = time.perf_counter() - t1
    n_ratings = report.ratings
    project.close()
    return {
        "annotators": n_people,
        "tags_each": tags,
        "tag_calls": len(latencies),
        "wall_s": round(wall, 2),
        "tags_per_s": round(len(latencies) / wall, 1),
        "latency_ms": {
            "p50": round(1000 * (_pct(latencies, 50) or 0), 2),
            "p99": round(1000 * (_pct(latencies, 99) or 0), 2),
            "max": round(1000 * max(latencies), 2),
        },
        "visibility_ms": {
            "heard": len(seen),
            "not_heard": len(delays) - len(seen),
            "p50": round(1000 * (_pct(seen, 50) or 0), 2),
            "p99": round(1000 * (_pct(seen, 99) or 0), 2),
            "max": round(1000 * max(seen), 2) if seen else None,
        },
        **checks,
        "agreement_on_stored_tags": {"ratings": n_ratings, "seconds": round(agreement_s, 3)},
    }


def phase_reference(url: str, n: int = 300) -> dict[str, Any]:
    """One client, one at a time: ``Project.add_tags`` (own tag, consensus refresh, audit and
    notify triggers, in one transaction) against the simplest write the same person could
    make — a bare INSERT of the same row and a commit — on the same server, same run. The bare
    rows go to an ordinary (logged, so committed to disk alike) table shaped like
    ``annotator_tags`` with its keys and none of its triggers, made and written by the server's
    superuser: since server rules 3 ``annotator_tags`` takes only tags of the schema (checked
    against ``schema_tags``) and a person may create no table, so the reference of rules 1–2
    (rows of made-up values in ``annotator_tags`` itself, its triggers firing) is gone; the
    ratio is therefore not comparable with theirs, the latencies are."""
    from sqlalchemy import text

    from studio.store.project import Project

    who = "p00"
    with Project.open(_as(url, who)) as project:
        spec = json.loads(_specs(project, [who], Path(tempfile.mkdtemp()))[who].read_text())
        from studio.core.keys import GlyphKey

        glyphs = [(GlyphKey(int(cp), str(f)), int(g)) for g, cp, f in spec["glyphs"]]
        values = [(c.id, v) for c in project.schema.concepts for v in c.value_ids]
        rng = random.Random(1)
        studio_ms, bare_ms = [], []
        from sqlalchemy import create_engine

        su = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        bare = su.connect()
        with bare.begin():
            bare.execute(text("CREATE SCHEMA bench_ref"))
            bare.execute(
                text(
                    "CREATE TABLE bench_ref.bare_tags"
                    " (LIKE annotator_tags INCLUDING DEFAULTS INCLUDING IDENTITY"
                    " INCLUDING INDEXES)"
                )
            )
        for i in range(n):
            key, gid = glyphs[i % len(glyphs)]
            concept, value = rng.choice(values)
            t0 = time.perf_counter()
            project.add_tags([key], concept, value, who)
            studio_ms.append(1000 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            with bare.begin():
                bare.execute(
                    text(
                        "INSERT INTO bench_ref.bare_tags (glyph_id, concept, value, annotator,"
                        " created_at) VALUES (:g, :c, :v, :a, :t) ON CONFLICT DO NOTHING"
                    ),
                    {"g": gid, "c": concept, "v": value, "a": who, "t": "t"},
                )
            bare_ms.append(1000 * (time.perf_counter() - t0))
        with bare.begin():
            bare.execute(text("DROP SCHEMA bench_ref CASCADE"))
        bare.close()
        su.dispose()
    p50_studio, p50_bare = _pct(studio_ms, 50) or 0.0, _pct(bare_ms, 50) or 1e-9
    return {
        "tags": n,
        "add_tags_ms": {"p50": round(p50_studio, 2), "p99": round(_pct(studio_ms, 99) or 0, 2)},
        "bare_insert_ms": {"p50": round(p50_bare, 2), "p99": round(_pct(bare_ms, 99) or 0, 2)},
        "ratio_p50": round(p50_studio / p50_bare, 2),
    }


def phase_worker_kill(url: str, tmp: Path) -> dict[str, Any]:
    from studio.store.project import Project

    with Project.open(url) as project:
        job = project.jobs.submit(
            "diagnostic", {"action": "sleep", "seconds": 8, "steps": 8}, "bench: killed worker"
        )

    def serve(name: str) -> subprocess.Popen[bytes]:
        log = (tmp / f"{name}.log").open("wb")
        return subprocess.Popen(
            [sys.executable, "-m", "studio", "worker", "serve", "--db", url, "--name", name,
             "--heartbeat", "1", "--dead-after", "20"],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def state() -> tuple[str, str]:
        with Project.open(url) as p:
            rec = p.jobs.job(job)
            assert rec is not None
            return rec.status, str(getattr(rec, "worker", ""))

    first = serve("bench-a")
    deadline = time.monotonic() + 60
    while state()[0] != "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2.0)  # mid-job
    killed_at = time.monotonic()
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    second = serve("bench-b")
    requeued = done = None
    seen_states = []
    try:
        while time.monotonic() < killed_at + 90:
            status, worker = state()
            seen_states.append((round(time.monotonic() - killed_at, 1), status, worker))
            if requeued is None and (status == "queued" or "bench-b" in worker):
                requeued = time.monotonic() - killed_at
            if status in ("done", "failed", "cancelled", "interrupted"):
                done = time.monotonic() - killed_at
                break
            time.sleep(0.25)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    final = state()
    return {
        "requeued_after_s": None if requeued is None else round(requeued, 1),
        "finished_after_s": None if done is None else round(done, 1),
        "final_status": final[0],
        "final_worker": final[1],
    }


def phase_restart(server: Any, url: str, tmp: Path, seed: int) -> dict[str, Any]:
    from studio.store.project import Project

    people = ["r00", "r01", "r02"]
    with Project.open(url) as project:
        for who in people:
            project.add_person(who, "annotator")
        project.assign(None, people, overlap=0.0, seed=seed + 1)
        specs = _specs(project, people, tmp)
        heard = _Heard()
        listener = project.listen(heard.change, heard.state)
        assert listener is not None and listener.wait_listening(20)
        procs = _spawn_annotators(url, people, specs, 0, tmp, seconds=8, pace=0.01)
        time.sleep(3.0)
        t_restart = time.time()
        server.restart("immediate")
        restarted_in = time.time() - t_restart
        results = _collect(procs)
        time.sleep(2.0)
        listener.stop()
    checks = _lost_and_drift(url, results)
    messages = sorted({m for r in results.values() for m in r["messages"]})
    back = [b for r in results.values() for b in r["back"]]
    return {
        "restart_s": round(restarted_in, 2),
        "client_messages": messages,
        "clients_writing_again_after_s": round(max(back), 2) if back else None,
        "listener_states": [s for _, s in heard.states],
        "acknowledged": checks["acknowledged"],
        "acknowledged_lost": checks["lost"],
        "consensus_drift": checks["consensus_drift"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--tags", type=int, default=1000)
    parser.add_argument("--agreement-tags", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip", default="", help="comma-separated: worker,restart,agreement")
    # a tagging client (internal)
    parser.add_argument("--annotator")
    parser.add_argument("--url")
    parser.add_argument("--spec")
    parser.add_argument("--out")
    parser.add_argument("--seconds", type=float, default=0.0)
    parser.add_argument("--pace", type=float, default=0.0)
    args = parser.parse_args()
    if args.annotator:
        return annotator_main(args)
    if args.quick:
        args.annotators, args.tags, args.agreement_tags = 3, 100, 20_000
    skip = set(filter(None, args.skip.split(",")))

    from tests.pgserver import running_server

    out: dict[str, Any] = {"benchmark": "lab", "device": "cpu (no GPU needed)"}
    with running_server(durable=True) as server, tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        url = server.create_database("lab")
        out["server"] = "PostgreSQL (local, durable: fsync and synchronous commit on)"
        out["tagging"] = phase_tagging(url, args.annotators, args.tags, tmp, args.seed)
        out["one_client_vs_bare_insert"] = phase_reference(url)
        if "agreement" not in skip:
            from lab_agreement import measure

            out["agreement_100k"] = measure(n_tags=args.agreement_tags, seed=args.seed)
        if "worker" not in skip:
            out["worker_killed"] = phase_worker_kill(url, tmp)
        if "restart" not in skip:
            out["server_restart"] = phase_restart(server, url, tmp, args.seed)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
