"""Export a curated puzzle set of a project as a benchmark folder.

The folder is a split exactly as ``analogy-studio generate`` writes one — the writer is the
same (:func:`studio.families.glyph_pmp.export.write_split`): ``puzzles.jsonl``, ``sheets/``,
``npz/`` (UA's arrays), ``annotations.csv``, ``schema.json``, ``report.json``, ``split.json`` —
so ``vet``, ``baseline`` and every UA loader read it unchanged. On top of it:

- each line of ``puzzles.jsonl`` carries ``curation``: the puzzle's status, its reviewer (who
  set that status), its comment and the comments written over time, the foils replaced and the
  regenerations still in force, and the whole curation log of the puzzle (undos included);
- ``README.md``: the dataset card (:mod:`studio.publish.card`);
- ``croissant.json``: ML Commons Croissant 1.0 metadata (:mod:`studio.publish.croissant`);
- ``records.parquet``: one row per puzzle (:mod:`studio.publish.parquet`).

Only puzzles of the chosen status are exported (``approved`` by default; ``any`` for all).
**Every exported puzzle is vetted again** against the project's *current* annotations (of the
glyphs with an image, as generation reads them) and schema, with the set's ``strict`` setting
and image-feature warnings, by the same :func:`studio.splits.vet` as ``generate``: a tag
changed since the puzzle was approved may have made it ambiguous. A puzzle that no longer
passes refuses the export (:class:`ExportRefused` names each one and why) unless
``drop_invalid``, which leaves it out and lists it (in the summary and in the card).

Nothing is half-written: the folder is built in a hidden staging folder beside ``out_dir`` and
moved into place at the end; an error or a cancel removes the staging folder. ``out_dir`` must be
a new or an empty folder.

Qt-free: the CLI calls :func:`export_set` directly, the GUI on a worker thread (it passes its
render ``lock`` so that no other view renders glyphs at the same time). ``progress(stage, done,
total)`` reports the stages ``read``, ``vet``, ``write``, ``card``; ``should_stop()`` is polled
between units and a stop raises :class:`studio.splits.Cancelled`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio import __version__
from studio.core.annotations import TagRow, format_annotation_csv
from studio.core.errors import StudioError
from studio.core.fileio import atomic_write_text, staging_area
from studio.core.puzzle import Puzzle
from studio.core.splitdir import check_target
from studio.core.verdict import Verdict
from studio.curation import STATUSES
from studio.families.glyph_pmp.export import PUZZLES, write_split
from studio.families.glyph_pmp.split import SplitResult
from studio.generate.params import SplitParams
from studio.publish.info import DatasetInfo
from studio.splits import Cancelled, feature_index, glyph_families, split_inputs, vet
from studio.stimuli.split import stimulus_families
from studio.vet.audit import audit_lines
from studio.vet.balance import split_stats

if TYPE_CHECKING:
    from studio.app import Studio
    from studio.store.project import Project, PuzzleEvent, PuzzleSetRecord, StoredPuzzle

#: ``status`` that exports every puzzle of the set, whatever its status
STATUS_ANY = "any"
STAGE_READ = "read"
STAGE_VET = "vet"
STAGE_WRITE = "write"
STAGE_CARD = "card"
STAGE_TEXT = {
    STAGE_READ: "Reading the set and the annotations…",
    STAGE_VET: "Vetting every puzzle again…",
    STAGE_WRITE: "Writing sheets and arrays…",
    STAGE_CARD: "Writing the dataset card, Croissant and Parquet…",
}
#: puzzles vetted between two progress reports (and stop polls)
VET_CHUNK = 250
#: invalid puzzles named in the refusal's message (all of them are in ``rejected``)
SHOWN_IN_MESSAGE = 12

ExportProgress = Callable[[str, int, int], None]
ShouldStop = Callable[[], bool]


@dataclass(frozen=True)
class Rejected:
    """A puzzle that fails vetting against the current annotations and schema, and why."""

    puzzle_id: str
    reasons: tuple[str, ...]

    def line(self) -> str:
        return f"{self.puzzle_id}: {'; '.join(self.reasons)}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.puzzle_id, "reasons": list(self.reasons)}


class ExportRefused(StudioError):
    """Some puzzles to export no longer pass vetting; nothing was written. ``rejected`` names
    every one of them with its reasons."""

    def __init__(self, set_name: str, rejected: Sequence[Rejected]) -> None:
        self.rejected = tuple(rejected)
        n = len(self.rejected)
        lines = "\n".join(f"  {r.line()}" for r in self.rejected[:SHOWN_IN_MESSAGE])
        if n > SHOWN_IN_MESSAGE:
            lines += f"\n  … and {n - SHOWN_IN_MESSAGE} more"
        what = "1 puzzle" if n == 1 else f"{n} puzzles"
        super().__init__(
            f"{what} of “{set_name}” no longer pass vetting against the project's current "
            "annotations and schema, so nothing was exported (fix them on the curator's "
            f"board, or leave them out with --drop-invalid):\n{lines}"
        )


@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export_set` wrote."""

    out_dir: Path
    set_id: int
    set_name: str
    status: str
    exported: int
    dropped: tuple[Rejected, ...] = ()
    with_warnings: int = 0
    annotation_hash: str = ""
    counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: the answer-set audit's findings over the exported puzzles (:func:`audit_lines`): a
    #: key rate per value that is off, answers that share values unevenly, key positions
    audit_findings: tuple[str, ...] = ()
    license: str = ""

    def warnings(self) -> list[str]:
        """What the person exporting should know before sharing it: an answer-set audit
        that is off (the card says so too, where nobody reads it first) and no licence."""
        out = []
        if self.audit_findings:
            out.append(
                "the exported puzzles' answer sets are not balanced, so a model that sees the "
                "answers alone may beat chance: "
                + "; ".join(line.strip() for line in self.audit_findings)
            )
        if not self.license:
            out.append(
                "no licence given: others cannot know what they may do with the set (give "
                "one, e.g. CC-BY-4.0)"
            )
        return out

    def message(self) -> str:
        """One paragraph for a person: what went where, and what was left out."""
        what = "puzzle" if self.exported == 1 else "puzzles"
        status = "" if self.status == STATUS_ANY else f"{self.status} "
        text = f"Exported {self.exported} {status}{what} of “{self.set_name}” to {self.out_dir}."
        if self.dropped:
            text += (
                f" Left out {len(self.dropped)} that no longer pass vetting: "
                + ", ".join(r.puzzle_id for r in self.dropped)
                + "."
            )
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "out_dir": str(self.out_dir),
            "set_id": self.set_id,
            "set_name": self.set_name,
            "audit_findings": list(self.audit_findings),
            "license": self.license,
            "status": self.status,
            "exported": self.exported,
            "dropped": [r.to_json() for r in self.dropped],
            "with_warnings": self.with_warnings,
            "annotation_hash": self.annotation_hash,
            "counts": {k: dict(v) for k, v in self.counts.items()},
        }


