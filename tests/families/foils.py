"""What every stimulus family's ``foil_candidates`` hook must do (issue 27: Replace foil on an
item), checked the same way for each family: the families' tests share it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from studio.core.errors import StudioError
from studio.core.verdict import Verdict
from studio.plugins import family
from studio.stimuli.items import StimulusPuzzle
from studio.stimuli.split import make_generator


def stored_records(
    family_id: str, options: Mapping[str, Any], n: int, seed: int
) -> list[dict[str, Any]]:
    """``n`` items as a project stores them (``items.jsonl`` lines with a part)."""
    gen = make_generator(family_id, options)
    return [item.to_json() | {"part": "test"} for item in gen.items(n, seed, workers=1)]


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def check_candidates(
    family_id: str, record: Mapping[str, Any], answer: int, n: int = 3, seed: int = 11
) -> list[dict[str, Any]]:
    """The hook's candidates for ``answer`` of ``record``, checked against the contract:
    at most ``n``; the same for the same seed; each a record of the same item in which only
    that answer differs (the key, the other answers and everything that is not an answer
    unchanged), each passing the family's ``vet_record`` with that verdict written in, each
    showing something new (not the foil now, not another answer, not another candidate)."""
    fam = family(family_id)
    hook, vet = fam.load("foil_candidates"), fam.load("vet_record")
    before = _text(record)
    got = hook(record, answer, seed, n)
    assert _text(record) == before, "the hook changed the record it was given"
    assert 1 <= len(got) <= n
    assert _text(got) == _text(hook(record, answer, seed, n)), "not deterministic for a seed"
    item = StimulusPuzzle.from_record(record)
    shown = {_text(item.answer_record(j)) for j in range(len(item.answers))}
    for r in got:
        new = StimulusPuzzle.from_record(r)
        assert (new.id, new.family, new.key, new.answers) == (
            item.id,
            item.family,
            item.key,
            item.answers,
        )
        for j in range(len(item.answers)):
            same = _text(new.answer_record(j)) == _text(item.answer_record(j))
            assert same == (j != answer), f"answer {j} {'changed' if same else 'kept'}"
        shown_now = _text(new.answer_record(answer))
        assert shown_now not in shown, "a candidate shows what an answer already shows"
        shown.add(shown_now)
        verdict = vet(r)
        assert verdict.valid, [f.message() for f in verdict.errors]
        assert Verdict.from_item_json(r["verdict"]).valid
    return got


def check_refusals(family_id: str, record: Mapping[str, Any]) -> None:
    """The key is not a foil; an answer that is not there is refused."""
    hook = family(family_id).load("foil_candidates")
    item = StimulusPuzzle.from_record(record)
    with pytest.raises(StudioError, match="is the key, not a foil"):
        hook(record, item.key, 1, 2)
    with pytest.raises(StudioError, match=f"has no answer {len(item.answers) + 1}"):
        hook(record, len(item.answers), 1, 2)


def other_seed_differs(family_id: str, record: Mapping[str, Any], answer: int) -> bool:
    """Whether another seed draws other candidates (where the design has more than a few)."""
    hook = family(family_id).load("foil_candidates")
    return _text(hook(record, answer, 1, 3)) != _text(hook(record, answer, 2, 3))


__all__ = ["check_candidates", "check_refusals", "other_seed_differs", "stored_records"]
