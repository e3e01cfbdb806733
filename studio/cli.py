"""``analogy-studio``: the headless twin of every studio action.

Errors a person can fix (bad files, unknown concepts, damaged projects) print one clear message
to stderr and exit with status 2; ``gui`` opens the window.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio import __version__
from studio.core.errors import StudioError

if TYPE_CHECKING:
    from studio.core.agreement import AgreementReport
    from studio.core.family import Family, Option
    from studio.core.progress import ProgressReporter
    from studio.generate.params import SplitParams

EXIT_USER_ERROR = 2
#: an unexpected exception: a bug, its traceback saved (see ``main``)
EXIT_BUG = 1
#: Environment variable: seconds between progress lines when stderr is not a terminal.
PROGRESS_INTERVAL_ENV = "ANALOGY_STUDIO_PROGRESS_INTERVAL"


def _reporter(args: argparse.Namespace, task: str, unit: str = "") -> ProgressReporter:
    """Progress on stderr: a line rewritten in place on a terminal, else one line every few
    seconds (``generate: 4,000/10,000 puzzles, 12 s left``); nothing with ``--quiet``."""
    import os

    from studio.core.progress import DEFAULT_INTERVAL, ProgressReporter

    try:  # seconds between lines off a terminal (tests and CI logs may want another pace)
        interval = float(os.environ.get(PROGRESS_INTERVAL_ENV) or DEFAULT_INTERVAL)
    except ValueError:
        interval = DEFAULT_INTERVAL
    return ProgressReporter(task, unit, quiet=args.quiet, interval=interval)


def _render_pending(studio: Any, args: argparse.Namespace) -> None:
    """Render the project's glyphs that have no image yet, with progress (glyphs)."""
    report = _reporter(args, "render", "glyphs")
    for done, total in studio.render_all():
        report.update(done, total)


def _open_studio(path: str, allow_font_change: bool = False):
    from studio.app import Studio
    from studio.store.project import Project

    studio = Studio(Project.open(path), author=_author())
    studio.allow_font_change = allow_font_change
    return studio


_FONT_CHANGE_HELP = (
    "render with the fonts installed now even where they are not the files the project "
    "recorded (the splits then differ from earlier ones)"
)


def _author() -> str:
    import getpass
    import os

    return os.environ.get("ANALOGY_STUDIO_AUTHOR") or getpass.getuser()


def cmd_init(args: argparse.Namespace) -> int:
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.dbfile import safe_location
    from studio.store.project import Project

    schema = load_schema(args.schema or bundled_schema_path())
    Project.create(args.project, schema, author=_author(), overwrite=args.force).close()
    print(f"created {safe_location(args.project)} with schema {schema.id} {schema.version}")
    return 0


def cmd_copy(args: argparse.Namespace) -> int:
    from studio.store.copy import copy_project

    report = copy_project(args.source, args.target)
    if not args.quiet:
        print("\n".join(report.lines()))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    with _open_studio(args.project) as studio:
        report = studio.import_annotations(args.source)
        for line in report.lines():
            print(line)
        if args.render:
            _render_pending(studio, args)
    return 0


