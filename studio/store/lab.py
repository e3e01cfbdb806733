"""A lab's shared project: people and their roles, assignments with an overlap share, each
person's own tags and the consensus made from them, a curator's adjudication, and the audit
trail. The tables are format 7's (:mod:`studio.store.labschema`); on PostgreSQL the server
enforces who may write what, here the functions only say it clearly first.

Every function takes an open SQLAlchemy connection inside the caller's transaction, so a
:class:`~studio.store.project.Project` method (and the CLI and GUI through it) does one
operation in one transaction on either kind of database.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from studio.core.annotations import HAND, source_problem
from studio.core.errors import StudioError
from studio.store.dialect import is_postgres
from studio.store.labschema import (
    GROUP_ROLE_PREFIX,
    MAX_CONSENSUS_IDS,
    ROLES,
    consensus_statements,
)

__all__ = [
    "AssignmentSummary",
    "AuditEntry",
    "Person",
    "RightsError",
    "add_own_tags",
    "add_person",
    "adjudicate",
    "adjudicated_glyphs",
    "assign",
    "assigned_glyphs",
    "audit_entries",
    "current_login",
    "database_refusal",
    "mark_done",
    "people",
    "plain_field",
    "ratings",
    "refresh_consensus",
    "remove_own_tags",
    "role_of",
    "sourced_ratings",
]

#: Login names the studio creates as PostgreSQL roles: plain identifiers only, so a name can
#: never smuggle SQL into CREATE ROLE (it is also quoted).
_LOGIN_NAME = re.compile(r"^[a-z_][a-z0-9_.\-]{0,62}$")
_CHUNK = 500
#: The glyphs whose consensus is not simply everyone's tags: given to two or more people, or
#: settled by a curator (an SQL subquery of glyph ids).
RULED_GLYPHS = (
    "SELECT glyph_id FROM assignment_items GROUP BY glyph_id"
    " HAVING COUNT(DISTINCT annotator) >= 2 UNION SELECT glyph_id FROM adjudications"
)


class RightsError(StudioError):
    """The person lacks the role an operation needs (said before the server refuses it)."""


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    role: str
    full_name: str
    created_at: str


@dataclass(frozen=True, slots=True)
class AssignmentSummary:
    id: int
    name: str
    per_person: dict[str, int]  # glyphs given to each annotator
    overlap: int  # glyphs given to two or more people


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    at: str
    who: str
    action: str
    target: str
    detail: dict[str, Any]


def _chunks(ids: Sequence[int], n: int = _CHUNK) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), n):
        yield ids[start : start + n]


def current_login(conn: Connection) -> str | None:
    """The login role on PostgreSQL (who the server holds responsible); None for a file."""
    if not is_postgres(conn):
        return None
    return str(conn.execute(text("SELECT session_user")).scalar_one())


# ---- people ---------------------------------------------------------------------------------
def people(conn: Connection) -> list[Person]:
    rows = conn.execute(
        text('SELECT name, role, full_name, created_at FROM people ORDER BY name COLLATE "C"')
        if is_postgres(conn)
        else text("SELECT name, role, full_name, created_at FROM people ORDER BY name")
    ).all()
    return [Person(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]


def role_of(conn: Connection, name: str) -> str | None:
    """A person's studio role: from ``people``; on PostgreSQL a login that is not listed but
    owns the database (the one who ran ``init``) is an admin."""
    if is_postgres(conn):  # the owner first: no row of ``people`` demotes the owner
        owner = conn.execute(
            text(
                "SELECT pg_has_role(r.oid, d.datdba, 'MEMBER') FROM pg_database d, pg_roles r"
                " WHERE d.datname = current_database() AND r.rolname = :n"
            ),
            {"n": name},
        ).scalar_one_or_none()
        if owner:
            return "admin"
    row = conn.execute(text("SELECT role FROM people WHERE name = :n"), {"n": name}).first()
    return str(row[0]) if row is not None else None


def add_person(
    conn: Connection,
    name: str,
    role: str,
    at: str,
    *,
    full_name: str = "",
    password: str | None = None,
) -> None:
    """Add a person (or change their role). On PostgreSQL the person is a login role of the
    server, member of exactly one studio group role; a password, when given, is hashed here
    (SCRAM-SHA-256, by libpq) so neither the studio nor the server log ever sees it in clear."""
    if role not in ROLES:
        raise StudioError(f"role {role!r} is not one of {', '.join(ROLES)}")
    if not _LOGIN_NAME.match(name):
        raise StudioError(
            f"{name!r} cannot be a login name: use lower-case letters, digits, '_', '.' or '-'"
            " (starting with a letter or '_'), at most 63 characters"
        )
    if password is not None and (password == "" or "\0" in password):
        raise StudioError(
            f"the password for {name} is {'empty' if password == '' else 'holding a NUL'}: "
            "give one of printable characters"
        )
    if is_postgres(conn):
        _check_login(conn, name, role)  # the checks the server makes too, said in words
        hashed = None
        if password is not None:
            pgconn = conn.connection.dbapi_connection.pgconn  # type: ignore[union-attr]
            hashed = pgconn.encrypt_password(
                password.encode(), name.encode(), b"scram-sha-256"
            ).decode()
        # one owner-run function makes the login, its group role, its limits and its row: an
        # admin who is not the owner (no right to create roles) may add people, and nobody
        # writes ``people`` around its checks
        there = "SELECT to_regprocedure('studio_add_person(text, text, text, text, text)')"
        if conn.execute(text(there)).scalar() is None:
            raise StudioError(
                "this lab database's server rules are older than this studio's: its owner "
                "opens it once with this studio to bring them up to date, then people can be "
                "added"
            )
        conn.execute(
            text("SELECT studio_add_person(:n, :r, :f, :h, :t)"),
            {"n": name, "r": role, "f": full_name, "h": hashed, "t": at},
        )
    else:
        conn.execute(
            text(
                "INSERT INTO people (name, role, full_name, created_at)"
                " VALUES (:n, :r, :f, :t) ON CONFLICT (name) DO UPDATE SET role = excluded.role,"
                " full_name = CASE WHEN excluded.full_name = '' THEN people.full_name"
                " ELSE excluded.full_name END"
            ),
            {"n": name, "r": role, "f": full_name, "t": at},
        )
    # a changed role changes whose tags count on overlap glyphs: their consensus follows
    tagged = conn.execute(
        text("SELECT DISTINCT glyph_id FROM annotator_tags WHERE annotator = :n"), {"n": name}
    ).scalars()
    refresh_consensus(conn, [int(g) for g in tagged])


def _check_login(conn: Connection, name: str, role: str) -> None:
    """Refuse, on PostgreSQL, a person who must not be one: the studio's group roles, a
    predefined ``pg_*`` role, a superuser or a login with powers beyond a person's (creating
    roles, replication, bypassing row-level security: the project's grants and policies would
    not bind it, while the studio would show it as an annotator), and the database's owner in
    any role but admin (the owner is never demoted)."""
    if name.startswith((GROUP_ROLE_PREFIX, "pg_")):
        raise StudioError(f"{name} is a role of the server, not a person")
    row = conn.execute(
        text(
            "SELECT rolsuper, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles"
            " WHERE rolname = :n"
        ),
        {"n": name},
    ).first()
    if row is not None and any(row):
        powers = [w for w, on in zip(("superuser", "CREATEROLE", "REPLICATION", "BYPASSRLS"),
                                     row, strict=True) if on]  # fmt: skip
        raise StudioError(
            f"{name} is a login with {', '.join(powers)}: a person of a project must be an "
            "ordinary login (make another for them)"
        )
    owner = conn.execute(
        text(
            "SELECT pg_catalog.pg_get_userbyid(datdba) FROM pg_catalog.pg_database"
            " WHERE datname = pg_catalog.current_database()"
        )
    ).scalar()
    if owner == name and role != "admin":
        raise StudioError(f"{name} owns the database: the owner stays an admin")


def require_role(conn: Connection, who: str | None, needed: str, what: str) -> None:
    """Refuse ``what`` clearly when ``who`` lacks ``needed`` (on PostgreSQL; a file has one
    user, who may do everything). The server would refuse it anyway; this says why in words."""
    if who is None or not is_postgres(conn):
        return
    role = role_of(conn, who)
    if role is None or ROLES.index(role) < ROLES.index(needed):
        raise RightsError(
            f"{who} is {('an ' + role) if role else 'not a member of this project'}: "
            f"only a {needed} or above may {what}"
        )


def plain_field(value: object) -> str:
    """``value`` as one line of text whatever it holds: tabs, newlines and other control
    characters written as escapes, so a field of the audit trail cannot forge a line or a
    column of ``lab audit``'s output (issue 25)."""
    text_ = str(value)
    if text_.isprintable():
        return text_
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text_)


