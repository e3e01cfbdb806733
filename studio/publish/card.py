"""The dataset card of an exported curated set: ``README.md`` at the top of the export.

It says what is in the folder and how to load it, counts the puzzles per part, rule, concept
and layout, lists the puzzles left out because they no longer pass vetting, gives the
answer-set audit (:mod:`studio.vet.audit`, as ``analogy-studio vet`` prints it), the project's
baseline results on the set where there are any, and the parameters and provenance: studio
version, project, set, schema id and version, and the annotation hash. Plain Markdown, no
timestamps of its own: the same export gives the same card.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from studio.core.fileio import atomic_write_text
from studio.core.puzzle import SPLITS, Puzzle
from studio.core.verdict import Verdict
from studio.generate.params import SplitParams
from studio.vet.audit import audit_lines

README = "README.md"


def _table(title: str, counts: Mapping[str, Mapping[str, int]], parts: Sequence[str]) -> list[str]:
    """A Markdown table: one row per key, one column per part, and the total."""
    keys = list(dict.fromkeys(k for part in (*parts, "all") for k in counts.get(part, {})))
    if not keys:
        return []
    head = f"| {title} | " + " | ".join(parts) + " | all |"
    rule = "|---|" + "---:|" * (len(parts) + 1)
    rows = [
        f"| {k} | " + " | ".join(str(counts.get(p, {}).get(k, 0)) for p in (*parts, "all")) + " |"
        for k in keys
    ]
    return [head, rule, *rows, ""]


def _per(stats: Mapping[str, Any], name: str) -> dict[str, dict[str, int]]:
    return {part: dict(s.get(name, {})) for part, s in stats.items() if isinstance(s, Mapping)}


def _coverage_section(puzzles: Sequence[Puzzle], params: SplitParams) -> list[str]:
    """What the published puzzles cover per part (issue 24): a reader must see that a test
    part holds one (rule, concept) tuple before reading its accuracies as a benchmark's."""
    from studio.vet.coverage import coverage, coverage_lines

    present = Counter(p.split for p in puzzles)
    cov = coverage(puzzles, present, params.tested_rules)
    out = ["## Coverage", "", "(rule, concept) tuples and rules per part, as published:", ""]
    out += [f"- {line}" for line in coverage_lines(cov)]
    for part, e in cov["parts"].items():
        if e["tuples"]:
            out.append(f"- {part} tuples: {', '.join(e['tuples'])}")
    if cov["warnings"]:
        out += ["", "Warnings:", ""] + [f"- {w}" for w in cov["warnings"]]
    out.append("")
    return out


def _partial_section(stats: Mapping[str, Any]) -> list[str]:
    """How far part of the context finds the key (issue 24): a solver that sees the answers
    and the first row, or the incomplete row, alone — per part, then the tuples furthest over
    chance. A reader can then weigh a model's score against what half a puzzle gives."""
    from studio.vet.partial import EXPLANATION, VIEW_NAMES, VIEWS, floor_of, partial_lines

    rows = [
        (part, stats[part]["partial_views"]["views"])
        for part in (*SPLITS, "all")
        if isinstance(stats.get(part), Mapping) and stats[part].get("partial_views")
    ]
    if not rows:
        return []
    shown = [v for v in VIEWS if any(v in views for _, views in rows)]
    out = [
        "## Partial views",
        "",
        f"The accuracy of the partial views' solvers. {EXPLANATION}",
        "",
        "| part | chance | " + " | ".join(VIEW_NAMES[v] for v in shown) + " |",
        "|---|---|" + "---|" * len(shown),
    ]
    for part, views in rows:
        cells = [
            (
                f"{views[v]['accuracy']:.2f}"
                + (f" · {floor_of(views[v]):.2f} weighted" if "weighted" in views[v] else "")
                + f" (decoys {views[v]['decoyed']:.0%})"
            )
            if v in views
            else "—"
            for v in shown
        ]
        chance = next(iter(views.values()))["chance"]
        out.append(f"| {part} | {chance:.2f} | " + " | ".join(cells) + " |")
    out.append("")
    whole = stats.get("all", {}).get("partial_views") or {}
    out += [f"- {line}" for line in partial_lines(whole)[1:]]
    out.append("")
    return out


