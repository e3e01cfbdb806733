"""Two real processes on one project: a long import in one, a person tagging in the other.

The import stages its rows outside any write lock and writes them in one short final
transaction, so a tag edit made meanwhile never waits out the 5 s busy timeout ("database is
locked"), and the import's counts are read inside the transaction that writes them (never
"-2 already present").
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from studio.core.annotations import read_annotations
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.store.project import Project

ROOT = Path(__file__).resolve().parents[2]


def scaled_csv(ua_csv: Path, out: Path, copies: int) -> int:
    """UA's annotation CSV repeated ``copies`` times, every row moved to a code point of its
    own (from U+30000 up), so each row is a new tag. Returns the row count."""
    header, *lines = ua_csv.read_text(encoding="utf-8").splitlines()
    cp_col = header.split(",").index("codepoint")
    rows = []
    for line in (line for _ in range(copies) for line in lines):
        cells = line.split(",")
        cells[cp_col] = f"{0x30000 + len(rows):X}"
        rows.append(",".join(cells))
    out.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return len(rows)


IMPORTER = """
import json, sys, time
from studio.core.annotations import read_annotations
from studio.core.schema import bundled_schema_path, load_schema
from studio.store.project import Project
path, csv = sys.argv[1:3]
rows = read_annotations(csv, load_schema(bundled_schema_path()))
with Project.open(path) as p:
    t = time.monotonic()
    new = p.import_rows(rows, "importer")
    print(json.dumps({"rows": len(rows), "new_tags": new, "seconds": time.monotonic() - t}))
"""

TAGGER = """
import json, sys, time
from pathlib import Path
from studio.core.keys import GlyphKey
from studio.store.project import Project
path, stop, started = sys.argv[1:4]
done, failures, slowest = [], [], 0.0
with Project.open(path) as p:
    cp = 0x2500
    while not Path(stop).exists():
        t = time.monotonic()
        try:
            p.add_tags([GlyphKey(cp, "symbola")], "aspect", "tall", "tagger")
            done.append(cp)
        except Exception as e:
            failures.append(f"{type(e).__name__}: {e}")
        slowest = max(slowest, time.monotonic() - t)
        cp += 1
        if len(done) == 5:
            Path(started).touch()
print(json.dumps({"done": done, "failures": failures[:5], "n_failures": len(failures),
                  "slowest": slowest}))
"""


def _run(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )


def import_while_tagging(path: Path, csv: Path, tmp: Path) -> tuple[dict, dict]:
    """Start a tagger, then an import in another process; stop tagging when it ends."""
    stop, started = tmp / "stop", tmp / "started"
    tagger = _run(TAGGER, str(path), str(stop), str(started))
    deadline = time.monotonic() + 60
    while not started.exists() and tagger.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    importer = _run(IMPORTER, str(path), str(csv))
    out, _ = importer.communicate(timeout=300)
    stop.touch()
    tagged, _ = tagger.communicate(timeout=60)
    assert importer.returncode == 0 and tagger.returncode == 0
    return json.loads(out), json.loads(tagged)


def test_a_tag_edit_never_fails_during_a_long_import(
    tmp_path: Path, ua_schema: Schema, ua_csv: Path
) -> None:
    path = tmp_path / "p.studio"
    Project.create(path, ua_schema).close()
    csv = tmp_path / "big.csv"
    n = scaled_csv(ua_csv, csv, copies=40)
    imported, tagger = import_while_tagging(path, csv, tmp_path)
    assert tagger["failures"] == [] and tagger["n_failures"] == 0
    assert len(tagger["done"]) >= 5
    # counts read inside the writing transaction: every row was new, whatever the tagger did
    assert imported == {**imported, "rows": n, "new_tags": n}
    with Project.open(path) as p:
        tags = p.all_tags()
    by_author = {a: {t.key for t in tags if t.author == a} for a in ("importer", "tagger")}
    assert len(by_author["importer"]) == n
    assert by_author["tagger"] == {GlyphKey(cp, "symbola") for cp in tagger["done"]}
    assert len(tags) == n + len(tagger["done"])


def test_import_counts_tags_already_present(
    tmp_path: Path, ua_schema: Schema, ua_csv: Path
) -> None:
    """Rows tagged before the import count as already present, not as new (never negative)."""
    rows = read_annotations(ua_csv, ua_schema)

    def distinct(rs: list) -> int:
        return len({(r.concept, r.value, r.key) for r in rs})

    with Project.create(tmp_path / "p.studio", ua_schema) as p:
        assert p.import_rows(rows[:100], "a") == distinct(rows[:100])
        assert p.import_rows(rows, "b") == distinct(rows) - distinct(rows[:100])
        assert p.import_rows(rows, "c") == 0
        assert p.tag_count() == distinct(rows)