def database_refusal(error: BaseException) -> str | None:
    """The lab server's refusal of something a person tried, in words: no right (grants,
    row-level security), another person's lock held past the wait, a statement or an idle
    transaction cut off by the server's limits, a tag outside the schema; None for anything
    else (a bug). One text for the command line and the window."""

    if not isinstance(error, DBAPIError):
        return None
    orig = error.orig
    state = getattr(orig, "sqlstate", None) or ""
    first = (str(orig).strip().splitlines() or [""])[0]
    if state == "42501" or "row-level security" in first or "permission denied" in first:
        return f"the lab database refused this: your role does not allow it ({first})"
    if state == "55P03":  # lock_not_available
        return (
            "another person is changing the same rows right now (the lab database's wait for "
            "them ran out); try again in a moment"
        )
    if state == "57014":  # query_canceled: the role's statement_timeout
        return f"the lab database stopped a statement that ran past your role's limit ({first})"
    if state == "25P03":  # idle_in_transaction_session_timeout
        return "the lab database ended a session left idle inside a transaction; open it again"
    if state == "23503" and "_in_schema" in first:
        return (
            "the lab database refused a tag that is not in the project's newest schema (it "
            f"may have changed since this was opened: open the project again) ({first})"
        )
    return None


# ---- assignments ----------------------------------------------------------------------------
def assign(
    conn: Connection,
    glyph_ids: Sequence[int],
    annotators: Sequence[str],
    at: str,
    *,
    name: str = "",
    by: str = "",
    overlap: float = 0.2,
    per_overlap_glyph: int = 2,
    seed: int = 0,
) -> AssignmentSummary:
    """Divide glyphs among annotators: a share ``overlap`` of them (chosen at random with
    ``seed``) goes to ``per_overlap_glyph`` different people each, the rest to one person;
    loads are balanced (each glyph goes to whoever has the fewest so far, ties broken in a
    rotating order). The overlap is where agreement is measured."""
    people_ = list(dict.fromkeys(annotators))
    if not people_:
        raise StudioError("an assignment needs at least one annotator")
    if not 0.0 <= overlap <= 1.0:
        raise StudioError(f"the overlap share must be between 0 and 1, not {overlap}")
    if overlap > 0 and per_overlap_glyph > len(people_):
        raise StudioError(
            f"an overlap glyph goes to {per_overlap_glyph} people but only {len(people_)}"
            " annotators were given"
        )
    ids = sorted(set(int(i) for i in glyph_ids))
    rng = random.Random(seed)
    rng.shuffle(ids)
    n_overlap = round(overlap * len(ids))
    load: Counter[str] = Counter({p: 0 for p in people_})
    order = {p: i for i, p in enumerate(people_)}
    items: list[dict[str, Any]] = []
    for i, gid in enumerate(ids):
        k = per_overlap_glyph if i < n_overlap else 1
        rot = i % len(people_)
        chosen = sorted(people_, key=lambda p: (load[p], (order[p] - rot) % len(people_)))[:k]
        for p in chosen:
            load[p] += 1
            items.append({"g": gid, "p": p})
    settings = {"overlap": overlap, "per_overlap_glyph": per_overlap_glyph, "seed": seed}
    new_id = int(
        conn.execute(
            text(
                "INSERT INTO assignments (name, created_at, created_by, params)"
                " VALUES (:n, :t, :b, :p) RETURNING id"
            ),
            {"n": name or f"assignment of {at[:10]}", "t": at, "b": by, "p": json.dumps(settings)},
        ).scalar_one()
    )
    for start in range(0, len(items), _CHUNK):
        # one statement per chunk (not one per row): one audit entry, one notification
        chunk = items[start : start + _CHUNK]
        values = ", ".join(f"({new_id}, :g{i}, :p{i})" for i in range(len(chunk)))
        bound: dict[str, Any] = {}
        for i, item in enumerate(chunk):
            bound[f"g{i}"], bound[f"p{i}"] = item["g"], item["p"]
        conn.execute(
            text(
                f"INSERT INTO assignment_items (assignment_id, glyph_id, annotator) VALUES {values}"
            ),
            bound,
        )
    refresh_consensus(conn, ids)
    return AssignmentSummary(
        new_id, name, dict(load), min(n_overlap, len(ids)) if len(people_) > 1 else 0
    )


