"""Generate, vet and export puzzle splits: the functions the CLI and the GUI both call (no Qt).

A split is generated from the project's annotations *restricted to the glyphs that have an
image* (a puzzle is shown to people and solvers; a glyph that no installed font covers would be
a crossed box on the sheet and a blank frame in the ``.npz``). The annotations of the glyphs
left out cannot matter to any puzzle, since none of them takes part; ``split.json`` records how
many were left out. ``annotations.csv`` in the split holds the rows that were used.

Vetting runs every check of :func:`studio.vet.emergent.vet_puzzle` on every puzzle, with
warnings from image features (:mod:`studio.vet.features`: pseudo-annotations over
``FEATURE_SCHEMA`` computed from each glyph's 80×80 render). An exported split can be vetted
again without the project (:func:`vet_dir`): its ``annotations.csv``, ``schema.json`` and the
frames of its ``.npz`` files hold everything needed.

Long work reports ``progress(done, total)`` and polls ``should_stop()``; a stop raises
:class:`Cancelled`. Nothing here touches the GUI thread; the GUI runs these in a worker.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.core.annotations import TagRow, read_annotation_csv
from studio.core.errors import FontChangedError, StudioError
from studio.core.keys import GlyphKey
from studio.core.procs import pool_context, pool_worker_start, usable_cores
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema, bundled_schema_path, load_schema
from studio.core.splitdir import check_target, read_frames_npz
from studio.core.tagindex import TagIndex
from studio.core.verdict import Verdict
from studio.families.glyph_pmp.export import (
    ANNOTATIONS_CSV,
    FRAME_SIZE,
    NPZ,
    SCHEMA_JSON,
    fold_dirs,
    is_split_entry,
    npz_frame_count,
    read_fold,
    read_split_json,
    write_split,
)
from studio.families.glyph_pmp.split import SplitResult
from studio.generate.params import SplitParams
from studio.generate.request import GenerationRequest
from studio.vet.balance import split_stats
from studio.vet.emergent import vet_puzzle
from studio.vet.questions import perception_questions
from studio.vet.rules import RuleBook

if TYPE_CHECKING:
    from studio.app import Studio
    from studio.store.project import Project

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]
#: ``stage(name, done, total)`` of :func:`generate_and_vet`: ``"generate"`` (puzzles made),
#: then ``"vet"`` (puzzles vetted, before each fold).
StageProgress = Callable[[str, int, int], None]
STAGE_GENERATE = "generate"
STAGE_VET = "vet"


class Cancelled(StudioError):
    """Generation was stopped by the user (``should_stop()`` returned True)."""

    def __init__(self, message: str = "generation was cancelled") -> None:
        super().__init__(message)


# ---- inputs ---------------------------------------------------------------------------------
def annotation_index(project: Project) -> TagIndex:
    """The project's tags as the generator and the checks read them."""
    return TagIndex.from_tags((t.key, t.concept, t.value) for t in project.all_tags())


def glyph_images(
    studio: Studio, keys: Iterable[GlyphKey], size: int = 80
) -> dict[GlyphKey, np.ndarray]:
    """The render (0 ink, 255 paper) of each key that has one; glyphs that are not in the
    project, not covered by any font or without ink are absent. Glyphs never rendered are
    rendered here, one by one, into the render cache; nothing in the project changes, so this
    may run on a worker thread (front ends render a new project with ``Studio.render_all``
    first, as the CLI's ``generate`` does, to use every core)."""
    records = {g.key: g for g in studio.project.glyphs()}
    out: dict[GlyphKey, np.ndarray] = {}
    for k in keys:
        g = records.get(k)
        if g is None or g.status in ("uncovered", "missing"):
            continue
        img = studio.render(g, size)
        if img is not None:
            out[k] = img
    return out


def feature_index(images: Mapping[GlyphKey, np.ndarray]) -> TagIndex:
    """Pseudo-annotations from image features (concepts of ``FEATURE_SCHEMA``)."""
    from studio.vet.features import compute_features_batch, feature_tags

    keys = sorted(images)
    if not keys:
        return TagIndex.from_tags(())
    feats = compute_features_batch(np.stack([np.asarray(images[k]) for k in keys]))
    return TagIndex.from_tags(
        (k, concept, v)
        for k, f in zip(keys, feats, strict=True)
        for concept, values in sorted(feature_tags(f).items())
        for v in sorted(values)
    )