def _about_section(provenance: Mapping[str, Any]) -> list[str]:
    """The description, licence, authors and citation the exporter gave (:mod:`.info`)."""
    import datetime

    from studio.publish.info import DatasetInfo

    info = DatasetInfo.from_json(provenance.get("dataset") or {})
    exported_by = str(provenance.get("exported_by") or "")
    out = [info.description, ""] if info.description else []
    out += ["## Licence and citation", ""]
    if info.license:
        out.append(f"Licence: [{info.license}]({info.license_url}).")
    else:
        out.append("Licence: **none given**. Ask the authors before you reuse or redistribute it.")
    creators = info.creators(exported_by)
    if creators:
        out.append(f"Authors: {'; '.join(creators)}.")
    year = datetime.date.today().year
    citation = info.citation(provenance["set"]["name"], year, exported_by)
    fence = "~~~~" if "```" in citation else "```"  # a citation never closes its own block
    out += ["", "Cite as:", "", fence, citation, fence, ""]
    return out


def card_text(
    puzzles: Sequence[Puzzle],
    verdicts: Sequence[Verdict],
    stats: Mapping[str, Any],
    params: SplitParams,
    provenance: Mapping[str, Any],
    baselines: Mapping[str, Any] | None,
) -> str:
    """The card's Markdown (see the module docstring)."""
    s = provenance["set"]
    parts = [p for p in SPLITS if stats.get(p, {}).get("puzzles")]
    status = provenance["status"]
    which = "every status" if status == "any" else f"status **{status}**"
    warned = sum(1 for v in verdicts if v.warnings)
    out = [
        f"# {s['name']}: a curated {provenance['family']} benchmark",
        "",
        f"{len(puzzles)} puzzles ({which}) of the puzzle set “{s['name']}” (set {s['id']}, "
        f"{s['puzzles']} puzzles) of the project `{provenance['project']['name']}`, exported "
        f"by Analogy Studio {provenance['studio_version']}. Every puzzle was vetted again "
        "against the project's annotations and schema at export: all pass "
        f"({warned} carry image-feature warnings, which do not make a puzzle invalid).",
        "",
        *_about_section(provenance),
        "## Files",
        "",
        "| file | what |",
        "|---|---|",
        "| `puzzles.jsonl` | one puzzle record per line, with its `curation` (status, "
        "reviewer, comments, replaced foils, regenerations, the curation log) |",
        "| `records.parquet` | the same records as a table, one row per puzzle |",
        "| `croissant.json` | ML Commons Croissant 1.0 metadata |",
        "| `sheets/<id>.png` | each puzzle as people see it (the key not marked) |",
        "| `npz/<id>.npz` | UA's arrays: `images` (frames × 80 × 80, 1 = ink), `target`, "
        "`probtype` |",
        "| `annotations.csv` | the annotations the puzzles were vetted against |",
        "| `schema.json` | the concept schema |",
        "| `report.json` | split statistics and every puzzle's verdict |",
        "| `split.json` | the generation parameters and this export's provenance |",
        "",
        'Load it with `pandas.read_parquet("records.parquet")`, '
        '`datasets.load_dataset("parquet", data_files="records.parquet")`, or '
        '`mlcroissant.Dataset(jsonld="croissant.json").records("puzzles")`.',
        "",
        "## Counts",
        "",
    ]
    out += _table("part", {p: {"puzzles": stats[p]["puzzles"]} for p in (*parts, "all")}, parts)
    out += _table("rule", _per(stats, "per_rule"), parts)
    out += _table("concept", _per(stats, "per_concept"), parts)
    out += _table("layout", _per(stats, "per_layout"), parts)
    out += _table("shift", _per(stats, "per_shift"), parts)
    out += _coverage_section(puzzles, params)
    out += _partial_section(stats)

    dropped = provenance.get("dropped") or []
    out += ["## Left out at export", ""]
    if dropped:
        out.append(
            f"{len(dropped)} puzzles of that status no longer pass vetting against the "
            "current annotations and schema and were left out:"
        )
        out.append("")
        out += [f"- `{d['id']}`: {'; '.join(d['reasons'])}" for d in dropped]
    else:
        out.append("None: every puzzle of that status passes.")
    out.append("")

    out += _audit_section(
        stats,
        "(Key rate per value against the answer rate, answers sharing the key's value, and the "
        "key's position; see `studio/vet/audit.py`.)",
        "(no answers to audit)",
    )
    out += _results_sections(baselines, provenance)
    out += [
        f"- schema `{provenance['schema']['id']}` version {provenance['schema']['version']}",
        f"- annotation hash `sha256:{provenance['annotation_hash']}`: the sha256 of the data "
        "lines of `annotations.csv` (header left out), sorted, each ending in a newline",
        "",
        "## Parameters",
        "",
        "The generation parameters of the set (`split.json` holds them too):",
        "",
        "```json",
        json.dumps(params.to_json(), indent=1, sort_keys=True),
        "```",
        "",
    ]
    return "\n".join(out)


