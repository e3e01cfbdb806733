"""A curated project to export (shared by tests/publish and tests/gui/test_export_dialog.py):
the small demo (UA's annotations plus Symbola's Geometric Shapes), one generated set of 60
puzzles, 21 of them approved (one with a comment, one by another reviewer after a replaced
foil)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from studio import splits
from studio.app import Studio
from studio.curation import Curator, PuzzleFilter
from studio.demo import build_demo
from studio.generate.params import SplitParams
from studio.store.project import Project

PARAMS = SplitParams(n=60, sampling="balanced", seed=3)
SET_NAME = "small"


@dataclass(frozen=True)
class CuratedProject:
    path: Path
    approved: tuple[str, ...]
    commented: str  # approved with the comment "clear rows"
    replaced: str  # a foil replaced, then approved by bob
    replaced_answer: int
    replaced_glyph: str


def build_curated_project(path: Path) -> CuratedProject:
    for _ in build_demo(path, blocks=["Geometric Shapes"]):
        pass
    with Studio(Project.open(path), author="alice") as studio:
        curator = Curator(studio)
        vetted = splits.generate_and_vet(studio, PARAMS)
        curator.import_results(SET_NAME, PARAMS, vetted.results, vetted.all_verdicts)
        drafts = [c.id for c in curator.puzzles(PuzzleFilter(status="draft"))]
        assert len(drafts) >= 22
        replaced = drafts[20]
        foil = curator.puzzle(replaced).puzzle.foils[0]
        [glyph] = curator.propose_replacements(replaced, foil, limit=1)
        curator.replace_foil(replaced, foil, glyph)
        curator.set_status(drafts[:20], "approved")
        curator.set_status([drafts[1]], "approved", "clear rows")
        studio.author = "bob"
        curator.set_status([replaced], "approved")
    return CuratedProject(path, (*drafts[:20], replaced), drafts[1], replaced, foil, str(glyph))


def break_puzzle(project: Path, puzzle_id: str) -> None:
    """Take the key's values of the puzzle's concept off the key glyph: the key no longer
    completes the rule (an annotation change after the puzzle was approved)."""
    with Studio(Project.open(project), author="carol") as studio:
        p = Curator(studio).puzzle(puzzle_id).puzzle
        annotations = splits.split_inputs(studio).annotations
        for value in sorted(annotations.values(p.answer_key, p.concept)):
            studio.untag([p.answer_key], p.concept, value)
