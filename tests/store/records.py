"""A puzzle record for the store's tests (shape only: the store keeps records as JSON)."""

from __future__ import annotations

from typing import Any


def record(pid: str, rule: str = "constant", concept: str = "aspect") -> dict[str, Any]:
    return {
        "id": pid,
        "family": "glyph-pmp",
        "layout": "two-row",
        "rule": rule,
        "concept": concept,
        "shift": False,
        "context": [["U+25CB@symbola"] * 3, ["U+25CF@symbola"] * 2],
        "answers": ["U+25A0@symbola", "U+25A1@symbola", "U+25CF@symbola", "U+25B2@symbola"],
        "key": 2,
        "split": pid.split("-")[0],
        "seed": 1,
    }
