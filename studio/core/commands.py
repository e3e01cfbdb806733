"""Undoable commands on one stack. Qt-free: the GUI mirrors it in its Edit menu.

Every edit the studio makes (tagging, schema edits, later puzzle edits) is a Command whose label
reads like a sentence ("Tag 3 glyphs aspect = tall"). ``push`` runs it; if ``do`` raises, the
stack is unchanged, so a refused edit never leaves a half-done entry behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Command(Protocol):
    label: str

    def do(self) -> None: ...

    def undo(self) -> None: ...


@dataclass
class FunctionCommand:
    """A command from two callables; handy when the state change is a pair of store calls."""

    label: str
    do_fn: Callable[[], None]
    undo_fn: Callable[[], None]

    def do(self) -> None:
        self.do_fn()

    def undo(self) -> None:
        self.undo_fn()


@dataclass
class UndoStack:
    limit: int = 1000
    _done: list[Command] = field(default_factory=list)
    _undone: list[Command] = field(default_factory=list)
    _listeners: list[Callable[[], None]] = field(default_factory=list)

    def subscribe(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the caller's thread) after every push, undo, redo or clear."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        for cb in list(self._listeners):
            cb()

    def push(self, command: Command) -> None:
        command.do()
        self._done.append(command)
        del self._done[: max(0, len(self._done) - self.limit)]
        self._undone.clear()
        self._changed()

    def undo(self) -> str | None:
        if not self._done:
            return None
        cmd = self._done[-1]
        cmd.undo()
        self._done.pop()
        self._undone.append(cmd)
        self._changed()
        return cmd.label

    def redo(self) -> str | None:
        if not self._undone:
            return None
        cmd = self._undone[-1]
        cmd.do()
        self._undone.pop()
        self._done.append(cmd)
        self._changed()
        return cmd.label

    def clear(self) -> None:
        self._done.clear()
        self._undone.clear()
        self._changed()

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    @property
    def undo_label(self) -> str:
        return self._done[-1].label if self._done else ""

    @property
    def redo_label(self) -> str:
        return self._undone[-1].label if self._undone else ""
