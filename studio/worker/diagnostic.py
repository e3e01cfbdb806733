"""The ``diagnostic`` job kind: a self-test of the worker that does no real work.

Parameters (all optional):

- ``action``: ``"sleep"`` (default) runs ``steps`` steps over ``seconds`` seconds in all, with
  progress, a cancel check and a checkpoint after each step, and resumes after the last step a
  previous attempt completed; ``"raise"`` raises ``RuntimeError("diagnostic failure")``;
  ``"exit"`` ends the process at once with ``os._exit(code)``; ``"kill"`` sends SIGKILL to its
  own process, as the out-of-memory killer would; ``"hang"`` reports progress once, then
  blocks in native code holding the GIL (``pause()`` through ``ctypes.PyDLL``: no Python
  thread runs, no Python signal handler, only a kernel signal ends it); ``"spin"`` reports
  progress once, then busy-loops without progress (checking the cancel flag); ``"allocate"``
  touches ``chunk_mb`` more megabytes (numpy) every ``interval`` seconds until ``max_mb``
  (default: forever), with progress, as a leaking job would; with ``headroom_mb`` it first
  limits its own address space (``RLIMIT_AS``, as ``ulimit -v`` does) to what it uses plus that
  many megabytes, so it runs out (``MemoryError``).
- ``seconds`` (float, default 1.0), ``steps`` (int, default 10), ``code`` (int, default 3),
  ``chunk_mb`` (default 16), ``interval`` (default 0.05), ``max_mb``, ``headroom_mb``.
- ``helper_seconds``: first start a helper process (a Python that sleeps that long) in the
  job's process group, and log its pid, to check that nothing the job started outlives it.
- ``check_cancel`` (bool, default true): false makes a job that never looks at the cancel flag,
  to exercise the host's SIGKILL after an unanswered SIGTERM.
- ``puzzle_flags``: returned as is in the result, to exercise the flag store end to end.

The result reports ``started_at_step`` (0 on a fresh start, k > 0 on a resumed one).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any, NoReturn

from studio.core.errors import StudioError
from studio.worker.context import JobContext

__all__ = ["run"]

_SLICE = 0.02  # seconds between cancel checks while a step sleeps


def run(ctx: JobContext) -> dict[str, Any]:
    params = ctx.params
    action = str(params.get("action", "sleep"))
    ctx.log(f"diagnostic: {action} (pid {os.getpid()})")
    if params.get("helper_seconds") is not None:
        import subprocess

        seconds = float(params["helper_seconds"])
        helper = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
        ctx.log(f"diagnostic: helper process {helper.pid}")
    if action == "raise":
        raise RuntimeError("diagnostic failure")
    if action == "exit":
        sys.stdout.flush()
        os._exit(int(params.get("code", 3)))
    if action == "kill":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(10)  # never reached: the signal cannot be caught
    if action == "hang":
        ctx.progress(0.01, "hanging in native code")
        _hang_in_native_code(ctx)
    if action == "spin":
        ctx.progress(0.01, "spinning")
        while True:
            ctx.check_cancel()
            sum(range(10_000))
    if action == "allocate":
        return _allocate(ctx, params)
    if action != "sleep":
        raise StudioError(
            f"diagnostic: unknown action {action!r}"
            " (sleep, raise, exit, kill, hang, spin, allocate)"
        )

    steps = max(1, int(params.get("steps", 10)))
    per_step = max(0.0, float(params.get("seconds", 1.0))) / steps
    polite = bool(params.get("check_cancel", True))
    start = int(ctx.checkpoint().get("step", 0))
    if start:
        ctx.log(f"resuming after step {start} of {steps}")
    for step in range(start, steps):
        end = time.monotonic() + per_step
        while polite and (left := end - time.monotonic()) > 0:
            ctx.check_cancel()
            time.sleep(min(_SLICE, left))
        while not polite and (left := end - time.monotonic()) > 0:
            time.sleep(left)  # a signal wakes it; it sleeps on
        if polite:
            ctx.check_cancel()
        ctx.save_checkpoint({"step": step + 1})
        ctx.progress((step + 1) / steps, f"step {step + 1}/{steps}")
    result: dict[str, Any] = {
        "action": "sleep",
        "steps": steps,
        "started_at_step": start,
        "completed": steps - start,
        "pid": os.getpid(),
    }
    if "puzzle_flags" in params:
        result["puzzle_flags"] = params["puzzle_flags"]
    return result


def _hang_in_native_code(ctx: JobContext) -> NoReturn:
    import ctypes
    import ctypes.util

    time.sleep(0.5)  # let the watcher thread write the progress before the GIL is taken
    libc = ctypes.PyDLL(ctypes.util.find_library("c") or "libc.so.6")  # PyDLL keeps the GIL
    while True:
        libc.pause()


def _allocate(ctx: JobContext, params: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    if params.get("headroom_mb") is not None:
        import resource

        import psutil

        used = psutil.Process().memory_info().vms
        limit = used + int(float(params["headroom_mb"]) * 1024 * 1024)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    chunk = max(1, int(params.get("chunk_mb", 16)))
    interval = max(0.0, float(params.get("interval", 0.05)))
    most = params.get("max_mb")
    held: list[Any] = []
    while most is None or len(held) * chunk < int(most):
        ctx.check_cancel()
        held.append(np.ones(chunk * 1024 * 1024, dtype=np.uint8))  # touched: resident
        total = len(held) * chunk
        ctx.progress(0.0 if most is None else total / int(most), f"holding {total} MB")
        time.sleep(interval)
    return {"action": "allocate", "held_mb": len(held) * chunk, "pid": os.getpid()}
