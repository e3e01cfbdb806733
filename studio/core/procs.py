"""Processes that end with the one that started them.

A pool worker, the forkserver behind it and the resource tracker used to outlive a
``generate`` or ``export-set`` killed with SIGKILL (issue 25: 10 of 15 kills left them
running): a worker holds both ends of its task queue, so it never sees the end of its
input. :func:`die_with_parent` asks the kernel to kill a process when its parent dies;
every pool initializer calls :func:`pool_worker_start` first, so the workers end when the
process that started the pool is gone; the forkserver then exits (no child holds its "alive"
pipe any more), and the resource tracker finds its pipe closed and exits too.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing
import multiprocessing.context
import os
import signal
import sys
from collections.abc import Sequence

__all__ = ["die_with_parent", "pool_context", "pool_worker_start", "usable_cores"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int | None, sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux
    ``prctl(PR_SET_PDEATHSIG)``); True when armed. The parent may already have died before the
    call (the child was starting): the caller checks ``os.getppid() == parent_pid`` after it,
    and gives up when that fails. False (nothing armed) on other systems or without libc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        armed = libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    return armed and (parent_pid is None or os.getppid() == parent_pid)


def pool_worker_start() -> None:
    """The first thing a pool worker does: end with the process that started the pool.

    Two ways, for the two start methods. A spawned worker's parent is that process: the
    kernel's parent-death signal ends it. A forkserver's worker is the forkserver's child,
    and the forkserver lives as long as any of its children holds the "alive" pipe that
    every child is given — the workers do, so neither side would ever end. Its
    ``multiprocessing.parent_process()`` is the process that asked for it, whose sentinel
    becomes ready when that process is gone, however it died: a daemon thread waits on it
    and ends the worker (cooperatively: it needs the GIL, which a worker gets back within
    milliseconds)."""
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    die_with_parent(os.getppid())
    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    if sentinel is None:
        return

    def watch() -> None:
        with contextlib.suppress(OSError, ValueError):
            wait([sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="analogy-studio-parent-watch", daemon=True).start()


def usable_cores() -> int:
    """Cores this process may use: its CPU affinity (a container's or ``taskset``'s limit),
    every core where the system cannot say. The one count every pool and thread setting
    reads (issue 27: five copies of it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_context(preload: Sequence[str] = ()) -> multiprocessing.context.BaseContext:
    """The start method of every process pool: ``forkserver`` (``spawn`` where there is
    none). The studio runs Qt threads, which a plain fork would copy half-way, and an OpenGL
    context must not be inherited. ``preload``: modules the fork server imports once, so its
    workers start with them (only when this call starts the server; one already running —
    started by another pool — is reused as it is)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        if preload:
            ctx.set_forkserver_preload(list(preload))
        return ctx
    return multiprocessing.get_context("spawn")
