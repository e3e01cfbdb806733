"""One request for every family's split (issue 27): what the CLI, the Generate dialog and the
board build, checked in words before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.generate.request import GenerationRequest


def test_a_request_resolves_its_family_s_options() -> None:
    got = GenerationRequest("kiva", 12, 3, options={"mode": "kiva-adults"}).check()
    assert got.options["mode"] == "kiva-adults" and got.n == 12
    glyph = GenerationRequest("glyph-pmp", options={"layout": "analogy"}).check(project=True)
    assert glyph.options["layout"] == "analogy"
    assert GenerationRequest.from_json(glyph.to_json()) == glyph


@pytest.mark.parametrize(
    ("request_", "project", "says"),
    [
        (GenerationRequest("unicorn"), None, "no such family"),
        (GenerationRequest("kiva", 0), None, "n must be a whole number from 1"),
        (GenerationRequest("kiva", ratios=(0.5, -0.1, 0.6)), None, "expected three shares"),
        (GenerationRequest("kiva", options={"layout": "x"}), None, "kiva has no option layout"),
        (GenerationRequest("glyph-pmp"), False, "generates from a project's annotations"),
        (GenerationRequest("cube-net"), True, "takes no project"),
        (GenerationRequest("kiva", require_coverage=3), None, "which kiva items do not have"),
        (GenerationRequest("glyph-pmp", require_coverage=0), True, "expected at least 1"),
        # what a review fed it: each an internal error or a silent change before
        (GenerationRequest("kiva", ratios=(float("nan"), 0.1, 0.2)), None, "three shares"),
        (GenerationRequest("kiva", ratios=(1e308, 1e308, 1e308)), None, "three shares"),
        (GenerationRequest("kiva", ratios=("a", "b", "c")), None, "three shares"),  # type: ignore[arg-type]
        (GenerationRequest("kiva", seed=-1), None, "the seed must be a whole number"),
        (GenerationRequest("kiva", n=2.7), None, "n must be a whole number"),  # type: ignore[arg-type]
        (GenerationRequest("kiva", n=True), None, "n must be a whole number"),
        (GenerationRequest("kiva", n=10**12), None, "n must be a whole number"),
        (GenerationRequest("kiva", options=None), None, "names and values"),  # type: ignore[arg-type]
    ],
)
def test_a_wrong_request_says_what_is_wrong(
    request_: GenerationRequest, project: bool | None, says: str
) -> None:
    with pytest.raises(StudioError, match=says):
        request_.check(project=project)


def test_the_cli_says_which_paths_a_family_takes(tmp_path: Path, capsys) -> None:
    from studio.cli import EXIT_USER_ERROR, main

    project = tmp_path / "p.studio"
    assert main(["-q", "init", str(project)]) == 0
    code = main(["generate", str(project), str(tmp_path / "k"), "--family", "kiva"])
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR
    assert "the kiva family takes no project" in err and "takes OUT_DIR" in err
    code = main(["generate", str(tmp_path / "c"), "--family", "kiva", "--require-coverage", "2"])
    assert code == EXIT_USER_ERROR and "which kiva items do not have" in capsys.readouterr().err
    for bad in (["--ratios", "nan,0.1,0.2"], ["--seed", "-1"]):
        code = main(["generate", str(tmp_path / "x"), "--family", "kiva", *bad])
        err = capsys.readouterr().err
        assert code == EXIT_USER_ERROR and "internal error" not in err, err
    assert not any((tmp_path / d).exists() for d in ("k", "c", "x"))
