"""Polycube rotation (spatial-reasoning IQ tests §4.1): which of four views is not a rotation
of the question's polycube (published design), or which one is (balanced design)."""

from __future__ import annotations

from studio.core.family import Family, Option
from studio.families.common import DESIGN, question_candidates, size

# published: the odd candidate's kind; balanced: the design (no odd candidate)
baseline_layout = question_candidates(
    "rotation", lambda r: str(r.get("odd_kind") or r.get("design", ""))
)


FAMILY = Family(
    id="polycube-rotation",
    kind="stimulus",
    label="Polycube rotation",
    description="which of four views is not a rotation of the polycube (k = 3-5 arms)",
    options=(
        Option(
            "level",
            "int",
            1,
            "1-3: polycubes of 3-5 arms",
            minimum=1,
            maximum=3,
        ),
        DESIGN,
        size(32, 1024),
    ),
    generator="studio.families.polycube_rotation.generator:PolycubeRotationGenerator",
    vet_record="studio.families.polycube_rotation.generator:vet_polycube_item",
    render_record="studio.families.polycube_rotation.generator:render_polycube_record",
    foil_candidates="studio.families.polycube_rotation.foils:polycube_foils",
    baseline_layout=baseline_layout,
    answer_attributes="studio.families.polycube_rotation.answers:polycube_answers",
    spatial=True,
    odd_designs=("published", "mixed"),
    rotation_views=True,
)
