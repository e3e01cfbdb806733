"""A curated set's puzzles as a pilot study (issue 29: Puzzles ▸ Pilot study…, and
``pilot export PROJECT OUT --set N``).

A lab pilots *drafts*, before approving them, so the set is read at the status asked (every
puzzle by default), re-vetted exactly as ``export-set`` does it (puzzles that no longer pass
are left out and counted), written to a temporary split folder and piloted from there. The
pilot's puzzle ids are the set's, so ``pilot import --set N`` (and Puzzles ▸ Import pilot
results…) bring people's answers back onto those puzzles. The front ends call this one
function.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.core.splitdir import check_target
from studio.pilot.export import PilotOptions, Progress, export_pilot
from studio.publish.export import STATUS_ANY, export_set, find_set
from studio.splits import Cancelled

if TYPE_CHECKING:
    from studio.app import Studio


def pilot_set(
    studio: Studio,
    set_spec: str | int,
    out_dir: str | Path,
    options: PilotOptions,
    *,
    status: str = STATUS_ANY,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    lock: contextlib.AbstractContextManager[Any] | None = None,
) -> dict[str, Any]:
    """Write the pilot of a curated set's puzzles of one status (module docstring); returns
    :func:`export_pilot`'s summary with ``set_id``, ``set_name`` and ``left_out`` (puzzles
    that no longer pass vetting). StudioError for a set, status or folder that will not do,
    :class:`studio.splits.Cancelled` when ``should_stop()`` says so; ``out_dir`` is left as it
    was found (new or empty) on any error. ``lock``: held while the set's pictures are drawn
    (the board's render lock), as ``export_set`` holds it."""
    rec = find_set(studio.project, set_spec)
    out = Path(out_dir).expanduser()
    check_target(out, lambda _name: False)  # before the work, as export_pilot checks again
    existed = out.exists()

    def step(done: int, total: int) -> None:
        if should_stop is not None and should_stop():
            raise Cancelled("the pilot was cancelled; nothing was written")
        if progress is not None:
            progress(done, total)

    try:
        with tempfile.TemporaryDirectory(prefix="analogy-studio-pilot-") as tmp:
            split = Path(tmp) / "set"
            exported = export_set(
                studio,
                rec.id,
                split,
                status=status,
                drop_invalid=True,
                should_stop=should_stop,
                lock=lock,
            )
            label = f"{studio.project.path} · set {rec.id} “{rec.name}” ({status} puzzles)"
            summary = export_pilot(split, out, options, step, source_label=label)
    except BaseException:
        if out.is_dir():  # it was new or empty: nothing of the user's is in it
            for child in out.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
            if not existed:
                out.rmdir()
        raise
    return {
        **summary,
        "set_id": rec.id,
        "set_name": rec.name,
        "left_out": len(exported.dropped),
    }


__all__ = ["pilot_set"]