def assigned_glyphs(conn: Connection, annotator: str) -> list[tuple[int, str | None]]:
    """The glyph ids given to ``annotator`` (every assignment), with when each was marked done."""
    rows = conn.execute(
        text(
            "SELECT glyph_id, MAX(done_at) FROM assignment_items WHERE annotator = :a"
            " GROUP BY glyph_id ORDER BY glyph_id"
        ),
        {"a": annotator},
    ).all()
    return [(int(r[0]), r[1]) for r in rows]


def mark_done(conn: Connection, annotator: str, glyph_ids: Iterable[int], at: str | None) -> int:
    """Mark glyphs of ``annotator``'s assignments done (``at``) or not done (None). A person who
    marks a glyph done without tagging it said "none of these" for every concept."""
    ids = sorted(set(int(i) for i in glyph_ids))
    n = 0
    for chunk in _chunks(ids):
        n += conn.execute(
            text(
                "UPDATE assignment_items SET done_at = :t WHERE annotator = :a"
                f" AND glyph_id IN ({','.join(str(i) for i in chunk)})"
            ),
            {"t": at, "a": annotator},
        ).rowcount
    refresh_consensus(conn, ids)
    return n


# ---- each person's tags and the consensus ---------------------------------------------------
def refresh_consensus(conn: Connection, glyph_ids: Iterable[int]) -> None:
    """Bring the consensus (``tags``) of these glyphs up to date with everyone's own tags.
    On PostgreSQL through ``studio_refresh_consensus`` (which also serialises concurrent
    refreshes of one glyph); on a file, the same statements from here."""
    ids = sorted(set(int(i) for i in glyph_ids))
    if not ids:
        return
    if is_postgres(conn):
        for chunk in _chunks(ids, MAX_CONSENSUS_IDS):
            conn.execute(
                text("SELECT studio_refresh_consensus(CAST(:ids AS bigint[]))"),
                {"ids": list(chunk)},
            )
        return
    for chunk in _chunks(ids):
        delete, insert = consensus_statements(",".join(str(i) for i in chunk))
        conn.execute(text(delete))
        conn.execute(text(insert))


