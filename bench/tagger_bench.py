"""Benchmark `tagger`: keystrokes per tag for an annotator working by keyboard (issue 28).

The project is the UA demo (UA's public annotations and every Symbola glyph of the blocks the
demo starts with). For one concept the UA tags of the glyphs shown are the oracle: they are
removed, and a scripted annotator walks the grid with real key events (QTest) in the real
window, tagging each glyph the oracle has a value for with that value's number key and passing
the others with U (next glyph not tagged for the concept). Twice, in the same run:

- ``manual`` (the default): a number key tags, U moves on — two keys per tag;
- ``advance`` (Tag ▸ Advance after tagging): the number key tags and moves on — one.

Measures (one JSON object on stdout), per mode: tags made, keys pressed, keys per tag (the
number key and the key that moves on from a tagged glyph), keys per glyph passed (skips
included), and whether the tags made equal the oracle's (they must).

Usage: python bench/run.py tagger [--concept closure] [--glyphs 400]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--concept",
        default="",
        help="the concept tagged (default: the one UA tags most often among the glyphs walked)",
    )
    ap.add_argument("--glyphs", type=int, default=2000, help="grid positions walked, at most")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tagger-bench-"))
    os.environ["ANALOGY_STUDIO_SETTINGS"] = str(work / "settings.ini")
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "cache"))

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from studio.app import Studio
    from studio.demo import build_demo
    from studio.gui.glyph_grid import KEY_ROLE
    from studio.gui.main_window import MainWindow
    from studio.gui.settings import StudioSettings
    from studio.store.project import Project

    path = work / "bench.studio"
    for _ in build_demo(path):
        pass
    app = QApplication.instance() or QApplication([])
    out: dict[str, object] = {}
    for mode in ("manual", "advance"):
        studio = Studio(Project.open(path), author="bench")
        settings = StudioSettings()
        settings.set_advance_after_tagging(mode == "advance")
        window = MainWindow(studio, settings)
        window.resize(1280, 800)
        window.show()
        window.block_combo.setCurrentIndex(0)  # all blocks, in code-point order
        app.processEvents()
        window.tagger.apply_filter()
        model = window.model
        shown = [model.index(r).data(KEY_ROLE) for r in range(model.rowCount())][: args.glyphs]
        if not args.concept:
            counts: dict[str, int] = {}
            for key in shown:
                for c in {t.concept for t in studio.project.tags_of(key)}:
                    counts[c] = counts.get(c, 0) + 1
            args.concept = max(sorted(counts), key=lambda c: counts[c])
        out["concept"] = args.concept
        values = window.tree.values_of(args.concept)
        number = {v: i + 1 for i, (v, _name) in enumerate(values)}
        # the oracle: the UA tags of the concept on the glyphs walked (one value each: the
        # first a glyph carries), removed before the walk
        oracle = {}
        for key in shown:
            mine = sorted(t.value for t in studio.project.tags_of(key) if t.concept == args.concept)
            if mine:
                oracle[key] = mine[0]
                for v in mine:
                    studio.untag([key], args.concept, v)
        window.tree.select(args.concept, values[0][0])
        window.grid.setFocus()
        window.grid.go_to_row(0)
        app.processEvents()
        keys = tag_keys = tags = passed = 0
        seen: set[object] = set()
        t0 = time.perf_counter()
        while True:
            idx = window.grid.currentIndex()
            key = idx.data(KEY_ROLE) if idx.isValid() else None
            if key is None or key in seen or key not in shown:
                break
            seen.add(key)
            passed += 1
            if key in oracle:
                QTest.keyClick(window.grid, getattr(Qt.Key, f"Key_{number[oracle[key]]}"))
                keys += 1
                tag_keys += 1
                tags += 1
                if mode == "manual":
                    QTest.keyClick(window.grid, Qt.Key.Key_U)
                    keys += 1
                    tag_keys += 1
            else:
                QTest.keyClick(window.grid, Qt.Key.Key_U)
                keys += 1
            app.processEvents()
        made = {
            k: v
            for k in shown
            for v in (t.value for t in studio.project.tags_of(k) if t.concept == args.concept)
        }
        out[mode] = {
            "glyphs_passed": passed,
            "tags": tags,
            "keys": keys,
            "keys_per_tag": round(tag_keys / tags, 3) if tags else None,
            "keys_per_glyph_passed": round(keys / passed, 3) if passed else None,
            "tags_match_oracle": made == oracle,
            "seconds": round(time.perf_counter() - t0, 2),
        }
        window.running_jobs = lambda: []  # type: ignore[method-assign]
        window.close()
        studio.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
