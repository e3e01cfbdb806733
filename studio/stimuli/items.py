"""The record every non-glyph task generator yields.

A generator (KiVA trials, polycube rotation, shape composition, cube nets) yields
:class:`StimulusItem` objects; :mod:`studio.stimuli.split` writes them to a split folder in one
format for all families. ``record`` is the symbolic description (everything needed to re-render
and re-check the item, JSON-able, with sorted keys when written); ``images`` are the separate
images by name, ``sheet`` the single stitched image people see; ``verdict`` is its vet verdict
(:class:`~studio.core.verdict.Verdict`: every check that ran, with its measure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from studio.core.verdict import Verdict


@dataclass
class StimulusItem:
    """One generated trial or task item of a non-glyph family."""

    id: str
    family: str
    record: dict[str, Any]
    images: Mapping[str, Image.Image]
    sheet: Image.Image
    verdict: Verdict = field(default_factory=Verdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            **self.record,
            "images": sorted(self.images),
            "verdict": self.verdict.to_item_json(),
        }
