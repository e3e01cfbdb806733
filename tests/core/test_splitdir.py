"""The split-folder protocol both split writers share: where a split may go, split.json last
and read back with its checks, JSONL records with errors naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.core.splitdir import SPLIT_JSON, SplitFormat, check_target, json_object, read_records

FMT = SplitFormat("analogy-studio.test-split", 2)


def test_a_target_is_new_empty_or_holds_only_what_may_be_replaced(tmp_path: Path) -> None:
    check_target(tmp_path / "new")
    check_target(tmp_path)
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(StudioError, match="is a file"):
        check_target(tmp_path / "a-file")
    (tmp_path / "puzzles.jsonl").write_text("")
    with pytest.raises(StudioError, match=r"not an empty folder: it holds a-file, puzzles\.jsonl"):
        check_target(tmp_path)
    with pytest.raises(StudioError, match=r"holds a-file,") as e:
        check_target(tmp_path, lambda name: name == "puzzles.jsonl")
    assert "puzzles.jsonl" not in str(e.value)
    check_target(tmp_path, lambda name: True)
    assert (tmp_path / "a-file").read_text() == "x"


def test_split_json_is_written_last_and_read_back(tmp_path: Path) -> None:
    FMT.finish(tmp_path, {"n": 3, "name": "ñ"})
    assert FMT.is_split(tmp_path)
    data = FMT.read_split_json(tmp_path)
    assert data == {"format": FMT.id, "format_version": 2, "n": 3, "name": "ñ"}
    assert "ñ" in (tmp_path / SPLIT_JSON).read_text("utf-8")
    FMT.begin(tmp_path)
    assert not FMT.is_split(tmp_path)
    with pytest.raises(StudioError, match="missing: this folder is not a split"):
        FMT.read_split_json(tmp_path)
    ascii_fmt = SplitFormat(FMT.id, 2, ascii_json=True)
    assert ascii_fmt.json_bytes({"name": "ñ"}) == b'{\n "name": "\\u00f1"\n}\n'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{ not json", "damaged: not valid JSON"),
        ("[1]", "damaged: not an analogy-studio.test-split file"),
        ('{"format": "analogy-studio.split"}', "not an analogy-studio.test-split file"),
        ('{"format": "analogy-studio.test-split", "format_version": "2"}', "not a number"),
        ('{"format": "analogy-studio.test-split", "format_version": 3}', "newer studio"),
    ],
)
def test_a_bad_split_json_is_named(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / SPLIT_JSON).write_text(text)
    with pytest.raises(StudioError, match=problem) as e:
        FMT.read_split_json(tmp_path)
    assert str(tmp_path / SPLIT_JSON) in str(e.value)
    assert not FMT.is_split(tmp_path)


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(StudioError, match="split folder not found"):
        FMT.read_split_json(tmp_path / "nowhere")


def test_records_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": 1}\n\n{"id": 2}\n')
    assert read_records(path, json_object) == [{"id": 1}, {"id": 2}]
    assert read_records(path, lambda r: r["id"]) == [1, 2]
    path.write_text('{"id": 1}\n{"id": \n')
    with pytest.raises(StudioError, match="line 2 is not valid JSON") as e:
        read_records(path, json_object)
    assert str(path) in str(e.value)
    path.write_text(json.dumps({"id": 1}) + "\n[2]\n")
    with pytest.raises(StudioError, match="line 2: not a JSON object"):
        read_records(path, json_object)
    with pytest.raises(StudioError, match=r"line 1: 'key'"):
        read_records(path, lambda r: r["key"])
    with pytest.raises(StudioError, match="missing"):
        read_records(tmp_path / "none.jsonl", json_object)