def cmd_tag(args: argparse.Namespace) -> int:
    from studio.core.keys import GlyphKey

    concept, sep, value = args.tag.partition("=")
    if not sep or not concept:
        raise StudioError(f"{args.tag!r} is not a tag like shape-type=circle")
    try:
        keys = [GlyphKey.parse(k) for k in args.keys]
    except ValueError as e:
        raise StudioError(str(e)) from None
    with _open_studio(args.project) as studio:
        schema = studio.schema
        if not schema.has_concept(concept):
            known = ", ".join(c.id for c in schema.concepts)
            raise StudioError(f"the schema has no concept {concept!r} (it has: {known})")
        if not schema.has_tag(concept, value):
            values = ", ".join(v.id for v in schema.concept(concept).values) or "none"
            raise StudioError(f"concept {concept!r} has no value {value!r} (it has: {values})")
        if args.remove:
            n = studio.untag(keys, concept, value)
            print(f"removed {concept}={value} from {n} of {len(keys)} glyphs")
        else:
            n = studio.tag(keys, concept, value)
            print(f"tagged {n} of {len(keys)} glyphs {concept}={value} (as {studio.author})")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    with _open_studio(args.project) as studio:
        n = studio.export_annotations(args.out)
    print(f"wrote {n} tags to {args.out}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from studio.store.info import open_for_info

    info = open_for_info(args.project)
    if args.json:
        print(json.dumps(info.as_json(), indent=1, ensure_ascii=False))
    else:
        print("\n".join(info.lines()))
    return 0


def cmd_fonts(args: argparse.Namespace) -> int:
    from studio.glyphs.fonts import FontCatalog

    catalog = FontCatalog.scan(extra_files=args.add or ())
    for err in catalog.errors:
        print(f"warning: {err}", file=sys.stderr)
    fonts = [f for f in catalog.fonts if not args.font or f.id == args.font]
    if args.font and not fonts:
        raise StudioError(f"no installed font has the id {args.font!r}; run `fonts` to list them")
    if args.json:
        out = [
            {
                "id": f.id,
                "family": f.family,
                "style": f.style,
                "path": str(f.path),
                "index": f.index,
                "codepoints": f.num_codepoints,
                **({"blocks": dict(catalog.coverage_by_block(f.id))} if args.font else {}),
            }
            for f in fonts
        ]
        print(json.dumps(out, indent=1))
        return 0
    for f in fonts:
        print(f"{f.id:32} {f.num_codepoints:7d}  {f.family} {f.style}  {f.path}")
        if args.font:
            for block, n in catalog.coverage_by_block(f.id):
                print(f"    {n:6d}  {block}")
    print(f"{len(fonts)} fonts", file=sys.stderr)
    return 0


def cmd_add_glyphs(args: argparse.Namespace) -> int:
    from studio.core.keys import GlyphKey
    from studio.glyphs.unicode import block

    with _open_studio(args.project) as studio:
        info = studio.catalog.get(args.font)
        if info is None:
            raise StudioError(f"no installed font has the id {args.font!r}")
        cps = sorted(studio.catalog.codepoints(args.font))
        if args.block:
            cps = [c for c in cps if block(c).lower() == args.block.lower()]
        n = studio.add_glyphs(GlyphKey(c, args.font) for c in cps)
        print(f"added {n} glyphs ({len(cps) - n} were there already)")
        if args.render:
            _render_pending(studio, args)
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    from studio.core.annotations import file_name
    from studio.core.fileio import atomic_write_bytes

    out = Path(args.out_dir)
    with _open_studio(args.project) as studio:
        report = _reporter(args, "render", "glyphs")
        for done, total in studio.render_all(size=args.size):
            report.update(done, total)
        written = 0
        missing = []
        for g in studio.project.glyphs():
            if g.status != "ok":
                missing.append(f"{g.key}\t{g.status}\t{g.reason or ''}")
                continue
            atomic_write_bytes(out / file_name(g.key), studio.png_bytes(g, args.size))
            written += 1
        report = "key\tstatus\treason\n" + "".join(m + "\n" for m in missing)
        atomic_write_bytes(out / "not-rendered.tsv", report.encode())
    print(
        f"wrote {written} images of {args.size}×{args.size} to {out}; "
        f"{len(missing)} glyphs not rendered (see not-rendered.tsv)"
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from studio.demo import build_demo, demo_path

    path = Path(args.path) if args.path else demo_path()
    report = _reporter(args, "demo")
    for stage, done, total in build_demo(path, overwrite=args.force):
        report.stage(stage)
        report.update(done, total)
    print(path)
    return 0


def _option_dest(flag: str) -> str:
    return "option_" + flag[2:].replace("-", "_")


def _add_family_arguments(s: argparse.ArgumentParser, families: Sequence[Family]) -> None:
    """Every option of these families as a flag, built from their options schemas; a flag
    two families share (``--level``) is one argument. Defaults stay None here, so what was
    given is known; each family fills in its own defaults."""
    by_flag: dict[str, list[tuple[Family, Option]]] = {}
    for fam in families:
        for o in fam.options:
            by_flag.setdefault(o.cli_flag, []).append((fam, o))
    group = s.add_argument_group("family options")
    for flag, uses in by_flag.items():
        kinds = {o.type for _, o in uses}
        if len(kinds) > 1:
            names = ", ".join(f"{f.id} ({o.type})" for f, o in uses)
            raise StudioError(f"{flag}: the families {names} give it different types")
        first = uses[0][1]
        helps: dict[str, list[str]] = {}  # one text for the families that say the same
        for fam, o in uses:
            default = o.default
            if isinstance(default, tuple | list):
                default = ",".join(map(str, default)) or "none"
            shown = "" if default is None else f" (default: {default})"
            helps.setdefault(f"{o.help}{shown}", []).append(fam.id)
        text = " | ".join(
            f"{', '.join(ids)}: {h}" if len(families) > 1 else h for h, ids in helps.items()
        )
        kw: dict[str, Any] = {
            "dest": _option_dest(flag),
            "default": None,
            "help": text.replace("%", "%%"),
        }
        if first.type == "bool":
            group.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        elif first.type == "choice":
            choices = list(dict.fromkeys(c for _, o in uses for c in o.choices))
            group.add_argument(flag, choices=choices, **kw)
        else:
            group.add_argument(flag, metavar=first.type.upper(), **kw)


def _family_options(args: argparse.Namespace, fam: Family) -> dict[str, Any]:
    """The options given on the command line for ``fam``, checked by its schema (with the
    defaults it records). A flag of another family is refused by name."""
    mine = {o.cli_flag: o for o in fam.options}
    given: dict[str, Any] = {}
    for dest, value in vars(args).items():
        if not dest.startswith("option_") or value is None:
            continue
        flag = "--" + dest[len("option_") :].replace("_", "-")
        o = mine.get(flag)
        if o is None:
            takes = ", ".join(mine) or "no options"
            raise StudioError(f"{flag} is not an option of {fam.id} (it takes: {takes})")
        given[o.name] = o.parse(value) if isinstance(value, str) and o.type != "choice" else value
    return fam.resolve_options(given, fill_recorded=True)


def _add_split_arguments(s: argparse.ArgumentParser) -> None:
    """What every family's split takes: how many, the seed and the train/val/test shares."""
    s.add_argument("--n", type=int, default=10_000, help="puzzles (glyph families: per fold)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--ratios", default="0.7,0.1,0.2", help="train,val,test shares")


def _family_of(args: argparse.Namespace) -> Family:
    """``--family``'s family, or the family marked default when none is named."""
    from studio.plugins import default_family, family

    return default_family() if args.family is None else family(args.family)


def _split_params(args: argparse.Namespace) -> SplitParams:
    from studio.families.glyph_pmp import split_params

    fam = _family_of(args)
    return split_params(_family_options(args, fam), args.n, args.seed, _ratios(args))


def _ratios(args: argparse.Namespace) -> tuple[float, float, float]:
    try:
        return tuple(float(x) for x in args.ratios.split(","))  # type: ignore[return-value]
    except ValueError:
        raise StudioError(
            f"--ratios {args.ratios!r}: expected three numbers like 0.7,0.1,0.2"
        ) from None


def cmd_generate(args: argparse.Namespace) -> int:
    """Any family's split folder through the one pipeline (:func:`studio.splits.split_folder`):
    ``PROJECT OUT_DIR`` for a family that reads annotations, ``OUT_DIR`` for the others —
    the request says which is wrong, in words, before anything is opened."""
    from studio.families.glyph_pmp.split import GenerationShortfall
    from studio.generate.request import GenerationRequest
    from studio.splits import split_folder

    fam = _family_of(args)
    if len(args.paths) > 2:
        raise StudioError("generate takes [PROJECT] OUT_DIR (a project only for glyph families)")
    project = args.paths[0] if len(args.paths) == 2 else None
    request = GenerationRequest(
        fam.id,
        args.n,
        args.seed,
        _ratios(args),
        _family_options(args, fam),
        out_dir=args.paths[-1],
        workers=args.workers,
        require_coverage=args.require_coverage,
    )
    try:
        request = request.check(project=project is not None)
    except StudioError as e:
        usage = "PROJECT OUT_DIR" if fam.needs_project else "OUT_DIR"
        raise StudioError(f"{e} (generate --family {fam.id} takes {usage})") from None
    report = _reporter(args, "generate")

    def progress(stage: str, done: int, total: int) -> None:
        task, _, unit = stage.partition(" ")
        report.stage(task, unit)
        report.update(done, total)

    opened = _open_studio(project, args.allow_font_change) if project else None
    with opened if opened is not None else contextlib.nullcontext():
        try:
            if opened is not None and any(g.status == "pending" for g in opened.project.glyphs()):
                _render_pending(opened, args)
            summary = split_folder(request, opened, progress)
        except GenerationShortfall as e:
            print(
                f"analogy-studio: error: only {e.made} of {e.wanted} {e.part} puzzles could be "
                f"made from the annotations; these tuples ran dry:",
                file=sys.stderr,
            )
            for name, why in sorted(e.dry.items()):
                print(f"  {name}: {why}", file=sys.stderr)
            hint = (
                "ask for fewer puzzles or other rules, or annotate more glyphs "
                f"(`analogy-studio needs {project}` lists which)"
            )
            if request.options.get("sampling") == "diverse":
                hint = "use --sampling balanced, " + hint
            print(f"To make more: {hint}.", file=sys.stderr)
            return EXIT_USER_ERROR
    for line in summary["lines"]:
        print(line)
    for warning in summary["warnings"]:
        print(f"analogy-studio: warning: {warning}", file=sys.stderr)
    return 0


def cmd_needs(args: argparse.Namespace) -> int:
    from studio.families.glyph_pmp.needs import annotation_needs
    from studio.splits import split_inputs

    params = _split_params(args)
    with _open_studio(args.project) as studio:
        if any(g.status == "pending" for g in studio.project.glyphs()):
            _render_pending(studio, args)
        inputs = split_inputs(studio)
        report = annotation_needs(params, inputs.annotations, inputs.schema)
    if args.json:
        print(json.dumps(report.to_json(), indent=1, ensure_ascii=False))
        return 0
    mendable = [t for t in report.tuples if t.mendable]
    print(
        f"{len(report.tuples)} tuple(s) run dry for lack of glyphs "
        f"({len(report.tuples) - len(mendable)} cannot be mended by tagging):"
    )
    for t in report.tuples:
        print(f"  {t.message()}")
    per_value = report.per_value()
    if per_value:
        print(f"To tag next ({sum(per_value.values())} glyphs over {len(per_value)} values):")
        for (c, v), n in sorted(per_value.items(), key=lambda kv: (-kv[1], kv[0])):
            sides = report.side_text(c, v)
            sides = f" ({sides})" if sides else ""
            print(f"  {c} = {v or '(present)'}: +{n}{sides}  ({', '.join(report.tuples_of(c, v))})")
        if any(t.side == "eval" for t in mendable) and report.holdout == "disjoint":
            print(
                "Held-out glyphs are those the hold-out puts on the val/test side, whoever "
                "tags them: the tagger's View ▸ Only held-out glyphs shows them."
            )
    return 0


def cmd_suggest(args: argparse.Namespace) -> int:
    """The untagged glyphs most likely to carry what a concept lacks (issue 30): a list to
    look at, never a tag. Uses the stored encoder when fresh, else trains it (progress on
    stderr), or the image features alone with --features-only."""
    from studio.suggest import check_concept_value, suggest

    if args.n < 1:
        raise StudioError(f"--n must be at least 1 (got {args.n})")
    mode = "none" if args.features_only else ("stored" if args.stored_only else "auto")
    with _open_studio(args.project, args.allow_font_change) as studio:
        check_concept_value(studio.schema, args.concept, args.value)
        report = _reporter(args, "suggest", "glyphs")
        stages = {"render": ("render", "glyphs"), "train": ("train the encoder", "batches")}
        current: list[str] = []

        def progress(stage: str, done: int, total: int) -> None:
            if current != [stage]:
                current[:] = [stage]
                report.stage(*stages.get(stage, (stage, "")))
            report.update(done, total)

        found = suggest(studio, args.concept, args.value, args.n, encoder=mode, progress=progress)
        report.close()
    if args.json:
        print(json.dumps(found.to_json(), indent=1, ensure_ascii=False))
        return 0
    why = {
        "asked": "the value asked for",
        "needs": "the values the Needs report lacks",
        "tagged": "the Needs report lacks none: every tagged value",
    }[found.why]
    print(f"{args.concept}: {', '.join(found.values)} ({why}; space: {found.space})")
    for i, s in enumerate(found.suggestions, 1):
        print(f"{i:3d}  {s.key}  {s.key.char!r}  guess {s.value}  score {s.score:.3f}")
    if not found.suggestions:
        print("no untagged glyph left to suggest")
    return 0


def cmd_vet_stimuli(args: argparse.Namespace) -> int:
    from studio.stimuli.split import vet_stimulus_split

    results = vet_stimulus_split(args.split_dir)
    valid = sum(v.valid for v in results)
    audit = _stimulus_audit(args.split_dir)
    if args.json:
        out = {"split_dir": str(args.split_dir), "items": len(results), "valid": valid}
        if audit is not None:
            out["audit"] = audit
        out["verdicts"] = [{"id": v.subject_id, **v.to_item_json()} for v in results]
        print(json.dumps(out, indent=1))
        return 0
    print(f"{len(results)} items: {valid} valid, {len(results) - valid} invalid")
    if audit is not None:
        _print_audit(audit)
    for v in results:
        for f in v.errors:
            print(f"{v.subject_id}: INVALID: {f.message()}")
        if args.warnings:
            for f in v.warnings:
                print(f"{v.subject_id}: warning: {f.message()}")
    return 0


def _stimulus_audit(split_dir: str) -> dict[str, Any] | None:
    """The answer-set audit of a stimulus split (None where the family has no symbolic
    answer attributes yet)."""
    from studio.stimuli.split import read_stimulus_split
    from studio.stimuli.symbolic import audit_stimulus_records

    meta, records = read_stimulus_split(split_dir)
    return audit_stimulus_records(str(meta.get("family", "")), records)


def _print_audit(audit: dict[str, Any], worst: int = 5) -> None:
    """The answer-set audit in a few lines: per fold where there are several."""
    from studio.vet.audit import audit_lines
    from studio.vet.partial import partial_lines

    folds = audit if "key_rates" not in audit else {"": audit}
    for name, a in folds.items():
        print(f"answer-set audit{f' ({name})' if name else ''}:")
        for line in audit_lines(a, worst=worst):
            print(f"  {line}")
        for line in partial_lines(a.get("partial_views") or {}, most=worst):
            print(f"  {line}")


def cmd_vet(args: argparse.Namespace) -> int:
    from studio.splits import audit_dir, verdict_counts, vet_dir
    from studio.stimuli.split import is_stimulus_split

    if is_stimulus_split(args.split_dir):
        return cmd_vet_stimuli(args)
    source = None
    if args.project:
        source = _open_studio(args.project, args.allow_font_change)
    try:
        verdicts = vet_dir(args.split_dir, source, features=not args.no_features)
        audit = audit_dir(args.split_dir, source)
    finally:
        if source is not None:
            source.close()
    counts = verdict_counts(verdicts)
    if args.json:
        print(
            json.dumps(
                {
                    "split_dir": str(args.split_dir),
                    **counts,
                    "audit": audit,
                    "verdicts": [v.to_puzzle_json() for v in verdicts],
                },
                indent=1,
            )
        )
        return 0
    print(
        f"{counts['puzzles']} puzzles: {counts['valid']} valid, {counts['invalid']} invalid, "
        f"{counts['with_warnings']} with image-feature warnings"
    )
    _print_audit(audit)
    for v in verdicts:
        if not v.valid:
            print(f"{v.subject_id}: INVALID")
            for f in v.errors:
                print(f"  {f.message()}")
    if args.warnings:
        for v in verdicts:
            for f in v.warnings:
                print(f"{v.subject_id}: warning: {f.message()}")
    return 0


def cmd_export_set(args: argparse.Namespace) -> int:
    from studio.publish import export_set

    report = _reporter(args, "export: read", "puzzles")

    def progress(stage: str, done: int, total: int) -> None:
        report.stage(f"export: {stage}", "puzzles" if stage != "card" else "files")
        if total:
            report.update(done, total)

    from studio.publish.info import DatasetInfo

    info = DatasetInfo(args.license, tuple(args.author), args.description, args.cite)
    with _open_studio(args.project) as studio:
        summary = export_set(
            studio,
            args.set,
            args.out_dir,
            status=args.status,
            drop_invalid=args.drop_invalid,
            progress=progress,
            info=info,
        )
    report.close()
    for warning in summary.warnings():
        print(f"analogy-studio: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary.to_json(), indent=1))
        return 0
    print(summary.message())
    for r in summary.dropped:
        print(f"left out {r.line()}")
    if summary.with_warnings:
        print(f"{summary.with_warnings} exported puzzles carry image-feature warnings")
    return 0


def cmd_import_split(args: argparse.Namespace) -> int:
    """A split folder into the project as a puzzle set to curate (any family): the same
    functions the board's Generate runs, so a script or a colleague's folder lands on the
    board as the board's own generation does."""
    from studio.curation import Curator

    report = _reporter(args, "import: vet", "puzzles")
    with _open_studio(args.project) as studio:
        curator = Curator(studio)
        prepared = curator.prepare_folder_import(args.split_dir, args.name, report.update)
        ids = curator.import_prepared(prepared)
    report.close()
    batch = prepared.batches[0]
    flagged = batch[2].get("flagged", 0)
    print(
        f"imported {prepared.total} puzzles of {args.split_dir} as set {ids[0]} "
        f"“{batch[0]}” ({flagged} flagged)"
    )
    return 0


def _relative(path: str | Path, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return str(Path(path).resolve())


def _baseline_table(report: dict) -> list[str]:
    """The summary printed by ``baseline``: one line per model, then the skipped ones."""
    head = f"{'model':<20} {'accuracy':>8}  {'95% CI':<15} {'chance':>6}  flags"
    lines = [head, "-" * len(head)]
    puzzle_flags: dict[str, int] = {}
    group_flags: dict[str, int] = {}
    for f in report["flags"]["puzzles"]:
        puzzle_flags[f["model"]] = puzzle_flags.get(f["model"], 0) + 1
    for f in report["flags"]["groups"]:
        group_flags[f["model"]] = group_flags.get(f["model"], 0) + 1
    for model, e in report["models"].items():
        o = e["overall"]
        ci = f"[{o['ci95'][0]:.3f}, {o['ci95'][1]:.3f}]"
        if e.get("flags_shortcuts"):
            flags = f"{puzzle_flags.get(model, 0)} puzzles, {group_flags.get(model, 0)} groups"
        else:
            flags = "-"
        lines.append(f"{model:<20} {o['accuracy']:>8.3f}  {ci:<15} {o['chance']:>6.3f}  {flags}")
    for model, e in report["models"].items():  # the answers-only probes name their features
        top = list((e.get("features") or {}).items())[:3]
        if top:
            lines.append(f"{model} weighs most: " + "; ".join(f"{f} ({w:+.2f})" for f, w in top))
    for s in report.get("skipped", []):
        # "model …": "skipped arithmetic" read as if the rule had been skipped (issue 28)
        lines.append(f"not run: the {s['model']} model ({s['reason']})")
    return lines


def _note_in_split_report(split_dir: Path, entry: dict) -> None:
    """Add (or replace) the ``baselines`` entry of the split's report.json, keeping the rest."""
    from studio.core.fileio import atomic_write_text

    path = split_dir / "report.json"
    data: dict = {}
    if path.exists():
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as e:
            raise StudioError(f"cannot be updated: {e}", path) from None
        if not isinstance(data, dict):
            raise StudioError("cannot be updated: not a JSON object", path)
    data["baselines"] = entry
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def cmd_baseline(args: argparse.Namespace) -> int:
    from studio.baselines import expand_models, run_counts
    from studio.baselines.start import load_beside, warm_device

    split_dir = Path(args.split_dir)
    if not split_dir.is_dir():
        raise StudioError("not found, or not a split folder", split_dir)
    run_counts(args.epochs, args.seeds)  # refused before the split is read
    # torch starts first, and the split's reading: the baselines' own modules load beside
    warm = warm_device(args.device, expand_models(args.models))
    with load_beside(split_dir) as loading:  # Ctrl+C meanwhile stops the reading
        from studio.baselines.job import try_plots, write_report
        from studio.baselines.run import accuracy_by_model, run_baselines

        out = Path(args.json) if args.json else split_dir / "baselines" / "report.json"
        progress = _reporter(args, "baseline")
        progress.fraction(0.0, "loading the puzzles")
        data = loading.result()
    report = run_baselines(
        data,
        args.models,
        seeds=args.seeds,
        device=args.device,
        epochs=args.epochs,
        progress=progress.fraction,
        log=None if args.quiet else (lambda line: print(line, file=sys.stderr)),
        cuda_speedups=args.cuda_speedups,
        compile=args.compile,
        cuda_graphs=args.cuda_graphs,
        warm=warm,
        loaded_seconds=loading.seconds,
    )
    plots: dict[str, str] = {}
    if not args.no_plots:
        plot_dir = Path(args.plots) if args.plots else split_dir / "baselines"
        plots = try_plots(
            report, plot_dir, lambda line, level="warning": print(line, file=sys.stderr)
        )
    report["plots"] = {k: _relative(v, out.parent) for k, v in plots.items()}
    try:
        write_report(report, out)
    except OSError as e:
        raise StudioError(f"cannot be written: {e.strerror or e}", out) from None
    _note_in_split_report(
        split_dir,
        {
            "report": _relative(out, split_dir),
            "plots": {k: _relative(v, split_dir) for k, v in plots.items()},
            "accuracy": accuracy_by_model(report),
            "chance": report["chance"],
            "eval_part": report["eval_part"],
            "device": report["device"],
            "seeds": report["seeds"],
            "flagged_puzzles": len({f["id"] for f in report["flags"]["puzzles"]}),
            "flagged_groups": len(report["flags"]["groups"]),
        },
    )
    src = report["source"]
    print(
        f"{src['puzzles']} {src['family']} puzzles ({src['layout']}); accuracy on "
        f"{report['eval_part']} ({src['parts'][report['eval_part']]} puzzles), "
        f"{len(report['seeds'])} seed(s), {report['device']}"
    )
    for line in _baseline_table(report):
        print(line)
    print(f"wrote {out}" + (f" and {len(plots)} plots" if plots else ""))
    return 0


def _open_jobs_project(path: str) -> str | Path:
    """Open (and migrate) the project as the studio does before its jobs are touched; a
    database URL stays a string (Path would mangle it)."""
    from studio.store.dbfile import is_database_url
    from studio.store.project import Project

    Project.open(path).close()
    return path if is_database_url(path) else Path(path)


def _job_line(job: Any) -> str:
    where = f" · {job.device}" if job.device else ""
    tail = f" · {job.message}" if job.message else ""
    return f"job {job.id} {job.status} {job.progress:.0%}{where}{tail}"


def cmd_pilot(args: argparse.Namespace) -> int:
    """``pilot export``: a pilot study that runs from disk; ``pilot analyse``: its results."""
    if args.pilot_cmd == "export":
        from studio.pilot.export import PilotOptions, export_pilot

        options = PilotOptions(
            participants=args.participants,
            per_participant=args.per_participant,
            responses_per_item=args.responses_per_item,
            parts=tuple(p for p in args.parts.split(",") if p),
            practice=args.practice,
            practice_failures=args.practice_failures,
            catch=args.catch,
            min_median_rt_ms=args.min_median_rt,
            seed=args.seed,
        )
        report = _reporter(args, "pilot export", "puzzles")
        if args.set is not None:  # SOURCE is a project: pilot one of its curated sets
            from studio.pilot.sets import pilot_set

            studio = _open_studio(args.source, args.allow_font_change)
            try:
                summary = pilot_set(
                    studio, args.set, args.out_dir, options, status=args.status,
                    progress=report.update,
                )  # fmt: skip
            finally:
                studio.close()
            print(
                f"piloting set {summary['set_id']} “{summary['set_name']}” ({args.status} "
                f"puzzles; {summary['left_out']} left out that no longer pass vetting)"
            )
        else:
            summary = export_pilot(args.source, args.out_dir, options, report.update)
        print(
            f"wrote pilot {summary['pilot_id']} to {args.out_dir}: {summary['puzzles']} puzzles, "
            f"{summary['practice']} practice, {summary['catch']} attention checks"
        )
        for line in summary["plan"]:
            print(f"  {line}")
        print(
            f"open {args.out_dir}/index.html in a browser (?list=N&pid=ID skips the first screen)"
        )
        return 0
    from studio.pilot.results import analyse_results, result_lines

    if args.pilot_cmd == "import":
        from studio.pilot.store import import_results

        studio = _open_studio(args.project)
        try:
            found = import_results(
                studio.project, args.pilot_dir, args.results, args.set, _author()
            )
        finally:
            studio.close()
        where = f" for puzzle set {args.set}" if args.set is not None else ""
        print(
            f"stored {found['stored_answers']} answers of {found['participants']} participants "
            f"of pilot {found['pilot_id']} in {args.project}{where}"
        )
    else:
        found = analyse_results(args.pilot_dir, args.results)
    if args.json:
        print(json.dumps(found, indent=1, sort_keys=True))
        return 0
    for line in result_lines(found):
        print(line)
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    from studio.store.jobs import JobQueue, job_work_dir
    from studio.worker.drive import run_jobs

    project = _open_jobs_project(args.project)
    if args.jobs_cmd == "list":
        with JobQueue(project) as queue:
            jobs = queue.jobs()
        if args.json:
            rows = [
                {"id": j.id, "kind": j.kind, "title": j.title, "status": j.status,
                 "progress": j.progress, "device": j.device, "created_at": j.created_at,
                 "finished_at": j.finished_at, "error": j.error.splitlines()[:1]}
                for j in jobs
            ]  # fmt: skip
            print(json.dumps(rows, indent=1, ensure_ascii=False))
        else:
            for j in jobs:
                print(f"{j.id:>5}  {j.kind:<10} {j.status:<11} {j.progress:>4.0%}  {j.title}")
        return 0
    only = None
    if args.jobs_cmd == "baseline":
        split_dir = Path(args.split_dir).resolve()
        if not split_dir.is_dir():
            raise StudioError("not found, or not a split folder", split_dir)
        from studio.baselines.params import BaselineJobParams

        params = BaselineJobParams.of(
            {"kind": "split-dir", "path": str(split_dir)},
            args.models,
            seeds=args.seeds,
            device=args.device,
            epochs=args.epochs,
            beside_window=False,  # no window to keep responsive: every core
        ).to_json()
        with JobQueue(project) as queue:
            title = f"Baselines ({args.models}) on {split_dir.name}"
            only = queue.submit("baseline", params, title)
        if not args.quiet:
            print(f"queued job {only}", file=sys.stderr)
    elif args.jobs_cmd == "encoder":
        from studio.suggest.job import ENCODER_JOB_KIND, ENCODER_JOB_TITLE, encoder_job_params

        params = encoder_job_params(epochs=args.epochs, seed=args.seed, force=args.force)
        with JobQueue(project) as queue:
            only = queue.submit(ENCODER_JOB_KIND, params, ENCODER_JOB_TITLE)
        if not args.quiet:
            print(f"queued job {only}", file=sys.stderr)
    if only is not None and args.no_wait:
        print(only)
        return 0

    def show(job: Any) -> None:
        if not args.quiet:
            print(_job_line(job), file=sys.stderr)

    try:
        ran = run_jobs(project, only=only, on_change=show)
    except KeyboardInterrupt:
        print("stopped: running jobs are interrupted and can be resumed", file=sys.stderr)
        return 130
    failed = [j for j in ran if j.status != "done"]
    for j in ran:
        if j.status == "done" and j.kind == "encoder":
            r = j.result or {}
            how = "trained" if r.get("trained") else "already stored"
            print(f"job {j.id} done: encoder {r.get('version')} ({how}, {r.get('glyphs')} glyphs)")
        elif j.status == "done":
            report = job_work_dir(project, j.id) / "report.json"
            # the result itself is in the database (what the studio shows); the file is a copy
            print(f"job {j.id} done: {report if report.exists() else 'no report file here'}")
        else:
            first = j.error.splitlines()[0] if j.error else ""
            print(f"job {j.id} {j.status}" + (f": {first}" if first else ""))
    return 1 if failed else 0


def cmd_worker(args: argparse.Namespace) -> int:
    from studio.worker.serve import cmd_serve

    return cmd_serve(args)


def _lab_key(text_: str) -> Any:
    from studio.core.keys import GlyphKey

    try:
        return GlyphKey.parse(text_)
    except ValueError as e:
        raise StudioError(str(e)) from None


def _lab_tags(items: Sequence[str], schema: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in items:
        concept, sep, value = item.partition("=")
        if not sep or not schema.has_tag(concept, value):
            raise StudioError(f"{item!r} is not a concept=value of the project's schema")
        out.append((concept, value))
    return out


def _interval(est: Any) -> str:
    if est is None or getattr(est, "value", None) is None:
        reason = getattr(est, "reason", "") if est is not None else ""
        return f"— ({reason})" if reason else "—"
    lo, hi = est.low, est.high
    return f"{est.value:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None else "")


_AGREEMENT_HEADINGS = {
    None: "all tags:",
    "hand": "unassisted (every tag of a person's glyph by hand):",
    "suggestion": "assisted (some tag of a person's glyph accepted from a suggestion):",
}


def _print_agreement(report: AgreementReport) -> None:
    print(
        f"{len(report.annotators)} annotators, {report.pairable_glyphs} glyphs annotated"
        f" by two or more, {report.ratings} tags; intervals: {report.n_boot} bootstrap"
        " replicates over glyphs"
    )
    if report.pairable_glyphs == 0:
        print("no agreement to measure yet: no glyph was annotated by two or more people")
        return
    for c in report.concepts:
        print(
            f"{c.concept}: alpha {_interval(c.alpha)}; agreement"
            f" {_interval(c.percent)}; {c.glyphs} glyphs"
        )
    for pair in report.pairs:
        print(
            f"{pair.first} × {pair.second}: kappa {_interval(pair.kappa)};"
            f" agreement {pair.percent:.3f} over {pair.glyphs} glyphs"
        )


def cmd_lab(args: argparse.Namespace) -> int:
    """People, assignments, agreement, the disagreement queue and the audit trail of a project
    (a lab database, or a file: a lab of one)."""
    from studio.store.project import Project

    with Project.open(args.project) as project:
        who = project.author_for(_author())
        action = args.lab_cmd
        if action == "people":
            for p in project.people():
                print(f"{p.name}\t{p.role}\t{p.full_name}")
        elif action == "add-person":
            password = None
            if args.password_prompt:
                import getpass

                password = getpass.getpass(f"password for {args.name}: ")
            project.add_person(args.name, args.role, full_name=args.full_name, password=password)
            print(f"{args.name} is now {args.role} of {project.location}")
        elif action == "assign":
            keys = [_lab_key(k) for k in args.glyphs] if args.glyphs else None
            names = [a.strip() for a in args.annotators.split(",") if a.strip()]
            summary = project.assign(
                keys,
                names,
                overlap=args.overlap,
                per_overlap_glyph=args.per_glyph,
                seed=args.seed,
                name=args.name or "",
                by=who,
            )
            loads = ", ".join(f"{k} {v}" for k, v in sorted(summary.per_person.items()))
            print(f"assignment {summary.id}: {loads}; {summary.overlap} glyphs in the overlap")
        elif action == "my-glyphs":
            for key, done in project.assigned(args.annotator or who):
                print(f"{key}\t{'done ' + done if done else 'to do'}")
        elif action == "agreement":
            from studio.core.agreement import MAX_BOOT

            if not 0 <= args.boot <= MAX_BOOT:
                raise StudioError(f"--boot {args.boot}: expected 0 to {MAX_BOOT:,} replicates")
            # --by-source: all the work, then the unassisted and the assisted apart (issue 30)
            sources = (None, "hand", "suggestion") if args.by_source else (None,)
            reports = {
                s: project.agreement(n_boot=args.boot, seed=args.seed, source=s) for s in sources
            }
            if args.json:
                if args.by_source:
                    out = {s or "all": r.to_json() for s, r in reports.items()}
                else:
                    out = reports[None].to_json()
                print(json.dumps(out, indent=1, ensure_ascii=False))
                return 0
            for source, report in reports.items():
                if args.by_source:
                    print(_AGREEMENT_HEADINGS[source])
                _print_agreement(report)
        elif action == "queue":
            queue = project.disagreement_queue()
            if args.json:
                print(json.dumps([{"glyph": str(k), **d.to_json()} for k, d in queue]))
                return 0
            for key, d in queue:
                parts = []
                for concept in d.concepts:
                    said = "; ".join(
                        f"{a}: {','.join(d.values(a, concept)) or 'none'}" for a in d.annotators
                    )
                    parts.append(f"{concept} ({said})")
                print(f"{key}\t" + " | ".join(parts))
            print(f"{len(queue)} glyphs to settle")
        elif action == "settle":
            key = _lab_key(args.glyph)
            tags = _lab_tags(args.tags, project.schema)
            project.adjudicate(key, tags, who, args.note)
            shown = ", ".join(f"{c}={v}" for c, v in tags) or "no tags"
            print(f"settled {key}: {shown} (by {who})")
        elif action == "audit":
            from studio.store.labproject import MAX_AUDIT

            if not 1 <= args.limit <= MAX_AUDIT:
                raise StudioError(f"--limit {args.limit}: expected 1 to {MAX_AUDIT:,} entries")
            from studio.store.lab import plain_field

            for e in reversed(project.audit(args.limit)):
                fields = (e.at, e.who, e.action, e.target, e.detail.get("rows", ""))
                print("\t".join(plain_field(f) for f in fields))
    return 0


def cmd_polyominoes(args: argparse.Namespace) -> int:
    from studio.stimuli.contact_sheet import (
        MAX_CELLS,
        MAX_SHAPES,
        contact_sheet,
        enumerate_shapes,
    )

    if args.dims not in MAX_CELLS:
        raise StudioError(f"--dims {args.dims}: polyominoes are 2D and polycubes 3D (2 or 3)")
    most = MAX_CELLS[args.dims]
    if not 1 <= args.cells <= most:
        raise StudioError(
            f"--cells {args.cells}: give 1 to {most} cells in {args.dims}D "
            "(the number of shapes grows too fast beyond that)"
        )
    kind = "polyominoes" if args.dims == 2 else "polycubes"
    if not args.quiet:
        print(f"enumerating {args.equivalence} {kind} of {args.cells} cells…", file=sys.stderr)
    shapes = enumerate_shapes(args.cells, args.dims, args.equivalence)
    if args.count:
        print(shapes.count)
        return 0
    out = Path(args.out or f"polyominoes-{args.dims}d-{args.cells}-{args.equivalence}.png")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        contact_sheet(shapes, max_shapes=MAX_SHAPES).save(out, format="PNG")
    except OSError as e:
        raise StudioError(f"cannot write the contact sheet: {e.strerror or e}", out) from None
    if not args.quiet:
        shown = min(shapes.count, MAX_SHAPES)
        print(f"{shapes.count} {kind}; the sheet shows {shown}", file=sys.stderr)
    print(out)
    return 0


def cmd_gui(args: argparse.Namespace) -> int:
    from studio.gui.main import run_gui

    return run_gui(project=args.project, demo=args.demo)


def build_parser() -> argparse.ArgumentParser:
    from studio.baselines import DEFAULT_MODELS
    from studio.baselines.params import DEFAULT_SEEDS
    from studio.plugins import families

    all_families = families()
    p = argparse.ArgumentParser(
        prog="analogy-studio",
        description="Author visual-analogy stimuli from schema-tagged Unicode glyphs.",
    )
    p.add_argument("--version", action="version", version=f"analogy-studio {__version__}")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("init", help="create a project with a concept schema")
    s.add_argument(
        "project", help="a new file, or an empty PostgreSQL database: postgresql://user@host/db"
    )
    s.add_argument("--schema", help="concept schema JSON (default: the bundled UA 1.0)")
    s.add_argument("--force", action="store_true", help="replace an existing file")
    s.set_defaults(func=cmd_init)

    s = sub.add_parser(
        "copy",
        help="copy a project between a file and a PostgreSQL database (either way)",
        description="Copy every table of PROJECT_A (read-only) into PROJECT_B, which must be "
        "a new file or an empty database (postgresql://user@host/db), in one transaction.",
    )
    s.add_argument("source", metavar="PROJECT_A")
    s.add_argument("target", metavar="PROJECT_B")
    s.set_defaults(func=cmd_copy)

    s = sub.add_parser("import-annotations", help="import a CSV or a UA Annotations folder")
    s.add_argument("project")
    s.add_argument("source", metavar="FILE_OR_DIR")
    s.add_argument("--render", action="store_true", help="render the glyphs afterwards")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("export-annotations", help="export tags: OUT.csv, or a folder in UA layout")
    s.add_argument("project")
    s.add_argument("out")
    s.set_defaults(func=cmd_export)

    s = sub.add_parser(
        "info", help="open a project (migrating an older format, with a backup) and count it"
    )
    s.add_argument("project")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("tag", help="tag glyphs with a concept value (or remove a tag)")
    s.add_argument("project", metavar="PROJECT")
    s.add_argument("tag", metavar="CONCEPT=VALUE")
    s.add_argument("keys", metavar="KEY", nargs="+", help="glyph keys like U+25CB@symbola")
    s.add_argument("--remove", action="store_true", help="remove the tag instead")
    s.set_defaults(func=cmd_tag)

    s = sub.add_parser("fonts", help="list installed fonts and their coverage")
    s.add_argument("--font", help="show one font's coverage by Unicode block")
    s.add_argument("--add", action="append", help="also read this font file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_fonts)

    s = sub.add_parser("add-glyphs", help="add a font's glyphs (or one block of them)")
    s.add_argument("project")
    s.add_argument("--font", required=True)
    s.add_argument("--block", help='a Unicode block name, e.g. "Geometric Shapes"')
    s.add_argument("--render", action="store_true")
    s.set_defaults(func=cmd_add_glyphs)

    s = sub.add_parser("render", help="render every glyph of a project to PNG files")
    s.add_argument("project")
    s.add_argument("out_dir")
    s.add_argument("--size", type=int, default=80)
    s.set_defaults(func=cmd_render)

    s = sub.add_parser("demo", help="build the demo project from the UA annotations")
    s.add_argument("--path", help="where to write it (default: the user data folder)")
    s.add_argument("--force", action="store_true", help="rebuild it")
    s.set_defaults(func=cmd_demo)

    s = sub.add_parser(
        "generate",
        help="generate a puzzle split into a folder",
        usage="%(prog)s [-h] [PROJECT] OUT_DIR [--family FAMILY] [options]",
        description="Glyph families need a PROJECT (its annotations); "
        + ", ".join(f.id for f in all_families if f.kind == "stimulus")
        + " need only OUT_DIR. Each family's options are listed below.",
    )
    s.add_argument("paths", nargs="+", metavar="[PROJECT] OUT_DIR")
    claimed = [f for f in all_families if f.default]
    s.add_argument(
        "--family",
        default=None,
        help="; ".join(f"{f.id}: {f.description}" for f in all_families)
        + f" (default: {', '.join(f.id for f in claimed) or 'none'}, the family marked default)",
    )
    _add_split_arguments(s)
    _add_family_arguments(s, all_families)
    s.add_argument("--allow-font-change", action="store_true", help=_FONT_CHANGE_HELP)
    s.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes that make and vet a glyph split (default: every core; the same bytes "
        "for any number)",
    )
    s.add_argument(
        "--require-coverage",
        type=int,
        metavar="N",
        help="fail (exit 2, nothing written) unless val and test each cover at least N (rule, "
        "concept) tuples, every requested rule yields puzzles and every rule train has is in "
        "test (without it: the same as warnings, at 5 tuples)",
    )
    s.set_defaults(func=cmd_generate)

    s = sub.add_parser(
        "needs",
        help="which glyphs to tag next: the values each dry tuple of a split lacks",
        description="For the split these options describe, every tuple that runs dry for lack "
        "of glyphs (a symmetric answer set needs 4 values that could each be the key), the "
        "values closest to key-able and how many more glyphs to tag for each.",
    )
    s.add_argument("project")
    _add_split_arguments(s)
    # the default family's options; the family itself is resolved when the command runs, so
    # a plugin that also claims to be the default breaks only the commands that need one
    _add_family_arguments(s, claimed[:1])
    s.add_argument("--json", action="store_true", help="the report as JSON")
    s.set_defaults(func=cmd_needs, family=None)

    s = sub.add_parser(
        "suggest",
        help="untagged glyphs likely to carry the values a concept lacks (never tags them)",
        description="Rank the project's untagged glyphs for one concept: a model fitted on "
        "the current tags over an encoder learned from the project's own glyphs (trained here "
        "when the stored one is missing or its fonts changed) and the image features. Without "
        "--value, the values the Needs report lacks. The list is diverse (not N look-alikes).",
    )
    s.add_argument("project", metavar="PROJECT")
    s.add_argument("--concept", required=True, help="the concept to suggest glyphs for")
    s.add_argument("--value", help="one value (default: what the Needs report lacks)")
    s.add_argument("--n", type=int, default=20, help="how many glyphs (default 20)")
    s.add_argument("--json", action="store_true", help="the list as JSON")
    enc = s.add_mutually_exclusive_group()
    enc.add_argument(
        "--features-only",
        action="store_true",
        help="use the image features alone (no encoder, no training)",
    )
    enc.add_argument(
        "--stored-only",
        action="store_true",
        help="refuse rather than train when no fresh encoder is stored",
    )
    s.add_argument("--allow-font-change", action="store_true", help=_FONT_CHANGE_HELP)
    s.set_defaults(func=cmd_suggest)

    s = sub.add_parser("vet", help="vet every puzzle of a split folder")
    s.add_argument("split_dir")
    s.add_argument("--json", action="store_true", help="per puzzle: valid, findings, warnings")
    s.add_argument("--project", help="vet against this project's annotations instead")
    s.add_argument("--warnings", action="store_true", help="list image-feature warnings too")
    s.add_argument("--no-features", action="store_true", help="skip image-feature warnings")
    s.add_argument("--allow-font-change", action="store_true", help=_FONT_CHANGE_HELP)
    s.set_defaults(func=cmd_vet)

    s = sub.add_parser(
        "import-split",
        help="add a split folder (any family) to a project as a puzzle set to curate",
        description="Add SPLIT_DIR, a folder `generate` wrote (glyph puzzles, KiVA trials, "
        "polycube, composition or cube-net items, a plugin family's), to the project as one "
        "puzzle set: every puzzle is vetted again (glyph puzzles against the project's "
        "annotations, items by their family's checks) and flagged where a check fails, then "
        "curated on the board and published with export-set.",
    )
    s.add_argument("project")
    s.add_argument("split_dir")
    s.add_argument("--name", help="the set's name (default: the folder's name)")
    s.set_defaults(func=cmd_import_split)

    s = sub.add_parser(
        "export-set",
        help="publish a curated puzzle set: split folder, dataset card, Croissant, Parquet",
        description="Export the puzzles of one status of a curated puzzle set (SET: its id or "
        "name) to OUT_DIR (a new or empty folder) in the layout `generate` writes, each record "
        "with its curation history, plus README.md (the dataset card), croissant.json and "
        "records.parquet. Every puzzle is vetted again against the project's current "
        "annotations and schema; one that fails refuses the export, naming it.",
    )
    s.add_argument("project")
    s.add_argument("set", metavar="SET")
    s.add_argument("out_dir", metavar="OUT_DIR")
    s.add_argument(
        "--status",
        default="approved",
        help="export the puzzles of this status: approved (default), draft, flagged, "
        "rejected, or any",
    )
    s.add_argument(
        "--drop-invalid",
        action="store_true",
        help="leave out (and list) puzzles that fail vetting instead of refusing",
    )
    s.add_argument(
        "--license",
        default="",
        metavar="SPDX",
        help="the set's licence as an SPDX id (e.g. CC-BY-4.0), for the card and Croissant",
    )
    s.add_argument(
        "--author",
        action="append",
        default=[],
        metavar="NAME",
        help="an author of the set (repeat for several; default: who exports it)",
    )
    s.add_argument("--description", default="", help="what the set is for, for the card")
    s.add_argument(
        "--cite",
        default="",
        metavar="TEXT",
        help="how to cite the set (BibTeX or a sentence; default: made from the authors)",
    )
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=cmd_export_set)

    s = sub.add_parser(
        "baseline",
        help="run baseline models on a split: accuracy, per-group results, shortcut flags",
        description="Train and run baselines on a split folder (one fold). MODELS are ids or "
        "groups: blind, context, similarity (pixel-similarity, feature-similarity, "
        "elimination, arithmetic), partial (partial-answers, partial-row1, partial-row2), "
        "spatial (cnn-mlp, siamese, cnn-max), probes (probe-tags, probe-image: answers-only "
        "models over each answer's tags and image features; probe-row1, probe-row2: the tags "
        "with one context row; each with the features behind each prediction).",
    )
    s.add_argument("split_dir", metavar="SPLIT_DIR")
    s.add_argument("--models", default=",".join(DEFAULT_MODELS))
    s.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    s.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    s.add_argument("--epochs", type=int, help="at most this many epochs per fit (default 10)")
    speed = s.add_mutually_exclusive_group()
    speed.add_argument(
        "--cuda-speedups",
        action="store_true",
        help="on CUDA: bfloat16 autocast and large inference batches (off by default: slower "
        "than float32 on the GPU measured, docs/benchmarks.md; the CPU never uses them)",
    )
    speed.add_argument(
        "--no-cuda-speedups",
        action="store_true",
        help="float32 and eager on CUDA (the default; kept for scripts that say so)",
    )
    s.add_argument(
        "--compile",
        action="store_true",
        help="on CUDA: torch.compile the frame encoders (off by default: the compilation "
        "cost more than it saved on the GPU measured, docs/benchmarks.md)",
    )
    s.add_argument(
        "--no-cuda-graphs",
        dest="cuda_graphs",
        action="store_false",
        help="on CUDA: launch each training step's kernels one by one instead of replaying "
        "the step as a CUDA graph (1.6x slower on the H200 measured; for a lab that suspects "
        "the graphs)",
    )
    s.add_argument("--json", metavar="OUT.json", help="default: SPLIT_DIR/baselines/report.json")
    plots = s.add_mutually_exclusive_group()
    plots.add_argument("--plots", metavar="DIR", help="default: SPLIT_DIR/baselines/")
    plots.add_argument("--no-plots", action="store_true")
    s.set_defaults(func=cmd_baseline)

    s = sub.add_parser(
        "jobs",
        help="background jobs of a project: list, run queued ones, run a baseline or train the "
        "glyph encoder in a worker",
        description="Jobs run in worker processes exactly as the Baselines tab runs them "
        "(memory limit, stall watch, checkpoints). Ctrl+C interrupts them (resumable).",
    )
    jobs = s.add_subparsers(dest="jobs_cmd", required=True, metavar="ACTION")
    j = jobs.add_parser("list", help="the project's jobs")
    j.add_argument("project", metavar="PROJECT")
    j.add_argument("--json", action="store_true")
    j = jobs.add_parser("run", help="run every queued job, then exit")
    j.add_argument("project", metavar="PROJECT")
    j = jobs.add_parser("baseline", help="queue a baseline job on a split folder and run it")
    j.add_argument("project", metavar="PROJECT")
    j.add_argument("split_dir", metavar="SPLIT_DIR")
    j.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help=f"model ids or groups (default {','.join(DEFAULT_MODELS)})",
    )
    j.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    j.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    j.add_argument("--epochs", type=int, help="at most this many epochs per fit")
    j.add_argument("--no-wait", action="store_true", help="only queue it; print its id")
    j = jobs.add_parser(
        "encoder",
        help="queue the suggestions' glyph encoder's training and run it (as Tag ▸ Suggest… T)",
    )
    j.add_argument("project", metavar="PROJECT")
    j.add_argument("--epochs", type=int, help="training epochs (default 4)")
    j.add_argument("--seed", type=int, help="the training seed (default 0)")
    j.add_argument("--force", action="store_true", help="train even when a fresh one is stored")
    j.add_argument("--no-wait", action="store_true", help="only queue it; print its id")
    s.set_defaults(func=cmd_jobs)

    s = sub.add_parser(
        "worker",
        help="serve a project's job queue from this machine (a lab's GPU server)",
        description="`worker serve --db URL` claims queued jobs (FOR UPDATE SKIP LOCKED), runs "
        "each in a worker process, heartbeats, and puts dead workers' jobs back in the queue. "
        "SIGTERM or Ctrl+C stops it: its running jobs go back to the queue, resumable.",
    )
    worker_sub = s.add_subparsers(dest="worker_cmd", required=True, metavar="ACTION")
    w = worker_sub.add_parser("serve", help="claim and run queued jobs until stopped")
    from studio.worker.serve import add_serve_arguments

    add_serve_arguments(w)
    s.set_defaults(func=cmd_worker)

    s = sub.add_parser(
        "lab",
        help="people, assignments, agreement, disagreements and the audit trail of a project",
        description="A lab database (postgresql://…) enforces each person's role on the "
        "server; a project file is a lab of one. See docs/lab-server.md.",
    )
    lab = s.add_subparsers(dest="lab_cmd", required=True, metavar="ACTION")
    lp = lab.add_parser("people", help="who works on the project, in which role")
    lp.add_argument("project", metavar="PROJECT")
    lp = lab.add_parser("add-person", help="add a person (admin), or change their role")
    lp.add_argument("project", metavar="PROJECT")
    lp.add_argument("name", help="login name (lower-case letters, digits, _ . -)")
    lp.add_argument("--role", required=True, choices=("annotator", "curator", "admin"))
    lp.add_argument("--full-name", default="")
    lp.add_argument(
        "--password-prompt",
        action="store_true",
        help="ask for their password (hashed on this machine, never stored by the studio)",
    )
    lp = lab.add_parser("assign", help="divide glyphs among annotators, with an overlap share")
    lp.add_argument("project", metavar="PROJECT")
    lp.add_argument("--annotators", required=True, help="comma-separated login names")
    lp.add_argument("--overlap", type=float, default=0.2, help="share tagged by several (0.2)")
    lp.add_argument("--per-glyph", type=int, default=2, help="people per overlap glyph (2)")
    lp.add_argument("--seed", type=int, default=0)
    lp.add_argument("--name", help="a name for this assignment")
    lp.add_argument("glyphs", nargs="*", metavar="GLYPH", help="U+XXXX@font (default: all)")
    lp = lab.add_parser("my-glyphs", help="the glyphs assigned to you (or --annotator)")
    lp.add_argument("project", metavar="PROJECT")
    lp.add_argument("--annotator")
    lp = lab.add_parser(
        "agreement", help="Krippendorff's alpha, Cohen's kappa, percent agreement, intervals"
    )
    lp.add_argument("project", metavar="PROJECT")
    lp.add_argument("--boot", type=int, default=1000, help="bootstrap replicates (1000)")
    lp.add_argument("--seed", type=int, default=0)
    lp.add_argument("--json", action="store_true")
    lp.add_argument(
        "--by-source",
        action="store_true",
        help="also the unassisted and the assisted work apart (tags accepted from suggestions)",
    )
    lp = lab.add_parser("queue", help="glyphs whose annotators disagree, not yet settled")
    lp.add_argument("project", metavar="PROJECT")
    lp.add_argument("--json", action="store_true")
    lp = lab.add_parser("settle", help="settle a glyph's tags as a curator (its consensus)")
    lp.add_argument("project", metavar="PROJECT")
    lp.add_argument("glyph", metavar="GLYPH", help="U+XXXX@font")
    lp.add_argument("tags", nargs="*", metavar="CONCEPT=VALUE", help="none: no tags")
    lp.add_argument("--note", default="")
    lp = lab.add_parser("audit", help="who changed what (a lab database's audit trail)")
    lp.add_argument("project", metavar="PROJECT")
    lp.add_argument("--limit", type=int, default=50)
    s.set_defaults(func=cmd_lab)

    s = sub.add_parser("polyominoes", help="count or draw every polyomino (2D) or polycube (3D)")
    s.add_argument("--cells", type=int, required=True, help="cells per shape (N)")
    s.add_argument("--dims", type=int, default=2, help="2 (polyominoes) or 3 (polycubes)")
    s.add_argument("--equivalence", default="free", choices=("free", "one-sided", "fixed"))
    s.add_argument("--count", action="store_true", help="print only the number of shapes")
    s.add_argument("--out", help="contact sheet PNG (default: polyominoes-<dims>d-<N>-<eq>.png)")
    s.set_defaults(func=cmd_polyominoes)

    s = sub.add_parser(
        "pilot",
        help="pilot studies with people: export an experiment, analyse its results",
        description="A pilot runs from disk in a browser (jsPsych, copied in; no network) or "
        "in PsychoPy (psychopy/conditions.csv), and its results come back per puzzle.",
    )
    pilot = s.add_subparsers(dest="pilot_cmd", required=True, metavar="ACTION")
    pe = pilot.add_parser(
        "export", help="write the experiment for a split folder's or a curated set's puzzles"
    )
    pe.add_argument(
        "source",
        metavar="SOURCE",
        help="a split folder of any family, or a project file with --set",
    )
    pe.add_argument("out_dir", metavar="OUT_DIR", help="a new or empty folder")
    pe.add_argument("--participants", type=int, default=30, help="lists to make (default 30)")
    pe.add_argument("--per-participant", type=int, default=15, help="puzzles per list")
    pe.add_argument(
        "--responses-per-item", type=int, default=2, help="the fewest responses each puzzle gets"
    )
    pe.add_argument("--parts", default="val,test", help="the parts to pilot (default val,test)")
    pe.add_argument("--practice", type=int, default=2, help="practice puzzles (train part)")
    pe.add_argument(
        "--practice-failures", type=int, default=3, help="failed attempts that end a session"
    )
    pe.add_argument("--catch", type=int, default=2, help="attention checks per list")
    pe.add_argument(
        "--min-median-rt", type=float, default=1000.0, help="ms; faster participants excluded"
    )
    pe.add_argument("--seed", type=int, default=1)
    pe.add_argument(
        "--set",
        metavar="SET",
        help="pilot this curated set (id or name) of the project SOURCE; `pilot import --set` "
        "brings the answers back onto its puzzles",
    )
    pe.add_argument(
        "--status",
        default="any",
        help="with --set: the puzzles to pilot, draft, flagged, approved, rejected or any "
        "(default any)",
    )
    pe.add_argument("--allow-font-change", action="store_true", help=_FONT_CHANGE_HELP)
    pa = pilot.add_parser("analyse", help="per-puzzle human accuracy from the saved data files")
    pa.add_argument("pilot_dir", metavar="PILOT_DIR", help="the exported pilot folder")
    pa.add_argument(
        "results", metavar="RESULTS", nargs="+", help="jsPsych CSV/JSON or PsychoPy CSV"
    )
    pa.add_argument("--json", action="store_true")
    pi = pilot.add_parser(
        "import", help="store a pilot's results in a project (and show them per puzzle)"
    )
    pi.add_argument("project", metavar="PROJECT")
    pi.add_argument("pilot_dir", metavar="PILOT_DIR", help="the exported pilot folder")
    pi.add_argument(
        "results", metavar="RESULTS", nargs="+", help="jsPsych CSV/JSON or PsychoPy CSV"
    )
    pi.add_argument(
        "--set", type=int, help="the curated puzzle set the pilot showed (the board's human column)"
    )
    pi.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_pilot)

    s = sub.add_parser("gui", help="open the studio window")
    s.add_argument("project", nargs="?")
    s.add_argument("--demo", action="store_true", help="open the demo project (built if needed)")
    s.set_defaults(func=cmd_gui)
    return p


def _take_debug(argv: list[str]) -> bool:
    """Remove ``--debug`` from ``argv`` wherever it stands before ``--`` (a global flag that
    may also follow the subcommand); True when it was there."""
    end = argv.index("--") if "--" in argv else len(argv)
    found = "--debug" in argv[:end]
    argv[:end] = [a for a in argv[:end] if a != "--debug"]
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. One error path: a StudioError (a problem with what the person gave)
    prints ``analogy-studio: error: …`` and exits 2; an OSError naming a file does the same;
    any other exception is a bug: one line saying so and where its traceback was saved, exit
    1. ``--debug`` prints the traceback too."""
    import traceback

    from studio.core.errors import save_crash_log

    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = _take_debug(args_list)
    try:
        _check_utf8(args_list)
        parser = build_parser()
        args = parser.parse_args(args_list)
        if not getattr(args, "func", None):
            args = parser.parse_args(["gui"])
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe is said here, not by Python's flush at exit
        return code
    except StudioError as e:
        if debug:
            traceback.print_exc()
        print(f"analogy-studio: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("analogy-studio: interrupted", file=sys.stderr)
        return 130
    except ImportError as e:
        if not isinstance(e.__cause__ or e.__context__, KeyboardInterrupt):
            return _bug(e, debug, save_crash_log(e, f"argv: {args_list!r}"))
        # Ctrl+C inside a compiled module's import reaches us as its failure to load
        print("analogy-studio: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    except OSError as e:
        if e.filename is None:
            return _bug(e, debug, save_crash_log(e, f"argv: {args_list!r}"))
        if debug:
            traceback.print_exc()
        print(f"analogy-studio: error: {e.filename}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as e:
        from studio.store.lab import database_refusal

        said = database_refusal(e)  # the lab server said no: the person's, not a bug
        if said is None:
            return _bug(e, debug, save_crash_log(e, f"argv: {args_list!r}"))
        if debug:
            traceback.print_exc()
        print(f"analogy-studio: error: {said}", file=sys.stderr)
        return EXIT_USER_ERROR


def _check_utf8(args: list[str]) -> None:
    """Refuse an argument that is not valid UTF-8 (Python keeps its bytes as lone surrogates,
    which no file, database or password hash can take), naming which one."""
    for i, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            flag, _, _ = arg.partition("=")
            if arg.startswith("--") and "=" in arg:
                which = f"the value of {flag}"
            elif i > 0 and args[i - 1].startswith("-"):
                which = f"the value of {args[i - 1]}"
            else:
                which = f"argument {i + 1}"
            if "://" in arg or "password" in which.lower():
                # a database URL or a password: say where, never what (it may hold a secret)
                bad = next(k for k, c in enumerate(arg) if "\udc80" <= c <= "\udcff")
                raise StudioError(f"{which} is not valid UTF-8 (at character {bad + 1})") from None
            shown = arg.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            raise StudioError(f"{which} is not valid UTF-8: {shown}") from None


def _closed_pipe() -> int:
    """The reader of our output went away (``… | head``): stop quietly, as ``cat`` would, with
    the status a SIGPIPE gives. Standard output is pointed at /dev/null so that Python's own
    flush at exit does not complain about the closed pipe either."""
    import os

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 141


def _bug(e: BaseException, debug: bool, log: Path | None) -> int:
    import traceback

    from studio.core.errors import bug_message

    if debug:
        traceback.print_exception(e)
    print(f"analogy-studio: {bug_message(e, log)}", file=sys.stderr)
    return EXIT_BUG
