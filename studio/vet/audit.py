"""Answer-set audit: can the key be found from the answers alone?

A solver that never looks at the context should be at chance. It is not when the answer sets
themselves carry the key: a value that sits on the key more often than its share of the answers
(or only ever on foils), a key whose value no other answer shares while foils share theirs, a key
slot that is favoured. RAVEN's answer sets had exactly this flaw (I-RAVEN, RAVEN-FAIR); this
module measures it on any split, from each answer's attributes only, so one function serves the
glyph puzzles (an answer's attributes are its glyph's annotation tags) and the non-glyph
families (their symbolic records, ``studio.stimuli.symbolic.answer_attributes``).

Three measures, each with a test against "the key is any answer, uniformly":

1. **Key rate per (concept, value)**: for every attribute value carried by some answer, how many
   times it sits on the key against how many times it sits on any answer. A puzzle whose ``m``
   of ``k`` answers carry the value puts it on the key with probability ``m / k`` under the null,
   so the expected key count is the sum of ``m / k`` over the puzzles it appears in (``n / k``
   with a fixed ``k``). Per value a G-test (1 degree of freedom: key against foil occurrences,
   ``scipy.stats.power_divergence``), the standardized residual ``z`` (observed minus expected
   over the exact null standard deviation, the square root of the sum of ``m/k·(1 − m/k)``), and
   Holm-adjusted p-values over the values tested (many values are tested at once: a few small
   raw p-values are expected by chance; the Holm p is the one to read). Overall: the sum of G
   over the values with one degree of freedom each. Occurrences of one value in one puzzle are
   not independent (the key is one answer), which makes the G-test conservative where a value
   is shared; values carried by every answer wherever they appear say nothing and are left out.
2. **"Answers sharing my value"**: for each answer, how many *other* answers of its puzzle share
   a value of a concept with it (``untagged`` where it has no value of that concept), the key's
   distribution against the foils', with a G-test of independence on that 2 × (k + 1) table
   (foils of one puzzle are not independent: read the p as a screen). Puzzles whose task *is*
   the answers (odd-one-out: the key is by definition the answer that shares nothing) are left
   out of this measure (``sharing=False``); they still count in 1 and 3.
3. **Answer position**: the key's slot histogram, chi-square against uniform (expected count of a
   slot: the sum of ``1 / k`` over the puzzles that have it).

Measures 1 and 2 come in two scopes: ``intended`` (each puzzle's own concept only: the values
the rule is about) and ``all`` (every attribute of every answer: nuisance concepts too).

Everything is plain JSON with a fixed key order and deterministic ordering (ties broken by
name), so the same split gives the same text. Core layer: no Qt, no torch.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import chi2, chi2_contingency, chisquare

if TYPE_CHECKING:
    from studio.core.puzzle import Puzzle
    from studio.core.tagindex import TagIndex

Attributes = Mapping[str, frozenset[str]]

#: Significance level of the verdicts (per test; values use Holm-adjusted p-values).
ALPHA = 0.05
#: Puzzle ids listed per worst value (the board filters its list to them).
MAX_IDS = 50
SCOPES = ("intended", "all")
UNTAGGED = "untagged"
#: Layouts whose answers are the whole puzzle (the key is the one unlike the others).
SELF_DEFINING_LAYOUTS = ("odd-one-out",)


# ---- small helpers ---------------------------------------------------------------------------
def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _round(x: float | None, digits: int = 4) -> float | None:
    x = _finite(x)
    return None if x is None else round(x, digits)


def _sig(p: float | None) -> float | None:
    """A p-value to four significant digits (readable, and still tiny where it is tiny)."""
    p = _finite(p)
    return None if p is None else float(f"{p:.4g}")


def _cv(concept: str, value: str) -> str:
    return f"{concept}={value}"


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (same order as given): the family-wise error stays
    below α for every value whose adjusted p is below α, however many values are tested."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (pvalues[i], i))
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def g_statistic(on_key: float, on_answers: float, expected_key: float) -> float:
    """G = 2 Σ O ln(O / E) over the 2-cell table (key, foil) of a value's answer occurrences:
    ``on_key`` of ``on_answers`` on the key against ``expected_key`` (0 where the null leaves
    no room: every occurrence is expected on the key, or none)."""
    cells = ((on_key, expected_key), (on_answers - on_key, on_answers - expected_key))
    if any(e <= 0 for _, e in cells):
        return 0.0
    return max(0.0, 2.0 * math.fsum(o * math.log(o / e) for o, e in cells if o > 0))


def g_test_key_rate(on_key: int, on_answers: int, expected_key: float) -> tuple[float, float]:
    """G statistic and p (1 df) of one value's key rate (see :func:`g_statistic`)."""
    g = g_statistic(on_key, on_answers, expected_key)
    return g, float(chi2.sf(g, 1))


