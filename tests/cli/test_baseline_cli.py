"""`analogy-studio baseline`: a real split from the UA annotations, real training, the JSON
report, the split's report.json entry, plots, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.cli import EXIT_USER_ERROR, main

GEN = ["--n", "150", "--seed", "5", "--sampling", "balanced"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> Path:
    base = tmp_path_factory.mktemp("baseline-cli")
    project = str(base / "ua.studio")
    assert main(["-q", "init", project]) == 0
    assert main(["-q", "import-annotations", project, str(ua_csv), "--render"]) == 0
    out = base / "split"
    assert main(["-q", "generate", project, str(out), *GEN]) == 0
    return out


def test_baseline_writes_the_report_and_notes_it_in_the_split(
    split: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = json.loads((split / "report.json").read_text())
    out_json = tmp_path / "out.json"
    code, out, _ = run(
        capsys, "baseline", str(split), "--models", "blind,similarity", "--seeds", "2",
        "--epochs", "1", "--device", "cpu", "--json", str(out_json),
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("150 glyph-pmp puzzles (two-row); accuracy on test (30 puzzles)")
    assert lines[1].split() == ["model", "accuracy", "95%", "CI", "chance", "flags"]
    rows = {
        line.split()[0]: line for line in lines[3:] if not line.startswith(("not run", "wrote"))
    }
    assert set(rows) == {"blind", "pixel-similarity", "feature-similarity", "elimination"}
    assert "puzzles," in rows["blind"] and rows["blind"].endswith("groups")
    assert rows["pixel-similarity"].endswith("-")  # training-free models never flag
    assert "not run: the arithmetic model (" in out and "skipped arithmetic" not in out
    assert f"wrote {out_json}" in out

    report = json.loads(out_json.read_text())
    assert report["format"] == "analogy-studio.baseline-report" and report["format_version"] == 1
    assert report["seeds"] == [0, 1] and report["eval_part"] == "test"
    assert report["source"]["puzzles"] == 150 and report["source"]["kind"] == "split-dir"
    assert len(report["predictions"]) == 150
    assert set(report["flags"]) == {"puzzles", "groups"}
    # the split is read beside the runner's imports: its seconds are still the load's
    phases = report["compute"]["phases"]
    assert phases["load"] > 0 and phases["total"] >= phases["load"] + phases["trained"]
    blind = report["models"]["blind"]
    assert blind["recipe"] and blind["label"] == "Context-blind CNN"
    assert set(blind["groups"]) == {"rule", "concept", "layout", "family"}
    assert len(blind["per_seed"]) == 2
    for name, rel in report["plots"].items():
        assert (out_json.parent / rel).is_file(), name

    after = json.loads((split / "report.json").read_text())
    assert {k: v for k, v in after.items() if k != "baselines"} == {
        k: v for k, v in before.items() if k != "baselines"
    }  # the split's own report is kept
    entry = after["baselines"]
    assert entry["accuracy"] == {m: e["overall"]["accuracy"] for m, e in report["models"].items()}
    assert Path(entry["report"]) == out_json.resolve()
    for rel in entry["plots"].values():
        assert (split / rel).is_file() and rel.startswith("baselines/")


def test_baseline_defaults_and_no_plots(split: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(
        capsys, "-q", "baseline", str(split), "--models", "pixel-similarity", "--no-plots"
    )
    assert code == 0
    report = json.loads((split / "baselines" / "report.json").read_text())
    assert report["plots"] == {} and list(report["models"]) == ["pixel-similarity"]
    assert json.loads((split / "report.json").read_text())["baselines"]["report"] == (
        "baselines/report.json"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--models", "magic"], "no baseline or group called 'magic'"),
        (["--seeds", "0"], "--seeds must be at least 1"),
        (["--epochs", "0", "--models", "blind"], "--epochs must be at least 1"),
        (["--device", "tpu", "--models", "blind"], "unknown device 'tpu'"),
    ],
)
def test_bad_options_exit_with_a_message(
    split: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _, err = run(capsys, "baseline", str(split), *args)
    assert code == EXIT_USER_ERROR
    assert message in err and err.startswith("analogy-studio: error:")


def test_bad_folders_exit_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, _, err = run(capsys, "baseline", str(tmp_path / "missing"))
    assert code == EXIT_USER_ERROR and str(tmp_path / "missing") in err
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "baseline", str(tmp_path / "empty"))
    assert code == EXIT_USER_ERROR and "split.json" in err


def test_cuda_without_a_gpu_is_refused(split: Path, capsys: pytest.CaptureFixture) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code, _, err = run(capsys, "baseline", str(split), "--models", "blind", "--device", "cuda")
    assert code == EXIT_USER_ERROR and "sees no GPU" in err


def test_a_bad_count_is_refused_before_the_split_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The split is read while the runner imports: the counts are checked before it, so a
    bad --epochs is what is said even of a folder that holds no split."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "baseline", str(empty), "--epochs", "0")
    assert code == EXIT_USER_ERROR and "--epochs must be at least 1 (got 0)" in err
    code, _, err = run(capsys, "baseline", str(empty), "--seeds", "0")
    assert code == EXIT_USER_ERROR and "--seeds must be at least 1 (got 0)" in err


def test_ctrl_c_inside_a_compiled_import_is_an_interruption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl+C while a compiled module imports reaches the command as that module's failure
    to load (ImportError from KeyboardInterrupt): an interruption, not an internal error."""
    import studio.cli as cli

    def interrupted(args: object) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise ImportError("initialization failed") from e

    monkeypatch.setattr(cli, "cmd_baseline", interrupted)
    code, _, err = run(capsys, "baseline", str(tmp_path))
    assert code == 130 and "analogy-studio: interrupted" in err and "bug" not in err
