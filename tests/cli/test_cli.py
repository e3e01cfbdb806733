"""The headless twin: every command, and clear errors with a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from studio.cli import EXIT_USER_ERROR, main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_import_export_round_trip(tmp_path: Path, ua_csv: Path, capsys) -> None:
    p = str(tmp_path / "p.studio")
    assert run(capsys, "init", p)[0] == 0
    code, out, _ = run(capsys, "import-annotations", p, str(ua_csv))
    assert code == 0 and "Imported 1512 rows" in out
    code, out, _ = run(capsys, "export-annotations", p, str(tmp_path / "out.csv"))
    assert code == 0 and (tmp_path / "out.csv").read_bytes() == ua_csv.read_bytes()
    # folder layout by extension, and back into a new project
    assert run(capsys, "export-annotations", p, str(tmp_path / "ua"))[0] == 0
    assert (tmp_path / "ua" / "Annotations" / "aspect-tall").is_dir()
    p2 = str(tmp_path / "p2.studio")
    run(capsys, "init", p2)
    assert run(capsys, "import-annotations", p2, str(tmp_path / "ua"))[0] == 0
    run(capsys, "export-annotations", p2, str(tmp_path / "out2.csv"))
    assert (tmp_path / "out2.csv").read_bytes() == ua_csv.read_bytes()


def test_render_writes_pngs_and_a_report(tmp_path: Path, capsys) -> None:
    p = str(tmp_path / "p.studio")
    run(capsys, "init", p)
    csv = tmp_path / "few.csv"
    csv.write_text(
        "concept,value,codepoint,font\nclosure,circle,25CB,symbola\nhorns,,F0085,suttonline\n"
    )
    run(capsys, "import-annotations", p, str(csv))
    code, _out, _ = run(capsys, "render", p, str(tmp_path / "png"), "--size", "40")
    assert code == 0
    from PIL import Image

    with Image.open(tmp_path / "png" / "0x25CB_symbola.png") as img:
        assert img.size == (40, 40)
    report = (tmp_path / "png" / "not-rendered.tsv").read_text()
    assert "U+F0085@suttonline\tuncovered\tprivate-use" in report


def test_fonts_listing(capsys) -> None:
    code, out, _ = run(capsys, "fonts", "--json")
    assert code == 0
    fonts = {f["id"]: f for f in json.loads(out)}
    if "symbola" not in fonts:
        pytest.skip("fonts-symbola is not installed")
    assert fonts["symbola"]["codepoints"] > 9000
    code, out, _ = run(capsys, "fonts", "--font", "symbola")
    assert "Geometric Shapes" in out


@pytest.mark.parametrize(
    ("setup", "args", "words"),
    [
        (
            lambda d: (d / "s.json").write_text("{"),
            ["init", "{d}/p.studio", "--schema", "{d}/s.json"],
            "s.json: at $: not valid JSON",
        ),
        (
            lambda d: (d / "p.studio").write_bytes(b"SQLite format 3\x00" + b"\x00" * 50),
            ["export-annotations", "{d}/p.studio", "{d}/o.csv"],
            "p.studio",
        ),
        (
            lambda d: None,
            ["import-annotations", "{d}/nope.studio", "x.csv"],
            "project file not found",
        ),
        (lambda d: None, ["fonts", "--font", "no-such-font"], "no installed font"),
    ],
)
def test_errors_go_to_stderr_with_exit_2(tmp_path: Path, capsys, setup, args, words) -> None:
    setup(tmp_path)
    code, _out, err = run(capsys, *(a.format(d=tmp_path) for a in args))
    assert code == EXIT_USER_ERROR
    assert words in err and err.startswith("analogy-studio: error:")
    assert "Traceback" not in err


def test_unknown_concept_in_csv(tmp_path: Path, capsys) -> None:
    p = str(tmp_path / "p.studio")
    run(capsys, "init", p)
    bad = tmp_path / "bad.csv"
    bad.write_text("concept,value,codepoint,font\nsparkle,1,41,symbola\n")
    code, _, err = run(capsys, "import-annotations", p, str(bad))
    assert code == 2 and "line 2: unknown concept 'sparkle'" in err


def test_module_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "studio", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("analogy-studio ")
