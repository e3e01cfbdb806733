"""The GUI-agnostic application: one open project, its undo stack, fonts and renders.

The Qt window and the CLI are two front ends on :class:`Studio`; neither holds logic of its own.
Views listen to the typed psygnal signals of :attr:`Studio.events` (:class:`StudioEvents`, no Qt);
a listener is called on the thread that made the change (the GUI only changes state on its main
thread).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from psygnal import Signal, SignalGroup

from studio.core.annotations import (
    HAND,
    TagRow,
    read_annotations,
    source_problem,
    write_annotation_csv,
    write_annotation_folder,
)
from studio.core.commands import FunctionCommand, UndoStack
from studio.core.errors import FontChangedError, StudioError
from studio.core.fileio import atomic_write_bytes
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.glyphs.fonts import FontCatalog, face_sha256
from studio.glyphs.render import GlyphRenderer, RenderCache, RenderJob, render_batch
from studio.glyphs.unicode import is_private_use
from studio.store.project import FontRecord, GlyphRecord, Project, TagChange, TagRecord

Progress = Callable[[int, int, str], None]

UNCOVERED_PRIVATE = "private-use"
UNCOVERED_NO_FONT = "no-font"


@dataclass
class FontResolution:
    """Which installed font renders each glyph; the key keeps the annotation's font id."""

    render_font: dict[GlyphKey, str] = field(default_factory=dict)
    uncovered: dict[GlyphKey, str] = field(default_factory=dict)

    @property
    def substitutions(self) -> Counter[tuple[str, str]]:
        return Counter((k.font, f) for k, f in self.render_font.items() if f != k.font)


def resolve_fonts(keys: Iterable[GlyphKey], catalog: FontCatalog) -> FontResolution:
    """Pick a font for every key: its own when installed and covering the code point, otherwise
    the installed font that covers most of that font's code points (see FontCatalog.substitute).
    Private-use code points are never substituted: their picture belongs to one font."""
    res = FontResolution()
    by_font: dict[str, list[GlyphKey]] = {}
    for k in keys:
        by_font.setdefault(k.font, []).append(k)
    for font_id, ks in by_font.items():
        need = [
            k for k in ks if not (catalog.get(font_id) and catalog.covers(font_id, k.codepoint))
        ]
        for k in ks:
            if k not in need:
                res.render_font[k] = font_id
        if not need:
            continue
        subs = catalog.substitute(font_id, [k.codepoint for k in need])
        for k in need:
            sub = subs.get(k.codepoint)
            if sub is None:
                res.uncovered[k] = (
                    UNCOVERED_PRIVATE if is_private_use(k.codepoint) else UNCOVERED_NO_FONT
                )
            else:
                res.render_font[k] = sub
    return res


@dataclass(frozen=True)
class PuzzlesChanged:
    """Payload of :attr:`StudioEvents.puzzles_changed`: the set and the puzzles edited."""

    set_id: int
    ids: tuple[str, ...]


class StudioEvents(SignalGroup):
    """What changed in the open project, for the views. Every signal fires synchronously on
    the thread that made the change (the GUI's main thread for every command)."""

    #: the glyphs whose tags changed (``list[GlyphKey]``)
    tags_changed = Signal(list)
    #: the schema was replaced (tags may have been renamed or removed with it)
    schema_changed = Signal()
    #: glyphs were added, imported or rendered
    glyphs_changed = Signal()
    #: puzzle sets appeared or disappeared (``list[int]``: their ids)
    puzzle_sets_changed = Signal(list)
    #: puzzles of a set were edited
    puzzles_changed = Signal(PuzzlesChanged)
    #: a baseline job stored shortcut flags for a puzzle set (its id)
    baseline_flags_changed = Signal(int)
    #: the undo stack changed (a push, an undo, a redo, a clear): what Undo and Redo say
    undo_changed = Signal()
    #: another client changed the project (a lab's database): the tables it touched
    #: (``frozenset[str]``; ``"*"``: unknown, after a reconnection), for the views to refresh
    #: what they show of them (tag changes also come as ``tags_changed`` / ``glyphs_changed``)
    changed_elsewhere = Signal(object)


