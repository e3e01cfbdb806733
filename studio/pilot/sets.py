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

from studio.core.errors import StudioError
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
    was found on any error (the pilot is written beside it and moved in whole). ``lock``:
    held while the set's pictures are drawn (the board's render lock), as ``export_set``
    holds it."""
    rec = find_set(studio.project, set_spec)
    out = Path(out_dir).expanduser()
    check_target(out, lambda _name: False)  # before the work, and again before moving in
    parent = out.parent
    made = [d for d in (parent, *parent.parents) if not d.exists()]

    def step(done: int, total: int) -> None:
        if should_stop is not None and should_stop():
            raise Cancelled("the pilot was cancelled; nothing was written")
        if progress is not None:
            progress(done, total)

    # everything is written beside the target and moved in whole at the end, so nothing in
    # ``out`` is ever removed: a file someone puts there meanwhile stays, and the move refuses
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.pilot-", dir=parent))
    try:
        split = work / "set"
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
        summary = export_pilot(split, work / "pilot", options, step, source_label=label)
        try:
            if out.exists():
                out.rmdir()  # only an empty folder goes: anything put there meanwhile stays
            (work / "pilot").rename(out)
        except OSError as e:
            raise StudioError(
                f"is no longer new or empty ({e.strerror or e}): the pilot was not moved there",
                out,
            ) from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        for d in made:  # folders made for it, innermost first, where still empty
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        **summary,
        "out_dir": str(out),
        "set_id": rec.id,
        "set_name": rec.name,
        "left_out": len(exported.dropped),
    }


__all__ = ["pilot_set"]
