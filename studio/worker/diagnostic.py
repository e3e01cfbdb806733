"""The ``diagnostic`` job kind: a self-test of the worker that does no real work.

Parameters (all optional):

- ``action``: ``"sleep"`` (default) runs ``steps`` steps over ``seconds`` seconds in all, with
  progress, a cancel check and a checkpoint after each step, and resumes after the last step a
  previous attempt completed; ``"raise"`` raises ``RuntimeError("diagnostic failure")``;
  ``"exit"`` ends the process at once with ``os._exit(code)``; ``"kill"`` sends SIGKILL to its
  own process, as the out-of-memory killer would.
- ``seconds`` (float, default 1.0), ``steps`` (int, default 10), ``code`` (int, default 3).
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
from typing import Any

from studio.core.errors import StudioError
from studio.worker.context import JobContext

__all__ = ["run"]

_SLICE = 0.02  # seconds between cancel checks while a step sleeps


def run(ctx: JobContext) -> dict[str, Any]:
    params = ctx.params
    action = str(params.get("action", "sleep"))
    ctx.log(f"diagnostic: {action} (pid {os.getpid()})")
    if action == "raise":
        raise RuntimeError("diagnostic failure")
    if action == "exit":
        sys.stdout.flush()
        os._exit(int(params.get("code", 3)))
    if action == "kill":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(10)  # never reached: the signal cannot be caught
    if action != "sleep":
        raise StudioError(f"diagnostic: unknown action {action!r} (sleep, raise, exit, kill)")

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
