"""The record every non-glyph task generator yields, and its vet verdict.

A generator (KiVA trials, polycube rotation, shape composition, cube nets) yields
:class:`StimulusItem` objects; :mod:`studio.stimuli.split` writes them to a split folder in one
format for all families. ``record`` is the symbolic description (everything needed to re-render
and re-check the item, JSON-able, with sorted keys when written); ``images`` are the separate
images by name, ``sheet`` the single stitched image people see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image


@dataclass(frozen=True)
class Check:
    """One vet check with the measure behind its verdict (IoU, pixel difference, a count…).

    ``severity`` is "error" (the item is refused) or "warning" (kept, flagged)."""

    check: str
    ok: bool
    measure: float | None = None
    detail: str = ""
    severity: str = "error"

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "ok": self.ok,
            "measure": None if self.measure is None else round(float(self.measure), 6),
            "detail": self.detail,
            "severity": self.severity,
        }


@dataclass(frozen=True)
class ItemVerdict:
    """All checks of one item; it is valid when no error-severity check failed."""

    checks: tuple[Check, ...] = ()

    @property
    def valid(self) -> bool:
        return all(c.ok for c in self.checks if c.severity == "error")

    @property
    def warnings(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.ok and c.severity == "warning")

    @property
    def errors(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.ok and c.severity == "error")

    def to_json(self) -> dict[str, Any]:
        return {"valid": self.valid, "checks": [c.to_json() for c in self.checks]}


@dataclass
class StimulusItem:
    """One generated trial or task item of a non-glyph family."""

    id: str
    family: str
    record: dict[str, Any]
    images: Mapping[str, Image.Image]
    sheet: Image.Image
    verdict: ItemVerdict = field(default_factory=ItemVerdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            **self.record,
            "images": sorted(self.images),
            "verdict": self.verdict.to_json(),
        }