# ---- which set -----------------------------------------------------------------------------
def find_set(project: Project, spec: str | int) -> PuzzleSetRecord:
    """The puzzle set named ``spec``: its id (``3``) or its exact name. StudioError listing the
    sets there are otherwise."""
    sets = project.puzzle_sets()
    text = str(spec).strip()
    if text.isdigit():
        for s in sets:
            if s.id == int(text):
                return s
    named = [s for s in sets if s.name == text]
    if len(named) == 1:
        return named[0]
    if not sets:
        raise StudioError("the project has no puzzle sets; generate a split on the board first")
    listing = "; ".join(f"{s.id}: {s.name} ({s.count} puzzles)" for s in sets)
    if named:
        raise StudioError(f"several puzzle sets are named {text!r}; give the id ({listing})")
    raise StudioError(f"the project has no puzzle set {text!r}; its sets are {listing}")


# ---- curation history --------------------------------------------------------------------
def _events_by_puzzle(events: Sequence[PuzzleEvent]) -> dict[str, list[PuzzleEvent]]:
    out: dict[str, list[PuzzleEvent]] = {}
    for e in events:
        if e.puzzle_id:
            out.setdefault(e.puzzle_id, []).append(e)
    return out


def _event_json(e: PuzzleEvent) -> dict[str, Any]:
    detail = dict(e.detail)
    if isinstance(detail.get("old"), dict):  # a regenerated puzzle's whole old record
        detail["old"] = {"id": detail["old"].get("id"), "answers": detail["old"].get("answers")}
    return {"at": e.at, "author": e.author, "kind": e.kind, "detail": detail}


