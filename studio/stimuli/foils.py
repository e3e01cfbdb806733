"""What the stimulus families' ``foil_candidates`` hooks share (issue 27: Replace foil on an
item): the foil asked for checked, one seeded stream per (seed, answer), and the drafts a family
draws kept only when they are new and pass its vetting.

A family draws a replacement foil the way its generator draws that foil, from the same
candidate space, and hands each draft here as (what the new foil shows, the whole new record);
:func:`keep_vetted` drops a draft that shows what the foil shows now, what another answer shows
or what an earlier draft showed, vets the rest with the family's own ``vet_record`` and keeps
the valid ones, with their verdict written in as ``items.jsonl`` has it.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from itertools import islice
from typing import Any

import numpy as np

from studio.core.errors import StudioError
from studio.core.verdict import Verdict

#: Drafts a hook looks through, at most, for each candidate asked for: a family narrows its
#: draws first, so nearly every draft is new and valid; this bounds a pathological item.
DRAFTS_PER_CANDIDATE = 25


def check_foil(record: Mapping[str, Any], answer_index: int, key: int, answers: int) -> None:
    """StudioError unless ``answer_index`` names one of the item's ``answers`` other than the
    key (numbered from 1 in the message, as the board shows them)."""
    rid = record.get("id", "the item")
    if not 0 <= answer_index < answers:
        raise StudioError(f"{rid} has no answer {answer_index + 1} (it has {answers})")
    if answer_index == key:
        raise StudioError(f"answer {answer_index + 1} of {rid} is the key, not a foil")


def foil_rng(seed: int, answer_index: int, family: str) -> np.random.Generator:
    """The stream a hook draws from: the same (seed, answer, family), the same drafts."""
    tag = zlib.crc32(family.encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence([int(seed) % 2**63, answer_index, tag]))


def keep_vetted(
    drafts: Iterable[tuple[Hashable, dict[str, Any]]],
    taken: Collection[Hashable],
    vet: Callable[[dict[str, Any]], Verdict],
    n: int,
    finish: Callable[[dict[str, Any], Verdict], None] | None = None,
) -> list[dict[str, Any]]:
    """Up to ``n`` of ``drafts`` — (what the new foil shows, the new record) — in their order:
    none showing what ``taken`` holds (the current foil and the other answers) or what an
    earlier draft showed, each passing ``vet`` (valid: no error), its ``verdict`` written in
    and ``finish(record, verdict)`` applied (a family's own measures). At most
    :data:`DRAFTS_PER_CANDIDATE` drafts per candidate are looked at."""
    if n <= 0:
        return []
    seen = set(taken)
    out: list[dict[str, Any]] = []
    for shown, record in islice(drafts, n * DRAFTS_PER_CANDIDATE):
        if shown in seen:
            continue
        seen.add(shown)
        verdict = vet(record)
        if not verdict.valid:
            continue
        record["verdict"] = verdict.to_item_json()
        if finish is not None:
            finish(record, verdict)
        out.append(record)
        if len(out) >= n:
            break
    return out


__all__ = ["DRAFTS_PER_CANDIDATE", "check_foil", "foil_rng", "keep_vetted"]
