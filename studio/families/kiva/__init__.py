"""KiVA trials (KiVA §3): a training pair of an everyday 3D object before and after a
transformation, a new object, and what changed / how / which picture completes it.

Modules: :mod:`.transforms` (the five domains over a symbolic picture state), :mod:`.generator`
(trials and their record vetting), :mod:`.ambiguity` (the pixel checks: the change visible,
no rival transformation draws the same picture).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from studio.core.errors import StudioError
from studio.core.family import Family, Option
from studio.families.common import DESIGN, size


def baseline_layout(record: Mapping[str, Any]) -> dict[str, Any]:
    """The extrapolation question: A : A′ :: B : ? over the pictured options."""
    ext = next((q for q in record.get("questions", ()) if q.get("id") == "extrapolate"), None)
    if ext is None:
        raise StudioError(f"item {record.get('id', '?')} has no extrapolate question")
    return {
        "context": ["train-before", "train-after", "test-before"],
        "rows": (2, 1),
        "answers": list(ext.get("images") or [f"option-{k}" for k in range(3)]),
        "key": int(ext["key"]),
        "rule": str(record.get("domain", "")),
        "concept": str(record.get("spec", "")),
        "layout": "analogy",
    }


FAMILY = Family(
    id="kiva",
    kind="stimulus",
    label="KiVA trials",
    description="KiVA trials: training pair, new object, what / how / extrapolation",
    options=(
        Option(
            "mode",
            "choice",
            "kiva",
            "kiva: the children's values of each domain; kiva-adults: the adults' (more "
            "values, harder)",
            choices=("kiva", "kiva-adults"),
            record_default=True,
        ),
        DESIGN,
        Option(
            "no_change_share",
            "float",
            None,
            "share of no-change trials (default: 1/3 balanced, 0.1 published)",
            minimum=0.0,
            maximum=1.0,
            label="No-change share",
            preview=False,
        ),
        Option(
            "objects",
            "names",
            None,
            "library objects or mesh files to use, e.g. mug,key,toy-car (default: the library)",
            preview=False,
        ),
        size(8, 4096),
    ),
    generator="studio.families.kiva.generator:KivaGenerator",
    vet_record="studio.families.kiva.generator:vet_trial_record",
    render_record="studio.families.kiva.generator:render_trial_record",
    vet_render_record="studio.families.kiva.generator:vet_and_draw_trial_record",
    foil_candidates="studio.families.kiva.foils:kiva_foils",
    baseline_layout=baseline_layout,
    answer_attributes="studio.families.kiva.answers:kiva_answers",
    partial_views="studio.families.kiva.partial:kiva_partial_views",
    prompt="The first object changed from left to right. Which picture shows the new object "
    "changed in the same way?",
)