def curation_record(stored: StoredPuzzle, events: Sequence[PuzzleEvent]) -> dict[str, Any]:
    """A puzzle's curation history as exported: ``status``; ``reviewer`` and ``reviewed_at``
    (who set the current status, and when: the last status event that set it; the import's
    author for a puzzle never decided); ``comment`` (the current one) and ``comments`` (every
    comment written, oldest first); ``replaced_foils`` and ``regenerated`` (the edits still in
    force: an undone edit is taken back off, a redone one put back); ``history`` (every log
    entry of the puzzle, oldest first)."""
    reviewer, reviewed_at = "", ""
    comments: list[dict[str, Any]] = []
    foils: list[dict[str, Any]] = []
    regenerated: list[dict[str, Any]] = []
    for e in events:
        d = e.detail
        undo = bool(d.get("undo"))
        if e.kind == "status" and d.get("new") == stored.status:
            reviewer, reviewed_at = e.author, e.at
        elif e.kind == "status":
            reviewer, reviewed_at = "", ""
        text = d.get("comment") if e.kind == "status" else d.get("new")
        if e.kind in ("status", "comment") and not undo and isinstance(text, str) and text:
            comments.append({"at": e.at, "author": e.author, "text": text})
        if e.kind == "replace-foil":
            if undo:
                if foils:
                    foils.pop()
            else:
                foils.append(
                    {
                        "answer": d.get("answer"),
                        "old": d.get("old"),
                        "new": d.get("new"),
                        "at": e.at,
                        "author": e.author,
                    }
                )
        elif e.kind == "regenerate":
            if undo:
                if regenerated:
                    regenerated.pop()
            else:
                regenerated.append({"seed": d.get("seed"), "at": e.at, "author": e.author})
    if not reviewer and stored.status in ("approved", "rejected"):
        reviewer, reviewed_at = stored.author, stored.updated_at
    return {
        "status": stored.status,
        "reviewer": reviewer,
        "reviewed_at": reviewed_at,
        "comment": stored.comment,
        "comments": comments,
        "replaced_foils": foils,
        "regenerated": regenerated,
        "history": [_event_json(e) for e in events],
    }


