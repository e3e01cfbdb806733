"""What the glyph families' splits share: the glyph hold-out, the result, and the quota loop.

Both glyph generators (:mod:`.generator`, progressive matrices, and :mod:`.analogy`, A : A′ :: B
: ?) split the glyphs with :func:`hold_out`, a function of the glyphs alone (not the seed), so
the same glyphs are held out whatever the layout or seed; both fill each part's quota with
:func:`fill_quotas`, which draws puzzles of the part's tuples, counts failed draws by reason and
declares a tuple dry after too many failures in a row. What a tuple is (a rule–concept–shift, a
change of one concept) and how one is drawn stays with each generator.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.generate.params import SplitParams

T = TypeVar("T", bound=Hashable)
#: the salt of UA's k-fold partition of rule–concept pairs (``fold_group``): not the fold
FOLDS_SALT = 0x7F01D
#: What a generator opens one part of a split with (:func:`fill_quotas`): the tuples dry from the
#: start (name → why), a draw of one puzzle of a live tuple — (puzzle or None, why it failed,
#: the tuple), or None when none is left — and a way to stop offering a tuple.
PartLoop = tuple[
    dict[str, str],
    Callable[[int], tuple[Puzzle | None, str, T] | None],
    Callable[[T], None],
]


class GenerationShortfall(StudioError):
    """The annotations could not supply the puzzles asked for; ``dry`` names the tuples."""

    def __init__(self, part: str, made: int, wanted: int, dry: dict[str, str]) -> None:
        self.part, self.made, self.wanted, self.dry = part, made, wanted, dry
        lines = "\n".join(f"{t}: {why}" for t, why in sorted(dry.items()))
        # first line: what happened, short enough for a message box; then one line per tuple
        super().__init__(
            f"only {made} of {wanted} {part} puzzles could be made: all {len(dry)} "
            f"rule–concept tuples ran dry (ask for fewer puzzles, balanced sampling or other "
            f"rules, or tag the glyphs the Needs column lists).\n{lines}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # raised in a pool worker, it crosses back to the parent by pickle
        return (GenerationShortfall, (self.part, self.made, self.wanted, self.dry))


@dataclass
class SplitResult:
    """One fold of a glyph split: the puzzles, and what it cost (rejections by reason, dry
    tuples by part, puzzles per tuple, the tuples offered, the seconds taken)."""

    params: SplitParams
    fold: int
    puzzles: list[Puzzle] = field(default_factory=list)
    rejections: Counter[str] = field(default_factory=Counter)
    dry: dict[str, dict[str, str]] = field(default_factory=dict)  # part → tuple → reason
    produced: Counter[str] = field(default_factory=Counter)  # tuple name → puzzles
    tuples: dict[str, list[str]] = field(default_factory=dict)  # part → tuple names offered
    seconds: float = 0.0
    #: part → tuple name → why its draws failed, counted (:func:`declare_unmade`)
    failed: dict[str, dict[str, Counter[str]]] = field(default_factory=dict)
    made_in: set[tuple[str, str]] = field(default_factory=set)  # (part, tuple name) made
    #: whether a failed draw is the tuple's own (an analogy charges a concept's failed draw to
    #: one of its changes at random, so its unmade changes are not named)
    names_unmade: bool = True

    def summary(self, timing: bool = True) -> dict[str, Any]:
        """What happened, JSON-ready and in a fixed order; ``timing=False`` leaves out the
        seconds, for files that must come out byte for byte the same."""
        out: dict[str, Any] = {
            "fold": self.fold,
            "puzzles": len(self.puzzles),
            "per_part": dict(sorted(Counter(p.split for p in self.puzzles).items())),
            "rejections": dict(sorted(self.rejections.items())),
            "dry_tuples": {k: dict(sorted(v.items())) for k, v in self.dry.items() if v},
            "produced": dict(sorted(self.produced.items())),
        }
        if timing:
            out["seconds"] = round(self.seconds, 3)
        return out


def stable_fraction(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` alone (no generator state): which side an
    instantiation falls on stays the same whatever else a split draws."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


def fold_group(items: Sequence[T], seed: int, folds: int, fold: int) -> list[T]:
    """The items fold ``fold`` tests under UA's k-fold design (``extrapolation tuple-folds``):
    ``items`` in their given order, shuffled by the seed alone within blocks of ``folds`` and
    dealt round into ``folds`` groups, so the folds' groups partition the items, each fold
    trains on the others, and items a caller lists first (the buildable ones) spread evenly."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, FOLDS_SALT]))
    out = []
    for start in range(0, len(items), folds):
        block = items[start : start + folds]
        order = rng.permutation(folds)  # which group each of the block's items goes to
        out += [x for x, g in zip(block, order[: len(block)], strict=True) if g == fold]
    return out


