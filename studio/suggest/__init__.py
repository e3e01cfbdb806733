"""Suggestions for the tagger (issue 30): the untagged glyphs most likely to carry the values
a concept lacks, from an encoder learned on the project's own glyphs.

- :mod:`studio.suggest.encoder` — the small CNN, trained self-supervised (SimCLR) on every
  rendered glyph, deterministic for a seed (torch, imported lazily);
- :mod:`studio.suggest.space` — the stored encoder (versioned with the fonts' hashes) and the
  glyph space: embedding plus the image features of :mod:`studio.vet.features`;
- :mod:`studio.suggest.rank` — per-concept models fitted on the current tags and the diverse
  ranking;
- :mod:`studio.suggest.job` — the worker's ``encoder`` job kind.

:func:`suggest` is what the CLI (``analogy-studio suggest``) and a queue call. A suggestion is
never a tag: nothing in this package writes to the project's tags (accepting one is
``Studio.tag(..., source="suggestion")``, the annotator's act).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.suggest.rank import Suggestion, rank_candidates
from studio.suggest.space import GlyphSpace, glyph_space

if TYPE_CHECKING:
    from studio.app import Studio
    from studio.store.project import Project

__all__ = [
    "GlyphSpace",
    "Suggestion",
    "SuggestionList",
    "check_concept_value",
    "needed_values",
    "project_tag_index",
    "suggest",
    "suggestions_from",
    "target_values",
]


@dataclass
class SuggestionList:
    """What :func:`suggest` returns: the suggestions, the values aimed at and why."""

    concept: str
    values: list[str]
    #: "asked" (a value was given), "needs" (the values the Needs report lacks) or "tagged"
    #: (the Needs report lacks none of the concept: every value with a tagged glyph)
    why: str
    suggestions: list[Suggestion] = field(default_factory=list)
    space: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "concept": self.concept,
            "values": self.values,
            "why": self.why,
            "space": self.space,
            "suggestions": [s.to_json() for s in self.suggestions],
        }


def check_concept_value(schema: Schema, concept: str, value: str | None) -> None:
    """StudioError naming what the schema has when ``concept`` or ``value`` is not in it."""
    if not schema.has_concept(concept):
        known = ", ".join(c.id for c in schema.concepts)
        raise StudioError(f"the schema has no concept {concept!r} (it has: {known})")
    if value is not None and not schema.has_tag(concept, value):
        values = ", ".join(v.id for v in schema.concept(concept).values) or "none"
        raise StudioError(f"concept {concept!r} has no value {value!r} (it has: {values})")


def needed_values(annotations: TagIndex, schema: Schema, concept: str) -> list[str]:
    """The values of ``concept`` the Needs report of the default split lacks (most glyphs
    lacking first)."""
    from studio.families.glyph_pmp.needs import annotation_needs
    from studio.generate.params import SplitParams

    per_value = annotation_needs(SplitParams(), annotations, schema).per_value()
    asked = [(n, v) for (c, v), n in per_value.items() if c == concept and n > 0]
    return [v for _, v in sorted(asked, key=lambda nv: (-nv[0], nv[1]))]


def project_tag_index(project: Project) -> TagIndex:
    """The project's tags as the suggestions read them (every tag, read now)."""
    return TagIndex.from_tags((t.key, t.concept, t.value) for t in project.all_tags())


def target_values(
    annotations: TagIndex, schema: Schema, concept: str, value: str | None
) -> tuple[list[str], str]:
    """The values of ``concept`` the suggestions aim at, and why (:attr:`SuggestionList.why`):
    ``value`` if given; else the values the Needs report lacks that have a tagged glyph; when
    it lacks none of them, every value with a tagged glyph. StudioError for an unknown concept
    or value, or when no glyph carries any of the values aimed at."""
    check_concept_value(schema, concept, value)
    if value is not None:
        values, why = [value], "asked"
    else:
        values, why = needed_values(annotations, schema, concept), "needs"
        tagged = {v for k in annotations.glyphs() for v in annotations.values(k, concept)}
        values = [v for v in values if v in tagged]
        if not values:
            values = [v.id for v in schema.concept(concept).values if v.id in tagged]
            why = "tagged"
    if not any(annotations.folder(concept, v) for v in values):
        what = f"{concept}={value}" if value is not None else concept
        raise StudioError(
            f"no glyph is tagged {what} yet: tag one, and the suggestions follow its neighbours"
        )
    return values, why


def suggest(
    source: Studio | Project,
    concept: str,
    value: str | None = None,
    n: int = 20,
    *,
    space: GlyphSpace | None = None,
    encoder: str = "auto",
    exclude: Iterable[GlyphKey] = (),
    rejected: Iterable[GlyphKey] = (),
    diversity: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> SuggestionList:
    """The ``n`` untagged glyphs most likely to carry ``value`` of ``concept`` (without
    ``value``: the values the Needs report lacks; when it lacks none of this concept, every
    value with a tagged glyph), diverse (:mod:`studio.suggest.rank`). ``space`` reuses a glyph
    space; otherwise one is built (``encoder`` as :func:`~studio.suggest.space.glyph_space`
    takes it: a stale encoder trains here, with ``progress``). ``exclude``: glyphs not to
    suggest (already shown); ``rejected``: glyphs answered "none of these" for the concept,
    also used as negatives. Reads the project, writes no tag. StudioError for an unknown
    concept or value, or a concept with no tagged glyph of the values aimed at."""
    from studio.app import Studio
    from studio.store.project import Project

    studio = Studio(source) if isinstance(source, Project) else source
    schema = studio.schema
    annotations = project_tag_index(studio.project)
    target_values(annotations, schema, concept, value)  # refused before any rendering
    if space is None:
        space = glyph_space(studio, encoder=encoder, progress=progress)
    return suggestions_from(
        space,
        annotations,
        schema,
        concept,
        value,
        n,
        exclude=exclude,
        rejected=rejected,
        diversity=diversity,
    )


def suggestions_from(
    space: GlyphSpace,
    annotations: TagIndex,
    schema: Schema,
    concept: str,
    value: str | None = None,
    n: int = 20,
    *,
    exclude: Iterable[GlyphKey] = (),
    rejected: Iterable[GlyphKey] = (),
    diversity: float | None = None,
    only: Iterable[GlyphKey] | None = None,
) -> SuggestionList:
    """:func:`suggest` on tags already read (``annotations``) and a space already built: pure,
    so a queue may call it on a worker thread with a snapshot of the tags read on its own.
    ``only``: deal from these glyphs alone (an annotator's assignment)."""
    values, why = target_values(annotations, schema, concept, value)
    options: dict[str, Any] = {} if diversity is None else {"diversity": diversity}
    found = rank_candidates(
        space,
        annotations,
        concept,
        values,
        n,
        exclude=exclude,
        rejected=rejected,
        only=only,
        **options,
    )
    return SuggestionList(concept, values, why, found, space.source)