def exported_line(puzzle: Puzzle, curation: Mapping[str, Any]) -> str:
    """One line of the export's ``puzzles.jsonl``: the puzzle record (as ``Puzzle.dumps``:
    sorted keys, no spaces, ASCII) with its ``curation``."""
    record = puzzle.to_json()
    record["curation"] = dict(curation)
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def human_results(project: Any, set_id: int, kept: Sequence[Puzzle]) -> dict[str, Any] | None:
    """People's accuracy on the exported puzzles (issue 29): from the pilots stored for the
    set, per rule, per concept, per family and overall, with each puzzle's answer count and
    the pilots' participants kept and excluded; None when no pilot has answers for them."""
    from studio.baselines.metrics import wilson_interval

    per_puzzle = project.human_accuracy(set_id)
    shown = [p for p in kept if p.id in per_puzzle]
    if not shown:
        return None

    def row(ps: Sequence[Puzzle]) -> dict[str, Any]:
        right = sum(per_puzzle[p.id][0] for p in ps)
        n = sum(per_puzzle[p.id][1] for p in ps)
        lo, hi = wilson_interval(right / n, n)
        return {"n": n, "puzzles": len(ps), "accuracy": right / n, "ci95": [lo, hi]}

    groups: dict[str, dict[str, list[Puzzle]]] = {"rule": {}, "concept": {}, "family": {}}
    for p in shown:
        groups["rule"].setdefault(p.rule, []).append(p)
        groups["concept"].setdefault(p.concept, []).append(p)
        groups["family"].setdefault(p.family, []).append(p)
    pilots = [x for x in project.pilots() if x["set_id"] == set_id]
    return {
        "overall": row(shown),
        **{k: {name: row(ps) for name, ps in sorted(g.items())} for k, g in groups.items()},
        "pilots": pilots,
    }


# ---- provenance ----------------------------------------------------------------------------
def annotation_hash(rows: Sequence[TagRow]) -> str:
    """sha256 over the sorted annotations: the data lines of ``annotations.csv`` (its header
    left out), sorted, each ending in a newline — recomputable from the export itself."""
    lines = sorted(format_annotation_csv(rows).splitlines()[1:])
    return hashlib.sha256("".join(line + "\n" for line in lines).encode("utf-8")).hexdigest()


def baseline_results(project: Project, set_id: int) -> dict[str, Any] | None:
    """The newest finished baseline job the project ran on this set (the Baselines tab's
    jobs): its accuracies per model, chance, part, seeds, device and date; None when none
    ran. Read from the project's job queue; a queue that cannot be read gives None."""
    try:
        jobs = project.jobs.jobs()
    except (StudioError, OSError):
        return None
    for job in jobs:  # newest first
        if job.kind != "baseline" or job.status != "done" or not isinstance(job.result, dict):
            continue
        report = job.result
        flags = report.get("puzzle_flags") or {}
        source = (job.params or {}).get("source") or {}
        ran_on = flags.get("set_id", source.get("set_id"))
        if ran_on is None or int(ran_on) != set_id:
            continue
        models = report.get("models") or {}
        return {
            "job": job.id,
            "finished_at": job.finished_at,
            "device": report.get("device", job.device),
            "eval_part": report.get("eval_part"),
            "seeds": report.get("seeds"),
            "chance": report.get("chance"),
            "accuracy": {
                m: e.get("overall", {}).get("accuracy") for m, e in sorted(models.items())
            },
            "ci95": {m: e.get("overall", {}).get("ci95") for m, e in sorted(models.items())},
            # per rule, concept and family: each model's accuracy (the card sets people's
            # beside them, as UA's Tables 1-4 do)
            "groups": {
                by: {
                    value: {m: (e.get("groups") or {}).get(by, {}).get(value, {}).get("accuracy")
                            for m, e in sorted(models.items())}
                    for value in sorted(
                        {v for e in models.values() for v in (e.get("groups") or {}).get(by, {})}
                    )
                }
                for by in ("family", "rule", "concept")
            },
            "flagged_puzzles": len({f.get("id") for f in flags.get("flags", [])}),
        }  # fmt: skip
    return None


# ---- the export --------------------------------------------------------------------------
def _check_status(status: str) -> None:
    if status != STATUS_ANY and status not in STATUSES:
        raise StudioError(f"unknown status {status!r}; one of {', '.join(STATUSES)} or any")


