"""Benchmark `board`: a scripted curator clears 1,000 flagged puzzles on the curator's board by
keyboard alone, in the real window (offscreen QApplication, real key events sent with QTest).

The project is the UA demo (UA's public annotations and every Symbola glyph) with a split of
5,000 puzzles (balanced sampling, seed 3) generated and vetted, image features included, by
the functions the board's Generate job calls; the board's threshold is set to count every
image-feature warning ("all feature warnings"), so that over 1,000 puzzles are flagged.

The curator opens the first flagged puzzle (N), then for each: approves it (A), or every tenth
rejects it (R), typing a short comment first on every 25th (C, the text, Enter); after the
decision the next puzzle of the list is open, and N jumps on to the next flagged one when that
one is not flagged.

Measures (one JSON object on stdout):
- keystrokes_per_puzzle: keys pressed / puzzles cleared (aim ≤ 2);
- key_ms max and p95: the time to handle one key, from sending it to the end of the event
  processing it caused (the edit stored, the list and the sheet redrawn, the repaint done);
- stall_ms max and p95: the longest gaps between the ticks of a 5 ms main-thread timer while
  the curator works (a frame that could not be drawn for that long; the split's statistics are
  recomputed on a worker meanwhile, as in real use); reference_stall_ms: the same timer with
  the window idle;
- total_s: the whole run, and the flagged share at each threshold (low: every image-feature
  warning counts, as before grading; high: the default).

The board computes the image features of the split's glyphs on a worker thread once the split
is open; the curator starts when that is done (features_warm_up_s_after_stats says how long it
still took after the statistics were in).

Usage: python bench/board_bench.py [--puzzles 1000] [--split 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


class Ticker:
    """Records the gaps between the ticks of a 5 ms timer on the main thread."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self._last = 0.0
        self.timer = QTimer(interval=5)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._last:
            self.gaps.append((now - self._last) * 1000)
        self._last = now

    def start(self) -> None:
        self.gaps.clear()
        self._last = 0.0
        self.timer.start()

    def stop(self) -> list[float]:
        self.timer.stop()
        return list(self.gaps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--puzzles", type=int, default=1000, help="flagged puzzles to clear")
    ap.add_argument("--split", type=int, default=5000, help="puzzles in the split")
    ap.add_argument("--profile", help="write a cProfile of the clearing to this file")
    args = ap.parse_args()
    t_start = time.perf_counter()

    work = Path(tempfile.mkdtemp(prefix="board-bench-"))
    os.environ["ANALOGY_STUDIO_SETTINGS"] = str(work / "settings.ini")
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "cache"))

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from studio import splits
    from studio.app import Studio
    from studio.demo import build_demo
    from studio.generate.params import SplitParams
    from studio.gui.main_window import MainWindow
    from studio.gui.settings import StudioSettings
    from studio.store.project import Project

    path = work / "bench.studio"
    for _ in build_demo(path):
        pass
    app = QApplication.instance() or QApplication([])
    studio = Studio(Project.open(path), author="bench")
    window = MainWindow(studio, StudioSettings())
    window.resize(1280, 800)
    window.show()
    board = window.board
    window.tabs.setCurrentWidget(board)

    t_gen = time.perf_counter()
    params = SplitParams(n=args.split, sampling="balanced", seed=3)
    inputs = splits.split_inputs(studio)
    results = splits.generate(studio, params, inputs=inputs)
    keys = {k for r in results for p in r.puzzles for k in p.all_keys()}
    features = splits.feature_index({k: inputs.images[k] for k in keys if k in inputs.images})
    verdicts = [
        v
        for r in results
        for v in splits.vet(r.puzzles, inputs.annotations, studio.schema, features)
    ]
    board.curator.import_results("bench", params, results, verdicts)
    generate_s = time.perf_counter() - t_gen

    share = {}
    for grade in ("low", "medium", "high"):
        board.curator.set_feature_warning_min(grade)
        flagged, total = board.curator.flagged_share()
        share[grade] = round(flagged / total, 4) if total else 0.0
    board.grade_combo.setCurrentIndex(board.grade_combo.findData("low"))
    assert board.wait_for_stats(120_000)
    flagged_at_start = board.curator.flagged_share()[0]
    t_warm = time.perf_counter()
    while board.prefetching():  # the board computes the glyphs' image features meanwhile
        app.processEvents()
        time.sleep(0.01)
    warm_s = time.perf_counter() - t_warm

    def settle(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.002)

    settle(1.0)
    ticker = Ticker()
    ticker.start()
    settle(2.0)
    reference = ticker.stop()

    keys_pressed = 0
    key_ms: list[float] = []

    def press(key: Qt.Key, widget: object = None, text: str = "") -> None:
        nonlocal keys_pressed
        target = widget if widget is not None else board.table
        t0 = time.perf_counter()
        if text:
            QTest.keyClicks(target, text)
            keys_pressed += len(text)
        else:
            QTest.keyClick(target, key)
            keys_pressed += 1
        app.processEvents()
        key_ms.append((time.perf_counter() - t0) * 1000)

    board.table.setFocus()
    settle(0.2)
    ticker.start()
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t_run = time.perf_counter()
    press(Qt.Key.Key_N)
    cleared = 0
    while cleared < args.puzzles:
        current = board.model.puzzle(board.table.currentIndex().row())
        if current.status != "flagged":
            raise SystemExit(f"not on a flagged puzzle after {cleared}: {current.id}")
        if cleared % 25 == 24:
            press(Qt.Key.Key_C)
            press(Qt.Key.Key_unknown, board.comment_field, "odd foil")
            press(Qt.Key.Key_Return, board.comment_field)
        press(Qt.Key.Key_R if cleared % 10 == 9 else Qt.Key.Key_A)
        cleared += 1
        if cleared >= args.puzzles:
            break
        row = board.table.currentIndex().row()
        if board.model.puzzle(row).status != "flagged":
            press(Qt.Key.Key_N)
    run_s = time.perf_counter() - t_run
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)
    stalls = ticker.stop()
    assert board.wait_for_stats(120_000)
    decided = board.curator.stats()["statuses"]

    out = {
        "bench": "board",
        "split_puzzles": args.split,
        "threshold": "low (every image-feature warning flags)",
        "flagged_share": share,
        "flagged_at_start": flagged_at_start,
        "puzzles_cleared": cleared,
        "approved": decided["approved"],
        "rejected": decided["rejected"],
        "keystrokes": keys_pressed,
        "keystrokes_per_puzzle": round(keys_pressed / max(cleared, 1), 3),
        "key_ms": {
            "max": round(max(key_ms), 1),
            "p95": round(_percentile(key_ms, 0.95), 1),
            "median": round(_percentile(key_ms, 0.5), 1),
        },
        "stall_ms": {
            "max": round(max(stalls, default=0.0), 1),
            "p95": round(_percentile(stalls, 0.95), 1),
        },
        "reference_stall_ms": {
            "max": round(max(reference, default=0.0), 1),
            "p95": round(_percentile(reference, 0.95), 1),
        },
        "clearing_s": round(run_s, 2),
        "seconds_per_puzzle": round(run_s / max(cleared, 1), 4),
        "generate_and_import_s": round(generate_s, 2),
        "features_warm_up_s_after_stats": round(warm_s, 2),
        "total_s": round(time.perf_counter() - t_start, 2),
    }
    board.shutdown()
    window.close()
    studio.close()
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
