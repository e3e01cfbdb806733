"""A pilot's results, read back and judged per puzzle (issue 29).

Reads jsPsych's CSV or JSON (what the exported experiment saves) and PsychoPy CSV (the
conditions file's columns, plus the participant's ``response`` — the 1-based position chosen,
or PsychoPy's ``key_resp.keys`` — and ``rt`` in seconds, or ``key_resp.rt``), checks them
against the pilot's ``pilot.json`` and refuses, naming the file and line: a file from another
pilot (every trial carries the pilot id), a puzzle the pilot never showed, a participant in
two files, a run that stopped before its list ended (unless practice excluded the person).

It then applies the exclusion rules the export declared — failed practice, a failed attention
check, a median response time under the threshold — and gives, per puzzle: human accuracy
with a Wilson interval, the median response time, how often each answer was chosen, and the
flags "people fail" (under ``fail_below``, by default KiVA's 2 of 3) and "people split between
the key and answer k" (a foil chosen by at least ``split_share`` of the responses), and its
classical item discrimination (flagged when negative); per (rule, concept) group and overall
the same accuracy; and, where the family also asks in words (KiVA's "what changed" and
"how"), each question's accuracy overall and per puzzle. Nothing is written.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
from studio.pilot.export import PILOT_FORMAT, PILOT_JSON

#: a puzzle fewer people than this solve is flagged (KiVA: valid when 2 of 3 adults solve it)
FAIL_BELOW = 2 / 3
#: a foil chosen by at least this share of the responses splits people
SPLIT_SHARE = 1 / 3
#: the fewest answers a puzzle's flags speak from (the board's rule: curation.PEOPLE_MIN_ANSWERS)
FLAG_MIN_ANSWERS = 3
MAX_RESULTS_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Response:
    file: str
    line: int
    participant: str
    kind: str  # practice, test, catch, or question:<id> (a question asked in words)
    puzzle: str
    chosen: int | None  # the answer's index in the puzzle (not its screen position)
    correct: bool
    rt_ms: float | None


def read_pilot(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / PILOT_JSON
    if not path.is_file():
        raise StudioError(
            "is not a pilot folder (no pilot.json): export one with `pilot export`", folder
        )
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise StudioError(f"cannot be read: {e}", path) from None
    if not isinstance(doc, dict) or doc.get("format") != PILOT_FORMAT:
        raise StudioError(f"is not an Analogy Studio pilot file (format {PILOT_FORMAT})", path)
    return doc


def _bool(text: Any) -> bool:
    return str(text).strip().lower() in ("true", "1", "yes")


def _num(text: Any) -> float | None:
    """A finite number, or None (blank, NaN, infinite or not a number)."""
    try:
        x = float(text)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def _index(text: Any) -> int | None:
    """A whole number of at most a few digits (an answer index or a position), else None."""
    x = _num(text)
    return int(x) if x is not None and x == int(x) and abs(x) < 10_000 else None


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) of a CSV or JSON results file; StudioError naming it when unreadable."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise StudioError(f"cannot be read: {e.strerror or e}", path) from None
    if size > MAX_RESULTS_BYTES:
        raise StudioError(
            f"is {size:,} bytes; a results file holds at most {MAX_RESULTS_BYTES:,}", path
        )
    try:
        text = path.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise StudioError(f"cannot be read as UTF-8 text: {e}", path) from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise StudioError(f"line {e.lineno}: not valid JSON: {e.msg}", path) from None
        except RecursionError:
            raise StudioError("is nested too deeply to be jsPsych's JSON data", path) from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise StudioError("is not jsPsych's JSON data (a list of trials)", path)
        return [(i + 1, r) for i, r in enumerate(data)]
    reader = csv.DictReader(text.splitlines())
    out: list[tuple[int, dict[str, Any]]] = []
    try:
        if not reader.fieldnames:
            raise StudioError("is empty", path)
        for i, r in enumerate(reader):
            out.append((i + 2, dict(r)))
    except csv.Error as e:
        raise StudioError(
            f"line {reader.line_num}: not CSV as jsPsych writes it: {e}", path
        ) from None
    return out


#: what a results file may say of a participant's exclusion (the experiment writes these)
FILE_EXCLUSIONS = ("failed-practice",)


def _responses(path: Path, pilot: Mapping[str, Any]) -> tuple[str, list[Response], str]:
    """One participant's responses in one file, checked against the pilot's plan (their
    list's puzzles, each once, answers in range; what kind a trial is comes from the plan,
    not the file); (participant, responses, excluded)."""
    items = pilot["items"]
    want = pilot["pilot_id"]
    lists = pilot["plan"]["lists"]
    practice = {p["item"]: p for p in pilot.get("practice", [])}
    catch = set(pilot.get("catch_ids", []))
    rows = _rows(path)
    psychopy = bool(rows) and "key_position" in rows[0][1]
    out: list[Response] = []
    who: set[str] = set()
    excluded = ""
    seen: set[str] = set()
    seen_questions: set[tuple[str, str]] = set()
    for line, r in rows:
        got = str(r.get("pilot_id", "") or "")
        kind = str(r.get("kind", "") or "")
        if r.get("excluded"):
            excluded = str(r["excluded"])
            if excluded not in FILE_EXCLUSIONS:
                raise StudioError(f"line {line}: an unknown exclusion {excluded[:40]!r}", path)
        if kind == "question":
            answer = _question(line, r, got, want, items, lists, path)
            if (answer.puzzle, answer.kind) in seen_questions:
                raise StudioError(
                    f"line {line}: question {answer.kind.partition(':')[2]!r} of puzzle "
                    f"{answer.puzzle!r} answered twice",
                    path,
                )
            seen_questions.add((answer.puzzle, answer.kind))
            who.add(answer.participant)
            out.append(answer)
            continue
        if kind not in ("practice", "test", "catch"):
            continue
        if got != want:
            raise StudioError(
                f"line {line}: from pilot {got[:40] or '(none)'}, not this pilot {want}", path
            )
        puzzle = str(r.get("puzzle_id", ""))
        if puzzle not in items:
            raise StudioError(
                f"line {line}: puzzle {puzzle[:80]!r} is not one this pilot showed", path
            )
        participant = str(r.get("participant", "") or "").strip()
        if not participant:
            raise StudioError(f"line {line}: no participant id", path)
        who.add(participant)
        list_index = _index(r.get("list"))
        if kind == "practice" and puzzle in practice:
            order = practice[puzzle]["order"]
        else:
            if list_index is None or not 0 <= list_index < len(lists):
                raise StudioError(f"line {line}: no list of this pilot ({r.get('list')!r})", path)
            mine = {t["item"]: t for t in lists[list_index]}
            if puzzle not in mine:
                raise StudioError(
                    f"line {line}: puzzle {puzzle!r} is not in list {list_index}", path
                )
            if puzzle in seen:
                raise StudioError(f"line {line}: puzzle {puzzle!r} answered twice", path)
            seen.add(puzzle)
            kind = "catch" if puzzle in catch else "test"
            order = mine[puzzle]["order"]
        key = int(items[puzzle]["key"])
        if psychopy:
            position = _index(r.get("response", r.get("key_resp.keys")))
            chosen = (
                order[position - 1]
                if position is not None and 1 <= position <= len(order)
                else None
            )
            rt = _num(r.get("rt", r.get("key_resp.rt")))
            rt_ms = rt * 1000 if rt is not None else None
        else:
            chosen = _index(r.get("chosen_index"))
            rt_ms = _num(r.get("rt"))
        if chosen is not None and not 0 <= chosen < int(items[puzzle]["answers"]):
            raise StudioError(f"line {line}: answer {chosen} of {puzzle!r} does not exist", path)
        correct = chosen == key
        said = r.get("correct")
        if not psychopy and said not in (None, "") and _bool(said) != correct:
            raise StudioError(
                f"line {line}: says correct={str(said)[:10]} but answer {chosen} of "
                f"{puzzle} is {'the key' if correct else 'a foil'}",
                path,
            )
        out.append(Response(str(path), line, participant, kind, puzzle, chosen, correct, rt_ms))
    if len(who) > 1:
        names = ", ".join(x[:40] for x in sorted(who)[:5])
        raise StudioError(f"holds {len(who)} participants ({names}); one per file", path)
    if not who:
        raise StudioError("holds no puzzle trial of a pilot", path)
    participant = who.pop()
    return participant, out, excluded


def _question(
    line: int,
    r: Mapping[str, Any],
    got: str,
    want: str,
    items: Mapping[str, Any],
    lists: Sequence[Sequence[Mapping[str, Any]]],
    path: Path,
) -> Response:
    """One answer to a question asked in words (KiVA's what and how), checked as a pictured
    answer is — this pilot, a puzzle of the participant's list (the test puzzles ask them;
    practice does not), an option that exists, the file's ``correct`` true to the key —
    against pilot.json's key for it; its kind is ``question:<id>``."""
    if got != want:
        raise StudioError(
            f"line {line}: from pilot {got[:40] or '(none)'}, not this pilot {want}", path
        )
    puzzle = str(r.get("puzzle_id", ""))
    qid = str(r.get("question_id", ""))
    asked = (items.get(puzzle) or {}).get("questions") or {}
    if qid not in asked:
        raise StudioError(
            f"line {line}: puzzle {puzzle[:80]!r} asked no question {qid[:40]!r}", path
        )
    participant = str(r.get("participant", "") or "").strip()
    if not participant:
        raise StudioError(f"line {line}: no participant id", path)
    list_index = _index(r.get("list"))
    if list_index is None or not 0 <= list_index < len(lists):
        raise StudioError(f"line {line}: no list of this pilot ({r.get('list')!r})", path)
    if puzzle not in {t["item"] for t in lists[list_index]}:
        raise StudioError(f"line {line}: puzzle {puzzle!r} is not in list {list_index}", path)
    chosen = _index(r.get("chosen_index"))
    if chosen is not None and not 0 <= chosen < int(asked[qid]["options"]):
        raise StudioError(f"line {line}: option {chosen} of question {qid} does not exist", path)
    correct = chosen == int(asked[qid]["key"])
    said = r.get("correct")
    if said not in (None, "") and _bool(said) != correct:
        raise StudioError(
            f"line {line}: says correct={str(said)[:10]} but option {chosen} of question "
            f"{qid} of {puzzle} is {'the key' if correct else 'not the key'}",
            path,
        )
    return Response(
        str(path), line, participant, f"question:{qid}", puzzle, chosen, correct, _num(r.get("rt"))
    )


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson interval of ``k`` right of ``n``: the baselines' own
    (:func:`studio.baselines.metrics.wilson_interval`)."""
    from studio.baselines.metrics import wilson_interval

    return wilson_interval(k / n if n else 0.0, n)


@dataclass
class ReadResults:
    """A pilot's results files read and checked: per participant (as typed) the answers, the
    file, and why they are excluded (absent: kept)."""

    pilot: dict[str, Any]
    responses: dict[str, list[Response]]
    files: dict[str, str]
    excluded: dict[str, str]


def read_results(pilot_dir: str | Path, results: Sequence[str | Path]) -> ReadResults:
    """Read and check every file (module docstring) and apply the declared exclusions."""
    pilot = read_pilot(pilot_dir)
    rules = pilot.get("exclusion", {})
    lists = pilot["plan"]["lists"]
    by_participant: dict[str, list[Response]] = {}
    files: dict[str, str] = {}
    why_out: dict[str, str] = {}
    for f in results:
        path = Path(f)
        participant, responses, excluded = _responses(path, pilot)
        if participant in by_participant:
            raise StudioError(
                f"participant {participant!r} is also in {files[participant]}: one run each", path
            )
        by_participant[participant] = responses
        files[participant] = str(path)
        tests = [r for r in responses if r.kind in ("test", "catch")]
        longest = max((len(x) for x in lists), default=0)
        if excluded:
            why_out[participant] = excluded
        elif len(tests) < longest:
            raise StudioError(
                f"an incomplete run: {len(tests)} of {longest} puzzles answered (participant "
                f"{participant!r}); a session that stopped early is not analysed",
                path,
            )
        elif rules.get("catch_must_pass", True) and any(
            not r.correct for r in tests if r.kind == "catch"
        ):
            why_out[participant] = "failed-attention-check"
        else:
            rts = [r.rt_ms for r in tests if r.kind == "test" and r.rt_ms is not None]
            floor = float(rules.get("min_median_rt_ms", 0) or 0)
            if rts and statistics.median(rts) < floor:
                why_out[participant] = "too-fast"
    return ReadResults(pilot, by_participant, files, why_out)


def analyse_results(
    pilot_dir: str | Path,
    results: Sequence[str | Path],
    fail_below: float = FAIL_BELOW,
    split_share: float = SPLIT_SHARE,
) -> dict[str, Any]:
    """Per participant, per puzzle, per group and overall (module docstring), JSON-ready."""
    return analyse(read_results(pilot_dir, results), fail_below, split_share)


def analyse(
    read: ReadResults, fail_below: float = FAIL_BELOW, split_share: float = SPLIT_SHARE
) -> dict[str, Any]:
    """:func:`analyse_results` of files already read."""
    pilot, by_participant, why_out = read.pilot, read.responses, read.excluded
    kept = [
        r for p, rs in by_participant.items() if p not in why_out for r in rs if r.kind == "test"
    ]
    per_puzzle = _per_puzzle(kept, pilot["items"], fail_below, split_share)
    discrimination = _discrimination(kept)
    negative = _reliably_negative({p: (d, per_puzzle[p]["n"]) for p, d in discrimination.items()})
    for puzzle, d in discrimination.items():
        row = per_puzzle[puzzle]
        row["discrimination"] = round(d, 3)
        if puzzle in negative:
            row["flags"].append(
                f"negative discrimination ({d:+.2f}): people who do well on the other puzzles "
                "fail it more often — look for a second defensible answer"
            )
    groups: dict[str, list[bool]] = defaultdict(list)
    for r in kept:
        groups[pilot["items"][r.puzzle]["group"]].append(r.correct)
    # questions in words (KiVA's what changed, how), from the kept participants
    asked: dict[str, list[bool]] = defaultdict(list)
    per_question: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for p, rs in by_participant.items():
        for r in rs:
            if p not in why_out and r.kind.startswith("question:"):
                qid = r.kind.partition(":")[2]
                asked[qid].append(r.correct)
                per_question[r.puzzle][qid].append(r.correct)
    for puzzle, qs in per_question.items():
        if puzzle in per_puzzle:
            per_puzzle[puzzle]["questions"] = {q: _share(v) for q, v in sorted(qs.items())}
    right = sum(r.correct for r in kept)
    lo, hi = wilson(right, len(kept))
    return {
        "pilot_id": pilot["pilot_id"],
        "participants": len(by_participant),
        "excluded": dict(sorted(Counter(why_out.values()).items())),
        "excluded_participants": dict(sorted(why_out.items())),
        "responses": len(kept),
        "accuracy": round(right / len(kept), 4) if kept else None,
        "ci95": [round(lo, 4), round(hi, 4)],
        "groups": {g: _share(v) for g, v in sorted(groups.items())},
        **({"questions": {q: _share(v) for q, v in asked.items()}} if asked else {}),
        "puzzles": per_puzzle,
        "flagged": sorted(p for p, row in per_puzzle.items() if row["flags"]),
    }


#: a negative discrimination is flagged from this many answers when its one-sided p passes
#: Benjamini-Hochberg at NEGATIVE_Q over the pilot's puzzles (a handful of answers makes
#: correlations of ±0.5 by chance alone)
DISCRIMINATION_MIN_ANSWERS = 8
NEGATIVE_Q = 0.05


def _negative_p(d: float, n: int) -> float:
    """The one-sided p of a correlation ``d`` over ``n`` answers being below zero (a t test)."""
    if n < 3:
        return 1.0  # no degree of freedom to test on
    if d <= -1:
        return 0.0
    if d >= 1:
        return 1.0
    from scipy.stats import t as student_t

    t = d * math.sqrt((n - 2) / (1 - d * d))
    return float(student_t.cdf(t, n - 2))


def _reliably_negative(found: Mapping[str, tuple[float, int]]) -> set[str]:
    """The puzzles whose discrimination (``found``: puzzle → (correlation, answers)) is below
    zero beyond chance, with the false discovery rate held at ``NEGATIVE_Q`` over every
    puzzle of enough answers (Benjamini-Hochberg). Tested one by one at p < 0.05, a pilot of
    puzzles that all discriminate by chance alone flagged one in twenty of them: a simulated
    cohort answering 90 % right at random flagged three easy puzzles of 36 (issue 24's
    answer sets changed which)."""
    ps = sorted(
        (_negative_p(d, n), p) for p, (d, n) in found.items() if n >= DISCRIMINATION_MIN_ANSWERS
    )
    m, kept = len(ps), 0
    for i, (p_value, _) in enumerate(ps, start=1):
        if p_value <= NEGATIVE_Q * i / m:
            kept = i
    return {puzzle for _, puzzle in ps[:kept]}


def _discrimination(kept: Sequence[Response]) -> dict[str, float]:
    """Classical item discrimination: per puzzle, the correlation between being right on it
    and the share a participant got right of their *other* puzzles (each list differs, so a
    share rather than a total). A good puzzle is solved more by those who solve the others;
    a negative value is a puzzle the able get wrong — often a second defensible answer."""
    per_person: dict[str, list[bool]] = defaultdict(list)
    for r in kept:
        per_person[r.participant].append(r.correct)
    totals = {p: (sum(v), len(v)) for p, v in per_person.items()}
    by_puzzle: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in kept:
        right, n = totals[r.participant]
        if n > 1:
            by_puzzle[r.puzzle].append((float(r.correct), (right - r.correct) / (n - 1)))
    out = {}
    for puzzle, pairs in by_puzzle.items():
        if len(pairs) < 3:
            continue
        xs = [x for x, _ in pairs]
        ys = [y for _, y in pairs]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sx = sum((x - mx) ** 2 for x in xs)
        sy = sum((y - my) ** 2 for y in ys)
        if sx > 0 and sy > 0:
            out[puzzle] = sum((x - mx) * (y - my) for x, y in pairs) / math.sqrt(sx * sy)
    return out


def _share(right: Sequence[bool]) -> dict[str, Any]:
    k, n = sum(right), len(right)
    return {"n": n, "accuracy": round(k / n, 4), "ci95": [round(x, 4) for x in wilson(k, n)]}


def _per_puzzle(
    kept: Iterable[Response], items: Mapping[str, Any], fail_below: float, split_share: float
) -> dict[str, dict[str, Any]]:
    by: dict[str, list[Response]] = defaultdict(list)
    for r in kept:
        by[r.puzzle].append(r)
    out = {}
    for puzzle, rs in sorted(by.items()):
        n = len(rs)
        right = sum(r.correct for r in rs)
        chosen = Counter(r.chosen for r in rs if r.chosen is not None)
        key = int(items[puzzle]["key"])
        rts = [r.rt_ms for r in rs if r.rt_ms is not None]
        lo, hi = wilson(right, n)
        flags = []
        if n < FLAG_MIN_ANSWERS:
            pass  # too few answers to say anything of the puzzle
        elif right / n < fail_below:
            flags.append(f"people fail: {right} of {n} chose the key")
        for answer, k in sorted(chosen.items()):
            if n >= FLAG_MIN_ANSWERS and answer != key and k / n >= split_share:
                flags.append(f"people split between the key and answer {answer + 1}: {k} of {n}")
        out[puzzle] = {
            "n": n,
            "correct": right,
            "accuracy": round(right / n, 4),
            "ci95": [round(lo, 4), round(hi, 4)],
            "median_rt_ms": round(statistics.median(rts), 1) if rts else None,
            "chosen": {str(a + 1): k for a, k in sorted(chosen.items())},
            "key": key + 1,
            "flags": flags,
        }
    return out


def result_lines(found: Mapping[str, Any], most: int = 10) -> list[str]:
    acc = found.get("accuracy")
    lo, hi = found.get("ci95", [0, 1])
    out = [
        f"pilot {found['pilot_id']}: {found['participants']} participants, "
        f"{sum(found['excluded'].values())} excluded "
        f"({', '.join(f'{k} {v}' for k, v in found['excluded'].items()) or 'none'}); "
        f"{found['responses']} responses",
        "human accuracy: "
        + (f"{acc:.3f} [{lo:.3f}, {hi:.3f}]" if acc is not None else "no responses kept"),
    ]
    for g, row in found["groups"].items():
        out.append(f"  {g}: {row['accuracy']:.3f} (n = {row['n']})")
    for q, row in (found.get("questions") or {}).items():
        lo_q, hi_q = row["ci95"]
        out.append(
            f"question {q!r} (in words): {row['accuracy']:.3f} [{lo_q:.3f}, {hi_q:.3f}] "
            f"(n = {row['n']})"
        )
    flagged = found["flagged"]
    out.append(f"{len(flagged)} puzzles flagged")
    for pid in flagged[:most]:
        out.append(f"  {pid}: {'; '.join(found['puzzles'][pid]['flags'])}")
    if len(flagged) > most:
        out.append(f"  … and {len(flagged) - most} more")
    return out
