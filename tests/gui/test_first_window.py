"""The first-window hook the installer's checks time cold start with: a real `analogy-studio gui`
process on the offscreen platform opens a project, writes when its window was up, and quits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from studio.cli import main
from studio.gui.main import FIRST_WINDOW_ENV


def test_gui_writes_the_first_window_time_and_quits(tmp_path: Path) -> None:
    project = tmp_path / "p.studio"
    assert main(["-q", "init", str(project)]) == 0
    settings = tmp_path / "settings.ini"
    settings.write_text("[annotator]\nname=tester\n")
    stamp = tmp_path / "first-window.txt"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "ANALOGY_STUDIO_SETTINGS": str(settings),
        FIRST_WINDOW_ENV: str(stamp),
    }
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "studio", "gui", str(project)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    up = float(stamp.read_text())
    assert started < up < time.time()
