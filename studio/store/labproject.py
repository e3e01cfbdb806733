"""The lab operations of a :class:`~studio.store.project.Project`: people, assignments, each
person's tags, agreement, the disagreement queue, adjudication, the audit trail and change
notifications. A mixin so that project.py keeps the file's life cycle and the catalogue, and
the CLI and the GUI reach all of this through the one Project object they already hold.

On a project file everything works for its single user (who may do everything); on a lab
database the server enforces each person's rights, and :meth:`require` says in words what the
server would refuse.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, text

from studio.core.agreement import (
    AgreementReport,
    Disagreement,
    agreement_report,
    disagreements,
    ratings_of_source,
)
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.store import lab
from studio.store.lab import AssignmentSummary, AuditEntry, Person
from studio.store.listen import ChangeListener, listener_for

__all__ = ["MAX_AUDIT", "LabProjectMixin", "OwnTag"]

#: Most audit entries one read returns.
MAX_AUDIT = 100_000


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class OwnTag:
    """One person's tag of a glyph (``annotator_tags``), as the tagger shows it."""

    key: GlyphKey
    annotator: str
    concept: str
    value: str
    created_at: str | None
    #: ``hand``, or ``suggestion`` when the person accepted it from a suggestion (issue 30)
    source: str = "hand"