# ---- 1. key rate per value --------------------------------------------------------------------
@dataclass
class _ValueCount:
    on_answers: int = 0  # answer occurrences
    on_key: int = 0  # puzzles where the key carries it
    expected: float = 0.0  # Σ m/k
    variance: float = 0.0  # Σ m/k (1 − m/k)
    puzzles: int = 0
    informative: bool = False  # some puzzle had it on some but not all answers


@dataclass
class _Scope:
    values: dict[tuple[str, str], _ValueCount] = field(
        default_factory=lambda: defaultdict(_ValueCount)
    )
    # per answer: (is_key, sharing count or None for untagged)
    sharing: list[tuple[bool, int | None]] = field(default_factory=list)


def _masks(attrs: Sequence[Attributes]) -> dict[str, dict[str, int]]:
    """concept → value → bitmask of the answers carrying it."""
    masks: dict[str, dict[str, int]] = {}
    for i, a in enumerate(attrs):
        bit = 1 << i
        for c, vs in a.items():
            if not vs:
                continue
            per = masks.get(c)
            if per is None:
                per = masks[c] = {}
            for v in vs:
                per[v] = per.get(v, 0) | bit
    return masks


def _count_values(scope: _Scope, concept: str, per: Mapping[str, int], key: int, k: int) -> None:
    values = scope.values
    for v, mask in per.items():
        m = mask.bit_count()
        share = m / k
        c = values[(concept, v)]
        c.on_answers += m
        c.on_key += (mask >> key) & 1
        c.expected += share
        c.variance += share * (1.0 - share)
        c.puzzles += 1
        if m < k:
            c.informative = True


def _count_sharing(
    scope: _Scope, attrs: Sequence[Attributes], concept: str, per: Mapping[str, int], key: int
) -> None:
    out = scope.sharing
    for i, a in enumerate(attrs):
        vs = a.get(concept)
        if not vs:
            out.append((i == key, None))
            continue
        m = 0
        for v in vs:
            m |= per[v]
        out.append((i == key, (m & ~(1 << i)).bit_count()))


def _worst_ids(
    ids: Sequence[str],
    answer_attrs: Sequence[Sequence[Attributes]],
    keys: Sequence[int],
    intended: Sequence[str | None],
    scope: str,
    wanted: Mapping[str, bool],
    max_ids: int,
) -> dict[str, tuple[list[str], int]]:
    """For each wanted value: up to ``max_ids`` ids of puzzles whose answers carry it (those
    that show the leak first: with it on the key when it is over-keyed, on a foil otherwise),
    and how many puzzles carry it."""
    by_concept: dict[str, dict[str, str]] = defaultdict(dict)
    for cv in wanted:
        c, _, v = cv.partition("=")
        by_concept[c][v] = cv
    first: dict[str, list[str]] = {cv: [] for cv in wanted}
    rest: dict[str, list[str]] = {cv: [] for cv in wanted}
    for pid, attrs, key, concept in zip(ids, answer_attrs, keys, intended, strict=True):
        if scope == "intended" and concept is None:
            continue
        seen: dict[str, bool] = {}
        for i, a in enumerate(attrs):
            for c, vs in a.items():
                if (scope == "intended" and c != concept) or c not in by_concept:
                    continue
                names = by_concept[c]
                for v in vs:
                    cv = names.get(v)
                    if cv is not None:
                        seen[cv] = seen.get(cv, False) or i == key
        for cv, on_key in seen.items():
            (first if on_key == wanted[cv] else rest)[cv].append(pid)
    out = {}
    for cv in wanted:
        listed = (first[cv] + rest[cv])[:max_ids]
        out[cv] = (sorted(listed), len(first[cv]) + len(rest[cv]))
    return out


