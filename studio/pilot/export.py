"""A pilot study as a folder that runs from disk in a browser (issue 29).

``export_pilot(source, out, options)`` writes::

    index.html                 open it (no network, no server): ?list=N&pid=ID skips the
                               first screen
    experiment.js              the experiment (jsPsych 8; studio/pilot/experiment.js)
    pilot.js                   the plan as ``window.PILOT`` (a script, not JSON: a page opened
                               from disk may not fetch files)
    pilot.json                 the same plan and rules, for ``pilot import`` and for people
    jspsych/                   jsPsych and its plugins, copied from the npm packages set-up
                               installed (never a CDN)
    img/<item>/c<r>-<k>.png    each context picture; a<k>.png each answer picture
    psychopy/conditions.csv    the same plan for PsychoPy or Pavlovia: one row per trial
    README.txt                 how to run it and where the data go

Instructions come first, then practice puzzles (from the train part, never piloted) with
feedback, and a participant who fails one practice puzzle ``practice_failures`` times is
thanked and stopped (KiVA's rule: per practice trial); then the participant's list, with
attention checks — a context whose every cell shows the same picture, and that picture among
the answers — at fixed places.
Answers are in the plan's order for that list (shuffled per participant); keys 1–4 or a click
answer; jsPsych records the response time. At the end the browser saves jsPsych's CSV and JSON.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from studio import __version__
from studio.core.errors import StudioError
from studio.core.fileio import atomic_write_text, write_file
from studio.pilot.plan import Plan, PlanItem, Trial, make_plan
from studio.pilot.source import PilotItem, read_items

PILOT_FORMAT = "analogy-studio.pilot"
PILOT_FORMAT_VERSION = 1
PILOT_JSON = "pilot.json"
#: jsPsych packages the experiment loads, with the global each defines (package.json pins them)
JSPSYCH_FILES: tuple[tuple[str, str], ...] = (
    ("jspsych/dist/index.browser.min.js", "jspsych.js"),
    ("jspsych/css/jspsych.css", "jspsych.css"),
    *(
        (f"@jspsych/{name}/dist/index.browser.min.js", f"{name}.js")
        for name in (
            "plugin-html-button-response",
            "plugin-html-keyboard-response",
            "plugin-instructions",
            "plugin-survey-text",
            "plugin-preload",
        )
    ),
)
PROMPT = "Which answer completes the last row the way the rows above go together?"
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class PilotOptions:
    participants: int = 30
    per_participant: int = 15
    responses_per_item: int = 2
    parts: tuple[str, ...] = ("val", "test")
    practice: int = 2
    practice_failures: int = 3
    catch: int = 2
    min_median_rt_ms: float = 1000.0
    feedback_ms: int = 1500
    seed: int = 1


def jspsych_dir() -> Path:
    """Where set-up installed the npm packages (``node_modules`` beside the sources)."""
    from studio.resources import resources_dir

    return resources_dir().parent / "node_modules"


def export_pilot(
    source: str | Path,
    out: str | Path,
    options: PilotOptions,
    progress: Progress | None = None,
    source_label: str | None = None,
) -> dict[str, Any]:
    """Write the experiment (module docstring); returns a summary with the plan's lines.
    StudioError naming the argument or file for anything that cannot be done; ``out`` must be
    new or empty, and nothing is left there on an error before writing starts.
    ``source_label``: what pilot.json records as the source where the split folder is a
    passing one (a curated set's, :func:`studio.pilot.sets.pilot_set`)."""
    from studio.core.splitdir import check_target

    out = Path(out)
    check_target(out, lambda _name: False)
    node_modules = jspsych_dir()
    missing = [src for src, _ in JSPSYCH_FILES if not (node_modules / src).is_file()]
    if missing:
        raise StudioError(
            f"jsPsych is not installed here ({missing[0]} is missing): run `make setup` "
            "(scripts/setup.sh installs it from the npm registry)",
            node_modules,
        )
    items = read_items(source)  # plain ids only (source.check_id)
    parts = set(options.parts)
    piloted = [it for it in items if it.part in parts]
    if not piloted:
        raise StudioError(
            f"holds no puzzle in the parts {', '.join(options.parts)} (--parts)", source
        )
    # practice never shows a puzzle the participants are then tested on
    spare = [it for it in items if it.part not in parts]
    ordered = {it.id: it for it in [*(it for it in spare if it.part == "train"), *spare]}
    practice = list(ordered.values())[: options.practice]
    catches = _catch_items(piloted, options.catch)
    plan = make_plan(
        [PlanItem(it.id, it.group, len(it.answers)) for it in piloted],
        options.participants,
        options.per_participant,
        options.responses_per_item,
        options.seed,
    )
    rng = np.random.default_rng(np.random.SeedSequence([options.seed, 0xCA7C]))
    for trials in plan.lists:  # attention checks at evenly spread places, answers shuffled
        for k, c in enumerate(catches):
            at = (k + 1) * len(trials) // (len(catches) + 1)
            trials.insert(at, Trial(c.id, tuple(int(x) for x in rng.permutation(len(c.answers)))))
    label = source_label or str(Path(source).resolve())
    pilot_id = _pilot_id(label, plan, options)
    by_id = {it.id: it for it in [*piloted, *practice, *catches]}
    out.mkdir(parents=True, exist_ok=True)
    images = _write_images(out, list(by_id.values()), progress)
    (out / "jspsych").mkdir(exist_ok=True)
    for src, name in JSPSYCH_FILES:
        shutil.copyfile(node_modules / src, out / "jspsych" / name)
    here = Path(__file__).parent
    shutil.copyfile(here / "experiment.js", out / "experiment.js")
    practice_plan = [
        {"item": it.id, "order": [int(x) for x in rng.permutation(len(it.answers))]}
        for it in practice
    ]
    doc = {
        "format": PILOT_FORMAT,
        "format_version": PILOT_FORMAT_VERSION,
        "pilot_id": pilot_id,
        "studio_version": __version__,
        "source": label,
        "family": piloted[0].family,
        "parts": list(options.parts),
        "plan": plan.to_json(),
        "practice": practice_plan,
        "catch_ids": [c.id for c in catches],
        "items": {
            it.id: {"group": it.group, "key": it.key, "answers": len(it.answers), "part": it.part}
            | _question_keys(it)
            for it in by_id.values()
        },
        # the key of the participants' pseudonyms (studio.store.pilots): it stays with the
        # pilot's folder, never in the project, so a stored pseudonym cannot be reversed by
        # guessing ids
        "pseudonym_key": secrets.token_hex(16),
        "exclusion": {
            "practice_failures": options.practice_failures,
            "catch_must_pass": True,
            "min_median_rt_ms": options.min_median_rt_ms,
        },
    }
    atomic_write_text(out / PILOT_JSON, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    page = {
        "pilot_id": pilot_id,
        "studio_version": __version__,
        "prompt": _prompt(piloted[0].family),
        "instructions": _instructions(
            len(practice), piloted[0].family, any(it.questions for it in piloted)
        ),
        "practice": practice_plan,
        "practice_failures": options.practice_failures,
        "feedback_ms": options.feedback_ms,
        "catch_ids": [c.id for c in catches],
        "list_length": len(plan.lists[0]),
        "lists": [[{"item": t.item, "order": list(t.order)} for t in ts] for ts in plan.lists],
        "items": {
            i: {"id": i, "group": it.group, "key": it.key, **images[i]}
            | ({"questions": it.questions} if it.questions else {})
            for i, it in by_id.items()
        },
    }
    atomic_write_text(
        out / "pilot.js", "window.PILOT = " + json.dumps(page, sort_keys=True) + ";\n"
    )
    atomic_write_text(out / "index.html", _index_html())
    _write_psychopy(out, plan, by_id, images, pilot_id, set(doc["catch_ids"]))
    atomic_write_text(out / "README.txt", _readme(pilot_id, plan, options))
    groups = {it.id: it.group for it in piloted}
    return {
        "out_dir": str(out),
        "pilot_id": pilot_id,
        "puzzles": len(piloted),
        "practice": len(practice),
        "catch": len(catches),
        "plan": plan.lines(groups),
        "responses": dict(plan.responses()),
    }


def _prompt(family_id: str) -> str:
    """What the participants are asked: the family's own words (``Family.prompt``: KiVA's
    says what changed), else the matrix question."""
    from studio.plugins import family, registry

    if family_id in registry("families"):
        return family(family_id).prompt or PROMPT
    return PROMPT


def _question_keys(item: PilotItem) -> dict[str, Any]:
    """What ``pilot import`` checks a worded question's answer against: per question its
    key and how many options it offered (none for a family that asks in pictures only)."""
    if not item.questions:
        return {}
    asked = {q["id"]: {"key": q["key"], "options": len(q["options"])} for q in item.questions}
    return {"questions": asked}


def _pilot_id(source: str, plan: Plan, options: PilotOptions) -> str:
    """A short id fixed by what the pilot shows (source, plan, options): every trial carries
    it, so a results file from another pilot is told apart at import."""
    h = hashlib.sha256()
    h.update(source.encode())
    h.update(json.dumps(plan.to_json(), sort_keys=True).encode())
    h.update(repr(options).encode())
    return h.hexdigest()[:12]


def _catch_items(items: Sequence[PilotItem], n: int) -> list[PilotItem]:
    """Attention checks: every context cell shows one picture, which is also one answer (the
    key); the other answers are other puzzles' answers. Obvious to anyone who looks."""
    out = []
    for k in range(min(n, len(items))):
        base = items[(k * 7919) % len(items)]
        same = base.rows[0][0]
        others = [a for it in items if it is not base for a in it.answers][: len(base.answers) - 1]
        if len(others) < len(base.answers) - 1:
            break
        answers = [same, *others]
        rows = [[same] * len(r) for r in base.rows]
        out.append(
            PilotItem(f"catch-{k + 1}", base.family, "catch", "catch/identity", rows, answers, 0)
        )
    return out


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "PNG", optimize=False)
    return buf.getvalue()


def _write_images(
    out: Path, items: Sequence[PilotItem], progress: Progress | None
) -> dict[str, dict[str, Any]]:
    """Each item's pictures under ``img/<id>/``; returns their relative paths."""
    paths: dict[str, dict[str, Any]] = {}
    for n, it in enumerate(items, 1):
        folder = out / "img" / it.id
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for r, row in enumerate(it.rows):
            names = []
            for k, pic in enumerate(row):
                name = f"img/{it.id}/c{r}-{k}.png"
                write_file(out / name, _png(pic))
                names.append(name)
            rows.append(names)
        answers = []
        for k, pic in enumerate(it.answers):
            name = f"img/{it.id}/a{k}.png"
            write_file(out / name, _png(pic))
            answers.append(name)
        paths[it.id] = {"rows": rows, "answers": answers}
        if progress is not None:
            progress(n, len(items))
    return paths


def _instructions(practice: int, family: str, in_words: bool = False) -> list[str]:
    words = (
        "<p>Before the pictures, each puzzle asks in words what changed in the top pair and "
        "how; answer with a click or the number keys.</p>"
        if in_words
        else ""
    )
    first = (
        f"<p>First {practice} practice puzzle{'s' if practice != 1 else ''} tell you whether "
        "you were right.</p>"
        if practice
        else ""
    )
    return [
        "<h2>Puzzles of pictures</h2><p>Each puzzle shows rows of pictures that go together "
        "in some way. The last row has a missing picture, marked <b>?</b>. Choose the answer "
        "that completes it <i>in the same way</i>.</p>",
        "<p>Answer by clicking a picture, or with the keys <b>1</b> to <b>4</b>. There is no "
        "time limit, but please do not think for too long.</p>" + words + first,
        "<p>Now and then a very easy puzzle checks that you are paying attention.</p>"
        "<p>Press <b>Next</b> (or →) to begin.</p>",
    ]


def _index_html() -> str:
    tags = "\n".join(
        f'    <script src="jspsych/{name}"></script>'
        for _, name in JSPSYCH_FILES
        if name.endswith(".js")
    )
    return f"""<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Pilot study</title>
    <link rel="stylesheet" href="jspsych/jspsych.css">
    <style>
      .jspsych-content {{ max-width: 960px; }}
      .pilot-context {{ display: inline-block; margin-bottom: 1em; }}
      .pilot-row {{ display: flex; justify-content: center; gap: 12px; margin: 6px; }}
      .pilot-cell {{ width: 160px; height: 160px; object-fit: contain; border: 1px solid #bbb; }}
      .pilot-missing {{ display: inline-flex; align-items: center; justify-content: center;
                        font-size: 48px; color: #888; }}
      .pilot-answer-img {{ width: 140px; height: 140px; object-fit: contain; }}
      .pilot-answer {{ margin: 6px; }}
      .pilot-key {{ font-weight: bold; }}
      .pilot-option {{ margin: 6px; min-width: 140px; }}
      #jspsych-html-button-response-btngroup {{ flex-wrap: wrap; justify-content: center; }}
      .pilot-right {{ color: #1a7f37; font-size: 24px; }}
      .pilot-wrong {{ color: #b42318; font-size: 20px; }}
    </style>
{tags}
    <script src="pilot.js"></script>
  </head>
  <body>
    <script src="experiment.js"></script>
  </body>
</html>
"""


def _write_psychopy(
    out: Path,
    plan: Plan,
    items: dict[str, PilotItem],
    images: dict[str, dict[str, Any]],
    pilot_id: str,
    catch_ids: set[str],
) -> None:
    """One row per (list, position): the images in screen order and the key's position, so a
    PsychoPy or Pavlovia experiment runs the same plan (``kind`` marks attention checks)."""
    most = max(len(it.answers) for it in items.values())
    cells = max(sum(len(r) for r in it.rows) for it in items.values())
    asked = list(dict.fromkeys(q["id"] for it in items.values() for q in it.questions))
    head = ["pilot_id", "list", "position", "puzzle_id", "kind", "group", "key_position"]
    head += [f"context_{k}" for k in range(cells)] + [f"answer_{k + 1}" for k in range(most)]
    for qid in asked:  # questions in words (KiVA's what and how): options " | "-joined
        head += [f"{qid}_prompt", f"{qid}_options", f"{qid}_key_position"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for li, trials in enumerate(plan.lists):
        for pos, t in enumerate(trials):
            it = items[t.item]
            ctx = [p for row in images[t.item]["rows"] for p in row]
            shown = [images[t.item]["answers"][i] for i in t.order]
            kind = "catch" if t.item in catch_ids else "test"
            row = [pilot_id, li, pos, t.item, kind, it.group, t.order.index(it.key) + 1]
            row += ctx + [""] * (cells - len(ctx)) + shown + [""] * (most - len(shown))
            mine = {q["id"]: q for q in it.questions}
            for qid in asked:
                q = mine.get(qid)
                row += [q["prompt"], " | ".join(q["options"]), q["key"] + 1] if q else ["", "", ""]
            w.writerow([_cell(x) for x in row])
    (out / "psychopy").mkdir(exist_ok=True)
    atomic_write_text(out / "psychopy" / "conditions.csv", buf.getvalue())


def _cell(x: object) -> object:
    """A spreadsheet never reads a conditions cell as a formula (``=``, ``+``, ``-``, ``@``)."""
    if isinstance(x, str) and x[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + x
    return x


def _readme(pilot_id: str, plan: Plan, options: PilotOptions) -> str:
    return f"""Pilot study {pilot_id} (Analogy Studio {__version__})

Run it: open index.html in a browser (Chrome, Chromium, Firefox). Nothing is fetched from the
network. Give each participant a list number from 0 to {plan.participants - 1} (each list once;
{plan.per_participant} puzzles plus attention checks), or open
index.html?list=N&pid=ID to skip the first screen.

At the end the browser saves pilot-{pilot_id}-<participant>.csv and .json in its downloads
folder. Collect them and run:

    analogy-studio pilot import PILOT_FOLDER RESULTS...

Exclusion rules declared here (pilot.json): {options.practice_failures} failed attempts at
one practice puzzle end a session; a failed attention check, or a median response time under
{options.min_median_rt_ms:g} ms, excludes a participant at import.

PsychoPy / Pavlovia: psychopy/conditions.csv holds the same plan, one row per trial, with the
pictures in screen order and the key's position (1-based); a family that also asks in words
(KiVA: what changed, and how) adds each question's prompt, options and key position.
"""
