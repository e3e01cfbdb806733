"""Can part of a KiVA trial find the key? An exact solver for each partial view (issue 24).

A KiVA trial's extrapolation question is A : A′ :: B : ?, pictured as the training pair (row 1)
and the test input (row 2) over three after-pictures of the test object. A person needs all
three pictures; a solver that sees part of them should be at chance. It need not be: in the
published children's design the test input starts where the training input does, so the
training pair alone names the key's picture, and with sizes ×2 and ×½ "the largest option" is
the key of every ×2 trial whoever starts where.

The solver here is Bayes-optimal over the trial's symbolic record. It knows the design exactly
— every (domain, shown change, inputs, sibling, no-change) draw the generator could have made
and its probability (:func:`~studio.families.kiva.generator.design_choices`, the split's
domains and no-change share) — and for a view, sums the probability of the draws that agree
with everything the view shows; each option scores the probability that it is the key. It
picks the best, ties split evenly. Its accuracy is the *floor* the design leaves that view:

- ``row1``: the training pair and the options, not the test input;
- ``row2``: the test input and the options, not the training pair;
- ``answers``: the options alone.

A **decoy** for a view is a foil scoring as high as the key there. Pictures are compared as
:func:`~studio.families.kiva.transforms.same_picture` compares them (count, named colour,
picture-plane map), object aside: the options are all pictures of the test object.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from studio.core.errors import StudioError
from studio.families.kiva.transforms import StimulusState, TransformSpec, apply

#: the views, in the order reports list them, and their names for people
VIEWS = ("row1", "row2", "answers")
VIEW_NAMES = {
    "row1": "the training pair alone",
    "row2": "the test input alone",
    "answers": "the options alone",
}
#: a full-context "view" (every picture): the solver must find every key there (a check)
FULL = "full"
#: relative tolerance under which two options' probabilities tie
TIE = 1e-9

Sig = tuple[Any, ...]


def sig(state: StimulusState) -> Sig:
    """What a picture shows, as a hashable key: equal exactly when :func:`same_picture` (with
    no object colour) says so — count, named colour and the picture-plane map."""
    m = state.matrix()
    return (
        state.count,
        state.color,
        *(round(float(x), 6) + 0.0 for x in m.ravel()),
    )


def _state_sig(data: Mapping[str, Any]) -> Sig:
    return sig(StimulusState.from_json(data))


#: one draw the design could make: (train before, train after, test before, key) pictures
Draw = tuple[Sig, Sig, Sig, Sig]


@lru_cache(maxsize=16)
def design_draws(
    mode: str, design: str, domains: tuple[str, ...], no_change_share: float
) -> dict[frozenset[Sig], dict[Draw, float]]:
    """Every draw of the design with its probability, indexed by the set of option pictures
    it shows. Mirrors :meth:`KivaGenerator._pick`: a domain of the schedule (uniform), a shown
    value uniform over those with choices, inputs uniform over that value's choices, a sibling
    uniform over the choice's, the balanced design's fair swap, then the no-change flag."""
    from studio.families.kiva.generator import design_choices

    choices, _ = design_choices(mode, design, domains)
    index = {(c.spec, c.train, c.test): c for d in domains for c in choices[d]}
    out: dict[frozenset[Sig], dict[Draw, float]] = defaultdict(lambda: defaultdict(float))
    live = [d for d in domains if choices[d]]
    for d in live:
        by_value: dict[TransformSpec, list[Any]] = defaultdict(list)
        for c in choices[d]:
            by_value[c.spec].append(c)
        for spec, cs in by_value.items():
            for c in cs:
                p_choice = 1.0 / len(live) / len(by_value) / len(cs)
                for sib in c.siblings:
                    p = p_choice / len(c.siblings)
                    shown_pairs = [(spec, sib, p)]
                    if design == "balanced":
                        other = index[(sib, c.train, c.test)]
                        assert other.test == c.test
                        shown_pairs = [(spec, sib, p / 2), (sib, spec, p / 2)]
                    for shown, foil, q in shown_pairs:
                        tb, b = sig(c.train), sig(c.test)
                        s_b, f_b = sig(apply(shown, c.test)), sig(apply(foil, c.test))
                        options = frozenset((s_b, f_b, b))
                        for nc, r in ((False, 1 - no_change_share), (True, no_change_share)):
                            if r <= 0:
                                continue
                            ta = tb if nc else sig(apply(shown, c.train))
                            out[options][(tb, ta, b, b if nc else s_b)] += q * r
    return {k: dict(v) for k, v in out.items()}


def _visible(view: str, draw: Draw, seen: Draw) -> bool:
    tb, ta, b, _ = draw
    if view == "row1":
        return (tb, ta) == seen[:2]
    if view == "row2":
        return b == seen[2]
    if view == FULL:
        return draw[:3] == seen[:3]
    return True


def option_scores(
    record: Mapping[str, Any], view: str, draws: Mapping[frozenset[Sig], Mapping[Draw, float]]
) -> list[float]:
    """Each extrapolation option's probability of being the key given what ``view`` shows."""
    states = record["states"]
    question = next(q for q in record["questions"] if q.get("id") == "extrapolate")
    options = [_state_sig(s) for s in question["option_states"]]
    seen = (
        _state_sig(states["train_before"]),
        _state_sig(states["train_after"]),
        _state_sig(states["test_before"]),
        options[int(question["key"])],
    )
    post: dict[Sig, float] = defaultdict(float)
    for draw, p in draws.get(frozenset(options), {}).items():
        if _visible(view, draw, seen):
            post[draw[3]] += p
    return [post.get(o, 0.0) for o in options]


