"""Split parameters (UA §3.4), as one frozen record that goes into ``split.json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from studio.core.errors import StudioError
from studio.core.family import GLYPH_FAMILY
from studio.core.puzzle import LAYOUTS
from studio.core.schema import RULE_IDS, Rule

ALL_RULES = RULE_IDS
#: The rules asked for when none are named: all but ``union``, which needs glyphs that carry
#: two values of one concept (a multi-valued tag) and so, on annotations with one value per
#: concept, only ever ran dry and warned (issue 24). Ask for it by name where glyphs allow it.
DEFAULT_RULES = tuple(r for r in ALL_RULES if r != Rule.UNION)
EXTRAPOLATIONS = ("neutral", "tuples", "concepts", "values", "tuple-folds")
HOLDOUTS = ("none", "basic", "disjoint")
SAMPLINGS = ("balanced", "diverse")
#: The one default of ``sampling`` for the front ends: the CLI's ``--sampling`` and the
#: Generate dialog both read it (through the glyph family's option). ``balanced``, since a
#: diverse split of a thinly annotated project runs dry; ask for ``diverse`` (UA's choice)
#: once the annotations allow it. (:class:`SplitParams` itself keeps ``diverse``, the value
#: its records and callers have always had.)
DEFAULT_SAMPLING = "balanced"
#: How an answer set is chosen: ``symmetric`` (every answer could have been the key as far as
#: its own tags go; the default) or ``ua`` (UA's published foil pool, kept to reproduce UA).
ANSWER_SETS = ("symmetric", "ua")
#: Most answers a symmetric set holds; fewer where a concept has fewer values that could be the
#: key (down to ``SplitParams.min_answers``).
MAX_ANSWERS = 4
#: The fewest answers a new split's symmetric set may hold: the count follows what the values
#: allow (issue 24: with four, the default split on UA's annotations tested 2 tuples; with two,
#: 9). A lab wanting UA's four answers throughout sets 4 and accepts the narrower split.
DEFAULT_MIN_ANSWERS = 2
#: The glyph hold-out new splits use (``SplitParams.holdout_version``).
HOLDOUT_VERSION = 2
#: every layout of the puzzle record is a glyph layout (the one list: studio.core.puzzle)
GLYPH_LAYOUTS = LAYOUTS


@dataclass(frozen=True)
class SplitParams:
    """Everything that decides a split; with the annotations and the seed it fixes every byte.

    - ``extrapolation``: ``neutral`` (every tuple in train and test), ``tuples`` (hold out
      rule–concept pairs for test), ``concepts`` (hold out whole concepts), ``values`` (test
      instantiations — rule, concept and values — never seen in train), ``tuple-folds``
      (UA's evaluation design, §5: the rule–concept pairs are split into ``folds`` groups by
      the seed alone; fold k tests group k and trains on the others, so the folds' test
      problem types partition them).
    - ``holdout``: ``none`` (every glyph on both sides; instantiations are then kept disjoint
      as in UA, so ``neutral`` acts as ``values``), ``basic`` (each annotation folder split on its
      own), ``disjoint`` (train and val+test glyph sets disjoint).
    - ``sampling``: ``balanced`` draws rule–concept tuples uniformly; ``diverse`` also never
      repeats a rule–values–answer instantiation.
    - ``holdout_fraction``: the share held out for val+test (glyphs, tuples, concepts, values).
    - ``answer_sets``: ``symmetric`` chooses the answers' values first, among values that could
      each be the key, then the key uniformly among them; ``ua`` is UA's foil pool (biased: the
      key is the odd one out among the answers), for reproducing UA only.
    - ``strict``: a foil of a puzzle without context shift may not complete any rule under a
      shifted reading either (row 2 with its own values): a second defensible answer to a
      solver that does not know the split is shift-free.
    - ``min_answers``: the fewest answers a symmetric set may hold (2 to 4). A set holds as
      many as the intended concept has values that could each be the key, at most four; a
      tuple with fewer than ``min_answers`` such values is dry. Each puzzle's chance is one
      over its own answer count (issue 24: with four, most of UA's concepts run dry).
    """

    family: str = GLYPH_FAMILY
    layout: str = "two-row"
    rules: tuple[str, ...] = DEFAULT_RULES
    extrapolation: str = "neutral"
    shift: bool = False
    holdout: str = "disjoint"
    sampling: str = "diverse"
    ratios: tuple[float, float, float] = (0.7, 0.1, 0.2)
    folds: int = 1
    n: int = 10_000
    seed: int = 1
    holdout_fraction: float = 0.3
    concepts: tuple[str, ...] = ()  # empty: every concept of the schema
    sequence_length: int = 4
    group_size: int = 4
    answer_sets: str = "symmetric"
    strict: bool = True
    min_answers: int = DEFAULT_MIN_ANSWERS
    #: 2: a glyph's side of the hold-out is its own (a hash; issue 24); 1: the seeded
    #: permutation of splits made before, kept so that their sets regenerate on their sides
    holdout_version: int = HOLDOUT_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = []
        if self.layout not in GLYPH_LAYOUTS:
            problems.append(f"layout {self.layout!r} is not one of {', '.join(GLYPH_LAYOUTS)}")
        bad = [r for r in self.rules if r not in ALL_RULES]
        if bad or not self.rules:
            problems.append(f"rules must be some of {', '.join(ALL_RULES)} (got {self.rules})")
        if self.extrapolation not in EXTRAPOLATIONS:
            problems.append(f"extrapolation must be one of {', '.join(EXTRAPOLATIONS)}")
        if self.holdout not in HOLDOUTS:
            problems.append(f"holdout must be one of {', '.join(HOLDOUTS)}")
        if self.sampling not in SAMPLINGS:
            problems.append(f"sampling must be one of {', '.join(SAMPLINGS)}")
        if self.answer_sets not in ANSWER_SETS:
            problems.append(f"answer_sets must be one of {', '.join(ANSWER_SETS)}")
        if len(self.ratios) != 3 or any(r < 0 for r in self.ratios) or sum(self.ratios) <= 0:
            problems.append("ratios must be three non-negative numbers (train, val, test)")
        if self.n < 1:
            problems.append("n must be at least 1")
        if self.folds < 1:
            problems.append("folds must be at least 1")
        elif self.extrapolation == "tuple-folds" and self.folds < 2:
            problems.append(
                "extrapolation tuple-folds needs folds of 2 or more (fold k tests the k-th "
                "group of rule–concept pairs)"
            )
        if not 0 < self.holdout_fraction < 1:
            problems.append("holdout_fraction must lie between 0 and 1")
        if not 3 <= self.sequence_length <= 8:
            problems.append("sequence_length must be 3 to 8")
        if not 3 <= self.group_size <= 8:
            problems.append("group_size must be 3 to 8")
        if not 2 <= self.min_answers <= MAX_ANSWERS:
            problems.append(f"min_answers must be 2 to {MAX_ANSWERS}")
        if self.holdout_version not in (1, HOLDOUT_VERSION):
            problems.append(f"holdout_version must be 1 or {HOLDOUT_VERSION}")
        if problems:
            raise StudioError("split parameters: " + "; ".join(problems))

    @property
    def tested_rules(self) -> tuple[str, ...]:
        """The rules this split's puzzles test: ``rules``, except that an analogy tests one
        change and nothing else (its coverage must not warn that constant yields nothing)."""
        return ("change",) if self.layout == "analogy" else self.rules

    def counts(self) -> dict[str, int]:
        """Puzzles per part: train, val, test (rounding puts the remainder in test)."""
        total = sum(self.ratios)
        train = round(self.n * self.ratios[0] / total)
        val = round(self.n * self.ratios[1] / total)
        return {"train": train, "val": val, "test": max(0, self.n - train - val)}

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["rules"] = list(self.rules)
        d["ratios"] = list(self.ratios)
        d["concepts"] = list(self.concepts)
        d["extra"] = dict(self.extra)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SplitParams:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise StudioError(f"split parameters: unknown field(s) {', '.join(unknown)}")
        kw = dict(d)
        # splits written before answer sets were chosen symmetrically say neither: they were
        # made the UA way, without strict vetting
        kw.setdefault("answer_sets", "ua")
        kw.setdefault("strict", False)
        kw.setdefault("min_answers", MAX_ANSWERS)  # before issue 24 every set had four
        kw.setdefault("holdout_version", 1)  # and the hold-out was a seeded permutation
        for k in ("rules", "ratios", "concepts"):
            if k in kw:
                kw[k] = tuple(kw[k])
        return cls(**kw)