@dataclass
class SplitInputs:
    """What a split is generated from: the annotations of the glyphs with an image."""

    schema: Schema
    annotations: TagIndex
    rows: list[TagRow]
    images: dict[GlyphKey, np.ndarray]
    without_image: list[GlyphKey] = field(default_factory=list)
    #: ``{font id: sha256}`` of the font files the images came from (``split.json`` keeps it)
    fonts: dict[str, str] = field(default_factory=dict)

    def image_of(self, key: GlyphKey) -> np.ndarray | None:
        return self.images.get(key)


def split_inputs(studio: Studio, size: int = 80) -> SplitInputs:
    """Read the project's annotations and render their glyphs (cached renders are reused)."""
    rows = studio.project.tag_rows()
    keys = sorted({r.key for r in rows})
    studio.check_fonts(keys)  # a changed font is named before any work, not halfway
    images = glyph_images(studio, keys, size)
    used = [r for r in rows if r.key in images]
    return SplitInputs(
        fonts=studio.font_manifest(images),
        schema=studio.schema,
        annotations=TagIndex.from_tags((r.key, r.concept, r.value) for r in used),
        rows=used,
        images=images,
        without_image=[k for k in keys if k not in images],
    )


# ---- generation -----------------------------------------------------------------------------
def glyph_families() -> list[str]:
    """The registered families made from a project's annotations (``kind="glyph"``)."""
    from studio.plugins import families

    return [f.id for f in families("glyph")]


def check_params(params: SplitParams) -> None:
    known = glyph_families()
    if params.family not in known:
        raise StudioError(
            f"family {params.family!r} is not made from annotations here; "
            f"available: {', '.join(known)}"
        )


def generate(
    studio: Studio,
    params: SplitParams,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    inputs: SplitInputs | None = None,
) -> list[SplitResult]:
    """Every fold of a split (fold k from ``GlyphPMPGenerator(params, …, fold=k)``, or
    ``AnalogyGenerator`` for the ``analogy`` layout).

    Raises ``GenerationShortfall`` (naming the dry tuples) when the annotations cannot supply
    the puzzles, and :class:`Cancelled` when ``should_stop()`` says so."""
    check_params(params)
    inputs = inputs if inputs is not None else split_inputs(studio)
    return generate_from(inputs.annotations, inputs.schema, params, progress, should_stop)


def generate_from(
    annotations: TagIndex,
    schema: Schema,
    params: SplitParams,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    workers: int | None = None,
) -> list[SplitResult]:
    """``generate`` from annotations and a schema (no project): tests, scripts, benchmarks.

    The work is cut into shards (:func:`~studio.families.glyph_pmp.split.shard_plan`: a fold
    in chunks of a part, each with its own random stream, or a small fold whole) and made over
    ``workers`` processes (default: every core this process may use); results are merged in
    plan order, so a seed gives the same bytes for any number of workers. Small jobs stay in
    this process."""
    return _made(annotations, schema, params, progress, should_stop, workers, None)[0]


def default_workers() -> int:
    """Every core this process may use."""
    return usable_cores()


#: fewer puzzles than this (all folds) are made in this process, whatever ``workers`` says
POOL_MIN = 500


def _made(
    annotations: TagIndex,
    schema: Schema,
    params: SplitParams,
    progress: Progress | None,
    should_stop: ShouldStop | None,
    workers: int | None,
    images: Mapping[GlyphKey, np.ndarray] | None,
) -> tuple[list[SplitResult], list[list[Verdict]] | None]:
    """Every fold's result, and with ``images`` every puzzle's verdict (vetted in the worker
    that made it, with image features of the puzzle's glyphs)."""
    from studio.families.glyph_pmp.split import merge_shards, shard_plan
    from studio.plugins import family

    check_params(params)
    make_fold = family(params.family).load("generator")
    plan = shard_plan(params)
    total = params.n * params.folds
    gens = {}
    for k in range(params.folds):
        if should_stop is not None and should_stop():
            raise Cancelled()
        gens[k] = make_fold(params, annotations, schema, k, perception_questions)
    bases = {k: gen.result for k, gen in gens.items()}  # before any shard replaces it
    if _pooled(params, workers):
        outs = _in_pool(annotations, schema, params, plan, workers, progress, should_stop, images)
    else:
        assert images is None, "in-process work is vetted by the caller"
        outs = _in_process(gens, plan, params, progress, should_stop)
    results: list[SplitResult] = []
    verdicts: list[list[Verdict]] | None = [] if images is not None else None
    for k, base in bases.items():
        mine = [(sh, out) for sh, out in zip(plan, outs, strict=True) if sh.fold == k]
        if len(mine) == 1 and mine[0][0].whole_fold:
            results.append(mine[0][1][0])
        else:
            results.append(merge_shards(base, [r for _, (r, _) in mine]))
        if verdicts is not None:
            verdicts.append([v for _, (_, vs) in mine for v in vs or ()])
    if progress is not None:
        progress(total, total)
    return results, verdicts


