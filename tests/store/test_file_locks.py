"""Opening a project (or its job queue) in a process that already has SQLite connections to it
must not drop that process's locks: a worker closing its connection would then take the file for
unused and delete the write-ahead log, and the studio's later writes would vanish."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from studio.core.schema import bundled_schema_path, load_schema
from studio.store.project import Project

WRITER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("INSERT INTO meta (key, value) VALUES ('from-worker', '1')")
con.commit()
con.close()
"""


def test_checks_keep_the_wal_of_an_open_project(tmp_path: Path) -> None:
    path = tmp_path / "p.studio"
    project = Project.create(path, load_schema(bundled_schema_path()), author="t")
    try:
        with project._engine.connect() as conn:  # the studio holds a pooled connection
            conn.execute(text("SELECT 1")).all()
        _ = project.jobs  # the job queue's header check
        Project.open(path).close()  # another open in the same process (a loader, say)
        subprocess.run([sys.executable, "-c", WRITER, str(path)], check=True)
        assert Path(f"{path}-wal").exists(), "the WAL was deleted under the open project"
        project.set_meta("after-worker", "2")
        # a new process sees what the studio wrote after the worker closed
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("
                "\"SELECT value FROM meta WHERE key='after-worker'\").fetchone())",
                str(path),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert "'2'" in out
    finally:
        project.close()
