"""Inter-annotator agreement: Krippendorff's alpha, Cohen's kappa and percent agreement, with
bootstrap intervals over glyphs; and the curator's queue of disagreements.

Pure: tuples in, frozen dataclasses out (no database, no Qt). The store hands over

- ``ratings``: ``(glyph_id, annotator, concept, value)``, each person's own tags;
- ``annotated``: ``(glyph_id, annotator)``, who has annotated (tagged or marked done) which
  glyph. A tag implies its pair, so a pair need not be listed twice.

What the data mean (DESIGN.md "Row satisfies rule": a glyph carries a *set* of values per
concept):

- The category of an (annotator, glyph) cell for a concept is the set of values that annotator
  gave the glyph. A person who annotated a glyph but gave no value of a concept said "none": the
  empty set. An explicit ``none`` tag says the same thing and is folded into it (``{"none"}``
  and ``{}`` agree; ``{"none", "3"}`` is ``{"3"}``).
- A person who did not annotate a glyph is *missing* for it, not "none".
- Per (concept, value) the decision is present/absent; the schema's ``none`` value, where a
  concept has one, is present exactly when the set is empty (it has its own alpha, but is not
  one of the items pooled by Cohen's kappa: it is the complement of the others).
- Tags whose concept or value is not in the schema are left out and counted
  (:attr:`AgreementReport.ignored_ratings`).
- Assisted and unassisted work can be measured apart (issue 30, :func:`ratings_of_source`):
  an (annotator, glyph) cell is *assisted* when any of that person's tags of the glyph was
  accepted from a suggestion, else *unassisted*; each report then covers one kind of cell.

Alpha is nominal Krippendorff's alpha with missing data; the point estimates come from the
``krippendorff`` package. Intervals are percentile intervals of a bootstrap over the glyphs
annotated by two or more people (the only glyphs that carry information about agreement):
each replicate draws that many glyphs with replacement. Every statistic here is a function of
sums over glyphs of per-glyph numbers (the glyph's row of the coincidence matrix, its agreeing
pairs, …), so each glyph's contribution is computed once and all replicates are one matrix
product of their multiplicity counts with those contributions (:func:`nominal_alpha` is the
same arithmetic, exposed for tests). A statistic that is undefined (one category only, no
glyph with two annotators) is reported as ``None`` with a reason, never as NaN.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from itertools import combinations
from typing import Any

import krippendorff
import numpy as np
import numpy.typing as npt

from studio.core.annotations import HAND, TAG_SOURCES
from studio.core.errors import StudioError
from studio.core.schema import NONE_VALUE, Schema

#: Most bootstrap replicates: the replicates × columns sums are held at once (issue 25: a
#: request for 100,000,000 died of a 507 GiB allocation instead of a message).
MAX_BOOT = 100_000

Rating = tuple[int, str, str, str]
"""(glyph_id, annotator, concept, value): one tag of one person."""
SourcedRating = tuple[int, str, str, str, str]
"""(glyph_id, annotator, concept, value, source): a tag with how it came to be
(``hand`` or ``suggestion``, :data:`studio.core.annotations.TAG_SOURCES`)."""

FloatArray = npt.NDArray[np.float64]

#: Replicates per matrix product: bounds the multiplicity matrix at CHUNK × glyphs.
_CHUNK = 200

_NO_ANNOTATORS = "fewer than two people annotated anything"
_NO_PAIRABLE = "no glyph was annotated by two or more people"


# ---- the report ------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    return value


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic with its bootstrap interval.

    ``value`` is None when the statistic is undefined for these data, and ``reason`` says why;
    ``low``/``high`` are None then, or when no bootstrap was asked for, or when no replicate was
    defined. ``boot_undefined`` counts the replicates in which the statistic was undefined (they
    are left out of the interval).
    """

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str = ""
    boot_undefined: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = _jsonable(self)
        return out


@dataclass(frozen=True, slots=True)
class ValueAgreement:
    """Agreement on whether a glyph shows ``value`` of ``concept`` (a present/absent decision).

    ``present``: in how many annotations of glyphs with two or more annotators it was present.
    """

    concept: str
    value: str
    alpha: Estimate
    percent: Estimate
    present: int