def _check_family(rec: PuzzleSetRecord) -> str:
    from studio.plugins import default_family, registry

    named = rec.params.get("family")  # none in a set recorded before sets named it
    family = default_family().id if named is None else str(named)
    if family in stimulus_families():
        return family
    if family not in registry("families"):
        raise StudioError(
            f"puzzle set “{rec.name}” is of family {family[:80]!r}, which this studio does not "
            "have (a plugin not installed here?)"
        )
    if family not in glyph_families():
        raise StudioError(
            f"puzzle set “{rec.name}” is of family {family!r}; only curated sets of the glyph "
            f"families ({', '.join(glyph_families())}) are stored in a project to export"
        )
    return family


def _check_stop(should_stop: ShouldStop | None) -> None:
    if should_stop is not None and should_stop():
        raise Cancelled("export was cancelled; nothing was written")


def _vet_all(
    puzzles: Sequence[Puzzle],
    inputs: Any,
    strict: bool,
    progress: ExportProgress | None,
    should_stop: ShouldStop | None,
) -> list[Verdict]:
    from studio.vet.rules import RuleBook

    keys = {k for p in puzzles for k in p.all_keys()}
    features = feature_index({k: inputs.images[k] for k in keys if k in inputs.images})
    book = RuleBook(inputs.schema)
    verdicts: list[Verdict] = []
    for start in range(0, len(puzzles), VET_CHUNK):
        _check_stop(should_stop)
        chunk = puzzles[start : start + VET_CHUNK]
        verdicts.extend(vet(chunk, inputs.annotations, book, features, strict))
        if progress is not None:
            progress(STAGE_VET, len(verdicts), len(puzzles))
    return verdicts


