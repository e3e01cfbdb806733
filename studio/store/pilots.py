"""A pilot study's results in the project (format 8, issue 29).

``add_pilot_results`` stores one import in one transaction: the pilot (its plan, once),
every participant under a pseudonym — a hash of the pilot id and the id the participant
typed, so the project never holds the typed id — with why they were excluded, and every
answer. A participant already stored is refused by name (a file imported twice, or two files
of one person), and nothing of that import is kept. ``human_accuracy`` sums the answers of the
participants kept, per puzzle of a curated set, across its pilots.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, text

from studio.core.errors import StudioError


@dataclass(frozen=True)
class StoredAnswer:
    participant: str  # the id as typed; stored as its pseudonym
    kind: str
    puzzle_id: str
    chosen: int | None
    correct: bool
    rt_ms: float | None


def pseudonym(key: str, participant: str) -> str:
    """What the project stores for a participant: an HMAC of the typed id under the pilot's
    own key (in its ``pilot.json``, never in the project), so the same person of one pilot is
    recognised and nobody holding only the project can recover the id by guessing names."""
    digest = hmac.new(key.encode(), participant.encode(), hashlib.sha256).hexdigest()
    return f"p-{digest[:16]}"


def add_pilot_results(
    conn: Connection,
    pilot: Mapping[str, Any],
    set_id: int | None,
    participants: Mapping[str, tuple[str, str]],
    answers: Iterable[StoredAnswer],
    author: str,
) -> int:
    """Store one import (module docstring): ``participants`` maps a typed id to (why it was
    excluded, or "", a fingerprint of the file it came from — never its name, which the
    browser makes of the typed id). Returns the answers stored."""
    pilot_id = str(pilot["pilot_id"])
    key = str(pilot.get("pseudonym_key") or pilot_id)
    stored_plan = {k: v for k, v in pilot.items() if k != "pseudonym_key"}
    now = datetime.now(UTC).isoformat(timespec="seconds")
    known = conn.execute(text("SELECT set_id FROM pilots WHERE id=:p"), {"p": pilot_id}).first()
    if known is not None and known[0] is None and set_id is not None:
        # first imported without a set: the set now given is the one its answers are for
        conn.execute(text("UPDATE pilots SET set_id=:s WHERE id=:p"), {"s": set_id, "p": pilot_id})
    if known is None:
        conn.execute(
            text(
                "INSERT INTO pilots (id, set_id, source, family, plan, created_at, author)"
                " VALUES (:p, :s, :src, :f, :plan, :t, :a)"
            ),
            {
                "p": pilot_id,
                "s": set_id,
                "src": str(pilot.get("source", "")),
                "f": str(pilot.get("family", "")),
                "plan": json.dumps(stored_plan, sort_keys=True),
                "t": now,
                "a": author,
            },
        )
    elif set_id is not None and known[0] is not None and int(known[0]) != set_id:
        raise StudioError(f"pilot {pilot_id} is stored for puzzle set {known[0]}, not set {set_id}")
    names = {raw: pseudonym(key, raw) for raw in participants}
    there = {
        r[0]
        for r in conn.execute(
            text("SELECT participant FROM pilot_participants WHERE pilot_id=:p"), {"p": pilot_id}
        )
    }
    again = sorted(raw for raw, name in names.items() if name in there)
    if again:
        raise StudioError(
            f"participant(s) {', '.join(repr(x) for x in again)} of pilot {pilot_id} are "
            "already in the project: each run is imported once"
        )
    conn.execute(
        text(
            "INSERT INTO pilot_participants (pilot_id, participant, excluded, file, imported_at,"
            " imported_by) VALUES (:p, :n, :x, :f, :t, :a)"
        ),
        [
            {"p": pilot_id, "n": names[raw], "x": why, "f": file, "t": now, "a": author}
            for raw, (why, file) in sorted(participants.items())
        ],
    )
    rows = [
        {
            "p": pilot_id,
            "n": names[a.participant],
            "k": a.kind,
            "z": a.puzzle_id,
            "c": a.chosen,
            "r": int(a.correct),
            "t": a.rt_ms,
        }
        for a in answers
    ]
    if rows:
        conn.execute(
            text(
                "INSERT INTO pilot_responses (pilot_id, participant, kind, puzzle_id, chosen,"
                " correct, rt_ms) VALUES (:p, :n, :k, :z, :c, :r, :t)"
            ),
            rows,
        )
    return len(rows)


def human_accuracy(conn: Connection, set_id: int) -> dict[str, tuple[int, int]]:
    """Puzzle id -> (right, answers) of the kept participants' test answers, over the pilots
    of a curated set."""
    rows = conn.execute(
        text(
            "SELECT r.puzzle_id, SUM(r.correct), COUNT(*) FROM pilot_responses r"
            " JOIN pilots p ON p.id = r.pilot_id"
            " JOIN pilot_participants q ON q.pilot_id = r.pilot_id"
            " AND q.participant = r.participant"
            " WHERE p.set_id = :s AND r.kind = 'test' AND q.excluded = ''"
            " GROUP BY r.puzzle_id"
        ),
        {"s": set_id},
    ).all()
    return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}


def pilots(conn: Connection) -> list[dict[str, Any]]:
    """Each stored pilot: id, set, family, when, who, its participants (kept, excluded) and
    its design (:func:`pilot_design`, for the dataset card)."""
    rows = conn.execute(
        text(
            "SELECT p.id, p.set_id, p.family, p.created_at, p.author,"
            " SUM(CASE WHEN q.excluded = '' THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN q.excluded <> '' THEN 1 ELSE 0 END), p.plan"
            " FROM pilots p LEFT JOIN pilot_participants q ON q.pilot_id = p.id"
            " GROUP BY p.id, p.set_id, p.family, p.created_at, p.author, p.plan"
            " ORDER BY p.created_at"
        )
    ).all()
    return [
        {
            "id": r[0],
            "set_id": r[1],
            "family": r[2],
            "created_at": r[3],
            "author": r[4],
            "kept": int(r[5] or 0),
            "excluded": int(r[6] or 0),
            "design": pilot_design(r[7]),
        }
        for r in rows
    ]


def pilot_design(stored: str | None) -> dict[str, Any]:
    """What a stored pilot's plan says of its design: lists, puzzles per list, answers asked
    per puzzle, practice puzzles, attention checks per list and the exclusion rules. Empty
    where the stored plan cannot be read (the card then says less, never fails)."""
    try:
        doc = json.loads(stored or "")
        plan = doc["plan"]
        return {
            "participants": int(plan["participants"]),
            "per_participant": int(plan["per_participant"]),
            "responses_per_item": int(plan["responses_per_item"]),
            "practice": len(doc.get("practice") or []),
            "catch": len(doc.get("catch_ids") or []),
            "exclusion": dict(doc.get("exclusion") or {}),
        }
    except (ValueError, TypeError, KeyError):
        return {}


def human_choices(conn: Connection, set_id: int) -> dict[str, dict[int, int]]:
    """Puzzle id -> {answer index: how many of the kept participants chose it} over the
    pilots of a curated set (the sheet's choice bars)."""
    rows = conn.execute(
        text(
            "SELECT r.puzzle_id, r.chosen, COUNT(*) FROM pilot_responses r"
            " JOIN pilots p ON p.id = r.pilot_id"
            " JOIN pilot_participants q ON q.pilot_id = r.pilot_id"
            " AND q.participant = r.participant"
            " WHERE p.set_id = :s AND r.kind = 'test' AND q.excluded = ''"
            " AND r.chosen IS NOT NULL GROUP BY r.puzzle_id, r.chosen"
        ),
        {"s": set_id},
    ).all()
    out: dict[str, dict[int, int]] = {}
    for puzzle, chosen, n in rows:
        out.setdefault(str(puzzle), {})[int(chosen)] = int(n)
    return out
