"""Glyph progressive matrices (Unicode Analogies §3) over a project's annotated glyphs, in every
glyph layout: two rows, a 3×3 matrix, a sequence, odd-one-out (:mod:`.generator`) and
A : A′ :: B : ? analogies (:mod:`.analogy`).

The options are the split parameters (:class:`~studio.generate.params.SplitParams`, UA §3.4);
``n``, ``seed`` and the train/val/test ratios are every family's and given by the front ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from studio.core.family import GLYPH_FAMILY, Family, Option
from studio.generate.params import (
    ALL_RULES,
    ANSWER_SETS,
    DEFAULT_RULES,
    DEFAULT_SAMPLING,
    EXTRAPOLATIONS,
    GLYPH_LAYOUTS,
    HOLDOUTS,
    SAMPLINGS,
    SplitParams,
)

if TYPE_CHECKING:
    from studio.core.schema import Schema
    from studio.core.tagindex import TagIndex

_D = SplitParams()


def fold_generator(
    params: SplitParams, annotations: TagIndex, schema: Schema, fold: int, questions: Any = None
) -> Any:
    """The generator of one fold: A : A′ :: B : ? analogies for the ``analogy`` layout,
    glyph progressive matrices for every other layout."""
    if params.layout == "analogy":
        from studio.families.glyph_pmp.analogy import AnalogyGenerator

        return AnalogyGenerator(params, annotations, schema, fold=fold, questions=questions)
    from studio.families.glyph_pmp.generator import GlyphPMPGenerator

    return GlyphPMPGenerator(params, annotations, schema, fold=fold, questions=questions)


def split_params(
    options: Mapping[str, Any],
    n: int = _D.n,
    seed: int = _D.seed,
    ratios: tuple[float, float, float] = _D.ratios,
) -> SplitParams:
    """The split parameters of these options (the defaults for those not given)."""
    return SplitParams(n=n, seed=seed, ratios=ratios, **{**FAMILY.defaults(), **options})


FAMILY = Family(
    id=GLYPH_FAMILY,
    kind="glyph",
    label="Glyph progressive matrices",
    description="UA progressive matrices over annotated glyphs",
    default=True,
    options=(
        Option(
            "layout",
            "choice",
            _D.layout,
            "analogy: A : A′ :: B : ? (VASR's form)",
            choices=GLYPH_LAYOUTS,
        ),
        Option(
            "rules",
            "subset",
            DEFAULT_RULES,
            "all, or a list like constant,progression (default: all but union, which needs glyphs "
            "tagged with two values of one concept, and runs dry without them)",
            choices=ALL_RULES,
        ),
        Option(
            "concepts",
            "subset",
            (),
            "only these concepts of the schema, e.g. closure,aspect (none: every concept)",
            dynamic="concepts",
        ),
        Option("shift", "bool", _D.shift, "context shift between rows", label="Context shift"),
        Option(
            "holdout",
            "choice",
            _D.holdout,
            "none: every glyph on both sides; basic: each annotation folder split on its own; "
            "disjoint: train and val+test glyphs disjoint",
            choices=HOLDOUTS,
            label="Glyph hold-out",
        ),
        Option(
            "extrapolation",
            "choice",
            _D.extrapolation,
            "neutral, or hold out tuples, concepts or values for test; tuple-folds: UA's "
            "k-fold design (rule–concept pairs in --folds groups, fold k tests group k)",
            choices=EXTRAPOLATIONS,
        ),
        Option(
            "sampling",
            "choice",
            DEFAULT_SAMPLING,
            "balanced: rule–concept tuples drawn uniformly; diverse: also never repeat a "
            "rule–values–answer instantiation (UA's default; needs many annotated glyphs)",
            choices=SAMPLINGS,
        ),
        Option(
            "answer_sets",
            "choice",
            _D.answer_sets,
            "symmetric: every answer could have been the key as far as its own tags go; ua: "
            "UA's published foil pool, biased, to reproduce UA only",
            choices=ANSWER_SETS,
        ),
        Option(
            "strict",
            "bool",
            _D.strict,
            "without context shift, also refuse foils that complete a rule under a shifted reading",
            label="Strict: no foil completes a rule under a shifted reading",
        ),
        Option(
            "min_answers",
            "int",
            _D.min_answers,
            "the fewest answers a symmetric set may hold (2-4): a concept with fewer values "
            "that could be the key builds sets of that many instead of running dry; each "
            "puzzle's chance is one over its answers (the row layouts and analogies; "
            "odd-one-out puzzles and UA's pool keep their sets)",
            minimum=2,
            maximum=4,
            label="Fewest answers",
        ),
        Option("folds", "int", _D.folds, "folds, each a split of its own", minimum=1, maximum=100),
    ),
    generator=fold_generator,
    check="studio.families.glyph_pmp:check_options",
)


def check_options(options: Mapping[str, Any]) -> None:
    """The options as split parameters, which say what is wrong (no rule, an unknown layout
    …) when a request is checked rather than when the work starts."""
    split_params(options)