def export_set(
    studio: Studio,
    set_spec: str | int,
    out_dir: str | Path,
    *,
    status: str = "approved",
    drop_invalid: bool = False,
    progress: ExportProgress | None = None,
    should_stop: ShouldStop | None = None,
    lock: contextlib.AbstractContextManager[Any] | None = None,
    info: DatasetInfo | None = None,
) -> ExportSummary:
    """Export the puzzles of one status of a curated set (``set_spec``: id or name) to
    ``out_dir`` (a new or empty folder), re-vetted (see the module docstring). Returns what was
    written; raises :class:`ExportRefused` (nothing written) when a puzzle fails vetting and
    not ``drop_invalid``, StudioError for a set, status or folder that will not do, and
    :class:`studio.splits.Cancelled` when ``should_stop()`` says so. ``info``: the licence,
    authors, description and citation the card and Croissant carry (:mod:`.info`)."""
    from studio.publish.card import write_card
    from studio.publish.croissant import write_croissant
    from studio.publish.parquet import write_parquet

    project = studio.project
    _check_status(status)
    rec = find_set(project, set_spec)
    family = _check_family(rec)
    out = Path(out_dir).expanduser()
    check_target(out)  # a new or empty folder, before any work
    stimulus = family in stimulus_families()
    if progress is not None:
        progress(STAGE_READ, 0, 0)
    stored = project.stored_puzzles(rec.id, status=None if status == STATUS_ANY else status)
    if not stored:
        which = "" if status == STATUS_ANY else f"{status} "
        noun = "items" if stimulus else "puzzles"
        raise StudioError(f"puzzle set “{rec.name}” has no {which}{noun} to export")
    history = _events_by_puzzle(project.puzzle_events(rec.id))
    if stimulus:
        return _export_stimulus_set(
            studio, rec, stored, history, out, status, drop_invalid, progress, should_stop, info
        )
    with lock if lock is not None else contextlib.nullcontext():
        inputs = split_inputs(studio)
    _check_stop(should_stop)

    puzzles = [Puzzle.from_json(s.record) for s in stored]
    set_params = {k: v for k, v in rec.params.items() if k != "fold"}
    try:
        params = SplitParams.from_json(set_params)
    except (StudioError, TypeError, ValueError) as e:
        raise StudioError(f"puzzle set “{rec.name}” has unreadable parameters: {e}") from None
    verdicts = _vet_all(puzzles, inputs, params.strict, progress, should_stop)
    rejected = [
        Rejected(p.id, tuple(f.message() for f in v.errors))
        for p, v in zip(puzzles, verdicts, strict=True)
        if not v.valid
    ]
    if rejected and not drop_invalid:
        raise ExportRefused(rec.name, rejected)
    keep = [i for i, v in enumerate(verdicts) if v.valid]
    if not keep:
        raise StudioError(f"no puzzle of “{rec.name}” is left to export: all fail vetting")
    kept = [puzzles[i] for i in keep]
    kept_verdicts = [verdicts[i] for i in keep]
    curation = {
        stored[i].puzzle_id: curation_record(stored[i], history.get(stored[i].puzzle_id, []))
        for i in keep
    }

    fold = int(rec.params.get("fold", 0))
    result = SplitResult(
        params,
        fold,
        kept,
        rejections=Counter({str(k): int(v) for k, v in rec.summary.get("rejections", {}).items()}),
        dry={str(k): dict(v) for k, v in rec.summary.get("dry_tuples", {}).items()},
    )
    stats = split_stats(kept, inputs.annotations, inputs.schema)
    digest = annotation_hash(inputs.rows)
    provenance = _provenance(studio, rec, family, status, info) | {
        "exported": len(kept),
        "dropped": [r.to_json() for r in rejected],
        "schema": {"id": inputs.schema.id, "version": inputs.schema.version},
        "annotation_hash": digest,
    }

    with _built(out, should_stop) as staging:

        def write_progress(done: int, total: int) -> None:
            _check_stop(should_stop)
            if progress is not None:
                progress(STAGE_WRITE, done, total)

        write_split(
            staging,
            [result],
            params,
            inputs.rows,
            inputs.image_of,
            [kept_verdicts],
            [stats],
            write_progress,
            schema=inputs.schema,
            extra={"curated": provenance, "glyphs_without_image": len(inputs.without_image)},
        )
        _check_stop(should_stop)
        if progress is not None:
            progress(STAGE_CARD, 0, 3)
        lines = [exported_line(p, curation[p.id]) for p in kept]
        atomic_write_text(staging / PUZZLES, "".join(line + "\n" for line in lines))
        write_parquet(staging, kept, [curation[p.id] for p in kept], lines)
        if progress is not None:
            progress(STAGE_CARD, 1, 3)
        baselines = baseline_results(project, rec.id)
        provenance["human"] = human_results(project, rec.id, kept)
        write_card(staging, kept, kept_verdicts, stats, params, provenance, baselines)
        if progress is not None:
            progress(STAGE_CARD, 2, 3)
        write_croissant(staging, provenance, len(kept))
        if progress is not None:
            progress(STAGE_CARD, 3, 3)
    return _summary(out, rec, status, stats, rejected, kept_verdicts, digest, info)


def _summary(
    out: Path,
    rec: PuzzleSetRecord,
    status: str,
    stats: Mapping[str, Any],
    rejected: Sequence[Rejected],
    verdicts: Sequence[Verdict],
    digest: str,
    info: DatasetInfo | None,
) -> ExportSummary:
    """What an export wrote (either kind of set), for the CLI and the dialog."""
    counts = stats["all"]
    audit = counts.get("audit")
    return ExportSummary(
        out_dir=out,
        set_id=rec.id,
        set_name=rec.name,
        status=status,
        exported=len(verdicts),
        dropped=tuple(rejected),
        with_warnings=sum(1 for v in verdicts if v.warnings),
        annotation_hash=digest,
        counts={
            "rule": dict(counts.get("per_rule", {})),
            "concept": dict(counts.get("per_concept", {})),
            "layout": dict(counts.get("per_layout", {})),
        },
        audit_findings=tuple(audit_lines(audit, only_findings=True)) if audit else (),
        license=(info or DatasetInfo()).license,
    )


