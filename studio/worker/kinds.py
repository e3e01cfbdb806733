"""Job kinds: a stable id -> the function that runs such a job, as ``"module:function"``.

The module is imported only when a job of that kind runs (in the worker child), so the GUI
and the host can list and submit kinds without importing torch or any job's dependencies.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from studio.core.errors import StudioError

__all__ = ["JOB_KINDS", "JOB_WARMERS", "JobFunction", "register_kind", "resolve_kind", "warm_kinds"]

JobFunction = Callable[[Any], dict[str, Any]]  # run(ctx: JobContext) -> JSON result

JOB_KINDS: dict[str, str] = {
    "baseline": "studio.baselines.job:run_job",
    "diagnostic": "studio.worker.diagnostic:run",
    # trains the glyph encoder of the suggestions (issue 30) on every rendered glyph
    "encoder": "studio.suggest.job:run_job",
}


#: What a warm spare (``worker run --spare``) starts before its job comes: per kind,
#: ``"module:function"`` called with the worker's device. Only kinds whose start is slow.
JOB_WARMERS: dict[str, str] = {
    "baseline": "studio.baselines.job:warm",
}


def warm_kinds(device: str) -> list[str]:
    """Run every kind's warmer (:data:`JOB_WARMERS`); the problems, one line each. A warmer
    that fails costs its job nothing but the time it would have saved: the job imports and
    starts what it needs itself, and says what is wrong then."""
    problems = []
    for kind, target in JOB_WARMERS.items():
        try:
            _function(kind, target)(device)
        except Exception as e:
            problems.append(f"{kind}: {type(e).__name__}: {e}")
    return problems


def register_kind(kind: str, target: str, *, replace: bool = False) -> None:
    """Add a job kind (``target`` is ``"module:function"``); refuses a duplicate id."""
    if kind in JOB_KINDS and not replace:
        raise StudioError(f"job kind {kind!r} is registered twice")
    if ":" not in target:
        raise StudioError(f"job kind {kind!r}: {target!r} is not 'module:function'")
    JOB_KINDS[kind] = target


def resolve_kind(kind: str) -> JobFunction:
    """Import and return the function of a job kind; StudioError when unknown or broken."""
    try:
        target = JOB_KINDS[kind]
    except KeyError:
        known = ", ".join(sorted(JOB_KINDS))
        raise StudioError(f"no job kind called {kind!r} (known: {known})") from None
    return _function(kind, target)


def _function(kind: str, target: str) -> Callable[..., Any]:
    """The function ``"module:function"`` names (imported now); StudioError when broken."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise StudioError(f"job kind {kind!r}: cannot import {module_name} ({e})") from e
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise StudioError(f"job kind {kind!r}: {target} is not a function")
    return fn
