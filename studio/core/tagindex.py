"""Annotations as the generator and the checks read them: glyph → concept → set of values.

Built once per split from the project's tags (or an annotation CSV). A glyph carries any number
of values of any number of concepts; a glyph with no tag for a concept says nothing about it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from studio.core.keys import GlyphKey

ConceptValues = Mapping[str, frozenset[str]]
_EMPTY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TagIndex:
    """Immutable. ``by_glyph[key][concept]`` are the values a glyph carries; ``folders[(concept,
    value)]`` are the glyphs carrying that value (UA's annotation folders), sorted."""

    by_glyph: Mapping[GlyphKey, ConceptValues]
    folders: Mapping[tuple[str, str], tuple[GlyphKey, ...]]

    @classmethod
    def from_tags(cls, tags: Iterable[tuple[GlyphKey, str, str]]) -> TagIndex:
        """From ``(glyph, concept, value)`` triples (TagRecord and TagRow both give them)."""
        per: dict[GlyphKey, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        folders: dict[tuple[str, str], set[GlyphKey]] = defaultdict(set)
        for key, concept, value in tags:
            per[key][concept].add(value)
            folders[(concept, value)].add(key)
        return cls(
            by_glyph={k: {c: frozenset(v) for c, v in cs.items()} for k, cs in per.items()},
            folders={cv: tuple(sorted(ks)) for cv, ks in sorted(folders.items())},
        )

    def values(self, key: GlyphKey, concept: str) -> frozenset[str]:
        return self.by_glyph.get(key, {}).get(concept, _EMPTY)

    def concepts_of(self, key: GlyphKey) -> frozenset[str]:
        return frozenset(self.by_glyph.get(key, {}))

    def tags_of(self, key: GlyphKey) -> frozenset[tuple[str, str]]:
        return frozenset((c, v) for c, vs in self.by_glyph.get(key, {}).items() for v in vs)

    def glyphs(self) -> list[GlyphKey]:
        return sorted(self.by_glyph)

    def folder(self, concept: str, value: str) -> tuple[GlyphKey, ...]:
        return self.folders.get((concept, value), ())

    def restricted(self, keep: Iterable[GlyphKey]) -> TagIndex:
        """The same annotations over a subset of glyphs (a hold-out side)."""
        keep = set(keep)
        return TagIndex(
            by_glyph={k: v for k, v in self.by_glyph.items() if k in keep},
            folders={
                cv: ks
                for cv, ks in (
                    (cv, tuple(k for k in ks if k in keep)) for cv, ks in self.folders.items()
                )
                if ks
            },
        )

    def merged(self, extra: Mapping[GlyphKey, ConceptValues]) -> TagIndex:
        """These annotations plus more concepts per glyph (e.g. image-derived pseudo tags)."""
        by_glyph: dict[GlyphKey, dict[str, frozenset[str]]] = {
            k: dict(v) for k, v in self.by_glyph.items()
        }
        triples = []
        for k, cs in extra.items():
            d = by_glyph.setdefault(k, {})
            for c, vs in cs.items():
                d[c] = d.get(c, _EMPTY) | vs
        for k, cs in by_glyph.items():
            for c, vs in cs.items():
                for v in vs:
                    triples.append((k, c, v))
        return TagIndex.from_tags(triples)