def _rates(scope: _Scope, worst: int, alpha: float) -> tuple[dict[str, Any], list[dict]]:
    rows = []
    untestable = 0
    for (concept, value), c in scope.values.items():
        cv = _cv(concept, value)
        if not c.informative:
            untestable += 1
            continue
        g = g_statistic(c.on_key, c.on_answers, c.expected)
        z = (c.on_key - c.expected) / math.sqrt(c.variance) if c.variance > 0 else 0.0
        rows.append((cv, c, g, z))
    # one vectorised call: scipy's per-call overhead dominates with hundreds of values
    pvals = [float(x) for x in chi2.sf(np.array([r[2] for r in rows], dtype=float), 1)]
    rows = [(cv, c, g, p, z) for (cv, c, g, z), p in zip(rows, pvals, strict=True)]
    p_holm = holm([r[3] for r in rows])
    g_total = math.fsum(r[2] for r in sorted(rows, key=lambda r: r[0]))
    df = len(rows)
    p_total = float(chi2.sf(g_total, df)) if df else None
    table = []
    for (cv, c, g, p, z), ph in zip(rows, p_holm, strict=True):
        table.append(
            {
                "value": cv,
                "concept": cv.partition("=")[0],
                "puzzles_total": c.puzzles,
                "on_answers": c.on_answers,
                "on_key": c.on_key,
                "expected_key": _round(c.expected, 3),
                "key_share": _round(c.on_key / c.on_answers if c.on_answers else 0.0),
                "expected_share": _round(c.expected / c.on_answers if c.on_answers else 0.0),
                "z": _round(z, 3),
                "G": _round(g, 3),
                "p": _sig(p),
                "p_holm": _sig(ph),
            }
        )
    table.sort(key=lambda r: (r["p"], -abs(r["z"]), r["value"]))
    off = sum(1 for r in table if r["p_holm"] < alpha)
    summary = {
        "values": df,
        "untestable": untestable,
        "G": _round(g_total, 3),
        "df": df,
        "p": _sig(p_total),
        "off": off,
        "verdict": _verdict(p_total, alpha),
        "worst": [],
    }
    return summary, table[:worst]


def _verdict(p: float | None, alpha: float) -> str:
    if p is None:
        return "untested"
    return "off" if p < alpha else "balanced"


# ---- 2. sharing ---------------------------------------------------------------------------------
def _sharing(rows: Sequence[tuple[bool, int | None]], k_max: int, alpha: float) -> dict[str, Any]:
    cols = [str(n) for n in range(max(k_max, 1))] + [UNTAGGED]
    hist = {"key": dict.fromkeys(cols, 0), "foil": dict.fromkeys(cols, 0)}
    for is_key, n in rows:
        hist["key" if is_key else "foil"][UNTAGGED if n is None else str(n)] += 1
    mean: dict[str, float | None] = {}
    unshared: dict[str, float | None] = {}
    for side in ("key", "foil"):
        tagged = [(int(c), n) for c, n in hist[side].items() if c != UNTAGGED]
        total = sum(n for _, n in tagged)
        mean[side] = _round(sum(c * n for c, n in tagged) / total) if total else None
        unshared[side] = _round(hist[side]["0"] / total) if total else None
    used = [c for c in cols if hist["key"][c] + hist["foil"][c] > 0]
    g = p = None
    df = 0
    if sum(hist["key"].values()) and sum(hist["foil"].values()):
        if len(used) >= 2:
            table = [[hist[s][c] for c in used] for s in ("key", "foil")]
            res = chi2_contingency(table, correction=False, lambda_="log-likelihood")
            g, p, df = float(res.statistic), float(res.pvalue), int(res.dof)
        else:  # one category for key and foils alike (e.g. no answer shares): the same
            g, p = 0.0, 1.0
    return {
        "answers": {s: sum(hist[s].values()) for s in ("key", "foil")},
        "histogram": {s: {c: n for c, n in hist[s].items() if n or c != UNTAGGED} for s in hist},
        "mean": mean,
        "unshared": unshared,
        "G": _round(g, 3),
        "df": df,
        "p": _sig(p),
        "verdict": _verdict(p, alpha),
    }


# ---- 3. positions -------------------------------------------------------------------------------
def position_balance(keys: Sequence[int], sizes: Sequence[int]) -> dict[str, Any]:
    """The key's slot histogram and a chi-square test against a uniform slot (expected count
    of a slot: Σ 1/k over the puzzles that have it)."""
    if not keys:
        return {"histogram": [], "expected": [], "chi2": None, "df": 0, "p": None}
    slots = max(sizes)
    hist = [0] * slots
    expected = [0.0] * slots
    for key, k in zip(keys, sizes, strict=True):
        hist[key] += 1
        for i in range(k):
            expected[i] += 1.0 / k
    stat = p = None
    if slots >= 2:
        res = chisquare(hist, expected)
        stat, p = float(res.statistic), float(res.pvalue)
    return {
        "histogram": hist,
        "expected": [_round(e, 3) for e in expected],
        "chi2": _round(stat, 3),
        "df": max(slots - 1, 0),
        "p": _sig(p),
    }


