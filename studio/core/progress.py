"""Progress of a long command-line task on stderr, Qt-free.

On a terminal the line is rewritten in place (``\\r``) at every update, as the CLI always did.
Anywhere else (a pipe, a log file, a CI job) a carriage return would pile up into one
unreadable line, so :class:`ProgressReporter` then prints one whole line every few seconds, and
one at the end::

    generate: 4,000/10,000 puzzles, 12 s left

The count is what the caller says it counts (``unit``); the time left is extrapolated from the
rate so far and is left out until one unit has finished: a count of at least one, or, for a
task that reports only its share (:meth:`ProgressReporter.fraction`), a new message after its
work began (the next epoch, seed or model of a baseline job) or a tenth more done. Its rate is
measured from its first share above 0, so start-up (reading the split, importing torch) never
enters it: a baseline job that took 57 s first said "1 h 23 min left" (issue 28).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["DEFAULT_INTERVAL", "ProgressReporter", "time_left_text"]

#: Seconds between two progress lines when stderr is not a terminal.
DEFAULT_INTERVAL = 5.0


def time_left_text(seconds: float) -> str:
    """``under 1 s``, ``8 s``, ``3 min 05 s``, ``1 h 02 min``: what is read before "left"."""
    if seconds < 0.5:
        return "under 1 s"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


#: The share done that counts as a first unit for a task whose messages never change.
UNIT_SHARE = 0.1


class ProgressReporter:
    """Reports ``done/total`` of a task named ``task`` counted in ``unit`` (``"puzzles"``).

    ``quiet`` prints nothing; ``tty`` (default: ``stream.isatty()``) chooses between the
    rewritten line and a line every ``interval`` seconds; ``clock`` is injectable for tests.
    A new ``task`` or ``unit`` (a stage: "render", then "generate") starts a new estimate.
    """

    def __init__(
        self,
        task: str,
        unit: str = "",
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        tty: bool | None = None,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.tty = bool(tty if tty is not None else _isatty(self.stream))
        self.interval = interval
        self.clock = clock
        self.task = task
        self.unit = unit
        self._start = clock()
        self._last_done = 0
        self._last_line: float | None = None
        self._finished = False
        self._open_line = False  # a tty line was written without its newline
        self._first_message: str | None = None  # of fraction(): a change ends the first unit
        self._unit_done = False
        #: (time, share) of the first report with a share above 0: the rate is measured from
        #: there, so start-up before any work (loading, importing) never enters it
        self._work_start: tuple[float, float] | None = None

    # ---- what callers call -----------------------------------------------------------------
    def stage(self, task: str, unit: str | None = None) -> None:
        """Go on with another stage (a new name, unit and time estimate)."""
        if task == self.task and (unit is None or unit == self.unit):
            return
        self._end_tty_line()
        self.task = task
        if unit is not None:
            self.unit = unit
        self._restart()

    def update(self, done: int, total: int) -> None:
        """``done`` of ``total`` units are done (a ``done`` smaller than the last starts a new
        estimate: the task began again)."""
        if self.quiet:
            return
        now = self.clock()
        if done < self._last_done:
            self._restart()
        self._last_done = done
        finished = total > 0 and done >= total
        if self.tty:
            line = self.line(done, total, now)
            print(f"\r{line:<79}", end="\n" if finished else "", file=self.stream, flush=True)
            self._open_line = not finished
            return
        if finished:
            if not self._finished:
                print(self.line(done, total, now), file=self.stream, flush=True)
            self._finished = True
            return
        self._finished = False
        if self._due(now):
            print(self.line(done, total, now), file=self.stream, flush=True)

    def fraction(self, fraction: float, message: str = "") -> None:
        """A task that knows only its share done (0–1), with a message ("blind · seed 2")."""
        if self.quiet:
            return
        now = self.clock()
        fraction = max(0.0, min(1.0, fraction))
        finished = fraction >= 1.0
        text = f"{self.task}: {round(100 * fraction)}%"
        if fraction > 0.0 and self._work_start is None:
            # the work has begun: its first message is the first unit's (a start-up message
            # before it, "loading the puzzles", is no unit of work)
            self._work_start = (now, fraction)
            self._first_message = message
        elif self._work_start is not None and message != self._first_message:
            self._unit_done = True
        left = self._work_left(fraction, now)
        done_share = fraction - (self._work_start[1] if self._work_start else 0.0)
        if left is not None and not finished and (self._unit_done or done_share >= UNIT_SHARE):
            text += f", {time_left_text(left)} left"
        if message:
            text += f" · {message}"
        if self.tty:
            print(f"\r{text[:79]:<79}", end="\n" if finished else "", file=self.stream, flush=True)
            self._open_line = not finished
            return
        if finished:
            if not self._finished:
                print(text, file=self.stream, flush=True)
            self._finished = True
            return
        self._finished = False
        if self._due(now):
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """End a line left open on a terminal (an interrupted task)."""
        self._end_tty_line()

    # ---- formatting --------------------------------------------------------------------------
    def line(self, done: int, total: int, now: float | None = None) -> str:
        """``generate: 4,000/10,000 puzzles, 12 s left``."""
        now = self.clock() if now is None else now
        unit = f" {self.unit}" if self.unit else ""
        text = f"{self.task}: {done:,}/{total:,}{unit}"
        if total > 0 and done < total:
            left = self._seconds_left_count(done, total, now)
            if left is not None:
                text += f", {time_left_text(left)} left"
        return text

    def _seconds_left_count(self, done: int, total: int, now: float) -> float | None:
        elapsed = now - self._start
        if done <= 0 or elapsed <= 0:
            return None
        return (total - done) * elapsed / done

    def _work_left(self, fraction: float, now: float) -> float | None:
        """The time left at the rate since the work began (:attr:`_work_start`)."""
        if self._work_start is None:
            return None
        t0, f0 = self._work_start
        if fraction <= f0 or now <= t0:
            return None
        return (1.0 - fraction) * (now - t0) / (fraction - f0)

    def _due(self, now: float) -> bool:
        """Whether a whole interval passed since the last line (or the start: the first line
        comes once there is a rate to tell)."""
        if now - (self._start if self._last_line is None else self._last_line) < self.interval:
            return False
        self._last_line = now
        return True

    def _restart(self) -> None:
        self._start = self.clock()
        self._first_message = None
        self._unit_done = False
        self._work_start = None
        self._last_done = 0
        self._last_line = None
        self._finished = False

    def _end_tty_line(self) -> None:
        if self._open_line:
            print(file=self.stream, flush=True)
            self._open_line = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