def _audit_section(stats: Mapping[str, Any], how: str, none: str) -> list[str]:
    """The answer-set audit of the whole set, as ``vet`` prints it."""
    audit = stats.get("all", {}).get("audit")
    out = ["## Answer-set audit", "", f"Can the key be found from the answers alone? {how}", ""]
    out += [f"    {line}" for line in (audit_lines(audit) if audit else [])] or [f"    {none}"]
    return [*out, ""]


def _results_sections(
    baselines: Mapping[str, Any] | None, provenance: Mapping[str, Any]
) -> list[str]:
    """The models, the people, the two side by side, and the provenance's first lines (where
    the set came from and who exported it)."""
    s = provenance["set"]
    out = _baselines_section(baselines)
    out += _human_section(provenance.get("human"))
    out += _beside_section(baselines, provenance.get("human"))
    return [
        *out,
        "## Provenance",
        "",
        f"- Analogy Studio {provenance['studio_version']}",
        f"- project `{provenance['project']['name']}` (`{provenance['project']['path']}`)",
        f"- puzzle set {s['id']} “{s['name']}”, created {s['created_at']} by {s['author']}",
        f"- exported by {provenance['exported_by']}, status filter `{provenance['status']}`",
    ]


def _baselines_section(baselines: Mapping[str, Any] | None) -> list[str]:
    """The newest baseline job's accuracies on the set, where one has run."""
    out = ["## Baseline results", ""]
    if baselines:
        out.append(
            f"The newest baseline job on this set in the project (job {baselines['job']}, "
            f"finished {baselines['finished_at']}, on {baselines['device']}; part "
            f"{baselines['eval_part']}, seeds {baselines['seeds']}, chance "
            f"{_num(baselines['chance'])}). It ran on the whole set at the time, before this "
            f"export's status filter; {baselines['flagged_puzzles']} puzzles were flagged "
            "shortcut-prone."
        )
        out += ["", "| model | accuracy | 95% CI |", "|---|---:|---|"]
        for model, acc in baselines["accuracy"].items():
            ci = baselines["ci95"].get(model)
            ci_text = f"[{_num(ci[0])}, {_num(ci[1])}]" if ci else "—"
            out.append(f"| {model} | {_num(acc)} | {ci_text} |")
    else:
        out.append("No baseline has run on this set in the project.")
    out.append("")
    return out