# ---- the audit ----------------------------------------------------------------------------------
def audit_answer_sets(
    ids: Sequence[str],
    answer_attrs: Sequence[Sequence[Attributes]],
    keys: Sequence[int],
    intended: Sequence[str | None] | None = None,
    worst: int = 10,
    *,
    sharing: Sequence[bool] | None = None,
    alpha: float = ALPHA,
    max_ids: int = MAX_IDS,
) -> dict[str, Any]:
    """Audit a split's answer sets (see the module): ``answer_attrs[p][i]`` are answer ``i`` of
    puzzle ``p``'s attributes (concept → values), ``keys[p]`` the key's index, ``intended[p]``
    the concept the puzzle is about (None: no intended scope for it), ``sharing[p]`` False for
    puzzles whose answers are the task (left out of the sharing measure).

    Returns JSON-ready data: ``puzzles``, ``answers`` (how many puzzles have each number of
    answers), ``key_rates`` and ``sharing`` per scope, ``positions``, ``alpha`` and
    ``findings`` (one short line per thing found off, empty when nothing is). The ``worst``
    values of each scope are listed with their puzzle ids (at most ``max_ids``)."""
    n = len(ids)
    if len(answer_attrs) != n or len(keys) != n:
        raise ValueError("ids, answer_attrs and keys must have the same length")
    intended = list(intended) if intended is not None else [None] * n
    sharing = list(sharing) if sharing is not None else [True] * n
    if len(intended) != n or len(sharing) != n:
        raise ValueError("intended and sharing must have one entry per puzzle")
    scopes = {s: _Scope() for s in SCOPES}
    sizes = []
    for attrs, key, concept, share in zip(answer_attrs, keys, intended, sharing, strict=True):
        k = len(attrs)
        if not 0 <= key < k:
            raise ValueError(f"key {key} is not one of {k} answers")
        sizes.append(k)
        masks = _masks(attrs)
        for c in sorted(masks):
            _count_values(scopes["all"], c, masks[c], key, k)
            if share:
                _count_sharing(scopes["all"], attrs, c, masks[c], key)
        if concept is not None:
            own = masks.get(concept, {})
            _count_values(scopes["intended"], concept, own, key, k)
            if share:
                _count_sharing(scopes["intended"], attrs, concept, own, key)
    k_max = max(sizes, default=0)
    key_rates: dict[str, Any] = {}
    for name in SCOPES:
        summary, rows = _rates(scopes[name], worst, alpha)
        wanted = {r["value"]: r["on_key"] > r["expected_key"] for r in rows}
        listed = _worst_ids(ids, answer_attrs, keys, intended, name, wanted, max_ids)
        for r in rows:
            r["puzzles"], _ = listed[r["value"]]
        summary["worst"] = rows
        key_rates[name] = summary
    counts: dict[int, int] = defaultdict(int)
    for k in sizes:
        counts[k] += 1
    out: dict[str, Any] = {
        "puzzles": n,
        "answers": {str(k): counts[k] for k in sorted(counts)},
        "alpha": alpha,
        "key_rates": key_rates,
        "sharing": {s: _sharing(scopes[s].sharing, k_max, alpha) for s in SCOPES},
        "sharing_left_out": sum(1 for s in sharing if not s),
        "positions": position_balance(list(keys), sizes),
    }
    out["positions"]["verdict"] = _verdict(out["positions"]["p"], alpha)
    out["findings"] = [line.strip() for line in audit_lines(out, worst=3, only_findings=True)]
    return out


def glyph_answer_attrs(puzzles: Sequence[Puzzle], annotations: TagIndex) -> list[list[Attributes]]:
    """Each answer glyph's annotation tags (concept → values), puzzle by puzzle (the index's
    own mappings, not copies: read-only)."""
    by_glyph = annotations.by_glyph
    empty: Attributes = {}
    return [[by_glyph.get(g, empty) for g in p.answers] for p in puzzles]


