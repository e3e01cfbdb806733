"""A pilot's results into a project (issue 29): read and checked as ``pilot analyse`` reads
them, checked against the curated set they piloted, stored in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
from studio.pilot.results import analyse, read_results
from studio.store.pilots import StoredAnswer
from studio.store.project import Project


def import_results(
    project: Project,
    pilot_dir: str | Path,
    results: Sequence[str | Path],
    set_id: int | None,
    author: str,
) -> dict[str, Any]:
    """Store a pilot's results (every participant, the excluded ones with why; every answer)
    and return the analysis. With ``set_id``, every piloted puzzle must be a puzzle of that
    curated set (the board then shows people's accuracy beside it); nothing is stored when
    anything is wrong."""
    read = read_results(pilot_dir, results)
    pilot = read.pilot
    if set_id is not None:
        rec = project.puzzle_set(set_id)
        if rec is None:
            raise StudioError(f"--set {set_id}: the project has no puzzle set {set_id}")
        have = {s.puzzle_id for s in project.stored_puzzles(set_id)}
        catch = set(pilot.get("catch_ids", []))
        shown = {t["item"] for ts in pilot["plan"]["lists"] for t in ts} - catch
        missing = sorted(shown - have)
        if missing:
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise StudioError(
                f"--set {set_id}: the pilot showed puzzles set {set_id} does not hold: "
                f"{', '.join(missing[:5])}{more} (was it exported from another split?)"
            )
    participants = {
        who: (read.excluded.get(who, ""), _fingerprint(Path(read.files[who])))
        for who in read.responses
    }
    answers = [
        StoredAnswer(r.participant, r.kind, r.puzzle, r.chosen, r.correct, r.rt_ms)
        for rs in read.responses.values()
        for r in rs
    ]
    stored = project.add_pilot_results(pilot, set_id, participants, answers, author)
    found = analyse(read)
    found["stored_answers"] = stored
    found["set_id"] = set_id
    return found


def _fingerprint(path: Path) -> str:
    """The sha256 of a results file's bytes: which file it was, without its name (the
    browser names it after the participant's typed id)."""
    import hashlib

    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