def _human_section(human: Mapping[str, Any] | None) -> list[str]:
    """People's accuracy from the set's pilots (issue 29), as UA's tables set humans beside
    the models: overall, per rule, concept and family, with the answers counted."""
    out = ["## Human baseline", ""]
    if not human:
        return [*out, "No pilot with people has answers for these puzzles.", ""]
    pilots = human.get("pilots") or []
    kept = sum(int(p.get("kept", 0)) for p in pilots)
    excluded = sum(int(p.get("excluded", 0)) for p in pilots)
    o = human["overall"]
    out.append(
        f"People chose the key in {o['accuracy']:.1%} of {o['n']} answers to {o['puzzles']} of "
        f"these puzzles (95% CI [{_num(o['ci95'][0])}, {_num(o['ci95'][1])}]), from "
        f"{len(pilots)} pilot(s) with {kept} participants kept and {excluded} excluded "
        "(failed practice or attention checks, or too fast). Pilot ids: "
        + (", ".join(f"`{p['id']}`" for p in pilots) or "—")
        + "."
    )
    designs = [p for p in pilots if p.get("design")]
    if designs:
        out.append("")
    for p in designs:
        d = p["design"]
        rules = d.get("exclusion") or {}
        out.append(
            f"- Pilot `{p['id']}`: {d['participants']} lists of {d['per_participant']} puzzles "
            f"(at least {d['responses_per_item']} answers asked per puzzle), "
            + (
                f"{d['practice']} practice puzzles with feedback "
                f"({rules.get('practice_failures', '?')} failures at one end a session), "
                if d["practice"]
                else "no practice puzzles, "
            )
            + f"{d['catch']} attention checks per list"
            + (
                f", a median response time under {float(rules['min_median_rt_ms']):g} ms excluded"
                if rules.get("min_median_rt_ms")
                else ""
            )
            + f"; {p['kept']} kept, {p['excluded']} excluded."
        )
    for key in ("family", "rule", "concept"):
        rows = human.get(key) or {}
        out += [
            "",
            f"| {key} | answers | puzzles | accuracy | 95% CI |",
            "|---|---:|---:|---:|---|",
        ]
        for name, r in rows.items():
            out.append(
                f"| {name} | {r['n']} | {r['puzzles']} | {_num(r['accuracy'])} | "
                f"[{_num(r['ci95'][0])}, {_num(r['ci95'][1])}] |"
            )
    out.append("")
    return out


def _beside_section(
    baselines: Mapping[str, Any] | None, human: Mapping[str, Any] | None
) -> list[str]:
    """People beside every baseline model, per family, rule and concept (UA's Tables 1-4):
    the models' accuracy on the job's evaluation part, people's over the piloted puzzles (the
    two sets of puzzles may differ: the table says how many answers people gave)."""
    if not human or not baselines or not baselines.get("groups"):
        return []
    groups = baselines["groups"]
    models = list(baselines.get("accuracy") or {})
    out = [
        "## People beside the models",
        "",
        f"Each model's accuracy on part {baselines['eval_part']} of baseline job "
        f"{baselines['job']} beside people's in the pilots (answers counted), per family, "
        "rule and concept; — where one side has no puzzles of that kind.",
    ]
    for key in ("family", "rule", "concept"):
        mine = groups.get(key) or {}
        theirs = human.get(key) or {}
        names = sorted(set(mine) | set(theirs))
        if not names:
            continue
        out += [
            "",
            f"| {key} | " + " | ".join(models) + " | people (answers) |",
            "|---|" + "---:|" * (len(models) + 1),
        ]
        for name in names:
            row = mine.get(name) or {}
            person = theirs.get(name)
            people = f"{_num(person['accuracy'])} ({person['n']})" if person else "—"
            out.append(
                f"| {name} | " + " | ".join(_num(row.get(m)) for m in models) + f" | {people} |"
            )
    out.append("")
    return out


def _num(x: Any) -> str:
    return "—" if x is None else f"{float(x):.3f}"


