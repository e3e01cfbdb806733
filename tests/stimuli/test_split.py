"""Writing and re-vetting a non-glyph split folder (the format all four families share)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from studio.cli import main
from studio.core.errors import StudioError
from studio.stimuli.split import (
    FORMAT,
    assign_parts,
    generate_stimulus_split,
    is_stimulus_split,
    make_generator,
    read_stimulus_split,
    vet_stimulus_split,
)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_parts_follow_the_ratios_exactly():
    parts = assign_parts(20, (0.7, 0.1, 0.2), seed=3)
    assert parts.count("train") == 14 and parts.count("val") == 2 and parts.count("test") == 4
    assert parts == assign_parts(20, (0.7, 0.1, 0.2), seed=3)
    assert parts != assign_parts(20, (0.7, 0.1, 0.2), seed=4)


def test_a_split_is_written_the_same_twice_and_revets(tmp_path: Path):
    options = {"pieces": 3}
    a = generate_stimulus_split("shape-composition", tmp_path / "a", 4, seed=5, options=options)
    generate_stimulus_split("shape-composition", tmp_path / "b", 4, seed=5, options=options)
    assert a["items"] == 4 and a["valid"] == 4
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    meta, records = read_stimulus_split(tmp_path / "a")
    assert meta["format"] == FORMAT and meta["options"] == {"pieces": 3}
    assert [r["part"] for r in records] == assign_parts(4, (0.7, 0.1, 0.2), 5)
    for r in records:
        sheet = tmp_path / "a" / "sheets" / f"{r['id']}.png"
        with Image.open(sheet) as im:
            assert im.size[0] > 224
        for name in r["images"]:
            assert (tmp_path / "a" / "images" / r["id"] / f"{name}.png").is_file()
    verdicts = vet_stimulus_split(tmp_path / "a")
    assert len(verdicts) == 4 and all(v.valid for v in verdicts)


def test_a_tampered_record_fails_revetting(tmp_path: Path):
    generate_stimulus_split("shape-composition", tmp_path / "s", 2, seed=1, options={"pieces": 2})
    items = tmp_path / "s" / "items.jsonl"
    records = [json.loads(line) for line in items.read_text().splitlines()]
    r = records[0]
    # swap the key to a distractor: "only the key reassembles the shape" must now fail
    r["key"] = (r["key"] + 1) % len(r["candidates"])
    items.write_text("\n".join(json.dumps(x) for x in records) + "\n")
    verdicts = {v.subject_id: v for v in vet_stimulus_split(tmp_path / "s")}
    assert not verdicts[r["id"]].valid


def test_unknown_family_and_options_are_named():
    with pytest.raises(StudioError, match="known: cube-net"):
        make_generator("spirals", {})
    with pytest.raises(StudioError, match="no option colour"):
        make_generator("cube-net", {"colour": "red"})


def test_target_must_be_new_or_empty(tmp_path: Path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(StudioError, match="not an empty folder"):
        generate_stimulus_split("cube-net", tmp_path / "full", 1)
    assert (tmp_path / "full" / "x").read_text() == "keep me"
    assert not is_stimulus_split(tmp_path / "full")


@pytest.mark.parametrize(
    ("family", "extra"),
    [
        ("cube-net", []),
        ("polycube-rotation", ["--level", "1"]),
        ("shape-composition", ["--level", "2"]),
        ("kiva", ["--mode", "kiva-adults", "--size", "96"]),
    ],
)
def test_cli_generates_and_vets_every_family(tmp_path: Path, capsys, family, extra):
    out = tmp_path / family
    code = main(["-q", "generate", str(out), "--family", family, "--n", "2", "--seed", "3", *extra])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "wrote 2" in printed and "2 valid" in printed
    assert is_stimulus_split(out)
    code = main(["vet", str(out), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["items"] == 2 and report["valid"] == 2
