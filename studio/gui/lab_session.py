"""The window's side of a lab's shared project: who is signed in (title and status bar), what
their role lets them do (actions disabled with a tooltip that says why), and other clients'
changes arriving live.

:class:`LiveChanges` bridges :meth:`Project.listen <studio.store.labproject.LabProjectMixin.listen>`
to Qt: the listener calls back on ITS thread; the callbacks only emit a signal of a QObject that
lives on the GUI thread, so Qt queues them there. Bursts are coalesced by a short single-shot
timer: many notifications within ``COALESCE_MS`` become one :attr:`LiveChanges.refresh`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction

from studio.store.project import Project

__all__ = [
    "ADMIN_ACTIONS",
    "COALESCE_MS",
    "CURATOR_ACTIONS",
    "LiveChanges",
    "RightsGate",
    "signed_in_text",
    "window_title",
]

#: notifications closer together than this are one refresh (well inside the 2 s promise)
COALESCE_MS = 150
#: actions a curator (or admin) may take: the server refuses them to an annotator
CURATOR_ACTIONS = (
    "puzzle.approve",
    "puzzle.reject",
    "puzzle.draft",
    "puzzle.approve_clean",
    "puzzle.replace_foil",
    "puzzle.regenerate",
    "puzzle.generate",
    "puzzle.pilot_import",
    "lab.settle",
)
#: actions only an admin may take
ADMIN_ACTIONS = ("edit.schema", "file.add_font", "file.render_all", "file.import_annotations")
_RANK = {"none": 0, "annotator": 1, "curator": 2, "admin": 3}


def signed_in_text(project: Project) -> str:
    """``signed in as ann (annotator)`` on a lab database; "" for a project file."""
    if not project.is_database:
        return ""
    return f"signed in as {project.user} ({project.role()})"


def window_title(project: Project) -> str:
    """The window's title: the file's name, or the lab database and who is signed in."""
    if not project.is_database:
        return f"{project.path.name} — Analogy Studio"
    return f"Lab database {project.location} — {signed_in_text(project)} — Analogy Studio"


class RightsGate(QObject):
    """Keeps actions a role may not take disabled, whatever their owners (the board, the
    window's modes) set: each gated action sits in a disabled QActionGroup, and a QAction in a
    disabled group is disabled however often ``setEnabled(True)`` is called on it."""

    def __init__(self, actions: Mapping[str, QAction], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._actions = actions
        self._tips = {i: a.toolTip() for i, a in actions.items()}
        self._groups: list[Any] = []

    def apply(self, role: str, who: str) -> None:
        from PySide6.QtGui import QActionGroup

        for group in self._groups:
            for action in group.actions():
                group.removeAction(action)
                # Qt keeps the action's own (explicit) state through the group: toggle it so
                # that it is enabled again; the window then sets what its mode wants
                action.setEnabled(False)
                action.setEnabled(True)
            group.deleteLater()
        self._groups = []
        for action_id, tip in self._tips.items():
            self._actions[action_id].setToolTip(tip)
        rank = _RANK.get(role, 0)
        for needed, ids in (("curator", CURATOR_ACTIONS), ("admin", ADMIN_ACTIONS)):
            if rank >= _RANK[needed]:
                continue
            group = QActionGroup(self)
            group.setExclusionPolicy(QActionGroup.ExclusionPolicy.None_)
            article = "an" if role[0] in "aeiou" else "a"
            why = "not a member of this lab" if role == "none" else f"{article} {role}"
            for action_id in ids:
                action = self._actions.get(action_id)
                if action is None:
                    continue
                group.addAction(action)
                action.setToolTip(
                    f"{self._tips[action_id]} — only a {needed} or an admin may do this; "
                    f"{who} is {why}"
                )
            group.setEnabled(False)
            self._groups.append(group)

    def allowed(self, action_id: str) -> bool:
        return not any(self._actions.get(action_id) in g.actions() for g in self._groups)


class LiveChanges(QObject):
    """Other clients' changes to the open lab database, delivered on the GUI thread.

    ``refresh(glyph_ids, tables)`` fires (coalesced) with the glyph ids and table names of the
    changes since the last one; ``tables`` holds ``"*"`` after a reconnection (reload all).
    ``state(text)`` reports a lost connection and the reconnection."""

    refresh = Signal(object, object)
    state = Signal(str)
    _arrived = Signal(object)
    _state = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._listener: Any = None
        self._glyphs: set[int] = set()
        self._tables: set[str] = set()
        self._timer = QTimer(self, singleShot=True, interval=COALESCE_MS)
        self._timer.timeout.connect(self._flush)
        # emitted on the listener's thread, received here on the GUI thread
        self._arrived.connect(self._collect, Qt.ConnectionType.QueuedConnection)
        self._state.connect(self.state.emit, Qt.ConnectionType.QueuedConnection)

    @property
    def listening(self) -> bool:
        return self._listener is not None

    def wait_listening(self, timeout: float = 10.0) -> bool:
        return self._listener is not None and bool(self._listener.wait_listening(timeout))

    def start(self, project: Project) -> None:
        """Listen to ``project`` (nothing happens for a project file)."""
        self.stop()
        self._listener = project.listen(self._arrived.emit, self._state.emit)

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        self._timer.stop()
        self._glyphs.clear()
        self._tables.clear()
        if listener is not None:
            listener.stop()

    def _collect(self, change: object) -> None:
        if self._listener is None or not isinstance(change, dict):
            return  # arrived after a switch: it was about the project closed
        self._tables.add(str(change.get("table", "*")))
        glyphs = change.get("glyphs") or []
        if isinstance(glyphs, list):
            self._glyphs.update(int(g) for g in glyphs if isinstance(g, int))
        if not self._timer.isActive():
            self._timer.start()

    def _flush(self) -> None:
        glyphs, tables = set(self._glyphs), set(self._tables)
        self._glyphs.clear()
        self._tables.clear()
        if tables:
            self.refresh.emit(glyphs, tables)