def add_own_tags(
    conn: Connection,
    annotator: str,
    glyph_ids: Sequence[int],
    concept: str,
    value: str,
    at: str | None,
    source: str = HAND,
) -> list[int]:
    """Add ``annotator``'s tag to glyphs; returns the glyph ids that were newly tagged by them.
    Concurrent adds of the same tag by two people are two rows (neither lost); the same
    person adding it twice is one (a unique key, ``ON CONFLICT DO NOTHING``: a tag they have
    keeps the source it has). ``source`` is how the tag came to be (one of
    :data:`~studio.core.annotations.TAG_SOURCES`; the table's CHECK refuses any other)."""
    problem = source_problem(source)
    if problem:
        raise StudioError(problem)
    wanted = list(dict.fromkeys(int(i) for i in glyph_ids))
    new: set[int] = set()
    for chunk in _chunks(wanted):
        # one statement per chunk: one audit entry and one notification for a bulk tag
        rows = conn.execute(
            text(
                "INSERT INTO annotator_tags (glyph_id, concept, value, annotator, created_at,"
                " source) SELECT id, :c, :v, :a, :t, :s FROM glyphs"
                f" WHERE id IN ({','.join(str(i) for i in chunk)}) ORDER BY id"
                " ON CONFLICT DO NOTHING RETURNING glyph_id"
            ),
            {"c": concept, "v": value, "a": annotator, "t": at, "s": source},
        ).all()
        new.update(int(r[0]) for r in rows)
    added = [g for g in wanted if g in new]
    refresh_consensus(conn, added)
    return added


