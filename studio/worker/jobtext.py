"""How a background job's times read to people: when it started, how long it ran, how long it
still needs, which machine runs it. Below the GUI (issue 27: the dashboard's pure helpers), so
the CLI, the worker and the window say the same."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from studio.core.progress import UNIT_SHARE
from studio.core.progress import time_left_text as seconds_text

#: What the Machine column says for the computer the studio runs on
THIS_COMPUTER = "this computer"


def _parse_time(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        t = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def local_time(stamp: str | None, now: datetime | None = None) -> str:
    """A stored UTC time as the user reads it: ``14:03:22`` today, ``3 Nov 14:03`` before."""
    t = _parse_time(stamp)
    if t is None:
        return ""
    t = t.astimezone()
    today = (now or datetime.now(UTC)).astimezone().date()
    return t.strftime("%H:%M:%S") if t.date() == today else t.strftime("%-d %b %H:%M")


def duration_text(seconds: float | None) -> str:
    """``0.6 s``, ``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    if seconds is None or seconds < 0 or math.isnan(seconds):
        return ""
    if seconds < 10:
        return f"{seconds:.1f} s"
    return seconds_text(seconds)  # the CLI's words for the longer ones


def job_seconds(job: Any, now: datetime | None = None) -> float | None:
    """How long the job ran (so far, while it runs)."""
    start = _parse_time(job.started_at)
    if start is None:
        return None
    end = _parse_time(job.finished_at)
    if end is None:
        if job.status != "running":
            return None
        end = now or datetime.now(UTC)
    return (end - start).total_seconds()


#: Below this share done, a job's rate says too little to tell the time left.
_MIN_SHARE_FOR_ESTIMATE = 0.01


def job_seconds_left(
    job: Any, now: datetime | None = None, first_message: str | None = None
) -> float | None:
    """The time a running job still needs, from its rate so far (its share done over the
    time it has run); None before there is a rate to go by, and for a job not running.
    ``first_message``: the job's message when it was first seen running; while it still says
    that and less than a tenth is done, no unit has finished and the rate is start-up, so no
    estimate (as the CLI's, :mod:`studio.core.progress`)."""
    if job.status != "running" or job.cancel_requested:
        return None
    fraction = float(job.progress or 0.0)
    if not _MIN_SHARE_FOR_ESTIMATE <= fraction < 1.0:
        return None
    if first_message is not None and job.message == first_message and fraction < UNIT_SHARE:
        return None
    seconds = job_seconds(job, now)
    if seconds is None or seconds <= 0:
        return None
    return seconds * (1.0 - fraction) / fraction


def time_left_text(job: Any, now: datetime | None = None, first_message: str | None = None) -> str:
    """``3 min 05 s left`` for a running job with a rate to go by, else ``""``."""
    left = job_seconds_left(job, now, first_message)
    if left is None:
        return ""
    return f"{seconds_text(left)} left"


def job_machine_text(job: Any, here: str | None = None) -> str:
    """The machine that claimed a job (``jobs.worker``, "gpu-box-1 · pid 4242"):
    :data:`THIS_COMPUTER` for this one (``here``: its name, by default the host name), ``""``
    for a job no worker claimed."""
    worker = str(getattr(job, "worker", "") or "")
    if not worker:
        return ""
    machine = worker.rsplit(" · pid ", 1)[0]
    if here is None:
        import socket

        here = socket.gethostname()
    return THIS_COMPUTER if machine == here else machine


__all__ = [
    "THIS_COMPUTER",
    "duration_text",
    "job_machine_text",
    "job_seconds",
    "job_seconds_left",
    "local_time",
    "time_left_text",
]
