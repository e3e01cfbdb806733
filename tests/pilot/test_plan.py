"""Who sees which puzzle (issue 29): every puzzle gets its responses, lists spread problem
types, answer orders are shuffled per list, the seed fixes it all, and impossible numbers are
refused by name."""

from __future__ import annotations

from collections import Counter

import pytest

from studio.core.errors import StudioError
from studio.pilot.plan import Plan, PlanItem, make_plan


def items(n: int = 200, groups: int = 20) -> list[PlanItem]:
    return [PlanItem(f"p{i:03d}", f"rule/c{i % groups}", 2 + i % 3) for i in range(n)]


def test_a_balanced_incomplete_design() -> None:
    its = items()
    plan = make_plan(its, participants=30, per_participant=15, responses_per_item=2, seed=3)
    counts = plan.responses()
    assert set(counts) == {it.id for it in its}
    assert min(counts.values()) >= 2 and max(counts.values()) - min(counts.values()) <= 1
    by_id = {it.id: it for it in its}
    spread = []
    for trials in plan.lists:
        assert len(trials) == 15 and len({t.item for t in trials}) == 15
        spread.append(len({by_id[t.item].group for t in trials}))
        for t in trials:
            assert sorted(t.order) == list(range(by_id[t.item].answers))
    # a spread of problem types: balance of responses comes first, so a list may repeat one
    assert min(spread) >= 13 and sum(spread) / len(spread) >= 14.5
    # the key's screen position is spread: answer 0 sits everywhere about equally
    four = [t for trials in plan.lists for t in trials if by_id[t.item].answers == 4]
    slots = Counter(t.order.index(0) for t in four)
    assert len(slots) == 4 and min(slots.values()) > 0.6 * len(four) / 4
    again = make_plan(its, 30, 15, 2, seed=3)
    assert again.to_json() == plan.to_json() == Plan.from_json(plan.to_json()).to_json()
    assert make_plan(its, 30, 15, 2, seed=4).to_json() != plan.to_json()
    lines = plan.lines({it.id: it.group for it in its})
    assert lines[0].startswith("30 lists of 15 puzzles over 200 puzzles: 2–3 responses")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((10, 15, 2), "--participants 10 × --per-participant 15 = 150 responses, fewer than"),
        ((30, 300, 2), "--per-participant 300: the source holds only 200 puzzles"),
        ((3, 15, 5), "--responses-per-item 5 needs at least that many participants"),
        ((0, 15, 2), "--participants 0: expected at least 1"),
    ],
)
def test_impossible_numbers_are_refused_by_name(args: tuple[int, int, int], words: str) -> None:
    with pytest.raises(StudioError, match=words.replace("×", ".").replace("(", r"\(")):
        make_plan(items(), *args, seed=1)
