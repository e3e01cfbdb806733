"""What a glyph split covers: per part, the (rule, concept) tuples and the rules its puzzles
test, against what was asked for (issue 24).

A split can be valid puzzle by puzzle and still be a poor benchmark: on the shared UA
annotations the default 10,000-puzzle split once held one tuple in val and one in test, so
every held-out accuracy spoke for ``dist3 × stroke-feature`` alone, while the command line
said "10000 valid" and exited 0. This module says so where users look — the command's
summary, the Generate dialog's result, the board's statistics panel, the dataset card — and
lets ``generate --require-coverage N`` refuse such a split before anything is written.

A **warning** is raised when val or test (where puzzles were asked for) covers fewer than
``min_tuples`` tuples (default :data:`DEFAULT_MIN_TUPLES`), when a requested rule yields no
puzzle at all (with the reason its tuples ran dry, e.g. union where no glyph carries two
values of a concept), and when a requested rule that train has is missing from test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from studio.core.puzzle import Puzzle

#: Val or test covering fewer (rule, concept) tuples than this gets a warning.
DEFAULT_MIN_TUPLES = 5
PARTS = ("train", "val", "test")

__all__ = ["DEFAULT_MIN_TUPLES", "coverage", "coverage_lines", "coverage_of_set", "tuple_name"]


def tuple_name(rule: str, concept: str) -> str:
    return f"{rule} × {concept}"


def _dry_reason(rule: str, dry: Mapping[str, Mapping[str, str]]) -> str | None:
    """Why a rule's tuples ran dry: the most common reason among them, with one tuple named."""
    reasons: Counter[str] = Counter()
    example: dict[str, str] = {}
    for part in PARTS:
        for name, why in dry.get(part, {}).items():
            if name.split("/", 1)[0] == rule:
                reasons[why] += 1
                example.setdefault(why, name)
    if not reasons:
        return None
    why, n = reasons.most_common(1)[0]
    concept = example[why].split("/")[1] if "/" in example[why] else example[why]
    more = f" (and {n - 1} more tuple(s) alike)" if n > 1 else ""
    return f"{rule} × {concept}: {why}{more}"


def coverage(
    puzzles: Iterable[Puzzle],
    requested: Mapping[str, int],
    rules: Sequence[str],
    dry: Mapping[str, Mapping[str, str]] | None = None,
    min_tuples: int = DEFAULT_MIN_TUPLES,
) -> dict[str, Any]:
    """The coverage of one fold, JSON-ready.

    ``requested``: puzzles asked for per part (``SplitParams.counts()``); ``rules``: the rules
    asked for; ``dry``: the fold's dry tuples by part (``SplitResult.dry``), for the reasons.
    Returns ``{"min_tuples", "parts": {part: {"requested", "made", "tuples": [names],
    "rules": {rule: puzzles}}}, "all": {"tuples", "rules"}, "warnings": [text]}``."""
    dry = dry or {}
    per_part: dict[str, dict[str, Any]] = {}
    tuples: dict[str, set[str]] = {p: set() for p in PARTS}
    rule_counts: dict[str, Counter[str]] = {p: Counter() for p in PARTS}
    made: Counter[str] = Counter()
    for p in puzzles:
        part = p.split if p.split in tuples else "test"
        tuples[part].add(tuple_name(p.rule, p.concept))
        rule_counts[part][p.rule] += 1
        made[part] += 1
    for part in PARTS:
        per_part[part] = {
            "requested": int(requested.get(part, 0)),
            "made": int(made[part]),
            "tuples": sorted(tuples[part]),
            "rules": {r: int(rule_counts[part][r]) for r in rules if rule_counts[part][r]},
        }
    every_rule: Counter[str] = sum(rule_counts.values(), Counter())
    warnings: list[str] = []
    for part in ("val", "test"):
        entry = per_part[part]
        k = len(entry["tuples"])
        if entry["requested"] > 0 and k < min_tuples:
            named = ", ".join(entry["tuples"][:3]) + (", …" if k > 3 else "")
            warnings.append(
                f"{part} covers {k} (rule, concept) tuple{'s' if k != 1 else ''}"
                f"{f' ({named})' if k else ''}, fewer than {min_tuples}: its accuracy speaks "
                f"for {'those' if k != 1 else 'that'} alone"
            )
    for rule in rules:
        if every_rule[rule] == 0:
            why = _dry_reason(rule, dry)
            warnings.append(
                f"rule {rule} yields no puzzle"
                + (f": {why}" if why else " (no tuple of it could be built)")
            )
        elif (
            per_part["test"]["requested"] > 0
            and rule_counts["train"][rule]
            and not rule_counts["test"][rule]
        ):
            warnings.append(f"rule {rule} has train puzzles but no test puzzle")
    return {
        "min_tuples": int(min_tuples),
        "parts": per_part,
        "all": {
            "tuples": len(set().union(*tuples.values())),
            "rules": {r: int(every_rule[r]) for r in rules},
        },
        "warnings": warnings,
    }


def coverage_lines(cov: Mapping[str, Any]) -> list[str]:
    """One line per part, for the command line, the Generate dialog and the board:
    ``test: 2000/2000 puzzles, 1 tuple, 1 of 5 rules (dist3)``."""
    n_rules = len(cov["all"]["rules"])
    lines = []
    for part in PARTS:
        e = cov["parts"][part]
        if not e["requested"] and not e["made"]:
            continue
        k = len(e["tuples"])
        rules = ", ".join(e["rules"]) or "none"
        lines.append(
            f"{part}: {e['made']}/{e['requested']} puzzles, {k} tuple{'s' if k != 1 else ''}, "
            f"{len(e['rules'])} of {n_rules} rules ({rules})"
        )
    return lines


def coverage_of_set(
    puzzles: Iterable[Puzzle],
    params: Mapping[str, Any],
    dry: Mapping[str, Mapping[str, str]] | None = None,
    min_tuples: int = DEFAULT_MIN_TUPLES,
) -> dict[str, Any]:
    """:func:`coverage` of a stored puzzle set from its recorded parameters (a split's
    ``SplitParams.to_json()``, possibly with keys a later regeneration added): the requested
    counts from ``n`` and ``ratios``, the rules from ``rules`` (else the rules present)."""
    puzzles = list(puzzles)
    n = int(params.get("n", len(puzzles)) or len(puzzles))
    ratios = list(params.get("ratios", (0.7, 0.1, 0.2)))
    total = sum(ratios) or 1.0
    train = round(n * ratios[0] / total)
    val = round(n * ratios[1] / total)
    requested = {"train": train, "val": val, "test": max(0, n - train - val)}
    rules = list(params.get("rules") or sorted({p.rule for p in puzzles}))
    if params.get("layout") == "analogy":  # an analogy tests one change, whatever was asked
        rules = ["change"]
    return coverage(puzzles, requested, rules, dry, min_tuples)
