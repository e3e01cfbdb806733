"""What each answer of a non-glyph item shows, read from its symbolic record (issue 11).

A blind solver that never looks at the question can still pick the key when the answer set
gives it away: KiVA's no-change option that is never the key, the polycube candidate that is
not a rotation of the other three, the composition candidate whose changed piece has a scaled
twin. The answers-only probes (:mod:`studio.baselines.probes`) look for exactly that, but they
need each answer described by what a person could read off it *alone*; this module provides
those descriptions for every stimulus family, from the record in ``items.jsonl``.

:func:`answer_attributes` returns one dict per answer, in answer order, mapping an attribute to
the set of its values (a set because some attributes hold several: the marks a cube view shows,
the pieces a candidate holds). Values are strings chosen so that *equality across answers of one
item means something a person could see* — the same shape up to rotation, the same mark turned
the same way next to the same neighbour — because the probes count how many other answers share
a value, and that count is where a candidate-only giveaway shows.

:func:`audit_stimulus_records` runs the answer-set audit over them (and a family's exact
partial-view solver): it lives here, on the stimulus side, so that the vetting never imports
the stimulus package (issue 27: ``stimuli`` and ``vet`` imported each other).

Core layer: numpy, the stimulus modules and the vetting; no torch, no Qt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from studio.core.errors import StudioError

Attributes = dict[str, frozenset[str]]

#: Bins of areas (px² at 224 px): fine enough to tell a scaled piece, coarse enough to repeat
#: across items so a one-hot weight can be learnt.
PIECE_AREA_BIN = 2_000.0
TOTAL_AREA_BIN = 4_000.0
#: Rounding of polygon signatures: edge lengths in px (shape up to rotation) and in units of the
#: square root of the area (shape up to rotation and scale), angles in degrees.
EDGE_ROUND_PX = 0.5
EDGE_ROUND_REL = 0.02
ANGLE_ROUND_DEG = 2.0


def one(value: Any) -> frozenset[str]:
    return frozenset({str(value)})


def symbolic_families() -> list[str]:
    """The registered families whose records describe their answers."""
    from studio.plugins import registry

    fams = registry("families")
    return [f for f in fams.ids() if fams.get(f).answer_attributes is not None]


def answer_attributes(family: str, record: Mapping[str, Any]) -> list[dict[str, frozenset[str]]]:
    """One dict per answer of an item record (as written in items.jsonl), in answer order:
    attribute → its values, read from the symbolic record only (see the module docstring),
    by the family's ``answer_attributes`` reader.

    KiVA: the three pictured extrapolation options. Polycube rotation, shape composition, cube
    nets: the four candidates. Raises StudioError for an unknown family or a record that lacks
    what the family's answers are made of."""
    from studio.plugins import registry

    fams = registry("families")
    known = symbolic_families()
    if family not in known:
        raise StudioError(
            f"no symbolic answer reader for family {family!r} (known: {', '.join(known)})"
        )
    reader = fams.get(family).load("answer_attributes")
    try:
        return reader(record)  # type: ignore[no-any-return]
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise StudioError(f"a {family} record cannot be read for its answers: {e!r}") from e


def audit_stimulus_records(
    family: str, records: Sequence[Mapping[str, Any]], worst: int = 10, **kw: Any
) -> dict[str, Any] | None:
    """:func:`audit_answer_sets` of a non-glyph family's item records: attributes from
    ``studio.stimuli.symbolic.answer_attributes``, the key where the baselines read it. None
    where that module, or its reading of this family, is not there. Every family is audited for
    sharing too: its question is apart from its candidates, so a candidate that stands out
    among the others (the published polycube design's odd one) is a giveaway. Where the family
    has an exact partial-view solver (``Family.partial_views``: KiVA's), its floors go in as
    ``partial_views``. A record that cannot be read raises StudioError."""
    from studio.plugins import family as family_of
    from studio.vet.audit import audit_answer_sets

    if family not in symbolic_families():
        return None
    layout = family_of(family).load("baseline_layout")
    ids, attrs, keys = [], [], []
    for r in records:
        ids.append(str(r.get("id", len(ids))))
        attrs.append(answer_attributes(family, r))
        keys.append(int(layout(r)["key"]))
    audit = audit_answer_sets(ids, attrs, keys, None, worst, **kw)
    fam = family_of(family)
    if fam.partial_views is not None:
        views = fam.load("partial_views")(records)
        if views.get("views"):
            audit["partial_views"] = views
    return audit
