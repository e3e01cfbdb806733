"""Who sees which puzzle in a pilot study, and in which order (issue 29).

Every benchmark the studio draws on measured people before publishing (UA: 30 participants, 15
puzzles each, every problem type shown at least once; KiVA: a practice trial with feedback;
VASR: five annotators per item). A pilot cannot show every puzzle to every person, so each
participant gets a *list*: ``per_participant`` puzzles chosen so that every puzzle gets at
least ``responses_per_item`` responses over the ``participants`` lists — a balanced
incomplete design built greedily: each list takes, one puzzle at a time, a puzzle with the
fewest responses so far, preferring (rule, concept) groups the list has not shown yet, so a
participant sees a spread of problem types and the response counts differ by at most one.
Each list is shuffled, and each puzzle's answers are shown in an order of their own per list,
so a key's screen position says nothing; everything is fixed by the seed.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from studio.core.errors import StudioError


@dataclass(frozen=True)
class PlanItem:
    """A puzzle as the plan sees it: its id, its (rule, concept) group and how many answers
    it shows."""

    id: str
    group: str
    answers: int


@dataclass(frozen=True)
class Trial:
    """One puzzle of one list: its id and the answers' order on screen (original indices)."""

    item: str
    order: tuple[int, ...]


@dataclass
class Plan:
    participants: int
    per_participant: int
    responses_per_item: int
    seed: int
    lists: list[list[Trial]] = field(default_factory=list)

    def responses(self) -> Counter[str]:
        return Counter(t.item for trials in self.lists for t in trials)

    def to_json(self) -> dict[str, Any]:
        return {
            "participants": self.participants,
            "per_participant": self.per_participant,
            "responses_per_item": self.responses_per_item,
            "seed": self.seed,
            "lists": [
                [{"item": t.item, "order": list(t.order)} for t in trials] for trials in self.lists
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(
            int(data["participants"]),
            int(data["per_participant"]),
            int(data["responses_per_item"]),
            int(data["seed"]),
            [
                [Trial(str(t["item"]), tuple(int(i) for i in t["order"])) for t in trials]
                for trials in data["lists"]
            ],
        )

    def lines(self, groups: dict[str, str]) -> list[str]:
        """The plan as printed: responses per piloted puzzle (``groups``: puzzle → its
        (rule, concept) group; attention checks are not counted), groups per list."""
        counts = Counter({k: v for k, v in self.responses().items() if k in groups})
        per_list = [
            len({groups[t.item] for t in trials if t.item in groups}) for trials in self.lists
        ]
        lo, hi = (min(counts.values()), max(counts.values())) if counts else (0, 0)
        return [
            f"{self.participants} lists of {self.per_participant} puzzles over {len(counts)} "
            f"puzzles: {lo}–{hi} responses per puzzle (asked: at least "
            f"{self.responses_per_item})",
            f"problem types per list: {min(per_list, default=0)}–{max(per_list, default=0)} "
            f"of {len(set(groups.values()))}",
        ]


def make_plan(
    items: Sequence[PlanItem],
    participants: int,
    per_participant: int,
    responses_per_item: int,
    seed: int,
) -> Plan:
    """The lists (module docstring). Raises StudioError naming the option when the numbers
    cannot give every puzzle its responses."""
    n = len(items)
    if n == 0:
        raise StudioError("the source holds no puzzle to pilot")
    for name, value in (
        ("--participants", participants),
        ("--per-participant", per_participant),
        ("--responses-per-item", responses_per_item),
    ):
        if value < 1:
            raise StudioError(f"{name} {value}: expected at least 1")
    if per_participant > n:
        raise StudioError(f"--per-participant {per_participant}: the source holds only {n} puzzles")
    if responses_per_item > participants:
        raise StudioError(
            f"--responses-per-item {responses_per_item} needs at least that many participants "
            f"(--participants {participants})"
        )
    need = n * responses_per_item
    have = participants * per_participant
    if have < need:
        more = -(-need // per_participant)
        raise StudioError(
            f"--participants {participants} × --per-participant {per_participant} = {have} "
            f"responses, fewer than {n} puzzles × --responses-per-item {responses_per_item} = "
            f"{need}: ask for {more} participants, more puzzles each, or fewer responses"
        )
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x9170]))
    tie = rng.permutation(n)  # a fixed random tie-break between equally needed puzzles
    counts = [0] * n
    lists: list[list[Trial]] = []
    for _p in range(participants):
        chosen: list[int] = []
        taken: set[int] = set()
        shown: Counter[str] = Counter()
        for _ in range(per_participant):
            best = min(
                (i for i in range(n) if i not in taken),
                key=lambda i: (counts[i], shown[items[i].group], int(tie[i])),
            )
            taken.add(best)
            chosen.append(best)
            counts[best] += 1
            shown[items[best].group] += 1
        order = [chosen[int(j)] for j in rng.permutation(len(chosen))]
        lists.append(
            [
                Trial(items[i].id, tuple(int(x) for x in rng.permutation(items[i].answers)))
                for i in order
            ]
        )
        tie = np.roll(tie, 1)  # the next list breaks ties elsewhere
    return Plan(participants, per_participant, responses_per_item, seed, lists)
