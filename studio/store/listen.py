"""Other people's changes, as they happen: a thread that LISTENs on a lab database's
``studio_changes`` channel (filled by the triggers of :mod:`studio.store.labschema`) and hands
each change to a callback, so the tagger, the board and the Baselines tab refresh within a
second of another client's commit instead of polling.

A server that goes away (restart, network) is reported through ``on_state`` with a clear text,
then reconnected to every second until it is back; changes made while it was away are
announced as one ``{"table": "*", "op": "reconnect"}`` event, so a view reloads everything
rather than missing them. A file project has no channel: :func:`listener_for` returns None
and the GUI keeps its own refreshes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from studio.store.dbfile import connection_problem, is_database_url, open_engine, safe_location
from studio.store.labschema import NOTIFY_CHANNEL

__all__ = ["ChangeListener", "listener_for"]

Change = dict[str, Any]


class ChangeListener:
    """Start with :meth:`start`, end with :meth:`stop` (joins the thread within ~1 s).
    Callbacks run on the listener's thread: a GUI hands them to its own thread (a queued
    signal)."""

    def __init__(
        self,
        location: str,
        on_change: Callable[[Change], None],
        on_state: Callable[[str], None] | None = None,
        *,
        poll_s: float = 0.5,
    ) -> None:
        self.location = safe_location(location)
        self._raw_location = location
        self._on_change = on_change
        self._on_state = on_state or (lambda _text: None)
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._listening = threading.Event()
        self._thread: threading.Thread | None = None
        self._engine: Engine | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        # an engine of its own: its one connection sits in LISTEN for the whole session
        self._engine = open_engine(self._raw_location)
        self._thread = threading.Thread(
            target=self._run, name="studio-change-listener", daemon=True
        )
        self._thread.start()

    def wait_listening(self, timeout: float = 10.0) -> bool:
        """Whether the listener is connected and listening (tests, and the GUI's status)."""
        return self._listening.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def _run(self) -> None:
        lost = False
        while not self._stop.is_set():
            try:
                assert self._engine is not None
                raw = self._engine.raw_connection()
            except Exception as e:
                self._lost(e, first=not lost)
                lost = True
                self._stop.wait(1.0)
                continue
            try:
                pg = raw.driver_connection
                assert pg is not None
                pg.autocommit = True
                pg.execute(f"LISTEN {NOTIFY_CHANNEL}")
                self._listening.set()
                if lost:
                    self._on_state(f"reconnected to {self.location}")
                    self._on_change({"table": "*", "op": "reconnect", "who": "", "glyphs": []})
                    lost = False
                while not self._stop.is_set():
                    for note in pg.notifies(timeout=self._poll_s, stop_after=64):
                        try:
                            change = json.loads(note.payload)
                        except ValueError:
                            continue
                        self._on_change(change)
            except Exception as e:
                self._listening.clear()
                raw.invalidate()
                if not self._stop.is_set():
                    self._lost(e, first=not lost)
                    lost = True
                    self._stop.wait(1.0)
            finally:
                with suppress(Exception):  # a dead connection may refuse to close
                    raw.close()

    def _lost(self, error: BaseException, *, first: bool) -> None:
        if first:
            reason = connection_problem(error) or str(error).splitlines()[0]
            self._on_state(
                f"lost the connection to {self.location} ({reason}); reconnecting every second"
            )


def listener_for(
    location: str | Path,
    on_change: Callable[[Change], None],
    on_state: Callable[[str], None] | None = None,
) -> ChangeListener | None:
    """A started listener for a lab database; None for a project file."""
    if not is_database_url(location):
        return None
    listener = ChangeListener(str(location), on_change, on_state)
    listener.start()
    return listener
