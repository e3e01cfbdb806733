"""Cube nets (MARVEL's reassembling): which cube folds from the marked net."""

from __future__ import annotations

from studio.core.family import Family
from studio.families.common import DESIGN, question_candidates, size

baseline_layout = question_candidates(
    "folding", lambda r: "+".join(sorted(set(r.get("distractor_kinds", ()))))
)


FAMILY = Family(
    id="cube-net",
    kind="stimulus",
    label="Cube nets",
    description="which cube folds from the marked net (MARVEL reassembling)",
    options=(DESIGN, size(32, 4096)),
    generator="studio.families.cube_net.generator:CubeNetGenerator",
    vet_record="studio.families.cube_net.generator:vet_cube_net_item",
    render_record="studio.families.cube_net.generator:render_cube_net_record",
    foil_candidates="studio.families.cube_net.foils:cube_net_foils",
    baseline_layout=baseline_layout,
    answer_attributes="studio.families.cube_net.answers:cube_net_answers",
    spatial=True,
)