ShardOut = tuple[SplitResult, "list[Verdict] | None"]


def _pooled(params: SplitParams, workers: int | None) -> bool:
    """Is this job made over a process pool? Not with one worker, not below ``POOL_MIN``
    puzzles, not when it is one shard."""
    from studio.families.glyph_pmp.split import shard_plan

    n_workers = default_workers() if workers is None else max(1, workers)
    total = params.n * params.folds
    return n_workers > 1 and total >= POOL_MIN and len(shard_plan(params)) > 1


def _in_process(
    gens: Mapping[int, Any],
    plan: Sequence[Any],
    params: SplitParams,
    progress: Progress | None,
    should_stop: ShouldStop | None,
) -> list[ShardOut]:
    total = params.n * params.folds
    outs: list[ShardOut] = []
    before = 0
    for sh in plan:
        gen = gens[sh.fold]
        run = gen.run() if sh.whole_fold else gen.run_shard(sh)
        try:
            for done, _ in run:
                if progress is not None and (sh.whole_fold or done % 50 == 0):
                    progress(before + done, total)
                if should_stop is not None and should_stop():
                    raise Cancelled()
        finally:
            run.close()
        before += sh.count if not sh.whole_fold else params.n
        outs.append((gen.result, None))
    return outs


def _in_pool(
    annotations: TagIndex,
    schema: Schema,
    params: SplitParams,
    plan: Sequence[Any],
    workers: int | None,
    progress: Progress | None,
    should_stop: ShouldStop | None,
    images: Mapping[GlyphKey, np.ndarray] | None,
) -> list[ShardOut]:
    """The plan's shards over a process pool; the annotations, schema and images reach each
    worker once (its initializer). A stop cancels what has not started and waits for the
    shards under way (a chunk: well under a second), so no worker outlives the call."""
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    total = params.n * params.folds
    pool = ProcessPoolExecutor(
        max_workers=min(workers or default_workers(), len(plan)),
        mp_context=_mp_context(),
        initializer=_init_worker,
        initargs=(annotations, schema, dict(images) if images is not None else None),
    )
    try:
        futures: list[Future[ShardOut]] = [
            pool.submit(_make_shard, params, sh, images is not None) for sh in plan
        ]
        pending = set(futures)
        done_n = 0
        while pending:
            finished, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for f in finished:
                f.result()  # a worker's error (a shortfall) is raised here, first come
                sh = plan[futures.index(f)]
                done_n += params.n if sh.whole_fold else sh.count
            if progress is not None and finished:
                progress(min(done_n, total), total)
            if should_stop is not None and should_stop():
                raise Cancelled()
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _mp_context() -> Any:
    # workers fork with the generator already imported
    return pool_context(["studio.splits", "studio.families.glyph_pmp.generator"])


#: a pool worker's inputs (set once by :func:`_init_worker`) and its generators, per fold
_WORKER: dict[str, Any] = {}


def _init_worker(
    annotations: TagIndex, schema: Schema, images: dict[GlyphKey, np.ndarray] | None
) -> None:
    pool_worker_start()
    _WORKER.clear()
    _WORKER.update(
        annotations=annotations,
        schema=schema,
        images=images or {},
        book=RuleBook(schema),
        gens={},
        features={},
    )