def solver_accuracy(scores: Sequence[float], key: int) -> tuple[float, bool]:
    """(the solver's expected accuracy, whether a foil ties or beats the key). Where no draw
    explains the view (a record from another design) the solver guesses."""
    best = max(scores)
    if best <= 0:
        return 1.0 / len(scores), True
    ties = [i for i, s in enumerate(scores) if s >= best * (1 - TIE) and s > 0]
    acc = 1.0 / len(ties) if key in ties else 0.0
    k = scores[key]
    decoy = any(s >= k * (1 - TIE) for i, s in enumerate(scores) if i != key)
    return acc, decoy


def _draws_for(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Any]:
    """The design's draws per (mode, design) among the records, with the split's domains and
    no-change share (a solver may know the design: the card states it)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(str(r.get("mode", "kiva")), str(r.get("design", "published")))].append(r)
    out = {}
    for (mode, design), rs in groups.items():
        domains = tuple(sorted({str(r["domain"]) for r in rs}))
        share = round(sum(bool(r.get("no_change")) for r in rs) / len(rs), 6)
        out[(mode, design)] = design_draws(mode, design, domains, share)
    return out


def _row(acc: Sequence[float], decoyed: int) -> dict[str, Any]:
    n = len(acc)
    mean = sum(acc) / n if n else 0.0
    return {
        "accuracy": round(mean, 4),
        "chance": round(1 / 3, 4),
        "points_over_chance": round(100 * (mean - 1 / 3), 1),
        "puzzles": n,
        "decoyed": round(decoyed / n, 4) if n else 0.0,
    }


def kiva_partial_views(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Each view's solver over these trial records, JSON-ready in the shape of
    :func:`studio.vet.partial.partial_views` (``views``, ``tuples`` keyed ``domain/value``),
    plus ``names`` (the views in words), ``hints`` (why a tuple's view stands over chance)
    and ``unexplained`` (records no draw of their design explains: should be 0). Raises
    StudioError for a record that cannot be read."""
    records = list(records)
    if not records:
        return {"views": {}, "tuples": {}}
    try:
        draws = _draws_for(records)
        acc: dict[tuple[str, str], list[float]] = defaultdict(list)
        decoyed: dict[tuple[str, str], int] = defaultdict(int)
        unexplained = 0
        modes = set()
        for r in records:
            d = draws[(str(r.get("mode", "kiva")), str(r.get("design", "published")))]
            key = int(next(q for q in r["questions"] if q.get("id") == "extrapolate")["key"])
            full, _ = solver_accuracy(option_scores(r, FULL, d), key)
            unexplained += full < 1.0
            name = f"{r['domain']}/{r['spec']}"
            modes.add(str(r.get("mode", "kiva")))
            for view in VIEWS:
                a, decoy = solver_accuracy(option_scores(r, view, d), key)
                acc[(name, view)].append(a)
                acc[("", view)].append(a)
                decoyed[(name, view)] += decoy
                decoyed[("", view)] += decoy
    except (KeyError, TypeError, ValueError, IndexError, StopIteration) as e:
        raise StudioError(f"a KiVA record cannot be read for its partial views: {e!r}") from e
    names = sorted({n for n, _ in acc if n})
    hints = []
    if "kiva" in modes:
        hints.append(
            "kiva mode: the test input starts where the training input does (the children's "
            "design), so the training pair alone says which picture is the key; kiva-adults "
            "starts it elsewhere"
        )
    if "kiva-adults" in modes and any(not n.startswith("color/") for n in names):
        hints.append(
            "the three options are the key, a sibling change and the test input itself, so the "
            "training pair's change links two of them: another reading exists only where that "
            "change done twice is a value of its domain (±1, the turns); sizes, mirrorings, "
            "±2, ×2 and the like leave one"
        )
    if any(n.startswith("color/") for n in names):
        hints.append(
            "colour: a change to a named colour shows that colour on the key whatever the "
            "test input, so the training pair alone gives it"
        )
    if unexplained:
        hints.append(
            f"{unexplained} trials are no draw of their recorded design (edited records?): "
            "the solver guessed there"
        )
    return {
        "views": {v: _row(acc[("", v)], decoyed[("", v)]) for v in VIEWS},
        "tuples": {n: {v: _row(acc[(n, v)], decoyed[(n, v)]) for v in VIEWS} for n in names},
        "names": dict(VIEW_NAMES),
        "hints": hints,
        "unexplained": unexplained,
    }


__all__ = [
    "FULL",
    "VIEWS",
    "VIEW_NAMES",
    "design_draws",
    "kiva_partial_views",
    "option_scores",
    "sig",
    "solver_accuracy",
]
