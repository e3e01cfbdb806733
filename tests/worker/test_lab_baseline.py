"""End to end on a lab database: a curator's puzzle set, a baseline job queued as the Baselines
tab queues it (no project in the source: a database URL is never put in job parameters), run
by ``worker serve`` as a GPU server would, its result and flags read back by the studio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from studio import splits
from studio.app import Studio
from studio.core.schema import bundled_schema_path, load_schema
from studio.curation import Curator
from studio.generate.params import SplitParams
from studio.store.project import Project
from tests.pgserver import PgServer

UA_CSV = Path(__file__).resolve().parents[3] / "shared" / "data" / "ua" / "annotations.csv"


def test_a_baseline_on_a_lab_puzzle_set_runs_on_a_remote_worker(pg_server: PgServer) -> None:
    url = pg_server.fresh_database("labjob")
    with Project.create(url, load_schema(bundled_schema_path()), author="cur") as project:
        app = Studio(project, author="cur")
        app.import_annotations(str(UA_CSV))
        params = SplitParams(n=40, sampling="balanced", holdout="none", seed=3, answer_sets="ua")
        made = splits.generate_and_vet(app, params, workers=1)
        verdicts = [v for fold in made.verdicts for v in fold]
        (set_id,) = Curator(app).import_results("lab set", params, made.results, verdicts)
        job = project.jobs.submit(
            "baseline",
            {
                "source": {"kind": "project-set", "set_id": set_id},
                "models": ["blind"],
                "seeds": 1,
                "epochs": 1,
                "device": "cpu",
            },
            "blind on the lab set",
        )
        # the GPU server signs in as a worker login: the database's worker role (named in
        # meta, as docs/lab-server.md says) must give rights enough
        with project._engine.begin() as conn:
            conn.execute(
                text(
                    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gpu7')"
                    " THEN CREATE ROLE gpu7 LOGIN; END IF; END $$"
                )
            )
            groups = conn.execute(text("SELECT value FROM meta WHERE key = 'group_roles'"))
            worker = json.loads(groups.scalar_one())["worker"]
            conn.execute(text(f"GRANT {worker} TO gpu7"))
    worker_url = url.replace("//postgres@", "//gpu7@")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "studio",
            "worker",
            "serve",
            "--db",
            worker_url,
            "--once",
            "--name",
            "gpu-7",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    log = done.stdout + done.stderr
    assert "gpu-7: job 1 (baseline, attempt 1) claimed" in log and "gpu-7: job 1 done" in log
    with Project.open(url) as project:
        record = project.jobs.job(job)
        assert record is not None and record.status == "done", record
        assert record.machine == "gpu-7"
        assert record.result is not None
        source = record.result["source"]
        assert source["kind"] == "project-set" and source["puzzles"] == 40
        assert source["path"] == worker_url  # the worker's URL, without any password