def _make_shard(params: SplitParams, shard: Any, vetted: bool) -> ShardOut:
    """One shard in a pool worker: made (and vetted, with ``vetted``) from the worker's inputs."""
    from studio.plugins import family

    w = _WORKER
    gens: dict[tuple[str, int], Any] = w["gens"]
    key = (json.dumps(params.to_json(), sort_keys=True), shard.fold)
    gen = gens.get(key)
    if gen is None:
        make_fold = family(params.family).load("generator")
        gen = gens[key] = make_fold(
            params, w["annotations"], w["schema"], shard.fold, perception_questions
        )
    run = gen.run() if shard.whole_fold else gen.run_shard(shard)
    for _ in run:
        pass
    result = gen.result
    if not vetted:
        return result, None
    return result, vet(
        result.puzzles, w["annotations"], w["book"], _worker_features(result.puzzles), params.strict
    )


def _worker_features(puzzles: Sequence[Puzzle]) -> TagIndex:
    """The image-feature index of these puzzles' glyphs; each glyph's features are computed
    once per worker (they depend on the glyph alone)."""
    from studio.vet.features import compute_features_batch, feature_tags

    memo: dict[GlyphKey, list[tuple[str, str]]] = _WORKER["features"]
    images: Mapping[GlyphKey, np.ndarray] = _WORKER["images"]
    keys = sorted({k for p in puzzles for k in p.all_keys() if k in images})
    new = [k for k in keys if k not in memo]
    if new:
        feats = compute_features_batch(np.stack([np.asarray(images[k]) for k in new]))
        for k, f in zip(new, feats, strict=True):
            memo[k] = [(c, v) for c, vs in sorted(feature_tags(f).items()) for v in sorted(vs)]
    return TagIndex.from_tags((k, c, v) for k in keys for c, v in memo[k])


# ---- vetting --------------------------------------------------------------------------------
def vet(
    puzzles: Sequence[Puzzle],
    annotations: TagIndex,
    schema: Schema | RuleBook,
    features: TagIndex | None = None,
    strict: bool | None = None,
) -> list[Verdict]:
    """``vet_puzzle`` for every puzzle; with ``features`` (see :func:`feature_index`) also the
    warnings of foils that complete a rule over image features; ``strict`` (the split's
    parameter) makes foils completing a rule under a shifted reading errors (``False``:
    warnings)."""
    book = schema if isinstance(schema, RuleBook) else RuleBook(schema)
    fbook = None
    if features is not None:
        from studio.vet.features import FEATURE_SCHEMA

        fbook = RuleBook(FEATURE_SCHEMA)
    return [vet_puzzle(p, annotations, book, features, fbook, strict) for p in puzzles]