@dataclass(frozen=True, slots=True)
class ConceptAgreement:
    """Agreement on a concept's value set: alpha, and the share of agreeing annotator pairs.

    ``glyphs``: glyphs annotated by two or more people; ``pairs``: annotator pairs on them (a
    glyph annotated by m people gives m(m-1)/2 pairs).
    """

    concept: str
    alpha: Estimate
    percent: Estimate
    glyphs: int
    pairs: int
    values: tuple[ValueAgreement, ...]

    def value(self, value_id: str) -> ValueAgreement:
        for v in self.values:
            if v.value == value_id:
                return v
        raise KeyError(f"concept {self.concept!r} has no value {value_id!r} in this report")


@dataclass(frozen=True, slots=True)
class ConceptKappa:
    """Cohen's kappa of one annotator pair on one concept's present/absent decisions (its
    values other than none, on the glyphs both annotated)."""

    concept: str
    kappa: float | None
    items: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class PairAgreement:
    """Cohen's kappa of two annotators over the glyphs both annotated, pooled over every
    (glyph, concept, value) present/absent decision (``items`` of them on ``glyphs`` glyphs);
    ``percent`` is their observed agreement on those items. The schema's none values are not
    items: none is the complement of a concept's other values, and counting it would count each
    decision twice (and inflate kappa with agreed silence). ``first`` < ``second``."""

    first: str
    second: str
    kappa: Estimate
    percent: float
    glyphs: int
    items: int
    concepts: tuple[ConceptKappa, ...]


@dataclass(frozen=True, slots=True)
class AgreementReport:
    """Everything :func:`agreement_report` measured; ``to_json()`` is plain JSON data."""

    schema_id: str
    schema_version: str
    annotators: tuple[str, ...]
    glyphs: int
    pairable_glyphs: int
    ratings: int
    ignored_ratings: int
    n_boot: int
    seed: int
    confidence: float
    concepts: tuple[ConceptAgreement, ...]
    pairs: tuple[PairAgreement, ...]

    def concept(self, concept_id: str) -> ConceptAgreement:
        for c in self.concepts:
            if c.concept == concept_id:
                return c
        raise KeyError(f"no concept {concept_id!r} in this report")

    def pair(self, first: str, second: str) -> PairAgreement:
        a, b = sorted((first, second))
        for p in self.pairs:
            if (p.first, p.second) == (a, b):
                return p
        raise KeyError(f"{first!r} and {second!r} annotated no glyph in common")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = _jsonable(self)
        return out


