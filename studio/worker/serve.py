"""``analogy-studio worker serve --db URL``: a worker on another machine (a lab's GPU server).

A long-running process that serves a project's job queue: it drives the same
:class:`~studio.worker.host.WorkerHost` as the studio's window (each job in its own child
process, with its memory limit, stall watch and checkpoint), as a worker named after this
machine ("gpu-box-1 · pid 4242", shown in the Baselines tab):

- claims the oldest queued job (``FOR UPDATE SKIP LOCKED`` on PostgreSQL: several servers never
  take the same job, nor wait on each other) whenever it runs fewer than ``--max-jobs``;
- heartbeats its running jobs every ``--heartbeat`` seconds (the database server's clock, so a
  machine whose clock is off changes nothing);
- puts back in the queue the jobs of any other worker with no heartbeat for ``--dead-after``
  seconds (its machine died, lost the network, was killed), resumable from their checkpoints;
  with the defaults (5 s, 20 s) a dead worker's job is queued again within about 25 s;
- on SIGTERM or Ctrl+C stops cleanly: its running jobs go back to the queue, resumable, and it
  exits 0;
- logs one line per event on stderr (``2026-01-02 03:04:05 gpu-box-1: job 12 done``);
- rides out a database that goes away (a server restart): it logs the reason and tries again;
- keeps a warm spare process ready (``--spare``, on unless ``--once``): torch imported and the
  GPU started before a job comes, so a queued job starts with its own work.

``--once`` serves until nothing is queued or running here, then exits (a cron job, a test).
With a project file instead of a URL it is the local runner (as ``analogy-studio jobs run``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TextIO

from studio.core.errors import StudioError

__all__ = [
    "DEAD_AFTER",
    "HEARTBEAT_EVERY",
    "POLL_EVERY",
    "add_serve_arguments",
    "cmd_serve",
    "serve",
]

#: Seconds between two heartbeats of a worker's running jobs.
HEARTBEAT_EVERY = 5.0
#: Seconds without a heartbeat after which another worker counts as lost.
DEAD_AFTER = 20.0
#: Seconds between two polls of the host (claims, reaping, cancels).
POLL_EVERY = 0.5
#: Seconds to wait after the database could not be reached before trying again.
RETRY_EVERY = 2.0
_DEVICES = ("auto", "cpu", "cuda")


def _stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def serve(
    location: str | Path,
    *,
    device: str = "auto",
    max_jobs: int = 1,
    once: bool = False,
    heartbeat: float = HEARTBEAT_EVERY,
    dead_after: float = DEAD_AFTER,
    machine: str | None = None,
    poll_every: float = POLL_EVERY,
    out: TextIO | None = None,
    should_stop: Callable[[], bool] | None = None,
    spare: bool | None = None,
) -> int:
    """Serve the project's queue until SIGTERM/SIGINT (or ``should_stop()``; with ``once``:
    until nothing is queued or running here). Returns 0 after a clean stop; raises
    :class:`~studio.core.errors.StudioError` when the project cannot be opened at the start.
    Install no signal handlers when called off the main thread (``should_stop`` then).
    ``spare``: keep a warm process ready for the next job (default: unless ``once``; see
    :meth:`~studio.worker.host.WorkerHost._keep_spare`)."""
    # imported here: the CLI builds its parser (add_serve_arguments) without paying for these
    from sqlalchemy.exc import SQLAlchemyError

    from studio.store.dbfile import safe_location
    from studio.store.jobs import machine_name
    from studio.worker.host import WorkerHost

    if heartbeat <= 0 or dead_after <= 0:
        raise StudioError("--heartbeat and --dead-after must be positive numbers of seconds")
    if dead_after <= heartbeat:
        raise StudioError(
            f"--dead-after ({dead_after:g} s) must be longer than --heartbeat ({heartbeat:g} s), "
            "or live workers would be taken for dead"
        )
    if device.split(":")[0] not in _DEVICES:
        raise StudioError(f"--device {device}: give auto, cpu, cuda or cuda:N")
    stream = out if out is not None else sys.stderr
    name = machine or machine_name()

    def log(line: str) -> None:
        print(f"{_stamp()} {name}: {line}", file=stream, flush=True)

    stop: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.append(signum)

    host = WorkerHost(
        location,
        max_running=max_jobs,
        machine=name,
        heartbeat_every=heartbeat,
        dead_after=dead_after,
        requeue_lost=True,
        device=None if device == "auto" else device,
        spare=not once if spare is None else spare,
    )
    where = safe_location(location)
    previous: dict[int, object] = {}
    try:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, on_signal)
        lost = host.start()
        log(
            f"worker {host.worker} serves {where} (device {device}, up to {host.max_running} "
            f"job{'s' if host.max_running != 1 else ''} at once, heartbeat {heartbeat:g} s, "
            f"others dead after {dead_after:g} s{', keeps a warm spare' if host.spare else ''})"
        )
        if lost:
            log(f"jobs this machine lost before: {', '.join(map(str, lost))}; back in the queue")
        down_since: float | None = None
        while not stop and not (should_stop is not None and should_stop()):
            try:
                host.poll()
                idle = once and not host.running_jobs() and host.queue.next_queued() is None
                if down_since is not None:
                    log(f"the database is back after {time.monotonic() - down_since:.0f} s")
                    down_since = None
            except (StudioError, SQLAlchemyError) as e:
                if down_since is None:
                    down_since = time.monotonic()
                    log(f"cannot reach the database ({str(e).splitlines()[0]}); trying again")
                idle = False
                for line in host.take_events():
                    log(line)
                time.sleep(RETRY_EVERY)
                continue
            for line in host.take_events():
                log(line)
            if idle:
                log("nothing queued: done (--once)")
                break
            time.sleep(poll_every)
    except KeyboardInterrupt:
        stop.append(signal.SIGINT)
    finally:
        if stop:
            log(f"stopping ({signal.Signals(stop[0]).name}): running jobs go back to the queue")
        try:
            host.shutdown(requeue=True)
        finally:
            for line in host.take_events():
                log(line)
            for sig, handler in previous.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
    log("stopped")
    return 0


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``worker serve`` (the CLI and the bundle's worker entry share them)."""
    parser.add_argument(
        "--db",
        required=True,
        metavar="URL",
        help="the project: postgresql://[user@]host[:port]/dbname (or a project file)",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="what a job asking for 'auto' runs on: auto, cpu, cuda or cuda:N (default auto)",
    )
    parser.add_argument(
        "--max-jobs", type=int, default=1, metavar="N", help="jobs run at once (default 1)"
    )
    parser.add_argument(
        "--once", action="store_true", help="exit when nothing is queued or running here"
    )
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=HEARTBEAT_EVERY,
        metavar="S",
        help=f"seconds between heartbeats of the running jobs (default {HEARTBEAT_EVERY:g})",
    )
    parser.add_argument(
        "--dead-after",
        type=float,
        default=DEAD_AFTER,
        metavar="S",
        help="seconds without a heartbeat after which another worker's job is queued again "
        f"(default {DEAD_AFTER:g})",
    )
    parser.add_argument(
        "--spare",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep a warm process ready for the next job: torch imported and the GPU started "
        "before the job comes (default: on, off with --once)",
    )
    parser.add_argument(
        "--name",
        default=None,
        metavar="MACHINE",
        help="this worker's machine name in the job list (default: the host name)",
    )


def cmd_serve(args: argparse.Namespace) -> int:
    """Run ``worker serve`` with parsed :func:`add_serve_arguments` options."""
    return serve(
        args.db,
        device=args.device,
        max_jobs=args.max_jobs,
        once=args.once,
        heartbeat=args.heartbeat,
        dead_after=args.dead_after,
        machine=args.name,
        spare=args.spare,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m studio.worker.serve --db URL …`` (exit 2 with the message on a user
    error, as the CLI)."""
    parser = argparse.ArgumentParser(
        prog="analogy-studio worker serve", description="Serve a project's job queue."
    )
    add_serve_arguments(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return cmd_serve(args)
    except StudioError as e:
        print(f"analogy-studio: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
