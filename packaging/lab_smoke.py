"""The frozen app on a lab database (issue 17), for packaging/smoke.sh: a throwaway
PostgreSQL server (tests/pgserver.py), then the bundle's own executable runs init, add-person,
an annotator's tag, agreement and the audit against it. Exit 0 when every step worked; 77
when PostgreSQL is not installed here (the step is then skipped)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(exe: str) -> int:
    from tests.pgserver import PostgresUnavailable, running_server

    try:
        server_cm = running_server()
        server = server_cm.__enter__()
    except (PostgresUnavailable, ImportError) as e:
        print(f"note  no PostgreSQL here ({e}); lab database checks skipped")
        return 77
    try:
        server.create_database("frozen")
        url = server.url("frozen")
        ann = url.replace("//postgres@", "//ann@")
        steps = [
            ("init a lab database", ["init", url]),
            ("add glyphs", ["add-glyphs", url, "--font", "symbola", "--block", "Geometric Shapes"]),
            ("add an annotator", ["lab", "add-person", url, "ann", "--role", "annotator"]),
            ("assign", ["lab", "assign", url, "--annotators", "ann", "--overlap", "0"]),
            ("tag as the annotator", ["tag", ann, "closed=full", "U+25CF@symbola"]),
            ("agreement", ["lab", "agreement", url, "--json"]),
            ("audit names the annotator", ["lab", "audit", url]),
        ]
        for what, args in steps:
            done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)
            text = done.stdout + done.stderr
            if done.returncode != 0 or "Traceback" in text:
                print(f"FAIL  {what}: exit {done.returncode}: {text.strip()[-400:]}")
                return 1
            if what.startswith("audit") and "\tann\t" not in done.stdout:
                print(f"FAIL  {what}: no entry by ann in\n{done.stdout[-400:]}")
                return 1
            print(f"ok    lab database: {what}")
        return 0
    finally:
        server_cm.__exit__(None, None, None)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
