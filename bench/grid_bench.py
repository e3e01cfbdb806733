"""Benchmark `grid`: a 20,000-glyph project in the real window.

Measures (one JSON object on stdout):
- model_ready_ms: from opening the project to the grid model holding every glyph (the
  window's `reload`), and window_ready_ms to the first painted window;
- longest main-thread stall while thumbnails fill in, as the grid is scrolled page by page from
  top to bottom: a 5 ms QTimer records the gaps between its ticks; reference is the same timer
  with the window idle;
- peak memory (max RSS) of the studio process with that grid shown, and whether torch or
  pyrender were imported (they must not be).

The project is built (and its thumbnails rendered into a fresh cache) before timing starts; the
measurement runs in a child process so its peak memory is the window's alone.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N_GLYPHS = 20_000
FONTS = ("symbola", "notosanssymbols2", "notosansmath", "notosanscjkjp", "wqymicrohei")


def build_project(path: Path) -> dict:
    from studio.app import Studio
    from studio.core.keys import GlyphKey
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.resources import ua_data_dir
    from studio.store.project import Project

    project = Project.create(path, load_schema(bundled_schema_path()), overwrite=True)
    studio = Studio(project, author="bench")
    studio.import_annotations(ua_data_dir() / "annotations.csv")
    keys: list[GlyphKey] = []
    have = {g.key.codepoint for g in project.glyphs()}
    for fid in FONTS + tuple(f.id for f in studio.catalog.fonts):
        if studio.catalog.get(fid) is None:
            continue
        for cp in sorted(studio.catalog.codepoints(fid)):
            if cp not in have and len(have) < N_GLYPHS:
                have.add(cp)
                keys.append(GlyphKey(cp, fid))
        if len(have) >= N_GLYPHS:
            break
    studio.add_glyphs(keys)
    t = time.perf_counter()
    for _ in studio.render_all():
        pass
    render_s = time.perf_counter() - t
    n = project.glyph_count()
    project.close()
    return {"glyphs": n, "prerender_s": round(render_s, 2)}


def child(path: str) -> None:
    """Runs in the child process: open the window and measure."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    t0 = time.perf_counter()
    from studio.app import Studio
    from studio.gui.main_window import MainWindow
    from studio.gui.settings import StudioSettings
    from studio.store.project import Project

    project = Project.open(path)
    studio = Studio(project, author="bench")
    t_open = time.perf_counter()
    window = MainWindow(studio, StudioSettings(os.path.join(tempfile.mkdtemp(), "s.ini")))
    t_model = time.perf_counter()
    window.resize(1280, 800)
    window.show()
    app.processEvents()
    t_window = time.perf_counter()

    gc_pauses: list[float] = []
    gc_start = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            gc_start[0] = time.perf_counter()
        else:
            gc_pauses.append((time.perf_counter() - gc_start[0]) * 1000)

    gc.callbacks.append(on_gc)
    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.nsecsElapsed()]

    def tick() -> None:
        now = clock.nsecsElapsed()
        gaps.append((now - last[0]) / 1e6)
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)

    def pump(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.001)

    # idle reference
    timer.start()
    pump(1.0)
    idle_max = max(gaps[1:]) if len(gaps) > 1 else 0.0
    gaps.clear()
    last[0] = clock.nsecsElapsed()

    # scroll page by page; let thumbnails fill in
    bar = window.grid.verticalScrollBar()
    pages = 0
    filled_before = len(window.loader.images)
    while True:
        pump(0.15)
        pages += 1
        if bar.value() >= bar.maximum():
            break
        bar.setValue(min(bar.maximum(), bar.value() + bar.pageStep()))
    pump(0.5)
    timer.stop()
    scroll_max = max(gaps[1:]) if len(gaps) > 1 else 0.0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "glyphs_in_model": len(window.model.glyphs),
                "open_project_ms": round((t_open - t0) * 1000, 1),
                "model_ready_ms": round((t_model - t_open) * 1000, 1),
                "window_ready_ms": round((t_window - t0) * 1000, 1),
                "pages_scrolled": pages,
                "thumbnails_loaded": len(window.loader.images) - filled_before,
                "longest_stall_ms": round(scroll_max, 1),
                "idle_reference_longest_gap_ms": round(idle_max, 1),
                "five_longest_gaps_ms": [round(g, 1) for g in sorted(gaps[1:])[-5:]],
                "longest_gc_pause_ms": round(max(gc_pauses, default=0.0), 1),
                "peak_rss_mb": round(rss_mb, 1),
                "torch_imported": "torch" in sys.modules,
                "pyrender_imported": "pyrender" in sys.modules,
            }
        )
    )
    window.close()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        path = Path(tmp) / "grid.studio"
        built = build_project(path)
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(path)],
            capture_output=True,
            text=True,
            env=os.environ.copy(),
            check=False,
        )
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            raise SystemExit(out.returncode)
        result = json.loads(out.stdout.strip().splitlines()[-1])
    result = {
        "name": "grid",
        **built,
        **result,
        "targets": {"longest_stall_ms": 50, "peak_rss_mb": 500},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