def verdict_counts(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    kinds = Counter(f.check for v in verdicts for f in v.errors)
    return {
        "puzzles": len(verdicts),
        "valid": sum(1 for v in verdicts if v.valid),
        "invalid": sum(1 for v in verdicts if not v.valid),
        "with_warnings": sum(1 for v in verdicts if v.warnings),
        "findings": dict(sorted(kinds.items())),
    }


@dataclass
class VettedSplit:
    """Every fold of a generated split with the verdicts of its puzzles (``verdicts[k]`` is
    aligned with ``results[k].puzzles``) and the inputs it was made from."""

    inputs: SplitInputs
    results: list[SplitResult]
    verdicts: list[list[Verdict]]

    @property
    def all_verdicts(self) -> list[Verdict]:
        """The verdicts of all folds, in puzzle order (as ``Curator.import_results`` wants)."""
        return [v for vs in self.verdicts for v in vs]


def generate_and_vet(
    studio: Studio,
    params: SplitParams,
    stage: StageProgress | None = None,
    should_stop: ShouldStop | None = None,
    inputs: SplitInputs | None = None,
    workers: int | None = None,
) -> VettedSplit:
    """Generate every fold and vet every puzzle, with image-feature warnings from the renders
    of the glyphs the puzzles use and the split's ``strict`` setting: the one pipeline behind
    the CLI's ``generate`` (:func:`generate_to_dir`) and the GUI's generation job.

    ``inputs`` are read here unless given (the GUI reads them under its render lock).
    ``stage(name, done, total)`` reports ``"generate"`` as puzzles are made, then ``"vet"``
    before each fold is vetted. Raises :class:`Cancelled` when ``should_stop()`` says so
    (polled per puzzle while generating and before each fold's vetting). ``workers`` processes
    (default: every core) make and vet a large split (:func:`generate_from`), each puzzle
    vetted where it was made; the verdicts are the same as in one process."""
    check_params(params)
    inputs = inputs if inputs is not None else split_inputs(studio)

    def gen_progress(done: int, total: int) -> None:
        if stage is not None:
            stage(STAGE_GENERATE, done, total)

    if _pooled(params, workers):  # made and vetted in the workers
        results, pooled = _made(
            inputs.annotations,
            inputs.schema,
            params,
            gen_progress,
            should_stop,
            workers,
            inputs.images,
        )
        assert pooled is not None
        total = sum(len(r.puzzles) for r in results)
        if stage is not None:
            stage(STAGE_VET, total, total)
        return VettedSplit(inputs, results, pooled)
    results = generate_from(inputs.annotations, inputs.schema, params, gen_progress, should_stop, 1)
    # the features of the glyphs taking part: a glyph's features never depend on other glyphs
    keys = {k for r in results for p in r.puzzles for k in p.all_keys()}
    features = feature_index({k: inputs.images[k] for k in keys if k in inputs.images})
    book = RuleBook(inputs.schema)
    total = sum(len(r.puzzles) for r in results)
    verdicts: list[list[Verdict]] = []
    done = 0
    for r in results:
        if should_stop is not None and should_stop():
            raise Cancelled()
        if stage is not None:
            stage(STAGE_VET, done, total)
        verdicts.append(vet(r.puzzles, inputs.annotations, book, features, params.strict))
        done += len(r.puzzles)
    return VettedSplit(inputs, results, verdicts)


def generate_to_dir(
    studio: Studio,
    params: SplitParams,
    out_dir: str | Path,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    workers: int | None = None,
    require_coverage: int | None = None,
) -> dict[str, Any]:
    """Generate every fold, vet every puzzle, compute the statistics and write the split
    folder. ``progress`` runs over generation, then writing (total = 2 × puzzles). Returns a
    summary: folder, puzzles, verdict counts, rejections, dry tuples and coverage
    (:mod:`studio.vet.coverage`), per fold, and every fold's coverage warnings.

    ``require_coverage``: val and test must each cover at least this many (rule, concept)
    tuples and every requested rule must yield puzzles, or :class:`CoverageShortfall` is
    raised before anything is written (an old split at ``out_dir`` stays)."""
    check_params(params)
    check_target(Path(out_dir), is_split_entry)  # before the work, not after it
    n_all = params.n * params.folds

    def on_stage(name: str, done: int, total: int) -> None:
        if name == STAGE_GENERATE and progress is not None:
            progress(done, 2 * n_all)

    vetted = generate_and_vet(studio, params, on_stage, should_stop, workers=workers)
    covered = split_coverage(vetted.results, require_coverage)
    if require_coverage is not None:
        warnings = _fold_warnings(covered)
        if warnings:
            raise CoverageShortfall(require_coverage, warnings)

    def write_progress(done: int, total: int) -> None:
        if progress is not None:
            progress(n_all + done, 2 * n_all)

    return write_vetted(out_dir, params, vetted, covered, write_progress, should_stop)


def check_split_target(out_dir: str | Path) -> None:
    """Refuse, before any work, a folder that a glyph split may not be written into."""
    check_target(Path(out_dir), is_split_entry)


def _fold_warnings(covered: Sequence[Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    for k, c in enumerate(covered):
        out += [w if len(covered) == 1 else f"fold {k}: {w}" for w in c["warnings"]]
    return out


def write_vetted(
    out_dir: str | Path,
    params: SplitParams,
    vetted: VettedSplit,
    covered: Sequence[Mapping[str, Any]],
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> dict[str, Any]:
    """Write a generated and vetted glyph split's folder (its statistics computed here) and
    return :func:`generate_to_dir`'s summary; ``progress(done, total)`` over the puzzles."""
    check_target(Path(out_dir), is_split_entry)
    inputs, results, verdicts = vetted.inputs, vetted.results, vetted.verdicts
    warnings = _fold_warnings(covered)
    stats = [split_stats(r.puzzles, inputs.annotations, inputs.schema) for r in results]

    def write_progress(done: int, total: int) -> None:
        if should_stop is not None and should_stop():
            raise Cancelled("generation was cancelled; nothing was written (an old split stays)")
        if progress is not None:
            progress(done, total)

    out = write_split(
        out_dir,
        results,
        params,
        inputs.rows,
        inputs.image_of,
        verdicts,
        stats,
        write_progress,
        schema=inputs.schema,
        extra={"glyphs_without_image": len(inputs.without_image), "fonts": inputs.fonts},
    )
    return {
        "out_dir": str(out),
        "puzzles": sum(len(r.puzzles) for r in results),
        "glyphs": len(inputs.images),
        "glyphs_without_image": len(inputs.without_image),
        "folds": [
            {
                "fold": r.fold,
                "puzzles": len(r.puzzles),
                "rejections": dict(sorted(r.rejections.items())),
                "dry_tuples": {k: dict(sorted(v.items())) for k, v in r.dry.items() if v},
                "coverage": c,
                # how far the first row or the incomplete row alone finds the key (issue 24)
                "partial_views": st["all"].get("partial_views", {}),
                **verdict_counts(v),
            }
            for r, v, c, st in zip(results, verdicts, covered, stats, strict=True)
        ],
        "coverage_warnings": warnings,
        **verdict_counts([v for vs in verdicts for v in vs]),
    }


def split_folder(
    request: GenerationRequest,
    studio: Studio | None = None,
    progress: StageProgress | None = None,
    should_stop: ShouldStop | None = None,
) -> dict[str, Any]:
    """Any family's split folder from one request (issue 27: the one pipeline ``generate``
    calls; no front end asks which kind the family is). A family that reads annotations
    generates from ``studio``'s project; the others from their options. ``progress(stage,
    done, total)`` names the stage and its unit (``"generate puzzles"``, ``"write
    puzzles"``, ``"generate items"``). Returns the family's summary with ``lines`` (what to
    tell the user, one fact a line) and ``warnings`` (what should be looked at: coverage
    below the threshold, say)."""

    def stage(name: str) -> Progress | None:
        if progress is None:
            return None
        return lambda done, total: progress(name, done, total)

    from studio.plugins import family

    request = request.check(project=studio is not None)
    if request.out_dir is None:
        raise StudioError("choose an output folder for the split")
    fam = family(request.family)
    if fam.needs_project:
        assert studio is not None  # check() refused a request without one
        from studio.families.glyph_pmp import split_params

        params = split_params(request.options, request.n, request.seed, request.ratios)

        def halves(done: int, total: int) -> None:  # generation, then writing
            if progress is not None:
                half = total // 2
                if done <= half:
                    progress("generate puzzles", done, half)
                else:
                    progress("write puzzles", done - half, half)

        summary = generate_to_dir(
            studio,
            params,
            request.out_dir,
            progress=halves,
            should_stop=should_stop,
            workers=request.workers,
            require_coverage=request.require_coverage,
        )
        return {**summary, **glyph_lines(summary)}
    from studio.stimuli.split import generate_stimulus_split

    summary = generate_stimulus_split(
        fam.id,
        request.out_dir,
        request.n,
        request.seed,
        request.options,
        request.ratios,
        progress=stage("generate items"),
        should_stop=should_stop,
    )
    return {**summary, **item_lines(summary)}


def glyph_lines(summary: Mapping[str, Any]) -> dict[str, list[str]]:
    from studio.vet.coverage import coverage_lines
    from studio.vet.partial import partial_lines, partial_warnings

    lines = [
        f"wrote {summary['puzzles']} puzzles to {summary['out_dir']}: {summary['valid']} valid, "
        f"{summary['invalid']} invalid, {summary['with_warnings']} with image-feature warnings"
    ]
    for fold in summary["folds"]:
        rej = ", ".join(f"{k} {v}" for k, v in fold["rejections"].items()) or "none"
        lines.append(f"fold {fold['fold']}: {fold['puzzles']} puzzles; rejected candidates: {rej}")
        cov = fold["coverage"]
        lines.append(f"  covered: {cov['all']['tuples']} (rule, concept) tuples in all")
        lines += [f"  {line}" for line in coverage_lines(cov)]
        lines += [f"  {line}" for line in partial_lines(fold.get("partial_views") or {})]
    if summary["glyphs_without_image"]:
        lines.append(
            f"{summary['glyphs_without_image']} annotated glyphs have no image and were left out"
        )
    warnings = list(summary["coverage_warnings"])
    for fold in summary["folds"]:
        prefix = f"fold {fold['fold']}: " if len(summary["folds"]) > 1 else ""
        warnings += partial_warnings(fold.get("partial_views") or {}, prefix)
    return {"lines": lines, "warnings": warnings}


def item_lines(summary: Mapping[str, Any]) -> dict[str, list[str]]:
    from studio.vet.partial import partial_lines, partial_warnings

    rej = ", ".join(f"{k} {v}" for k, v in summary["rejections"].items()) or "none"
    lines = [
        f"wrote {summary['items']} {summary['family']} items to {summary['out_dir']}: "
        f"{summary['valid']} valid, {summary['invalid']} invalid; rejected candidates: {rej}"
    ]
    lines += [f"  {line}" for line in partial_lines(summary.get("partial_views") or {})]
    return {"lines": lines, "warnings": partial_warnings(summary.get("partial_views") or {})}


class CoverageShortfall(StudioError):
    """A split that covers too little for ``--require-coverage`` (nothing was written)."""

    def __init__(self, required: int, warnings: Sequence[str]) -> None:
        self.required, self.warnings = required, list(warnings)
        lines = "\n".join(f"  {w}" for w in warnings)
        super().__init__(
            f"the split covers too little for --require-coverage {required}; nothing was "
            f"written:\n{lines}\nAsk for other rules or layouts, --holdout none, or tag the "
            "glyphs `analogy-studio needs` lists."
        )


def split_coverage(
    results: Sequence[SplitResult], min_tuples: int | None = None
) -> list[dict[str, Any]]:
    """Each fold's coverage (:func:`studio.vet.coverage.coverage`) against its parameters."""
    from studio.vet.coverage import DEFAULT_MIN_TUPLES, coverage

    k = DEFAULT_MIN_TUPLES if min_tuples is None else min_tuples
    return [
        coverage(r.puzzles, r.params.counts(), r.params.tested_rules, r.dry, min_tuples=k)
        for r in results
    ]


# ---- re-vetting an exported split ----------------------------------------------------------
def split_schema(folder: Path, data: Mapping[str, Any]) -> Schema:
    """The schema a split was made with: its ``schema.json``, else the bundled schema that
    ``split.json`` names."""
    path = folder / SCHEMA_JSON
    if path.exists():
        return load_schema(path)
    info = data.get("schema") or {}
    name = f"{info.get('id', '')}-{info.get('version', '')}"
    bundled = bundled_schema_path(name)
    if info and bundled.exists():
        return load_schema(bundled)
    raise StudioError(
        "missing, and split.json names no bundled schema "
        f"({name if info else 'no schema recorded'}); cannot vet without the schema",
        path,
    )


def _annotations_of(
    source: Project | Studio | TagIndex | None, folder: Path, schema: Schema
) -> TagIndex:
    if isinstance(source, TagIndex):
        return source
    if source is not None:
        project = getattr(source, "project", source)
        return annotation_index(project)
    path = folder / ANNOTATIONS_CSV
    if not path.exists():
        raise StudioError("missing: the split has no annotation file to vet against", path)
    rows = read_annotation_csv(path, schema)
    return TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)


def _fold_inputs(
    folder: Path, source: Project | Studio | TagIndex | None
) -> tuple[dict[str, Any], list[Puzzle], Schema, TagIndex]:
    """One fold's split.json, puzzles, schema and annotations (its own, or ``source``'s)."""
    data, puzzles = read_fold(folder)
    if source is not None and not isinstance(source, TagIndex):
        schema = getattr(source, "schema", None) or split_schema(folder, data)
    else:
        schema = split_schema(folder, data)
    return data, puzzles, schema, _annotations_of(source, folder, schema)


def frames_of_split(folder: Path, puzzles: Sequence[Puzzle]) -> dict[GlyphKey, np.ndarray]:
    """Each glyph's picture (0 ink, 255 paper) as stored in the split's ``.npz`` files; glyphs
    whose npz is absent (or only blank) are left out."""
    out: dict[GlyphKey, np.ndarray] = {}
    npz_dir = folder / NPZ
    if not npz_dir.is_dir():
        return out
    for p in puzzles:
        keys = (*p.context_keys, *p.answers)
        path = npz_dir / f"{p.id}.npz"
        if not path.exists():
            continue
        # every file is read and checked against its record (shape, dtype, finite, target),
        # even when its glyphs are known already: a damaged or mismatched npz is refused
        images = read_frames_npz(path, npz_frame_count(p), FRAME_SIZE, key=p.key)["images"]
        for k, frame in zip(keys, images[: len(keys)], strict=True):  # then blank answer slots
            if k not in out and frame.any():
                out[k] = np.where(frame > 0, 0, 255).astype(np.uint8)
    return out


def check_split_fonts(
    folder: Path,
    data: Mapping[str, Any],
    source: Project | Studio | TagIndex | None,
) -> None:
    """A split vetted against a project: the fonts its pictures came from (``split.json``'s
    ``fonts``) must be the ones the project renders with now, else the split and the project no
    longer show the same glyphs: :class:`FontChangedError` names the font and the glyphs, unless
    the studio allows a font change. Splits made before fonts were recorded pass."""
    recorded = data.get("fonts")
    if not isinstance(recorded, dict) or isinstance(source, TagIndex) or source is None:
        return
    if getattr(source, "allow_font_change", False):
        return
    project: Project = getattr(source, "project", source)
    now = {f.id: f for f in project.fonts()}
    for font_id, sha in sorted(recorded.items()):
        rec = now.get(font_id)
        if rec is not None and rec.sha256 == sha:
            continue
        glyphs = [g.key for g in project.glyphs() if g.render_font == font_id]
        raise FontChangedError(
            font_id,
            str(sha),
            rec.path if rec is not None else str(folder / "split.json"),
            rec.sha256 if rec is not None else None,
            glyphs,
        )


def vet_dir(
    split_dir: str | Path,
    project_or_annotations: Project | Studio | TagIndex | None = None,
    features: bool = True,
) -> list[Verdict]:
    """Vet an exported split again: from its own ``annotations.csv`` and ``schema.json`` (or
    a project's / an index's current annotations), with image-feature warnings from the
    frames of its ``.npz`` files. With several folds, ids read ``fold-<k>/<id>``. Raises
    StudioError naming the file for a missing or damaged split."""
    folder = Path(split_dir)
    check_split_fonts(folder, read_split_json(folder), project_or_annotations)
    dirs = fold_dirs(folder)
    multi = dirs != [folder]
    out: list[Verdict] = []
    for d in dirs:
        data, puzzles, schema, annotations = _fold_inputs(d, project_or_annotations)
        feats = feature_index(frames_of_split(d, puzzles)) if features else None
        strict = bool(data.get("params", {}).get("strict", False))
        verdicts = vet(puzzles, annotations, schema, feats, strict)
        if multi:
            verdicts = [Verdict(v.findings, f"{d.name}/{v.subject_id}") for v in verdicts]
        out.extend(verdicts)
    return out


def audit_dir(
    split_dir: str | Path, project_or_annotations: Project | Studio | TagIndex | None = None
) -> dict[str, Any]:
    """The answer-set audit (:func:`studio.vet.audit.audit_puzzles`) of an exported split,
    from its own annotations (or a project's / an index's): one audit for a one-fold split,
    ``{"fold-<k>": audit}`` for several folds (each fold is a split of its own)."""
    from studio.vet.audit import audit_puzzles
    from studio.vet.partial import partial_views

    folder = Path(split_dir)
    read_split_json(folder)
    dirs = fold_dirs(folder)
    out: dict[str, Any] = {}
    for d in dirs:
        _, puzzles, schema, annotations = _fold_inputs(d, project_or_annotations)
        out[d.name] = audit_puzzles(puzzles, annotations)
        views = partial_views(puzzles, annotations, RuleBook(schema))
        if views["views"]:
            out[d.name]["partial_views"] = views
    return out[dirs[0].name] if dirs == [folder] else out


__all__ = [
    "STAGE_GENERATE",
    "STAGE_VET",
    "Cancelled",
    "SplitInputs",
    "StageProgress",
    "VettedSplit",
    "annotation_index",
    "audit_dir",
    "check_params",
    "feature_index",
    "frames_of_split",
    "generate",
    "generate_and_vet",
    "generate_from",
    "generate_to_dir",
    "glyph_families",
    "glyph_images",
    "split_inputs",
    "split_schema",
    "verdict_counts",
    "vet",
    "vet_dir",
]
