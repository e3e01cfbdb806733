"""Benchmark `import`: seconds to import the shared UA CSV into a new project and render its
glyphs, with a cold font catalog and render cache (a fresh cache folder), then with warm ones.

The reference for scale is the bare SQLite insert of the same rows (no validation, no fonts).
Prints one JSON object.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from common import ua_csv


def run_once(tmp: Path, name: str, source: Path) -> dict:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    t0 = time.perf_counter()
    project = Project.create(tmp / f"{name}.studio", load_schema(bundled_schema_path()))
    studio = Studio(project, author="bench")
    t1 = time.perf_counter()
    _ = studio.catalog
    t2 = time.perf_counter()
    report = studio.import_annotations(source)
    t3 = time.perf_counter()
    for _ in studio.render_all():
        pass
    t4 = time.perf_counter()
    statuses: dict[str, int] = {}
    for g in project.glyphs():
        statuses[g.status] = statuses.get(g.status, 0) + 1
    project.close()
    return {
        "total_s": round(t4 - t0, 3),
        "create_project_s": round(t1 - t0, 3),
        "font_catalog_s": round(t2 - t1, 3),
        "import_s": round(t3 - t2, 3),
        "render_s": round(t4 - t3, 3),
        "rows": report.rows,
        "new_tags": report.new_tags,
        "substituted": sum(report.substitutions.values()),
        "uncovered": len(report.uncovered),
        "glyph_status": statuses,
    }


def reference(tmp: Path, source: Path) -> float:
    t = time.perf_counter()
    con = sqlite3.connect(tmp / "ref.db")
    con.execute("CREATE TABLE tags (concept, value, codepoint, font)")
    with open(source, newline="") as f:
        rows = list(csv.reader(f))[1:]
    con.executemany("INSERT INTO tags VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return time.perf_counter() - t


def main() -> None:
    source = ua_csv()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        cold = run_once(tmp, "cold", source)
        warm = run_once(tmp, "warm", source)
        ref = reference(tmp, source)
    print(
        json.dumps(
            {
                "name": "import",
                "source": str(source),
                "cold": cold,
                "warm": warm,
                "reference_bare_sqlite_insert_s": round(ref, 4),
                "python": sys.version.split()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
