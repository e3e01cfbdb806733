"""Benchmark `pilot` (issue 29): export, analyse and a scripted browser run.

Set-up (untimed): a project from the shared UA annotations, every glyph rendered, and a
glyph split (``--n`` puzzles, hold-out none, sets of at least two answers, balanced) whose
val and test parts (about 200 puzzles at the default n of 660) are piloted.

- ``export``: ``pilot export`` for ``--participants`` (30) lists of ``--per-participant`` (20)
  puzzles, at least 3 responses each: seconds and the folder's size (files, bytes);
- ``analyse``: 30 participants' jsPsych CSV files (synthesised from the plan: 90 % right,
  2–6 s per answer) read, checked and judged per puzzle — 30 × 20 responses; the aim is under
  a second;
- ``browser``: one scripted participant in Debian's headless Chromium (Selenium) through the
  instructions, practice and a whole list: seconds per trial, page load included. Skipped
  (reported) where Chromium is not installed.

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import ua_csv


def _size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _synthesise(pilot: Path, out: Path) -> list[Path]:
    doc = json.loads((pilot / "pilot.json").read_text())
    rng = np.random.default_rng(3)
    files = []
    for li, trials in enumerate(doc["plan"]["lists"]):
        path = out / f"P{li:02d}.csv"
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["pilot_id", "kind", "puzzle_id", "participant", "list", "chosen_index",
                        "correct", "rt"])  # fmt: skip
            for t in trials:
                item = doc["items"][t["item"]]
                kind = "catch" if t["item"] in doc["catch_ids"] else "test"
                right = kind == "catch" or rng.random() < 0.9
                chosen = item["key"] if right else (item["key"] + 1) % item["answers"]
                w.writerow([doc["pilot_id"], kind, t["item"], f"P{li:02d}", li, chosen,
                            str(right).lower(), rng.uniform(2000, 6000)])  # fmt: skip
        files.append(path)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=660)
    parser.add_argument("--participants", type=int, default=30)
    parser.add_argument("--per-participant", type=int, default=20)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from studio.cli import main as cli
    from studio.pilot.export import PilotOptions, export_pilot
    from studio.pilot.results import analyse_results

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        project, split = str(tmp / "ua.studio"), tmp / "split"
        gen = ["--n", str(args.n), "--holdout", "none", "--min-answers", "2"]
        with contextlib.redirect_stdout(sys.stderr):  # stdout holds the one JSON object
            assert cli(["-q", "init", project]) == 0
            assert cli(["-q", "import-annotations", project, str(ua_csv()), "--render"]) == 0
            assert cli(["-q", "generate", project, str(split), *gen, "--sampling", "balanced"]) == 0
        opts = PilotOptions(
            participants=args.participants,
            per_participant=args.per_participant,
            responses_per_item=3,
            min_median_rt_ms=0.0,
        )
        t0 = time.perf_counter()
        summary = export_pilot(split, tmp / "pilot", opts)
        export_s = time.perf_counter() - t0
        files, size = _size(tmp / "pilot")
        results = _synthesise(tmp / "pilot", tmp)
        t0 = time.perf_counter()
        found = analyse_results(tmp / "pilot", results)
        analyse_s = time.perf_counter() - t0
        out: dict[str, object] = {
            "name": "pilot",
            "puzzles": summary["puzzles"],
            "participants": args.participants,
            "per_participant": args.per_participant,
            "export_s": round(export_s, 3),
            "export_files": files,
            "export_bytes": size,
            "analyse_responses": found["responses"],
            "analyse_s": round(analyse_s, 3),
            "analyse_aim": "under 1 s for 30 × 200 responses",
            "cpu_count": os.cpu_count(),
        }
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.pilot.browser import CHROMEDRIVER, CHROMIUM, run_participant

        if Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists():
            ran = run_participant(tmp / "pilot", 0, "B01", tmp / "dl", lambda *_: True, 300)
            trials = len(ran["answered"])  # type: ignore[arg-type]
            out["browser_trials"] = trials
            out["browser_s"] = round(float(ran["seconds"]), 2)  # type: ignore[arg-type]
            out["browser_s_per_trial"] = round(float(ran["seconds"]) / trials, 3)  # type: ignore[arg-type]
        else:
            out["browser"] = "skipped: chromium is not installed"
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
