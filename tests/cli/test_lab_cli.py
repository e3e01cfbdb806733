"""`analogy-studio lab` on a project file (a lab of one): arguments out of range are one line
naming the flag and exit 2, never an internal error or a numpy allocation of hundreds of GiB
(issue 25)."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.cli import EXIT_USER_ERROR, main


@pytest.fixture
def project(tmp_path: Path) -> str:
    path = str(tmp_path / "p.studio")
    assert main(["-q", "init", path]) == 0
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agreement", "--boot", "-5"], "--boot -5: expected 0 to 100,000 replicates"),
        (["agreement", "--boot", "100000000"], "--boot 100000000: expected 0 to 100,000"),
        (["audit", "--limit", "-1"], "--limit -1: expected 1 to 100,000 entries"),
        (["audit", "--limit", "0"], "--limit 0: expected 1 to 100,000 entries"),
    ],
)
def test_out_of_range_arguments_exit_2_naming_the_flag(
    project: str, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lab", args[0], project, *args[1:]]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err


def test_in_range_arguments_still_work(project: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "agreement", project, "--boot", "0"]) == 0
    assert main(["lab", "audit", project, "--limit", "5"]) == 0