class GlyphSide:
    """The glyphs one part of a split may draw from: its annotation folders, the glyphs, and
    which glyphs carry some value of each concept."""

    def __init__(self, folders: dict[tuple[str, str], tuple[GlyphKey, ...]]) -> None:
        self.folders = folders
        self.folder_sets = {cv: frozenset(ks) for cv, ks in folders.items()}
        self.glyphs: tuple[GlyphKey, ...] = tuple(
            sorted({k for ks in folders.values() for k in ks})
        )
        by_concept: dict[str, set[GlyphKey]] = {}
        for (c, _v), ks in folders.items():
            by_concept.setdefault(c, set()).update(ks)
        self.by_concept = {c: frozenset(ks) for c, ks in by_concept.items()}

    def folder(self, concept: str, value: str) -> tuple[GlyphKey, ...]:
        return self.folders.get((concept, value), ())


#: Salt of the hold-out's hash: a glyph's side is a function of itself (and the fold) only.
HOLDOUT_SALT = "glyph-holdout-1"


def glyph_side(key: GlyphKey, fraction: float, fold: int = 0) -> str:
    """``eval`` (val + test) or ``train``: which side of a ``disjoint`` hold-out holding out
    ``fraction`` of the glyphs the glyph ``key`` falls on in fold ``fold``.

    A function of the glyph alone, by design (issue 24): tagging a glyph, or adding a font,
    never moves another glyph between the sides, so the annotation-needs report's "this many
    more held-out glyphs" falls as annotators follow it, and the tagger can show the side of a
    glyph nobody has tagged yet (View ▸ Only held-out glyphs). Not the seed either: the test
    glyphs are a property of the benchmark, the same whatever puzzles a seed draws; folds give
    other partitions. The price is that the sides are not stratified per value (a value's
    glyphs split about ``fraction`` : ``1 − fraction``, binomially) — the Needs report asks for
    glyphs of the side that lacks them instead (docs/decisions.md)."""
    u = stable_fraction(HOLDOUT_SALT, fold, key.font, key.codepoint)
    return "eval" if u < fraction else "train"


def hold_out(
    params: SplitParams,
    folders: Mapping[tuple[str, str], tuple[GlyphKey, ...]],
    fold: int = 0,
    rng: np.random.Generator | None = None,
) -> dict[str, GlyphSide]:
    """The glyph hold-out of a split: ``train`` and ``eval`` (val + test) sides, the same for
    every family, layout and seed of a fold. ``disjoint``: :func:`glyph_side`, glyph by
    glyph; ``basic`` (each folder split on its own): per folder, the ``round(n × fraction)``
    glyphs first in a hash order of the folder's own go to ``eval``, so a glyph tagged into a
    folder moves at most one other glyph of that folder."""
    f = params.holdout_fraction
    if params.holdout == "none":
        side = GlyphSide(dict(folders))
        return {"train": side, "eval": side}
    if params.holdout_version < 2:
        if rng is None:
            raise ValueError("a version 1 hold-out draws from the split's generator")
        return _seeded_hold_out(params, folders, rng)
    if params.holdout == "disjoint":
        glyphs = {k for ks in folders.values() for k in ks}
        held = {k for k in glyphs if glyph_side(k, f, fold) == "eval"}
        tr = {cv: tuple(k for k in ks if k not in held) for cv, ks in folders.items()}
        ev = {cv: tuple(k for k in ks if k in held) for cv, ks in folders.items()}
        return {"train": GlyphSide(tr), "eval": GlyphSide(ev)}
    tr, ev = {}, {}
    for (c, v), ks in folders.items():
        order = sorted(
            ks, key=lambda k: stable_fraction(HOLDOUT_SALT, fold, c, v, k.font, k.codepoint)
        )
        cut = len(ks) - round(len(ks) * (1 - f))
        ev[(c, v)] = tuple(sorted(order[:cut]))
        tr[(c, v)] = tuple(sorted(order[cut:]))
    return {"train": GlyphSide(tr), "eval": GlyphSide(ev)}


def _seeded_hold_out(
    params: SplitParams,
    folders: Mapping[tuple[str, str], tuple[GlyphKey, ...]],
    rng: np.random.Generator,
) -> dict[str, GlyphSide]:
    """The hold-out of splits made before issue 24 (``holdout_version`` 1): a permutation
    from the split's seeded generator, so a set made then regenerates a puzzle on the sides
    its other puzzles were built on (while the annotations are as they were)."""
    f = params.holdout_fraction
    if params.holdout == "disjoint":
        glyphs = sorted({k for ks in folders.values() for k in ks})
        order = rng.permutation(len(glyphs))
        cut = round(len(glyphs) * (1 - f))
        train = {glyphs[i] for i in order[:cut]}
        tr = {cv: tuple(k for k in ks if k in train) for cv, ks in folders.items()}
        ev = {cv: tuple(k for k in ks if k not in train) for cv, ks in folders.items()}
        return {"train": GlyphSide(tr), "eval": GlyphSide(ev)}
    tr, ev = {}, {}
    for cv, ks in folders.items():
        order = rng.permutation(len(ks))
        cut = round(len(ks) * (1 - f))
        tr[cv] = tuple(sorted(ks[i] for i in order[:cut]))
        ev[cv] = tuple(sorted(ks[i] for i in order[cut:]))
    return {"train": GlyphSide(tr), "eval": GlyphSide(ev)}


