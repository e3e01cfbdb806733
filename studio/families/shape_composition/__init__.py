"""Shape composition (spatial-reasoning IQ tests §4.2): which set of m = 2-5 pieces
reassembles the shape."""

from __future__ import annotations

from studio.core.family import Family, Option
from studio.families.common import DESIGN, question_candidates, size

baseline_layout = question_candidates("composition", lambda r: f"{r.get('m', '?')} pieces")


FAMILY = Family(
    id="shape-composition",
    kind="stimulus",
    label="Shape composition",
    description="which set of m = 2-5 pieces reassembles the shape",
    options=(
        Option(
            "pieces",
            "int",
            3,
            "2-5 pieces",
            minimum=2,
            maximum=5,
            flag="level",
        ),
        DESIGN,
        size(32, 4096),
    ),
    generator="studio.families.shape_composition.generator:ShapeCompositionGenerator",
    vet_record="studio.families.shape_composition.generator:vet_composition_item",
    render_record="studio.families.shape_composition.generator:render_composition_record",
    foil_candidates="studio.families.shape_composition.foils:composition_foils",
    baseline_layout=baseline_layout,
    answer_attributes="studio.families.shape_composition.answers:composition_answers",
    spatial=True,
    cut_pieces=True,
)
