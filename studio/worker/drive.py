"""Run a project's queued jobs to the end without a window: what ``analogy-studio jobs`` does.

The studio's window drives a :class:`~studio.worker.host.WorkerHost` from a Qt timer; a command
line, a lab server's cron job or the installer's clean-system check drive the same host from
this loop instead, so a job started here runs exactly as one started from the Baselines tab: in
a worker process (the frozen app's own executable when packaged), with its memory limit, stall
watch and checkpoint. Ctrl+C (or SIGTERM) shuts the host down, which records the running job as
interrupted, resumable from its checkpoint.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from studio.store.jobs import JobRecord
from studio.worker.host import WorkerHost

#: Seconds between two polls of the host (the window's timer ticks at the same pace).
POLL_EVERY = 0.25


def run_jobs(
    project_path: str | Path,
    *,
    only: int | None = None,
    on_change: Callable[[JobRecord], None] | None = None,
    max_running: int = 1,
    poll_every: float = POLL_EVERY,
) -> list[JobRecord]:
    """Run queued jobs in worker processes until none is queued or running (``only``: until
    that job is final; other queued jobs still start when a slot is free, as in the window).
    ``on_change`` hears every job whose status, progress or message changed. Returns the final
    records of the jobs that ran (``only``: that one)."""
    host = WorkerHost(project_path, max_running=max_running)
    seen: dict[int, tuple[str, float, str]] = {}
    ran: dict[int, JobRecord] = {}
    stop: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.append(signum)

    old = signal.signal(signal.SIGTERM, on_signal)
    try:
        host.start()
        while True:
            host.poll()
            jobs = host.queue.jobs()
            for job in jobs:
                state = (job.status, round(job.progress, 3), job.message)
                if job.id in seen and seen[job.id] == state:
                    continue
                if job.id not in seen and job.final:
                    seen[job.id] = state  # finished before this run: not ours to report
                    continue
                seen[job.id] = state
                ran[job.id] = job
                if on_change is not None:
                    on_change(job)
            if stop:
                break
            if only is not None:
                target = next((j for j in jobs if j.id == only), None)
                if target is None or target.final:
                    break
            elif not any(j.status in ("queued", "running") for j in jobs):
                break
            time.sleep(poll_every)
    except KeyboardInterrupt:
        stop.append(signal.SIGINT)
    finally:
        host.shutdown()
        signal.signal(signal.SIGTERM, old)
    if stop:
        raise KeyboardInterrupt
    if only is not None:
        return [ran[only]] if only in ran else []
    return [ran[k] for k in sorted(ran)]


__all__ = ["POLL_EVERY", "run_jobs"]
