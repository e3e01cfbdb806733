"""The suggestion queue's state without a window (issue 30): it deals one glyph at a time,
records answers without writing a tag, remembers "none" (the ranking's negatives) and skipped
glyphs, asks to rank again after an accepted tag or every few answers, ignores a stale ranking,
and deals an undone glyph again."""

from __future__ import annotations

import pytest

from studio.core.keys import GlyphKey
from studio.suggest.queue import QueueMemory, SuggestionQueue
from studio.suggest.rank import Suggestion

KEYS = [GlyphKey(cp, "symbola") for cp in range(0x2460, 0x2470)]


def found(*keys: GlyphKey, value: str = "circle") -> list[Suggestion]:
    return [Suggestion(k, "closure", value, 1.0 - i / 100) for i, k in enumerate(keys)]


def test_it_deals_in_order_and_answers_write_nothing_but_are_remembered() -> None:
    memory = QueueMemory()
    q = SuggestionQueue("closure", memory=memory, refill_every=3, low_water=1)
    assert q.current() is None and q.wants_refill()
    req = q.request()
    assert req.concept == "closure" and req.exclude == frozenset() and req.rejected == frozenset()
    assert q.fill(req.generation, found(*KEYS[:6]))
    assert q.current() is not None and q.current().key == KEYS[0]
    assert not q.wants_refill()
    none = q.answer("none")
    skipped = q.answer("skipped")
    assert none.kind == "none" and skipped.kind == "skipped" and none.value is None
    assert memory.of("closure") == ({KEYS[0]}, {KEYS[1]})
    assert q.current().key == KEYS[2]
    req = q.request()
    assert req.rejected == {KEYS[0]} and {KEYS[0], KEYS[1], KEYS[2]} <= req.exclude
    # an accepted tag asks for a refit at once
    got = q.answer("accepted", "line")
    assert got.value == "line" and not got.guessed_right and q.accepted == 1
    assert q.wants_refill()
    with pytest.raises(ValueError):
        q.answer("accepted")


def test_a_ranking_replaces_what_waits_leaves_out_the_answered_and_a_stale_one_is_ignored() -> None:
    q = SuggestionQueue("closure")
    first = q.request()
    assert q.fill(first.generation, found(*KEYS[:4]))
    q.answer("skipped")  # KEYS[0]; KEYS[1] is shown
    stale = q.request()
    newer = q.request()
    assert not q.fill(stale.generation, found(*KEYS[8:12]))
    assert q.fill(newer.generation, found(KEYS[0], KEYS[1], KEYS[9], KEYS[10]))
    assert q.current().key == KEYS[1]  # the glyph shown stays
    assert [s.key for s in q.pending] == [KEYS[9], KEYS[10]]
    # a new queue on the same memory (the window's session) never deals the skipped glyph
    again = SuggestionQueue("closure", memory=q.memory)
    req = again.request()
    again.fill(req.generation, found(KEYS[0], KEYS[5]))
    assert again.current().key == KEYS[5]


def test_an_undone_accepted_glyph_is_dealt_again() -> None:
    q = SuggestionQueue("closure")
    q.fill(q.request().generation, found(*KEYS[:3]))
    q.answer("accepted", "circle")
    assert q.current().key == KEYS[1]
    assert not q.take_back(KEYS[2])
    assert q.take_back(KEYS[0])
    assert q.current().key == KEYS[0] and q.pending[0].key == KEYS[1] and q.answers == []


def test_an_empty_ranking_says_the_queue_is_exhausted_until_a_tag_is_accepted() -> None:
    q = SuggestionQueue("closure")
    q.fill(q.request().generation, [])
    assert q.current() is None and q.exhausted and not q.wants_refill()