def audit_puzzles(
    puzzles: Sequence[Puzzle], annotations: TagIndex, worst: int = 10, **kw: Any
) -> dict[str, Any]:
    """:func:`audit_answer_sets` of glyph puzzles: attributes are the answers' tags, the
    intended concept is the puzzle's, odd-one-out puzzles are left out of the sharing measure."""
    return audit_answer_sets(
        [p.id for p in puzzles],
        glyph_answer_attrs(puzzles, annotations),
        [p.key for p in puzzles],
        [p.concept for p in puzzles],
        worst,
        sharing=[p.layout not in SELF_DEFINING_LAYOUTS for p in puzzles],
        **kw,
    )


# ---- the human summary --------------------------------------------------------------------------
def _p_text(p: float | None) -> str:
    if p is None:
        return "p —"
    return f"p = {p:.3g}" if p >= 0.001 else "p < 0.001"


def value_line(row: Mapping[str, Any]) -> str:
    """One worst value in words."""
    ids = list(row.get("puzzles", []))
    total = int(row.get("puzzles_total", len(ids)))
    shown = ", ".join(ids[:3]) + (f" … ({total} puzzles)" if total > 3 else "")
    return (
        f"{row['value']}: on the key {row['on_key']} of {row['on_answers']} times on an answer "
        f"(expected {row['expected_key']:g}, z = {row['z']:+.1f}), Holm {_p_text(row['p_holm'])}"
        + (f"; puzzles {shown}" if shown else "")
    )


SCOPE_NAMES = {"intended": "intended concept", "all": "all concepts"}


def same_scopes(audit: Mapping[str, Any]) -> bool:
    """True where every answer is tagged in its puzzle's concept only (UA's annotations): the
    ``all`` scope then repeats the ``intended`` one and need not be shown twice."""
    return all(
        audit.get(part, {}).get("all") == audit.get(part, {}).get("intended")
        for part in ("key_rates", "sharing")
    )


def audit_lines(audit: Mapping[str, Any], worst: int = 5, only_findings: bool = False) -> list[str]:
    """One line per finding (for the CLI and the report's ``findings``): per scope the key-rate
    verdict and the worst values that are off after Holm, the sharing verdict, then the
    position verdict. With ``only_findings`` the lines of what is balanced are left out."""
    alpha = float(audit.get("alpha", ALPHA))
    lines: list[str] = []
    scopes = ("intended",) if same_scopes(audit) else SCOPES
    for scope in scopes:
        name = SCOPE_NAMES[scope]
        kr = audit.get("key_rates", {}).get(scope, {})
        if kr.get("values") and (kr.get("verdict") == "off" or not only_findings):
            lines.append(
                f"key rate per value ({name}): {kr['verdict']}, G = {kr['G']:g}, "
                f"df = {kr['df']}, {_p_text(kr['p'])}; {kr['off']} of {kr['values']} "
                "values off after Holm"
            )
        bad = [r for r in kr.get("worst", []) if r["p_holm"] < alpha][:worst]
        lines.extend(f"  {value_line(r)}" for r in bad)
        sh = audit.get("sharing", {}).get(scope, {})
        if not sum(sh.get("answers", {}).values()):
            continue
        if sh.get("verdict") == "off" or not only_findings:
            m, u = sh.get("mean", {}), sh.get("unshared", {})
            test = (
                f"G = {sh['G']:g}, df = {sh['df']}, {_p_text(sh['p'])}"
                if sh.get("df")
                else "one category for all"
            )
            lines.append(
                f"answers sharing a value ({name}): {sh['verdict']}; the key shares with "
                f"{_num(m.get('key'))} other answers on average (none: {_pct(u.get('key'))}), "
                f"a foil with {_num(m.get('foil'))} (none: {_pct(u.get('foil'))}); {test}"
            )
    pos = audit.get("positions", {})
    if pos.get("p") is not None and (pos.get("verdict") == "off" or not only_findings):
        hist = "/".join(str(h) for h in pos.get("histogram", []))
        lines.append(
            f"key position: {pos['verdict']}, slots {hist}, χ² = {pos['chi2']:g}, "
            f"df = {pos['df']}, {_p_text(pos['p'])}"
        )
    return lines


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


__all__ = [
    "ALPHA",
    "MAX_IDS",
    "SCOPES",
    "SELF_DEFINING_LAYOUTS",
    "audit_answer_sets",
    "audit_lines",
    "audit_puzzles",
    "g_test_key_rate",
    "glyph_answer_attrs",
    "holm",
    "position_balance",
    "same_scopes",
    "value_line",
]