def remove_own_tags(
    conn: Connection,
    annotator: str | None,
    glyph_ids: Sequence[int],
    concept: str,
    value: str,
) -> list[tuple[int, str, str | None, str]]:
    """Remove a tag from glyphs: ``annotator``'s own (None: everyone's — a file's single user
    removing the tag outright). Returns (glyph id, whose, when, source) of each removed row,
    which is what an undo puts back."""
    removed: list[tuple[int, str, str | None, str]] = []
    who = "" if annotator is None else " AND annotator = :a"
    for chunk in _chunks(list(dict.fromkeys(int(i) for i in glyph_ids))):
        rows = conn.execute(
            text(
                "DELETE FROM annotator_tags WHERE concept = :c AND value = :v"
                f" AND glyph_id IN ({','.join(str(i) for i in chunk)}){who}"
                " RETURNING glyph_id, annotator, created_at, source"
            ),
            {"c": concept, "v": value, "a": annotator},
        ).all()
        removed.extend((int(r[0]), str(r[1]), r[2], str(r[3])) for r in rows)
    refresh_consensus(conn, {g for g, _, _, _ in removed})
    return sorted(removed)


def ratings(
    conn: Connection,
) -> tuple[list[tuple[int, str, str, str]], set[tuple[int, str]]]:
    """Everyone's own tags as (glyph, person, concept, value), and who annotated which glyph
    (tagged it, or marked it done): the input of :mod:`studio.core.agreement`."""
    tags, annotated = sourced_ratings(conn)
    return [t[:4] for t in tags], annotated


def sourced_ratings(
    conn: Connection,
) -> tuple[list[tuple[int, str, str, str, str]], set[tuple[int, str]]]:
    """:func:`ratings` with each tag's source: (glyph, person, concept, value, source)."""
    tags = [
        (int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]))
        for r in conn.execute(
            text("SELECT glyph_id, annotator, concept, value, source FROM annotator_tags")
        )
    ]
    annotated = {(t[0], t[1]) for t in tags}
    annotated.update(
        (int(r[0]), str(r[1]))
        for r in conn.execute(
            text("SELECT glyph_id, annotator FROM assignment_items WHERE done_at IS NOT NULL")
        )
    )
    return tags, annotated


# ---- adjudication ---------------------------------------------------------------------------
def adjudicate(
    conn: Connection,
    glyph_id: int,
    curator: str,
    tags: Sequence[tuple[str, str]],
    at: str,
    note: str = "",
) -> None:
    """Settle a glyph's tags: they become its consensus, recorded as the curator's decision
    (``adjudications`` is append-only; a later adjudication of the glyph supersedes it)."""
    settled = sorted(set(tags))
    if is_postgres(conn):  # after any refresh of the glyph under way, before the next
        conn.execute(text("SELECT 1 FROM glyphs WHERE id = :g FOR NO KEY UPDATE"), {"g": glyph_id})
    conn.execute(
        text(
            "INSERT INTO adjudications (glyph_id, curator, at, tags, note)"
            " VALUES (:g, :c, :t, :j, :n)"
        ),
        {"g": glyph_id, "c": curator, "t": at, "j": json.dumps(settled), "n": note},
    )
    conn.execute(text("DELETE FROM tags WHERE glyph_id = :g"), {"g": glyph_id})
    if settled:
        conn.execute(
            text(
                "INSERT INTO tags (glyph_id, concept, value, author, created_at)"
                " VALUES (:g, :c, :v, :a, :t)"
            ),
            [{"g": glyph_id, "c": c, "v": v, "a": curator, "t": at} for c, v in settled],
        )


def adjudicated_glyphs(conn: Connection) -> dict[int, tuple[str, str]]:
    """Glyph id -> (curator, when) of its latest adjudication."""
    rows = conn.execute(text("SELECT glyph_id, curator, at FROM adjudications ORDER BY id")).all()
    return {int(r[0]): (str(r[1]), str(r[2])) for r in rows}


# ---- audit ----------------------------------------------------------------------------------
def audit_entries(conn: Connection, limit: int = 200) -> list[AuditEntry]:
    rows = conn.execute(
        text("SELECT id, at, who, action, target, detail FROM audit_log ORDER BY id DESC LIMIT :n"),
        {"n": limit},
    ).all()
    return [
        AuditEntry(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), json.loads(r[5]))
        for r in rows
    ]
