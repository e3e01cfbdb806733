"""`analogy-studio tag`: tag and untag glyphs from the command line (what the tagging window
does, with the same undoable Studio.tag), with clear errors for unknown concepts, values and
malformed keys; the tags carry the author and export like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.cli import EXIT_USER_ERROR, main
from studio.store.project import Project


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path) -> str:
    path = str(tmp_path / "p.studio")
    assert main(["-q", "init", path]) == 0
    return path


def test_tag_and_untag(
    project: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANALOGY_STUDIO_AUTHOR", "ada")
    code, out, _ = run(capsys, "tag", project, "aspect=tall", "U+25AF@symbola", "U+2016@symbola")
    assert code == 0 and out.strip() == "tagged 2 of 2 glyphs aspect=tall (as ada)"
    code, out, _ = run(capsys, "tag", project, "aspect=tall", "U+25AF@symbola")
    assert code == 0 and out.startswith("tagged 0 of 1")  # already there
    with Project.open(project) as p:
        tags = {(str(t.key), t.concept, t.value, t.author) for t in p.all_tags()}
    assert tags == {
        ("U+25AF@symbola", "aspect", "tall", "ada"),
        ("U+2016@symbola", "aspect", "tall", "ada"),
    }
    assert run(capsys, "-q", "export-annotations", project, str(tmp_path / "t.csv"))[0] == 0
    assert (tmp_path / "t.csv").read_text().splitlines()[1:] == [
        "aspect,tall,2016,symbola",
        "aspect,tall,25AF,symbola",
    ]
    code, out, _ = run(capsys, "tag", project, "aspect=tall", "U+2016@symbola", "--remove")
    assert code == 0 and out.strip() == "removed aspect=tall from 1 of 1 glyphs"
    with Project.open(project) as p:
        assert [str(t.key) for t in p.all_tags()] == ["U+25AF@symbola"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["colour=red", "U+25AF@symbola"], ["no concept 'colour'", "aspect"]),
        (["aspect=huge", "U+25AF@symbola"], ["no value 'huge'", "tall, square, wide"]),
        (["aspect", "U+25AF@symbola"], ["not a tag like"]),
        (["aspect=tall", "25AF"], ["'25AF'", "glyph key"]),
    ],
)
def test_tag_errors_name_the_problem(
    project: str, capsys: pytest.CaptureFixture[str], args: list[str], words: list[str]
) -> None:
    code, _, err = run(capsys, "tag", project, *args)
    assert code == EXIT_USER_ERROR
    for w in words:
        assert w in err
    with Project.open(project) as p:
        assert list(p.all_tags()) == []