def write_card(
    folder: Path,
    puzzles: Sequence[Puzzle],
    verdicts: Sequence[Verdict],
    stats: Mapping[str, Any],
    params: SplitParams,
    provenance: Mapping[str, Any],
    baselines: Mapping[str, Any] | None,
) -> Path:
    """Write ``README.md`` into the export folder; returns its path."""
    path = folder / README
    atomic_write_text(path, card_text(puzzles, verdicts, stats, params, provenance, baselines))
    return path


def stimulus_card_text(
    items: Sequence[Any],
    verdicts: Sequence[Verdict],
    stats: Mapping[str, Any],
    provenance: Mapping[str, Any],
    baselines: Mapping[str, Any] | None,
) -> str:
    """The card of a curated stimulus set (KiVA trials, polycube, composition and cube-net
    items, a plugin family's; issue 27): what a reader needs as for a glyph set — the files,
    counts per part, rule and concept, the family's answer-set audit and partial-view floors,
    the items left out, the baselines and people, the provenance and the generation options."""
    s = provenance["set"]
    parts = [p for p in SPLITS if stats.get(p, {}).get("puzzles")]
    status = provenance["status"]
    which = "every status" if status == "any" else f"status **{status}**"
    family = provenance["family"]
    out = [
        f"# {s['name']}: a curated {family} benchmark",
        "",
        f"{len(items)} {family} items ({which}) of the puzzle set “{s['name']}” (set {s['id']}, "
        f"{s['puzzles']} items) of the project `{provenance['project']['name']}`, exported by "
        f"Analogy Studio {provenance['studio_version']}. Every item was re-drawn from its record "
        "and vetted again by its family's checks at export: all pass "
        f"({sum(1 for v in verdicts if v.warnings)} carry warnings).",
        "",
        *_about_section(provenance),
        "## Files",
        "",
        "| file | what |",
        "|---|---|",
        "| `items.jsonl` | one item record per line with its verdict (every check and its "
        "measure): the split format `analogy-studio vet` and `baseline` read |",
        "| `puzzles.jsonl` | the same records with their `curation` (status, reviewer, "
        "comments, the curation log) |",
        "| `records.parquet` | the records as a table, one row per item |",
        "| `croissant.json` | ML Commons Croissant 1.0 metadata |",
        "| `sheets/<id>.png` | each item as people see it |",
        "| `images/<id>/<name>.png` | each item's pictures, by the names its record gives |",
        "| `report.json` | counts and the answer-set audit |",
        "| `split.json` | the generation options and this export's provenance |",
        "",
        'Load it with `pandas.read_parquet("records.parquet")` or '
        '`mlcroissant.Dataset(jsonld="croissant.json").records("puzzles")`.',
        "",
        "## Counts",
        "",
    ]
    out += _table("part", {p: {"items": stats[p]["puzzles"]} for p in (*parts, "all")}, parts)
    out += _table("rule", _per(stats, "per_rule"), parts)
    out += _table("concept", _per(stats, "per_concept"), parts)
    out += _partial_section(stats)
    dropped = provenance.get("dropped") or []
    out += ["## Left out at export", ""]
    if dropped:
        out += [f"{len(dropped)} items of that status no longer pass their checks:", ""]
        out += [f"- `{d['id']}`: {'; '.join(d['reasons'])}" for d in dropped]
    else:
        out.append("None: every item of that status passes.")
    out.append("")
    out += _audit_section(
        stats,
        "(Over the family's symbolic answer attributes; see `studio/vet/audit.py`.)",
        "(this family has no symbolic answers)",
    )
    out += _results_sections(baselines, provenance)
    out += [
        "",
        "## Generation",
        "",
        "The family, seed and options the items were generated with (`split.json` holds them too):",
        "",
        "```json",
        json.dumps(provenance.get("generation") or {}, indent=1, sort_keys=True),
        "```",
        "",
    ]
    return "\n".join(out)


__all__ = ["README", "card_text", "stimulus_card_text", "write_card"]