class LabProjectMixin:
    """Needs ``_engine``, ``_tx()``, ``schema``, ``location`` and ``is_database`` of Project."""

    _engine: Engine
    location: str

    if TYPE_CHECKING:  # provided by Project

        def _tx(self) -> AbstractContextManager[Connection]: ...

        @property
        def schema(self) -> Schema: ...

        @property
        def is_database(self) -> bool: ...

    # ---- who ----------------------------------------------------------------------------
    @property
    def user(self) -> str | None:
        """The login on a lab database (whom the server holds responsible for every write);
        None for a project file (its user is who the settings say)."""
        cached: str | None = getattr(self, "_lab_user", None)
        if cached is None and self.is_database:
            with self._engine.connect() as conn:
                cached = lab.current_login(conn)
            self._lab_user = cached
        return cached

    def role(self, name: str | None = None) -> str:
        """``name``'s role (default: the login). On a file everyone is an admin."""
        if not self.is_database:
            return "admin"
        who = name or self.user
        with self._engine.connect() as conn:
            return lab.role_of(conn, str(who)) or "none"

    def require(self, needed: str, what: str) -> None:
        """Raise :class:`~studio.store.lab.RightsError` when the login lacks ``needed``."""
        with self._engine.connect() as conn:
            lab.require_role(conn, self.user, needed, what)

    def author_for(self, author: str) -> str:
        """Whose name a write carries: the login on a lab database (the server checks it),
        ``author`` on a file."""
        return self.user or author

    # ---- people and assignments ---------------------------------------------------------
    def people(self) -> list[Person]:
        with self._engine.connect() as conn:
            return lab.people(conn)

    def add_person(
        self, name: str, role: str, *, full_name: str = "", password: str | None = None
    ) -> None:
        self.require("admin", "add people or change their roles")
        with self._tx() as conn:
            lab.add_person(conn, name, role, _now(), full_name=full_name, password=password)

    def _glyph_ids(self, conn: Connection, keys: Iterable[GlyphKey]) -> dict[GlyphKey, int]:
        wanted = list(dict.fromkeys(keys))
        out: dict[GlyphKey, int] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            fonts = {k.font for k in chunk}
            rows = conn.execute(
                text(
                    "SELECT id, codepoint, font FROM glyphs WHERE codepoint IN ("
                    + ",".join(str(k.codepoint) for k in chunk)
                    + ")"
                )
            ).all()
            for gid, cp, font in rows:
                if font in fonts:
                    key = GlyphKey(int(cp), str(font))
                    if key in chunk:
                        out[key] = int(gid)
        return out

    def _keys(self, conn: Connection, ids: Iterable[int]) -> dict[int, GlyphKey]:
        wanted = sorted(set(ids))
        out: dict[int, GlyphKey] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = conn.execute(
                text(
                    "SELECT id, codepoint, font FROM glyphs WHERE id IN ("
                    + ",".join(str(i) for i in chunk)
                    + ")"
                )
            ).all()
            out.update({int(r[0]): GlyphKey(int(r[1]), str(r[2])) for r in rows})
        return out

    def assign(
        self,
        keys: Sequence[GlyphKey] | None,
        annotators: Sequence[str],
        *,
        overlap: float = 0.2,
        per_overlap_glyph: int = 2,
        seed: int = 0,
        name: str = "",
        by: str = "",
    ) -> AssignmentSummary:
        """Divide glyphs (None: every glyph of the project) among ``annotators``, a share
        ``overlap`` of them to ``per_overlap_glyph`` people each (see :func:`lab.assign`)."""
        self.require("curator", "assign glyphs")
        if self.is_database:  # on a server each annotator is a login: a typo would be lost work
            known = {p.name for p in self.people()}
            unknown = [a for a in annotators if a not in known]
            if unknown:
                raise StudioError(
                    f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not people of "
                    f"this project (known: {', '.join(sorted(known)) or 'nobody yet'}); add them "
                    "first (analogy-studio lab add-person, or Lab ▸ People)"
                )
        with self._tx() as conn:
            if keys is None:
                ids = [int(r[0]) for r in conn.execute(text("SELECT id FROM glyphs"))]
            else:
                found = self._glyph_ids(conn, keys)
                missing = [k for k in keys if k not in found]
                if missing:
                    raise StudioError(
                        f"{len(missing)} glyphs to assign are not in the project"
                        f" (first: {missing[0]})"
                    )
                ids = list(found.values())
            return lab.assign(
                conn,
                ids,
                annotators,
                _now(),
                name=name,
                by=self.author_for(by),
                overlap=overlap,
                per_overlap_glyph=per_overlap_glyph,
                seed=seed,
            )

    def assigned(self, annotator: str | None = None) -> list[tuple[GlyphKey, str | None]]:
        """The glyphs given to ``annotator`` (default: the login), with when each was done."""
        who = annotator or self.user or ""
        with self._engine.connect() as conn:
            rows = lab.assigned_glyphs(conn, who)
            keys = self._keys(conn, [g for g, _ in rows])
        return [(keys[g], done) for g, done in rows if g in keys]

    def mark_done(self, keys: Iterable[GlyphKey], author: str, *, done: bool = True) -> int:
        with self._tx() as conn:
            ids = self._glyph_ids(conn, keys).values()
            return lab.mark_done(conn, self.author_for(author), ids, _now() if done else None)

    # ---- each person's tags -------------------------------------------------------------
    def own_tags_of(self, key: GlyphKey) -> list[OwnTag]:
        """Everyone's own tags of a glyph (the tagger shows or hides others')."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT t.annotator, t.concept, t.value, t.created_at, t.source"
                    " FROM annotator_tags t"
                    " JOIN glyphs g ON g.id = t.glyph_id WHERE g.codepoint = :cp"
                    " AND g.font = :f ORDER BY t.concept, t.value, t.annotator"
                ),
                {"cp": key.codepoint, "f": key.font},
            ).all()
        ordered = sorted(rows, key=lambda r: (str(r[1]), str(r[2]), str(r[0])))
        return [OwnTag(key, str(r[0]), str(r[1]), str(r[2]), r[3], str(r[4])) for r in ordered]

    # ---- agreement and adjudication -----------------------------------------------------
    def ratings(self) -> tuple[list[tuple[int, str, str, str]], set[tuple[int, str]]]:
        with self._engine.connect() as conn:
            return lab.ratings(conn)

    def agreement(
        self, *, n_boot: int = 1000, seed: int = 0, source: str | None = None
    ) -> AgreementReport:
        """Krippendorff's alpha per concept and value, Cohen's kappa per pair, percent
        agreement, with bootstrap intervals over glyphs (:mod:`studio.core.agreement`).
        ``source``: over the unassisted (``"hand"``) or assisted (``"suggestion"``) work
        alone (:func:`~studio.core.agreement.ratings_of_source`); None: all of it."""
        if source is None:
            tags, annotated = self.ratings()
        else:
            with self._engine.connect() as conn:
                sourced, done = lab.sourced_ratings(conn)
            tags, annotated = ratings_of_source(sourced, done, source)
        return agreement_report(tags, annotated, self.schema, n_boot=n_boot, seed=seed)

    def disagreement_queue(self) -> list[tuple[GlyphKey, Disagreement]]:
        """Glyphs whose annotators disagree and that no curator has settled yet."""
        with self._engine.connect() as conn:
            tags, annotated = lab.ratings(conn)
            settled = lab.adjudicated_glyphs(conn)
            queue = [
                d for d in disagreements(tags, annotated, self.schema) if d.glyph_id not in settled
            ]
            keys = self._keys(conn, [d.glyph_id for d in queue])
        return [(keys[d.glyph_id], d) for d in queue if d.glyph_id in keys]

    def adjudicate(
        self, key: GlyphKey, tags: Sequence[tuple[str, str]], curator: str, note: str = ""
    ) -> None:
        """Settle a glyph's tags (they become its consensus), recorded as the curator's."""
        for concept, value in tags:
            if not self.schema.has_tag(concept, value):
                raise StudioError(f"{concept}={value!r} is not a concept value of the schema")
        self.require("curator", "settle a glyph's tags")
        with self._tx() as conn:
            found = self._glyph_ids(conn, [key])
            if key not in found:
                raise StudioError(f"glyph {key} is not in the project")
            lab.adjudicate(conn, found[key], self.author_for(curator), tags, _now(), note)

    def adjudications(self) -> dict[GlyphKey, tuple[str, str]]:
        with self._engine.connect() as conn:
            settled = lab.adjudicated_glyphs(conn)
            keys = self._keys(conn, settled)
        return {keys[g]: v for g, v in settled.items() if g in keys}

    def audit(self, limit: int = 200) -> list[AuditEntry]:
        """The newest entries of the audit trail (a lab database's; a file's is empty: its
        one user's curation is in the puzzle events)."""
        if not 1 <= limit <= MAX_AUDIT:
            raise StudioError(f"audit entries to show must be 1 to {MAX_AUDIT:,} (got {limit:,})")
        with self._engine.connect() as conn:
            return lab.audit_entries(conn, limit)

    # ---- others' changes ----------------------------------------------------------------
    def listen(
        self,
        on_change: Callable[[dict[str, Any]], None],
        on_state: Callable[[str], None] | None = None,
    ) -> ChangeListener | None:
        """A started listener for other clients' changes (lab database), else None."""
        target = getattr(self, "_target", None) or self.location  # a URL may carry a password
        return listener_for(target, on_change, on_state)