def fill_quotas(
    result: SplitResult,
    open_part: Callable[[str, str], PartLoop[T]],
    name: Callable[[T], str],
    max_fails: int,
) -> Iterator[tuple[int, int]]:
    """Make every part's quota (``result.params.counts()``): train, then val, then test.

    ``open_part(part, side)`` (side ``train`` or ``eval``) returns the part's tuples found dry
    before drawing (name → why; kept as ``result.dry[part]`` and added to), a ``draw(made)``
    that draws one puzzle of a live tuple — (puzzle or None, why it failed, the tuple), or None
    when no tuple is left, which raises :class:`GenerationShortfall` — and a ``retire(tuple)``
    that stops offering one. A failed draw counts its reason in ``result.rejections``;
    ``max_fails`` failures of a tuple in a row make it dry. Yields (done, total) after every
    50th puzzle and the last, so a GUI can show progress and cancel by closing the iterator;
    ``result.seconds`` adds the time spent."""
    t0 = time.perf_counter()
    counts = result.params.counts()
    total = sum(counts.values())
    done = 0
    for part in ("train", "val", "test"):
        for _ in _fill_part(result, open_part, name, max_fails, part, 0, counts[part], t0):
            done += 1
            if done % 50 == 0 or done == total:
                yield done, total
    declare_unmade(result)
    result.seconds += time.perf_counter() - t0


#: failed draws of a tuple, none made, past which :func:`declare_unmade` names it (fewer say
#: little: in a small split a tuple is drawn a few times)
UNMADE_DRAWS = 10


def declare_unmade(result: SplitResult) -> None:
    """A tuple whose every draw in a part failed, too few times in a row to run dry (a
    chunk of a sharded split starts its count afresh), made nothing there and was reported
    nowhere: it is named with the dry ones, with how many draws failed and most often why
    (on the shared UA set, progression × intersection-quantity failed all its 54 draws in
    train; the CLI said nothing of it)."""
    if not result.names_unmade:
        return
    for part, per in result.failed.items():
        dry = result.dry.setdefault(part, {})
        # val and test draw from the same glyphs: made in one, the other was unlucky
        siblings = ("val", "test") if part in ("val", "test") else (part,)
        for t, whys in per.items():
            if t in dry or whys.total() < UNMADE_DRAWS:
                continue
            if any((q, t) in result.made_in for q in siblings):
                continue
            why, _ = whys.most_common(1)[0]
            dry[t] = f"none of its {whys.total()} draws made a puzzle (most often: {why})"


def _fill_part(
    result: SplitResult,
    open_part: Callable[[str, str], PartLoop[T]],
    name: Callable[[T], str],
    max_fails: int,
    part: str,
    start: int,
    count: int,
    t0: float,
) -> Iterator[Puzzle]:
    """Puzzles ``start`` … ``start + count - 1`` of a part (:func:`fill_quotas`' loop over one
    part), yielding each one made."""
    dry, draw, retire = open_part(part, "train" if part == "train" else "eval")
    result.dry[part] = dry
    fails: Counter[T] = Counter()
    made = 0
    while made < count:
        drawn = draw(start + made)
        if drawn is None:
            result.seconds += time.perf_counter() - t0
            raise GenerationShortfall(part, start + made, result.params.counts()[part], dry)
        puzzle, reason, t = drawn
        if puzzle is None:
            result.rejections[reason] += 1
            result.failed.setdefault(part, {}).setdefault(name(t), Counter())[reason] += 1
            fails[t] += 1
            if fails[t] >= max_fails:
                dry[name(t)] = f"{max_fails} draws in a row failed (last: {reason})"
                retire(t)
            continue
        fails[t] = 0
        result.made_in.add((part, name(t)))
        result.puzzles.append(puzzle)
        result.produced[name(t)] += 1
        made += 1
        yield puzzle


# ---- shards: a large split made in fixed chunks, each with its own random stream ----------
PARTS = ("train", "val", "test")
#: puzzles per chunk of a sharded split
CHUNK = 250
#: a split of fewer puzzles per fold is made in one stream (as before sharding existed)
SHARD_MIN = 500