def _provenance(
    studio: Studio, rec: PuzzleSetRecord, family: str, status: str, info: DatasetInfo | None
) -> dict[str, Any]:
    project = studio.project
    return {
        "studio_version": __version__,
        "project": (
            {"name": project.location.rsplit("/", 1)[-1], "path": project.location}
            if project.is_database
            else {"name": project.path.name, "path": str(project.path.resolve())}
        ),
        "set": {
            "id": rec.id,
            "name": rec.name,
            "created_at": rec.created_at,
            "author": rec.author,
            "puzzles": rec.count,
        },
        "family": family,
        "status": status,
        "exported_by": studio.author,
        "dataset": (info or DatasetInfo()).to_json(),
    }


def _export_stimulus_set(
    studio: Studio,
    rec: PuzzleSetRecord,
    stored: Sequence[StoredPuzzle],
    history: Mapping[str, Sequence[PuzzleEvent]],
    out: Path,
    status: str,
    drop_invalid: bool,
    progress: ExportProgress | None,
    should_stop: ShouldStop | None,
    info: DatasetInfo | None,
) -> ExportSummary:
    """A curated stimulus set (issue 27) as the split folder ``generate`` writes for its
    family — ``items.jsonl``, ``sheets/``, ``images/``, ``report.json``, ``split.json``, read
    unchanged by ``vet`` and ``baseline`` — plus the curation (``puzzles.jsonl``), the card,
    Croissant and Parquet. Every item is re-drawn from its record by its family and vetted
    again by its family's checks: a record changed in the project since it was approved, or a
    studio whose drawing changed, is caught here."""
    from studio.core.fileio import sync_tree
    from studio.curation import stimulus_stats
    from studio.plugins import family as family_of
    from studio.publish.card import README, stimulus_card_text
    from studio.publish.croissant import write_croissant
    from studio.publish.parquet import stimulus_table, write_parquet
    from studio.stimuli.items import StimulusItem, StimulusPuzzle
    from studio.stimuli.split import (
        ITEMS,
        REPORT_JSON,
        STIMULUS_SPLIT,
        _write_item,
        render_record,
    )
    from studio.stimuli.symbolic import audit_stimulus_records

    project = studio.project
    family = str(rec.params.get("family"))
    fam = family_of(family)
    vet_record = fam.load("vet_record")
    # a family whose vetting renders gives its pictures with its verdict: drawn once
    both = fam.load("vet_render_record") if fam.vet_render_record is not None else None
    drawn: list[tuple[dict[str, Any], Verdict, Any, Any]] = []
    for i, s in enumerate(stored):
        _check_stop(should_stop)
        record = {k: v for k, v in s.record.items() if k != "verdict"}
        StimulusPuzzle.from_record(record)  # plain names, a family here, a record it reads
        if record.get("id") != s.puzzle_id:
            raise StudioError(f"item {s.puzzle_id}: its record is of another item ({record['id']})")
        try:
            if both is not None:
                verdict, images, sheet = both(record)
            else:
                verdict = vet_record(record)
                images, sheet = render_record(record)
        except StudioError:
            raise
        except Exception as e:  # a damaged record: named, never an internal error
            raise StudioError(
                f"item {s.puzzle_id}: its {family} record cannot be vetted or drawn "
                f"({type(e).__name__}: {e})"
            ) from None
        drawn.append((record, verdict, images, sheet))
        if progress is not None:
            progress(STAGE_VET, i + 1, len(stored))
    rejected = [
        Rejected(str(r["id"]), tuple(f.message() for f in v.errors))
        for r, v, _, _ in drawn
        if not v.valid
    ]
    if rejected and not drop_invalid:
        raise ExportRefused(rec.name, rejected)
    keep = [i for i, (_, v, _, _) in enumerate(drawn) if v.valid]
    if not keep:
        raise StudioError(f"no item of “{rec.name}” is left to export: all fail their checks")
    records = [{**drawn[i][0], "verdict": drawn[i][1].to_item_json()} for i in keep]
    items = [StimulusPuzzle.from_record(r) for r in records]
    verdicts = [drawn[i][1] for i in keep]
    curation = {
        stored[i].puzzle_id: curation_record(stored[i], history.get(stored[i].puzzle_id, []))
        for i in keep
    }
    stats = stimulus_stats(items)
    provenance = _provenance(studio, rec, family, status, info)
    provenance |= {
        "kind": "stimulus",
        "exported": len(items),
        "dropped": [r.to_json() for r in rejected],
        "schema": {"id": project.schema.id, "version": project.schema.version},
        "annotation_hash": "",
        "generation": {k: v for k, v in rec.params.items() if k != "fold"},
    }
    with _built(out, should_stop) as staging:
        for n, i in enumerate(keep):
            _check_stop(should_stop)
            record, verdict, images, sheet = drawn[i]
            _write_item(
                staging,
                StimulusItem(str(record["id"]), family, record, images, sheet, verdict),
            )
            if progress is not None:
                progress(STAGE_WRITE, n + 1, len(keep))
        ordered = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in records]
        atomic_write_text(staging / ITEMS, "".join(line + "\n" for line in ordered))
        lines = [
            json.dumps(
                {**r, "curation": curation[str(r["id"])]},
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=True,
            )
            for r in records
        ]
        atomic_write_text(staging / PUZZLES, "".join(line + "\n" for line in lines))
        audit = audit_stimulus_records(family, records)
        report: dict[str, Any] = {
            "family": family,
            "items": len(records),
            "parts": {p: stats[p]["puzzles"] for p in ("train", "val", "test")},
        }
        if audit is not None:
            report["audit"] = audit
        STIMULUS_SPLIT.write_json(staging / REPORT_JSON, report)
        if progress is not None:
            progress(STAGE_CARD, 0, 3)
        write_parquet(
            staging,
            items,
            [curation[p.id] for p in items],
            lines,
            table=stimulus_table(items, [curation[p.id] for p in items], lines),
        )
        baselines = baseline_results(project, rec.id)
        provenance["human"] = human_results(project, rec.id, items)  # type: ignore[arg-type]
        atomic_write_text(
            staging / README,
            stimulus_card_text(items, verdicts, stats, provenance, baselines),
        )
        if progress is not None:
            progress(STAGE_CARD, 2, 3)
        write_croissant(staging, provenance, len(items))
        meta = {
            "family": family,
            "options": dict(rec.params.get("options") or {}),
            "n": len(records),
            "seed": rec.params.get("seed"),
            "ratios": list(rec.params.get("ratios") or []),
            "studio_version": __version__,
            "summary": report,
            "curated": provenance,
        }
        sync_tree(staging)  # the pictures were written plainly: durable before split.json
        STIMULUS_SPLIT.finish(staging, meta)
        if progress is not None:
            progress(STAGE_CARD, 3, 3)
    return _summary(out, rec, status, stats, rejected, verdicts, "", info)


@contextlib.contextmanager
def _built(out: Path, should_stop: ShouldStop | None) -> Iterator[Path]:
    """A staging folder beside ``out`` to write the export into, moved into place when the
    block ends well (a last stop check first); removed on an error or a cancel, so nothing
    is half-written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with staging_area(out.parent, f".{out.name}.", ".export") as staging:
        try:
            yield staging
            _check_stop(should_stop)
            _move_into_place(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _move_into_place(staging: Path, out: Path) -> None:
    """Put the finished staging folder at ``out`` (which may be an empty folder)."""
    if out.exists():
        check_target(out)  # still empty?
        out.rmdir()
    os.replace(staging, out)


__all__ = [
    "STAGE_TEXT",
    "STATUS_ANY",
    "ExportRefused",
    "ExportSummary",
    "Rejected",
    "annotation_hash",
    "baseline_results",
    "curation_record",
    "export_set",
    "exported_line",
    "find_set",
]