@dataclass
class ImportReport:
    source: str
    rows: int
    new_tags: int
    new_glyphs: int
    substitutions: Counter[tuple[str, str]]
    uncovered: dict[GlyphKey, str]

    def lines(self) -> list[str]:
        out = [
            f"Imported {self.rows} rows from {self.source}: {self.new_tags} new tags, "
            f"{self.rows - self.new_tags} already present, {self.new_glyphs} new glyphs."
        ]
        for (orig, sub), n in sorted(self.substitutions.items()):
            out.append(f"Font {orig!r}: {n} glyphs rendered with substitute {sub!r}.")
        if self.uncovered:
            why = Counter(self.uncovered.values())
            out.append(
                f"{len(self.uncovered)} code points have no installed font "
                f"({why[UNCOVERED_PRIVATE]} private-use, {why[UNCOVERED_NO_FONT]} not covered); "
                "their tags are kept, their images cannot be rendered:"
            )
            for k, reason in sorted(self.uncovered.items()):
                out.append(f"  {k} ({reason})")
        return out


class Studio:
    """Owns an open project; every change goes through here (and the undo stack).

    A context manager: ``with Studio(project) as studio:`` closes it (project and fonts)."""

    def __init__(
        self,
        project: Project,
        *,
        catalog: FontCatalog | None = None,
        cache: RenderCache | None = None,
        author: str = "",
    ) -> None:
        self.project = project
        self._catalog = catalog
        self.cache = cache if cache is not None else RenderCache()
        self.author = author or "unknown"
        self.undo_stack = UndoStack()
        # the views hear of every push, undo, redo or clear as they hear of every change
        self.undo_stack.subscribe(lambda: self.events.undo_changed.emit())
        self._renderers: dict[tuple[str, int], GlyphRenderer] = {}
        self._font_files: dict[str, tuple[Path, str]] = {}
        self._font_records: dict[str, FontRecord] | None = None  # read once per change
        #: Render with whatever file is installed under a font's id when it is not the file the
        #: project recorded (``--allow-font-change``): the splits then differ from the ones the
        #: project made before, which is why it is off unless asked for.
        self.allow_font_change = False
        self.events = StudioEvents()

    def __enter__(self) -> Studio:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- events (changes made outside this class) -------------------------------------------
    def puzzle_sets_changed(self, set_ids: Sequence[int]) -> None:
        """Puzzle sets were stored or removed (by :class:`~studio.curation.Curator`): emits
        :attr:`StudioEvents.puzzle_sets_changed` on the calling thread."""
        self.events.puzzle_sets_changed.emit(list(set_ids))

    def puzzles_changed(self, set_id: int, ids: Sequence[str]) -> None:
        """Puzzles of a set were edited (by :class:`~studio.curation.Curator`): emits
        :attr:`StudioEvents.puzzles_changed` on the calling thread."""
        self.events.puzzles_changed.emit(PuzzlesChanged(set_id, tuple(ids)))

    def baseline_flags_changed(self, set_id: int) -> None:
        """A baseline job stored shortcut-prone flags for a puzzle set (in the worker process,
        so no command of this studio did): emits :attr:`StudioEvents.baseline_flags_changed`."""
        self.events.baseline_flags_changed.emit(set_id)

    @property
    def catalog(self) -> FontCatalog:
        if self._catalog is None:
            self._catalog = FontCatalog.scan()
        return self._catalog

    @property
    def schema(self) -> Schema:
        return self.project.schema

    # ---- tagging ---------------------------------------------------------------------------
    def tag(self, keys: Sequence[GlyphKey], concept: str, value: str, *, source: str = HAND) -> int:
        """Tag glyphs (undoable). Returns how many glyphs gained the tag.

        ``source`` says how the tag came to be: ``"hand"``, or ``"suggestion"`` when the
        annotator accepted it from the tagger's suggestions (issue 30); it is stored with the
        tag, exported with it and kept apart by the agreement statistics. A glyph the author
        had already tagged so keeps its tag as it was. The undo removes only the author's own
        tags it added (not another person's same tag), so the project is exactly as before."""
        problem = source_problem(source)
        if problem:
            raise StudioError(problem)
        keys = list(keys)
        added: list[GlyphKey] = []
        label_value = self.schema.concept(concept).value(value).display
        how = " (suggested)" if source != HAND else ""

        def do() -> None:
            added[:] = self.project.add_tags(keys, concept, value, self.author, source)
            self.events.tags_changed.emit(list(keys))

        def undo() -> None:
            self.project.remove_tags(added, concept, value, self.author)
            self.events.tags_changed.emit(list(keys))

        self.undo_stack.push(
            FunctionCommand(f"Tag {_glyphs(len(keys))} {concept} = {label_value}{how}", do, undo)
        )
        return len(added)

    # ---- a lab's work: every write goes through here, and the views hear of it -----------
    def settle(self, key: GlyphKey, tags: Sequence[tuple[str, str]], note: str = "") -> None:
        """A curator settles a glyph's tags (they become its consensus), as the signed-in
        person (``project.user``) or the author."""
        self.project.adjudicate(key, tags, self.project.author_for(self.author), note)
        self.events.tags_changed.emit([key])

    def mark_done(self, keys: Sequence[GlyphKey], done: bool = True) -> int:
        """Mark glyphs of the person's assignment done (or not): a glyph done without a tag of
        a concept says "none" for it, so what the views show may change."""
        n = self.project.mark_done(list(keys), self.project.author_for(self.author), done=done)
        self.events.tags_changed.emit(list(keys))
        return n

    def assign(self, annotators: Sequence[str], **options: Any) -> Any:
        """Divide the project's glyphs among ``annotators`` (:meth:`Project.assign`'s options):
        the consensus of every assigned glyph is recomputed, so the views read them again."""
        summary = self.project.assign(
            None, list(annotators), by=self.project.author_for(self.author), **options
        )
        self.events.glyphs_changed.emit()
        return summary

    def add_person(self, name: str, role: str, **options: Any) -> None:
        """An admin adds a person of the lab (:meth:`Project.add_person`'s options)."""
        self.project.add_person(name, role, **options)

    def external_change(
        self, tables: Iterable[str], keys: Sequence[GlyphKey] | None = None
    ) -> None:
        """Another client committed changes to ``tables`` (a lab database's live
        notifications; ``"*"`` when what happened is unknown): the views hear it as the
        studio's own events — ``tags_changed`` for the glyphs named, ``glyphs_changed`` when
        tags changed on glyphs not named or anything may have — then ``changed_elsewhere``."""
        touched = frozenset(tables)
        tag_tables = {"tags", "annotator_tags", "adjudications", "assignment_items"}
        if "*" in touched or (touched & tag_tables and not keys):
            self.events.glyphs_changed.emit()
        elif touched & tag_tables and keys:
            self.events.tags_changed.emit(list(keys))
        self.events.changed_elsewhere.emit(touched)

    def untag(self, keys: Sequence[GlyphKey], concept: str, value: str) -> int:
        """Remove a tag (undoable; the undo restores the original author and time)."""
        keys = list(keys)
        removed: list[TagRecord] = []

        def do() -> None:
            removed[:] = self.project.remove_tags(keys, concept, value)
            self.events.tags_changed.emit(list(keys))

        def undo() -> None:
            self.project.restore_tags(removed)
            self.events.tags_changed.emit(list(keys))

        self.undo_stack.push(
            FunctionCommand(
                f"Remove {concept} = {value or 'present'} from {_glyphs(len(keys))}", do, undo
            )
        )
        return len(removed)

    def set_schema(
        self, schema: Schema, tag_changes: Sequence[TagChange] = (), note: str = ""
    ) -> None:
        """Replace the schema (undoable), renaming or removing tags as ``tag_changes`` say."""
        old = self.project.schema
        removed: list[TagRecord] = []

        def do() -> None:
            doomed = [
                t
                for t in self.project.all_tags()
                for ch in tag_changes
                if ch.kind in ("remove_concept", "remove_value")
                and t.concept == ch.concept
                and (ch.kind == "remove_concept" or t.value == ch.value)
            ]
            removed[:] = doomed
            self.project.set_schema(schema, author=self.author, note=note, tag_changes=tag_changes)
            self.events.schema_changed.emit()

        def undo() -> None:
            self.project.set_schema(
                old,
                author=self.author,
                note=f"undo: {note}",
                tag_changes=_reverse_changes(tag_changes),
            )
            self.project.restore_tags(removed)
            self.events.schema_changed.emit()

        self.undo_stack.push(FunctionCommand(note or "Edit the schema", do, undo))

    # ---- glyphs and fonts ------------------------------------------------------------------
    def add_glyphs(self, keys: Iterable[GlyphKey]) -> int:
        """Add glyphs to the project's set (e.g. a whole block of a font) with their render font."""
        keys = list(keys)
        res = resolve_fonts(keys, self.catalog)
        self._record_fonts(set(res.render_font.values()))
        n = self.project.add_glyphs(_glyph_rows(keys, res))
        self.events.glyphs_changed.emit()
        return n

    def _record_fonts(self, font_ids: Iterable[str]) -> None:
        """Record the fonts that render the project's glyphs, each with a copy of its file, so the
        project renders the same pictures on any machine whatever fonts it has installed (a
        font recorded earlier without a copy gets one when the installed file is still the same)."""
        known = self._fonts()
        self._font_records = None
        for fid in sorted(set(font_ids)):
            info = self.catalog.get(fid)
            if info is None:
                continue
            rec = known.get(fid)
            if rec is not None and (rec.has_data or rec.sha256 != info.sha256):
                continue
            self.project.add_font(
                id=info.id,
                family=info.family,
                style=info.style,
                path=str(info.path),
                face_index=info.index,
                sha256=info.sha256,
                source=info.source,
                num_codepoints=info.num_codepoints,
                data=info.path.read_bytes(),
            )

    def add_font_file(self, path: str | Path) -> str:
        """Add a user font (kept inside the project). Raises FontError naming a broken file."""
        info = self.catalog.add_file(Path(path), source="user")
        self._record_fonts([info.id])
        return info.id

    # ---- import / export -------------------------------------------------------------------
    def import_annotations(self, path: str | Path) -> ImportReport:
        """Import a CSV or UA folder. All or nothing: any bad row raises AnnotationImportError
        and the project is unchanged. Not undoable (it may be large); it is one transaction.
        A source with no tags at all is refused too (StudioError), with nothing written."""
        rows = read_annotations(path, self.schema)
        if not rows:
            raise StudioError("holds no tags; nothing was imported", path)
        keys = list(dict.fromkeys(r.key for r in rows))
        res = resolve_fonts(keys, self.catalog)
        self._record_fonts(set(res.render_font.values()))
        counts = self.project.import_tags(rows, self.author, glyphs=_glyph_rows(keys, res))
        self.undo_stack.clear()
        self.events.glyphs_changed.emit()
        return ImportReport(
            source=str(path),
            rows=len(rows),
            new_tags=counts.new_tags,
            new_glyphs=counts.new_glyphs,
            substitutions=res.substitutions,
            uncovered=res.uncovered,
        )

    def export_annotations(self, out: str | Path) -> int:
        """A ``.csv`` path gets the CSV; anything else gets UA's folder layout with renders."""
        out = Path(out)
        rows: list[TagRow] = self.project.tag_rows()
        if out.suffix.lower() == ".csv":
            write_annotation_csv(rows, out)
        else:
            records = {g.key: g for g in self.project.glyphs()}
            write_annotation_folder(rows, out, lambda k: self.png_bytes(records.get(k)))
        return len(rows)

    # ---- rendering -------------------------------------------------------------------------
    def _font_path(self, font_id: str) -> Path:
        return self._font_file(font_id)[0]

    def _font_file(self, font_id: str) -> tuple[Path, str]:
        """The file to render a font from and its content hash: the installed face when it is
        the very file the project recorded (same sha256), else the copy kept in the project, else
        the recorded path if its content still matches. A different file under the same id is
        refused (:class:`FontChangedError`) unless :attr:`allow_font_change` is set."""
        found = self._font_files.get(font_id)
        if found is None or not found[0].exists():  # a file deleted since: look again
            found = self._font_files[font_id] = self._find_font_file(font_id)
        return found

    def _find_font_file(self, font_id: str) -> tuple[Path, str]:
        rec = self._fonts().get(font_id)
        if rec is None:
            raise StudioError(f"font {font_id!r} is neither installed nor kept in the project")
        info = self.catalog.get(font_id)
        if info is not None and info.path.exists() and info.sha256 == rec.sha256:
            return info.path, rec.sha256
        path = Path(rec.path)
        if rec.has_data:
            copy = self.cache.root / "fonts" / f"{rec.sha256}{path.suffix}"
            if not copy.exists() or face_sha256(copy, rec.face_index) != rec.sha256:
                data = self.project.font_data(font_id)
                assert data is not None
                atomic_write_bytes(copy, data)
            return copy, rec.sha256
        if path.exists() and face_sha256(path, rec.face_index) == rec.sha256:
            return path, rec.sha256
        candidates = [p for p in (info.path if info else None, path) if p and p.exists()]
        if self.allow_font_change and candidates:
            return candidates[0], face_sha256(candidates[0], rec.face_index)
        raise FontChangedError(
            font_id,
            rec.sha256,
            str(candidates[0]) if candidates else rec.path,
            face_sha256(candidates[0], rec.face_index) if candidates else None,
            self._glyphs_rendered_with(font_id),
        )

    def _fonts(self) -> dict[str, FontRecord]:
        """The project's font records by id (read once: a render asks for them per glyph)."""
        if self._font_records is None:
            self._font_records = {f.id: f for f in self.project.fonts()}
        return self._font_records

    def _glyphs_rendered_with(self, font_id: str) -> list[GlyphKey]:
        return [g.key for g in self.project.glyphs() if g.render_font == font_id]

    def font_manifest(self, keys: Iterable[GlyphKey] | None = None) -> dict[str, str]:
        """``{font id: sha256}`` of the fonts that render ``keys`` (every glyph when None): what
        ``split.json`` records, so a split names the exact font files its pictures came from."""
        wanted = None if keys is None else set(keys)
        fonts = {fid: f.sha256 for fid, f in self._fonts().items()}
        used = {
            g.render_font
            for g in self.project.glyphs()
            if g.render_font and g.status != "uncovered" and (wanted is None or g.key in wanted)
        }
        return {fid: fonts[fid] for fid in sorted(used) if fid in fonts}

    def check_fonts(self, keys: Iterable[GlyphKey] | None = None) -> dict[str, str]:
        """Make sure every font that renders ``keys`` is the file the project recorded (or kept):
        raises :class:`FontChangedError` naming the font and the glyphs that would change, before
        any work is done. Returns :meth:`font_manifest` of ``keys``."""
        manifest = self.font_manifest(keys)
        for font_id in manifest:
            self._font_file(font_id)
        return manifest

    def render_all(self, size: int = 80, workers: int | None = None) -> Iterator[tuple[int, int]]:
        """Render every renderable glyph into the cache, recording missing glyphs with a reason.
        A generator of (done, total): stop iterating to cancel."""
        glyphs = [g for g in self.project.glyphs() if g.status != "uncovered"]
        # one job per (font, code point): a substituted glyph may share it with a native one
        by_job: dict[tuple[str, int], list[GlyphRecord]] = {}
        fonts = self._fonts()
        jobs = []
        for g in glyphs:
            f = fonts.get(g.render_font or "")
            if f is None:
                continue
            path, sha = self._font_file(f.id)
            job_key = (sha, g.key.codepoint)
            if job_key not in by_job:
                jobs.append(RenderJob(path, f.face_index, sha, g.key.codepoint))
            by_job.setdefault(job_key, []).append(g)
        total = len(jobs)
        if not total:
            yield (0, 0)
            return
        for event in render_batch(jobs, size=size, cache=self.cache, workers=workers):
            updates = []
            for r in event.results:
                for g in by_job[(r.job.sha256, r.job.codepoint)]:
                    updates.append(
                        (g.key, "missing", r.missing) if r.missing else (g.key, "ok", None)
                    )
            self.project.set_glyph_status(updates)
            yield (event.done, event.total)
        self.events.glyphs_changed.emit()

    def _renderer(self, g: GlyphRecord) -> tuple[GlyphRenderer, str] | None:
        """The (kept open) renderer of a glyph's render font and that font's hash, or None."""
        f = self._fonts().get(g.render_font or "")
        if f is None or g.status == "uncovered":
            return None
        path, sha = self._font_file(f.id)
        key = (str(path), f.face_index)
        r = self._renderers.get(key)
        if r is None:
            r = self._renderers[key] = GlyphRenderer(path, f.face_index)
        return r, sha

    def render(self, g: GlyphRecord, size: int = 80) -> np.ndarray | None:
        """The binarised image of one glyph (cached), or None when it cannot be rendered."""
        found = self._renderer(g)
        if found is None:
            return None
        renderer, sha = found
        hit = self.cache.get(sha, g.key.codepoint, size)
        if hit is not None:
            return hit
        if renderer.missing_reason(g.key.codepoint, size):
            return None
        img = renderer.render(g.key.codepoint, size)
        self.cache.put(sha, g.key.codepoint, size, img)
        return img

    def master(self, g: GlyphRecord) -> np.ndarray | None:
        """The 500×500 greyscale master image (for the inspector), or None if it has no ink."""
        found = self._renderer(g)
        if found is None or found[0].missing_reason(g.key.codepoint):
            return None
        return np.asarray(found[0].master(g.key.codepoint))

    def close(self) -> None:
        """Close the project and every open font file."""
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()
        self.project.close()

    def png_bytes(self, g: GlyphRecord | None, size: int = 80) -> bytes:
        import io

        from PIL import Image

        img = self.render(g, size) if g is not None else None
        if img is None:
            img = np.full((size, size), 255, np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).convert("1").save(buf, "PNG")
        return buf.getvalue()


def _glyph_rows(
    keys: Iterable[GlyphKey], res: FontResolution
) -> list[tuple[GlyphKey, str | None, str, str | None]]:
    rows = []
    for k in keys:
        if k in res.uncovered:
            rows.append((k, None, "uncovered", res.uncovered[k]))
        else:
            rows.append((k, res.render_font[k], "pending", None))
    return rows


def _reverse_changes(changes: Sequence[TagChange]) -> list[TagChange]:
    """The tag changes that take a project back: renames undone in reverse order. Removed tags
    are restored separately, with their authors."""
    out = []
    for ch in reversed(changes):
        if ch.kind == "rename_concept":
            out.append(TagChange("rename_concept", ch.new_name or "", None, ch.concept))
        elif ch.kind == "rename_value":
            out.append(TagChange("rename_value", ch.concept, ch.new_name, ch.value))
    return out


def _glyphs(n: int) -> str:
    return "1 glyph" if n == 1 else f"{n} glyphs"
