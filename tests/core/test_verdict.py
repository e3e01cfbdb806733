"""One finding and one verdict type for glyph puzzles and stimulus items, with each on-disk
form spelled exactly as before."""

from __future__ import annotations

from studio.core.verdict import WARNING, Finding, Verdict, severity_of_source


def test_an_item_verdict_keeps_every_check_in_the_item_form() -> None:
    passed = Finding("key-completes", True, 0.123456789, "the key shows 3")
    failed = Finding("distinct-candidates", False, 2, "two alike")
    flagged = Finding("rival-transform", False, None, "close call", WARNING)
    v = Verdict((passed, failed, flagged))
    assert not v.valid and v.errors == (failed,) and v.warnings == (flagged,)
    assert v.to_item_json() == {
        "valid": False,
        "checks": [
            {
                "check": "key-completes",
                "ok": True,
                "measure": 0.123457,
                "detail": "the key shows 3",
                "severity": "error",
            },
            {
                "check": "distinct-candidates",
                "ok": False,
                "measure": 2.0,
                "detail": "two alike",
                "severity": "error",
            },
            {
                "check": "rival-transform",
                "ok": False,
                "measure": None,
                "detail": "close call",
                "severity": "warning",
            },
        ],
    }
    assert Verdict((passed, flagged)).valid
    assert failed.message() == "distinct-candidates (2): two alike"


def test_a_puzzle_verdict_splits_errors_and_warnings_in_the_puzzle_form() -> None:
    emergent = Finding(
        "emergent", answer=2, rule="constant", concept="closure", rows=(("open",), ("open",))
    )
    feature = Finding(
        "emergent",
        severity=WARNING,
        answer=1,
        rule="progression",
        concept="ink",
        rows=(("1", "2"),),
        source="image-features",
    )
    duplicate = Finding("duplicate-answer", answer=3, detail="same glyph as answer 1")
    v = Verdict((emergent, feature, duplicate), "train-00001")
    out = v.to_puzzle_json()
    assert list(out) == ["id", "valid", "findings", "warnings"]
    assert out["id"] == "train-00001" and out["valid"] is False
    assert out["findings"] == [
        {
            "kind": "emergent",
            "answer": 2,
            "source": "annotations",
            "rule": "constant",
            "concept": "closure",
            "rows": [["open"], ["open"]],
            "message": "answer 3 completes constant over closure [open | open]",
        },
        {
            "kind": "duplicate-answer",
            "answer": 3,
            "source": "annotations",
            "detail": "same glyph as answer 1",
            "message": "answer 4: same glyph as answer 1",
        },
    ]
    [warning] = out["warnings"]
    assert warning["message"].endswith("(by image-features)")
    assert list(warning) == ["kind", "answer", "source", "rule", "concept", "rows", "message"]


def test_the_puzzle_form_reads_back_with_the_severity_of_its_source() -> None:
    for f in (
        Finding("key-fails", answer=0, rule="constant", concept="closure", detail="no"),
        Finding("shifted-reading", severity=WARNING, answer=2, source="shifted-reading"),
        Finding("emergent", severity=WARNING, answer=1, rows=(("a",),), source="image-features"),
    ):
        assert f.severity == severity_of_source(f.source)
        assert Finding.from_puzzle_json(f.to_puzzle_json()) == f