@dataclass(frozen=True, slots=True)
class Opinion:
    """What one annotator said of one concept of a glyph; ``values == ()`` means "none"."""

    annotator: str
    concept: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A glyph whose annotators' value sets differ for ``concepts`` (schema order);
    ``opinions`` holds every annotator's values of those concepts (concept, then annotator)."""

    glyph_id: int
    concepts: tuple[str, ...]
    annotators: tuple[str, ...]
    opinions: tuple[Opinion, ...]

    def values(self, annotator: str, concept: str) -> tuple[str, ...]:
        for o in self.opinions:
            if o.annotator == annotator and o.concept == concept:
                return o.values
        raise KeyError(f"no opinion of {annotator!r} on {concept!r} for glyph {self.glyph_id}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = _jsonable(self)
        return out


# ---- tabulation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Concept:
    id: str
    items: npt.NDArray[np.intp]  # item columns of the concept, none included, schema order
    real: npt.NDArray[np.intp]  # item columns of its values other than none
    none: int | None  # item column of its none value, if the schema lists one


@dataclass(frozen=True)
class _Table:
    """Annotations as a matrix: one row per (glyph, annotator), sorted by glyph then annotator;
    one column per (concept, value) item of the schema."""

    glyph_ids: npt.NDArray[np.int64]  # distinct annotated glyphs, sorted
    annotators: tuple[str, ...]  # sorted
    row_glyph: npt.NDArray[np.intp]  # index into glyph_ids
    row_annotator: npt.NDArray[np.intp]  # index into annotators
    present: npt.NDArray[np.bool_]  # (rows, items)
    items: tuple[tuple[str, str], ...]
    concepts: tuple[_Concept, ...]
    ratings: int
    ignored: int

    @property
    def per_glyph(self) -> npt.NDArray[np.intp]:
        return np.bincount(self.row_glyph, minlength=len(self.glyph_ids))


def _tabulate(
    ratings: Iterable[Rating], annotated: Iterable[tuple[int, str]], schema: Schema
) -> _Table:
    items: list[tuple[str, str]] = []
    concepts: list[_Concept] = []
    column: dict[tuple[str, str], int] = {}
    for c in schema.concepts:
        first = len(items)
        real: list[int] = []
        none: int | None = None
        for v in c.value_ids:
            column[(c.id, v)] = len(items)
            if v == NONE_VALUE:
                none = len(items)
            else:
                real.append(len(items))
            items.append((c.id, v))
        concepts.append(
            _Concept(c.id, np.arange(first, len(items)), np.array(real, dtype=np.intp), none)
        )
        column[(c.id, NONE_VALUE)] = -2  # an explicit none: known, and means the empty set

    rated = list(ratings)
    pairs = list(annotated)
    r_glyph, r_name, r_concept, r_value = (
        (list(col) for col in zip(*rated, strict=True)) if rated else ([], [], [], [])
    )
    a_glyph, a_name = (list(col) for col in zip(*pairs, strict=True)) if pairs else ([], [])
    lookup = column.get
    r_col = np.array([lookup(cv, -1) for cv in zip(r_concept, r_value, strict=True)], dtype=np.intp)
    names = sorted(set(a_name) | set(r_name))
    index = {n: i for i, n in enumerate(names)}
    name_idx = np.array([index[n] for n in a_name + r_name], dtype=np.int64)
    gids, glyph_idx = np.unique(np.array(a_glyph + r_glyph, dtype=np.int64), return_inverse=True)
    n_names = max(len(names), 1)
    keys = glyph_idx.astype(np.int64) * n_names + name_idx
    row_keys, row_of = np.unique(keys, return_inverse=True)
    present = np.zeros((len(row_keys), len(items)), dtype=np.bool_)
    rating_rows = row_of[len(pairs) :]
    ok = r_col >= 0
    present[rating_rows[ok], r_col[ok]] = True
    for tc in concepts:
        if tc.none is not None:
            present[:, tc.none] = ~present[:, tc.real].any(axis=1)
    return _Table(
        glyph_ids=gids.astype(np.int64),
        annotators=tuple(str(n) for n in names),
        row_glyph=(row_keys // n_names).astype(np.intp),
        row_annotator=(row_keys % n_names).astype(np.intp),
        present=present,
        items=tuple(items),
        concepts=tuple(concepts),
        ratings=int(ok.sum() + (r_col == -2).sum()),
        ignored=int((r_col == -1).sum()),
    )


def _category_codes(present: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
    """Dense codes 0..C-1 of the distinct rows of a boolean matrix (a row = a value set)."""
    if present.shape[1] == 0:
        return np.zeros(present.shape[0], dtype=np.intp)
    if present.shape[1] <= 62:
        weights = np.int64(1) << np.arange(present.shape[1], dtype=np.int64)
        _, codes = np.unique(present.astype(np.int64) @ weights, return_inverse=True)
    else:
        _, codes = np.unique(present, axis=0, return_inverse=True)
    return np.asarray(codes, dtype=np.intp).reshape(-1)


# ---- alpha and kappa from sums ---------------------------------------------------------------
#
# Nominal alpha is 1 − (n−1)·D / (n² − Σ_c n_c²), where n is the number of pairable values, n_c
# those in category c and D the off-diagonal mass of the coincidence matrix; a unit of m ≥ 2
# values with n_uc in category c adds m to n, n_uc to n_c and (m² − Σ_c n_uc²)/(m−1) to D. All
# three are sums over units, which is what makes the bootstrap one matrix product.


def _alpha(n: FloatArray, sum_sq: FloatArray, off: FloatArray) -> FloatArray:
    """Nominal alpha from n, Σ_c n_c² and D; NaN where undefined (one category, n < 2)."""
    expected = n * n - sum_sq
    ok = (expected > 0) & (n >= 2)
    out = np.zeros(np.broadcast(n, sum_sq, off).shape)
    np.divide((n - 1) * off, expected, out=out, where=ok)
    return np.where(ok, 1.0 - out, np.nan)


def _off_diagonal(m: FloatArray, sum_sq: FloatArray) -> FloatArray:
    """Per unit: (m² − Σ_c n_uc²)/(m−1), 0 for units of fewer than two values."""
    out = np.zeros(np.broadcast(m, sum_sq).shape)
    np.divide(m * m - sum_sq, m - 1, out=out, where=m >= 2)
    return out


def nominal_alpha(
    value_counts: npt.ArrayLike, weights: npt.ArrayLike | None = None
) -> float | FloatArray:
    """Nominal Krippendorff's alpha from per-unit category counts ``value_counts`` (units × C,
    the package's ``value_counts``); units of fewer than two values contribute nothing.

    ``weights`` (R × units) gives each unit a multiplicity per replicate and returns R alphas
    at once (one matrix product): with integer weights, replicate r equals the alpha of the data
    in which unit u appears ``weights[r, u]`` times. Without weights: one float. NaN where alpha
    is undefined. This is the arithmetic of :func:`agreement_report`'s bootstrap.
    """
    counts = np.asarray(value_counts, dtype=np.float64)
    if counts.ndim != 2:
        raise ValueError("value_counts must be a units × categories matrix")
    m = counts.sum(axis=1)
    units = np.column_stack([m, counts, _off_diagonal(m, (counts * counts).sum(axis=1))])
    units[m < 2] = 0.0
    if weights is None:
        sums = units.sum(axis=0)[None, :]
    else:
        sums = np.asarray(weights, dtype=np.float64) @ units
    alphas = _alpha(sums[:, 0], (sums[:, 1:-1] ** 2).sum(axis=1), sums[:, -1])
    return float(alphas[0]) if weights is None else alphas


def _kappa(
    items: FloatArray, both: FloatArray, first_only: FloatArray, second_only: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Cohen's kappa and observed agreement from a 2×2 table's cells; kappa NaN where chance
    agreement is total (both gave one and the same answer on every item)."""
    neither = items - both - first_only - second_only
    first_yes, second_yes = both + first_only, both + second_only
    chance = first_yes * second_yes + (items - first_yes) * (items - second_yes)
    ok = items * items - chance > 0
    kappa = np.zeros(np.shape(items))
    np.divide(items * (both + neither) - chance, items * items - chance, out=kappa, where=ok)
    percent = np.zeros(np.shape(items))
    np.divide(both + neither, items, out=percent, where=items > 0)
    return np.where(ok, kappa, np.nan), np.where(items > 0, percent, np.nan)


def _intervals(
    samples: FloatArray, confidence: float
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.intp]]:
    """Percentile intervals of each column of ``samples`` (replicates × statistics) over its
    finite entries (numpy's linear method); NaN where no replicate is finite; and the count of
    undefined replicates per column."""
    ordered = np.sort(samples, axis=0)  # NaN last
    finite = np.isfinite(samples).sum(axis=0)
    tail = (1.0 - confidence) / 2.0
    bounds = []
    cols = np.arange(samples.shape[1])
    for q in (tail, 1.0 - tail):
        pos = q * np.maximum(finite - 1, 0)
        lo = np.floor(pos).astype(np.intp)
        hi = np.minimum(lo + 1, np.maximum(finite - 1, 0))
        frac = pos - lo
        if samples.shape[0]:
            value = ordered[lo, cols] + (ordered[hi, cols] - ordered[lo, cols]) * frac
        else:
            value = np.full(samples.shape[1], np.nan)
        bounds.append(np.where(finite > 0, value, np.nan))
    return bounds[0], bounds[1], (samples.shape[0] - finite).astype(np.intp)


# ---- the report ------------------------------------------------------------------------------


def _package_alpha(mixed: FloatArray, unanimous: FloatArray) -> float:
    """The krippendorff package's nominal alpha of the units ``mixed`` (units × categories,
    each of two or more values, not all in one category) plus, per category, ``unanimous[c]``
    values from units that all said c.

    All the unanimous units of a category enter the package as one unit holding all their
    values: a unanimous unit of m values adds m to its category's coincidence, whatever m is
    (m(m−1)/(m−1)), so the table is exactly equivalent and the call costs the disagreeing units
    only. Categories nobody used are dropped (they change nothing).
    """
    used = (mixed.sum(axis=0) + unanimous) > 0
    table = np.vstack([mixed[:, used], np.diag(unanimous[used])[unanimous[used] > 0]])
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(krippendorff.alpha(value_counts=table, level_of_measurement="nominal"))


def _split_unanimous(counts: FloatArray, m: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(the units whose values are not all in one category, the values per category of the
    units whose values are) for units of two or more values."""
    unanimous = counts.max(axis=1) == m
    merged = np.bincount(
        np.argmax(counts[unanimous], axis=1), weights=m[unanimous], minlength=counts.shape[1]
    )
    return counts[~unanimous], np.asarray(merged, dtype=np.float64)


def _set_label(values: Sequence[str]) -> str:
    return "{" + ", ".join(repr(v) for v in values) + "}" if values else "none"


class _Columns:
    """Per-glyph contributions, one sparse column per summed quantity (glyphs × columns)."""

    def __init__(self, units: int) -> None:
        self.units = units
        self.width = 0
        self._rows: list[npt.NDArray[np.intp]] = []
        self._cols: list[npt.NDArray[np.intp]] = []
        self._vals: list[FloatArray] = []

    def dense(self, block: FloatArray) -> slice:
        rows, cols = np.nonzero(block)
        return self.triplets(rows, cols, block[rows, cols], block.shape[1])

    def triplets(
        self, rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp], vals: FloatArray, width: int
    ) -> slice:
        self._rows.append(np.asarray(rows, dtype=np.intp))
        self._cols.append(np.asarray(cols, dtype=np.intp) + self.width)
        self._vals.append(np.asarray(vals, dtype=np.float64))
        self.width += width
        return slice(self.width - width, self.width)

    def totals(self) -> FloatArray:
        if not self._vals:
            return np.zeros(self.width)
        sums = np.bincount(
            np.concatenate(self._cols), np.concatenate(self._vals), minlength=self.width
        )
        return np.asarray(sums, dtype=np.float64)

    def bootstrap(self, n_boot: int, seed: int) -> FloatArray:
        """Sums of every column in each of ``n_boot`` replicates (replicates × columns): a
        replicate draws ``units`` glyphs with replacement; its sums are the multiplicity counts
        times the contributions, one sparse-by-dense product per chunk of replicates.

        The product runs in float32 (half the memory traffic): multiplicities and counts are
        integers, exact below 2**24; the fractions of the off-diagonal terms (1/(m−1)) carry a
        relative error of about 1e-7, far below a bootstrap's own noise. Point estimates never
        come from here.
        """
        from scipy import sparse  # type: ignore[import-untyped]

        by_column = sparse.csr_array(
            (
                np.concatenate(self._vals).astype(np.float32) if self._vals else np.zeros(0),
                (
                    np.concatenate(self._cols) if self._cols else np.zeros(0, np.intp),
                    np.concatenate(self._rows) if self._rows else np.zeros(0, np.intp),
                ),
            ),
            shape=(self.width, self.units),
            dtype=np.float32,
        )
        out = np.empty((n_boot, self.width))
        start = 0
        for multiplicity in _multiplicities(n_boot, self.units, seed):
            r = multiplicity.shape[1]
            out[start : start + r] = (by_column @ multiplicity).T
            start += r
        return out


def _multiplicities(n_boot: int, units: int, seed: int) -> Iterator[npt.NDArray[np.float32]]:
    """The bootstrap's draws: per chunk of replicates, how often each unit (the glyphs annotated
    by two or more people, by glyph id) is drawn in each replicate (units × replicates; every
    column sums to ``units``)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, _CHUNK):
        r = min(_CHUNK, n_boot - start)
        draws = rng.integers(0, units, size=(r, units), dtype=np.int64)
        draws += (np.arange(r, dtype=np.int64) * units)[:, None]  # row by row: cache-friendly
        counts = np.bincount(draws.ravel(), minlength=units * r)
        yield np.ascontiguousarray(counts.reshape(r, units).T, dtype=np.float32)


def ratings_of_source(
    ratings: Iterable[SourcedRating], annotated: Iterable[tuple[int, str]], source: str
) -> tuple[list[Rating], set[tuple[int, str]]]:
    """The ratings and annotated cells of one kind of work, the input of
    :func:`agreement_report`: ``"suggestion"`` keeps the (glyph, annotator) cells where any of
    that person's tags of the glyph was accepted from a suggestion (assisted); ``"hand"`` the
    others (unassisted: every tag by hand, or none given and the glyph marked done). A cell is
    kept or left whole, never split by tag: leaving out an assisted tag would turn the
    person's answer into "none". So a glyph counts toward a kind's agreement when two or more
    people worked on it that way; one tagged assisted by one person and unassisted by the
    other counts in neither."""
    if source not in TAG_SOURCES:
        raise StudioError(f"source {source!r} is not one of {', '.join(TAG_SOURCES)}")
    rows = list(ratings)
    assisted = {(g, a) for g, a, _, _, s in rows if s != HAND}
    cells = {(g, a) for g, a, *_ in rows} | set(annotated)
    keep = {c for c in cells if (c in assisted) == (source != HAND)}
    return [(g, a, c, v) for g, a, c, v, _ in rows if (g, a) in keep], keep


def agreement_report(
    ratings: Iterable[Rating],
    annotated: Iterable[tuple[int, str]],
    schema: Schema,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AgreementReport:
    """Agreement per concept (alpha of the value set, percent agreement), per (concept, value)
    (alpha and percent agreement of present/absent) and per annotator pair (Cohen's kappa pooled
    over every present/absent decision on the glyphs both annotated, and per concept), with
    ``confidence`` bootstrap intervals from ``n_boot`` replicates drawn with ``seed`` (the same
    inputs and seed give the same report). Never raises on degenerate data: an undefined
    statistic is None with a reason."""
    if not 0 <= n_boot <= MAX_BOOT:
        raise StudioError(f"bootstrap replicates must be 0 to {MAX_BOOT:,} (got {n_boot:,})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    table = _tabulate(ratings, annotated, schema)
    per_glyph = table.per_glyph
    pairable_glyph = per_glyph >= 2
    n_pairable = int(pairable_glyph.sum())
    position = np.cumsum(pairable_glyph) - 1  # glyph index → its pairable-glyph unit
    rows = np.flatnonzero(pairable_glyph[table.row_glyph])  # rows on pairable glyphs
    row_unit = position[table.row_glyph[rows]]
    present = table.present[rows]
    m = per_glyph[pairable_glyph].astype(np.float64)
    undefined_reason = _NO_ANNOTATORS if len(table.annotators) < 2 else _NO_PAIRABLE
    columns = _Columns(n_pairable)
    columns.dense(np.column_stack([m, m * (m - 1) / 2.0]))  # columns 0: n, 1: pairs

    # concepts: category counts (the commonest category left out: it is n minus the others),
    # off-diagonal coincidences, disagreeing pairs
    concept_slots: list[tuple[slice, int, int]] = []
    concept_counts: list[FloatArray] = []
    concept_labels: list[list[tuple[str, ...]]] = []
    for c in table.concepts:
        codes = _category_codes(present[:, c.real])
        n_cat = int(codes.max()) + 1 if codes.size else 0
        flat = np.bincount(row_unit * n_cat + codes, minlength=n_pairable * n_cat)
        counts: FloatArray = flat.reshape(n_pairable, n_cat).astype(np.float64)
        labels: list[tuple[str, ...]] = [()] * n_cat
        for code, r in enumerate(np.unique(codes, return_index=True)[1]):
            labels[code] = tuple(table.items[j][1] for j in c.real if present[r, j])
        commonest = int(np.argmax(counts.sum(axis=0))) if n_cat else 0
        squares = (counts * counts).sum(axis=1)
        others = columns.dense(np.delete(counts, commonest, axis=1) if n_cat else counts)
        off = columns.dense(_off_diagonal(m, squares)[:, None]).start
        disagreeing = columns.dense(((m * m - squares) / 2.0)[:, None]).start
        concept_slots.append((others, off, disagreeing))
        concept_counts.append(counts)
        concept_labels.append(labels)

    # values: present count (or absent count where that is the sparser), off-diagonal,
    # disagreeing pairs
    if n_pairable:
        starts = np.flatnonzero(np.r_[True, np.diff(row_unit) != 0])
        yes = np.add.reduceat(present.astype(np.float64), starts, axis=0)
    else:
        yes = np.zeros((0, len(table.items)))
    no = m[:, None] - yes
    flipped = yes.sum(axis=0) > no.sum(axis=0)
    value_yes = columns.dense(np.where(flipped, no, yes))
    value_off = columns.dense(_off_diagonal(m[:, None], yes * yes + no * no))
    value_dis = columns.dense(yes * no)

    # annotator pairs: per glyph both annotated, items and the cells both / first / second only.
    # The items are the values other than none: none is the complement of a concept's other
    # values, not a decision of its own, and counting it would count agreement twice.
    with_items = [c for c in table.concepts if c.real.size]
    decided = np.concatenate([c.real for c in with_items]) if with_items else np.zeros(0, np.intp)
    concept_starts = np.cumsum([0] + [c.real.size for c in with_items[:-1]]).astype(np.intp)
    items_per_concept = np.array([float(c.real.size) for c in with_items])
    row_at = np.full((len(table.glyph_ids), max(len(table.annotators), 1)), -1, dtype=np.intp)
    row_at[table.row_glyph, table.row_annotator] = np.arange(len(table.row_glyph))
    pair_list: list[tuple[int, int, npt.NDArray[np.intp]]] = []
    for a, b in combinations(range(len(table.annotators)), 2):
        shared = np.flatnonzero((row_at[:, a] >= 0) & (row_at[:, b] >= 0))
        if shared.size:
            pair_list.append((a, b, shared))
    pair_cells: list[tuple[npt.NDArray[np.bool_], ...]] = []
    pair_units: list[npt.NDArray[np.intp]] = []
    for a, b, shared in pair_list:
        xa = table.present[row_at[shared, a]][:, decided]
        xb = table.present[row_at[shared, b]][:, decided]
        pair_cells.append((xa & xb, xa & ~xb, ~xa & xb))
        pair_units.append(position[shared])
    n_pairs = len(pair_list)
    pair_slots: list[slice] = []
    for part in range(4):
        vals = [
            np.full(units.size, float(decided.size))
            if part == 0
            else cells[part - 1].sum(axis=1, dtype=np.float64)
            for units, cells in zip(pair_units, pair_cells, strict=True)
        ]
        pair_slots.append(
            columns.triplets(
                np.concatenate(pair_units) if pair_units else np.zeros(0, np.intp),
                np.repeat(np.arange(n_pairs), [u.size for u in pair_units]),
                np.concatenate(vals) if vals else np.zeros(0),
                n_pairs,
            )
        )

    totals = columns.totals()
    boot = columns.bootstrap(n_boot, seed) if n_boot and n_pairable else None

    def statistics(sums: FloatArray) -> dict[str, FloatArray]:
        """Every statistic from column sums (one row per sample: the data, or a replicate)."""
        n = sums[:, :1]
        pairs = sums[:, 1:2]
        concept_alpha = np.empty((sums.shape[0], len(concept_slots)))
        concept_dis = np.empty_like(concept_alpha)
        for k, (others, off, disagreeing) in enumerate(concept_slots):
            rest = sums[:, others]
            commonest = n[:, 0] - rest.sum(axis=1)
            squares = (rest * rest).sum(axis=1) + commonest * commonest
            concept_alpha[:, k] = _alpha(n[:, 0], squares, sums[:, off])
            concept_dis[:, k] = sums[:, disagreeing]
        y = sums[:, value_yes]
        value_alpha = _alpha(n, y * y + (n - y) ** 2, sums[:, value_off])
        with np.errstate(divide="ignore", invalid="ignore"):
            concept_percent = 1.0 - concept_dis / pairs
            value_percent = 1.0 - sums[:, value_dis] / pairs
        kappa, _ = _kappa(*(sums[:, s] for s in pair_slots))
        return {
            "concept_alpha": concept_alpha,
            "concept_percent": concept_percent,
            "value_alpha": value_alpha,
            "value_percent": value_percent,
            "kappa": kappa,
        }

    point = statistics(totals[None, :])
    ranges: dict[str, tuple[FloatArray, FloatArray, npt.NDArray[np.intp]]] = {}
    if boot is not None:
        ranges = {key: _intervals(v, confidence) for key, v in statistics(boot).items()}

    def estimate(key: str, index: int, value: float | None, reason: str) -> Estimate:
        if value is None or not np.isfinite(value):
            return Estimate(None, reason=reason or "undefined for these data")
        if key not in ranges:
            return Estimate(float(value))
        low, high, undefined = (r[index] for r in ranges[key])
        return Estimate(
            float(value),
            float(low) if np.isfinite(low) else None,
            float(high) if np.isfinite(high) else None,
            boot_undefined=int(undefined),
        )

    n_values = float(totals[0])
    total_pairs = round(float(totals[1]))
    present_totals = np.where(flipped, n_values - totals[value_yes], totals[value_yes]).astype(
        np.float64
    )
    # the package's point estimates of the values: disagreeing units, and unanimous mass
    yes_by_item, no_by_item = yes.T.copy(), no.T.copy()
    mixed = (yes_by_item > 0) & (no_by_item > 0)
    mixed_units = [np.flatnonzero(row) for row in mixed]
    unanimous_values = np.vstack(
        [(m[:, None] * (no == 0)).sum(axis=0), (m[:, None] * (yes == 0)).sum(axis=0)]
    )
    concept_results: list[ConceptAgreement] = []
    for k, c in enumerate(table.concepts):
        used = np.flatnonzero(concept_counts[k].sum(axis=0) > 0)
        alpha_value: float | None = None
        reason = ""
        if not n_pairable:
            reason = undefined_reason
        elif used.size < 2:
            said = _set_label(concept_labels[k][int(used[0])])
            reason = (
                f"every annotation of {c.id!r} on a glyph with two or more annotators says "
                f"{said}: alpha is undefined without variation"
            )
        else:
            alpha_value = _package_alpha(*_split_unanimous(concept_counts[k], m))
        values: list[ValueAgreement] = []
        for j in (int(j) for j in c.items):
            value_id = table.items[j][1]
            present_count = float(present_totals[j]) if n_pairable else 0.0
            v_reason = undefined_reason
            if n_pairable and present_count in (0.0, n_values):
                state = "absent from" if present_count == 0.0 else "present in"
                v_reason = (
                    f"{value_id!r} is {state} every annotation of {c.id!r} on a glyph with two "
                    "or more annotators: alpha is undefined without variation"
                )
            v_alpha = None
            if n_pairable and 0.0 < present_count < n_values:
                units = mixed_units[j]
                v_alpha = _package_alpha(
                    np.column_stack([yes_by_item[j, units], no_by_item[j, units]]),
                    unanimous_values[:, j],
                )
            values.append(
                ValueAgreement(
                    concept=c.id,
                    value=value_id,
                    alpha=estimate("value_alpha", j, v_alpha, v_reason),
                    percent=estimate(
                        "value_percent", j, point["value_percent"][0, j], undefined_reason
                    ),
                    present=int(present_count),
                )
            )
        concept_results.append(
            ConceptAgreement(
                concept=c.id,
                alpha=estimate("concept_alpha", k, alpha_value, reason),
                percent=estimate(
                    "concept_percent", k, point["concept_percent"][0, k], undefined_reason
                ),
                glyphs=n_pairable,
                pairs=total_pairs,
                values=tuple(values),
            )
        )

    k_reason = "both gave the same answer on every item: kappa is undefined without variation"
    item_totals = [totals[s] for s in pair_slots]
    _, pair_percent = _kappa(*(t for t in item_totals))
    pair_results: list[PairAgreement] = []
    for p, (a, b, shared) in enumerate(pair_list):
        per_concept: list[ConceptKappa] = []
        if with_items:
            cells = [
                np.add.reduceat(x.sum(axis=0, dtype=np.float64), concept_starts)
                for x in pair_cells[p]
            ]
            n_items = items_per_concept * shared.size
            kappas, _ = _kappa(n_items, *cells)
            for c, kv, ni in zip(with_items, kappas, n_items, strict=True):
                ok = bool(np.isfinite(kv))
                per_concept.append(
                    ConceptKappa(c.id, float(kv) if ok else None, int(ni), "" if ok else k_reason)
                )
        pair_results.append(
            PairAgreement(
                first=table.annotators[a],
                second=table.annotators[b],
                kappa=estimate("kappa", p, point["kappa"][0, p], k_reason),
                percent=float(pair_percent[p]),
                glyphs=int(shared.size),
                items=int(item_totals[0][p]),
                concepts=tuple(per_concept),
            )
        )

    return AgreementReport(
        schema_id=schema.id,
        schema_version=schema.version,
        annotators=table.annotators,
        glyphs=len(table.glyph_ids),
        pairable_glyphs=n_pairable,
        ratings=table.ratings,
        ignored_ratings=table.ignored,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        concepts=tuple(concept_results),
        pairs=tuple(pair_results),
    )


def disagreements(
    ratings: Iterable[Rating], annotated: Iterable[tuple[int, str]], schema: Schema
) -> list[Disagreement]:
    """The glyphs annotated by two or more people whose value sets differ for some concept,
    by glyph id: the curator's queue (the caller leaves out glyphs already adjudicated).
    An explicit ``none`` tag and no tag agree; tags outside the schema are left out."""
    table = _tabulate(ratings, annotated, schema)
    per_glyph = table.per_glyph
    rows = np.flatnonzero(per_glyph[table.row_glyph] >= 2)
    if rows.size == 0 or not table.concepts:
        return []
    starts = np.flatnonzero(np.r_[True, np.diff(table.row_glyph[rows]) != 0])
    codes = np.column_stack(
        [_category_codes(table.present[rows][:, c.real]) for c in table.concepts]
    )
    differ = np.minimum.reduceat(codes, starts, axis=0) != np.maximum.reduceat(
        codes, starts, axis=0
    )
    out: list[Disagreement] = []
    ends = np.r_[starts[1:], rows.size]
    for g in np.flatnonzero(differ.any(axis=1)):
        glyph_rows = rows[starts[g] : ends[g]]
        names = tuple(table.annotators[i] for i in table.row_annotator[glyph_rows])
        concepts = [table.concepts[k] for k in np.flatnonzero(differ[g])]
        opinions = tuple(
            Opinion(
                name,
                c.id,
                tuple(table.items[j][1] for j in c.real if table.present[r, j]),
            )
            for c in concepts
            for name, r in zip(names, glyph_rows, strict=True)
        )
        out.append(
            Disagreement(
                glyph_id=int(table.glyph_ids[table.row_glyph[glyph_rows[0]]]),
                concepts=tuple(c.id for c in concepts),
                annotators=names,
                opinions=opinions,
            )
        )
    return out
