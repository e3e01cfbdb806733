"""A real glyph split from the shared UA annotations, for the pilot's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.cli import main


@pytest.fixture(scope="session")
def glyph_split(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> Path:
    work = tmp_path_factory.mktemp("pilot-split")
    project, out = str(work / "ua.studio"), work / "split"
    assert main(["-q", "init", project]) == 0
    assert main(["-q", "import-annotations", project, str(ua_csv), "--render"]) == 0
    args = ["--n", "120", "--seed", "4", "--holdout", "none", "--min-answers", "2"]
    assert main(["-q", "generate", project, str(out), *args, "--sampling", "balanced"]) == 0
    return out
