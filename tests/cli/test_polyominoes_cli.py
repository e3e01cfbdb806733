"""`polyominoes`: counts on the last line, contact sheets that open, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from studio.cli import EXIT_USER_ERROR, main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (["--cells", "6"], "35"),
        (["--cells", "6", "--equivalence", "one-sided"], "60"),
        (["--cells", "5", "--equivalence", "fixed"], "63"),
        (["--cells", "4", "--dims", "3", "--equivalence", "one-sided"], "8"),
        (["--cells", "4", "--dims", "3", "--equivalence", "free"], "7"),
        (["--cells", "5", "--dims", "3", "--equivalence", "fixed"], "534"),
    ],
)
def test_count_is_alone_on_the_last_line(
    capsys: pytest.CaptureFixture[str], args: list[str], count: str
) -> None:
    code, out, _ = run(capsys, "polyominoes", *args, "--count")
    assert code == 0
    assert out.splitlines()[-1] == count


def test_sheet_goes_to_the_default_name_in_the_cwd(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "polyominoes", "--cells", "5", "--dims", "2")
    assert code == 0
    path = Path(out.splitlines()[-1])
    assert path.name == "polyominoes-2d-5-free.png"
    assert (tmp_path / path).is_file()
    with Image.open(tmp_path / path) as im:
        assert im.format == "PNG" and im.width > 100 and im.height > 100
    assert "12 polyominoes" in err


def test_polycube_sheet_with_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "sheets" / "cubes.png"
    code, out, _ = run(
        capsys,
        "-q",
        "polyominoes",
        "--cells",
        "5",
        "--dims",
        "3",
        "--equivalence",
        "one-sided",
        "--out",
        str(out_file),
    )
    assert code == 0 and out.strip() == str(out_file)
    with Image.open(out_file) as im:
        im.load()
        assert im.mode == "RGB"
        # Shapes were drawn: plenty of non-white pixels.
        assert (np.asarray(im) != 255).any(axis=2).sum() > 5_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cells", "0"], "--cells 0"),
        (["--cells", "13"], "1 to 12"),
        (["--cells", "9", "--dims", "3"], "1 to 8"),
        (["--cells", "4", "--dims", "4"], "--dims 4"),
    ],
)
def test_bad_arguments_are_studio_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run(capsys, "polyominoes", *args, "--count")
    assert code == EXIT_USER_ERROR
    assert out == ""
    assert err.startswith("analogy-studio: error:") and message in err