@dataclass(frozen=True)
class Shard:
    """One unit of a split's work: puzzles ``start`` … ``start + count - 1`` of ``part`` of
    fold ``fold`` (chunk number ``chunk`` of that part), or with ``part`` empty the whole fold
    in one stream."""

    fold: int
    part: str = ""
    start: int = 0
    count: int = 0
    chunk: int = 0

    @property
    def whole_fold(self) -> bool:
        return not self.part


def sharded(params: SplitParams) -> bool:
    """Is each fold of this split made in chunks (:func:`shard_plan`)? Only splits of at least
    ``SHARD_MIN`` puzzles a fold, and never ``diverse`` sampling (which forbids a repeat across
    the whole fold, so it stays one stream)."""
    return params.n >= SHARD_MIN and params.sampling != "diverse"


def shard_plan(params: SplitParams) -> list[Shard]:
    """The work of a split in a fixed order (fold, part, chunk): the same for any number of
    workers, so the same seed gives the same bytes whoever makes each shard."""
    out: list[Shard] = []
    for fold in range(params.folds):
        if not sharded(params):
            out.append(Shard(fold))
            continue
        for part, count in params.counts().items():
            for chunk, start in enumerate(range(0, count, CHUNK)):
                out.append(Shard(fold, part, start, min(CHUNK, count - start), chunk))
    return out


def shard_rng(seed: int, fold: int, part: str, chunk: int) -> np.random.Generator:
    """The random stream of one chunk: fixed by (seed, fold, part, chunk) alone."""
    return np.random.default_rng(np.random.SeedSequence([seed, fold, PARTS.index(part) + 1, chunk]))


def fill_shard(
    result: SplitResult,
    open_part: Callable[[str, str], PartLoop[T]],
    name: Callable[[T], str],
    max_fails: int,
    shard: Shard,
) -> Iterator[Puzzle]:
    """One chunk of a part into ``result`` (the generator's random stream already set from
    :func:`shard_rng`); raises :class:`GenerationShortfall` when every tuple runs dry."""
    t0 = time.perf_counter()
    yield from _fill_part(
        result, open_part, name, max_fails, shard.part, shard.start, shard.count, t0
    )
    result.seconds += time.perf_counter() - t0


class QuotaGenerator(Generic[T]):
    """The main loop both glyph generators share: every part's quota from one random stream
    (:meth:`run`), or one chunk of a sharded split from its own (:meth:`run_shard`). A subclass
    sets ``params``, ``fold``, ``result``, ``rng`` and ``_seen`` and gives ``_open_part`` (the
    part's :class:`PartLoop`), ``name`` (a tuple's name, as a staticmethod) and ``max_fails``."""

    params: SplitParams
    fold: int
    result: SplitResult
    rng: np.random.Generator
    _seen: set[Any]
    max_fails: int
    #: :attr:`SplitResult.names_unmade` of the results it makes
    names_unmade = True

    @staticmethod
    def name(t: Any) -> str:
        raise NotImplementedError

    def _open_part(self, part: str, side_name: str) -> PartLoop[T]:
        raise NotImplementedError

    def _fresh_stream(self) -> None:
        """Forget the state a random stream carries from draw to draw (a chunk's stream is its
        own, so whether it runs in this process or a pool worker gives the same puzzles)."""

    def run(self) -> Iterator[tuple[int, int]]:
        yield from fill_quotas(self.result, self._open_part, self.name, self.max_fails)

    def run_shard(self, shard: Shard) -> Iterator[tuple[int, int]]:
        """One chunk of a sharded split (:func:`shard_plan`) into a fresh ``result``, drawn
        from the chunk's own random stream; yields (done, count) after each puzzle. The
        generator may make several chunks in turn: its caches hold value-level work only."""
        self.rng = shard_rng(self.params.seed, self.fold, shard.part, shard.chunk)
        self.result = SplitResult(self.params, self.fold, names_unmade=self.names_unmade)
        self._seen = set()
        self._fresh_stream()
        made = fill_shard(self.result, self._open_part, self.name, self.max_fails, shard)
        for done, _ in enumerate(made, 1):
            yield done, shard.count


def merge_shards(base: SplitResult, parts: list[SplitResult]) -> SplitResult:
    """One fold's result from its chunks' results, in plan order: puzzles concatenated,
    rejections and puzzles per tuple summed, dry tuples united (the first chunk's reason), and
    a tuple no chunk made a puzzle of named with them (:func:`declare_unmade`)."""
    for r in parts:
        base.puzzles.extend(r.puzzles)
        base.rejections.update(r.rejections)
        base.produced.update(r.produced)
        for part, dry in r.dry.items():
            into = base.dry.setdefault(part, {})
            for t, why in dry.items():
                into.setdefault(t, why)
        base.made_in |= r.made_in
        for part, per in r.failed.items():
            for t, whys in per.items():
                base.failed.setdefault(part, {}).setdefault(t, Counter()).update(whys)
        base.seconds += r.seconds
    declare_unmade(base)
    return base
