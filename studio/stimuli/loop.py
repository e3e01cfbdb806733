"""The item loop that the spatial families share: draw a record, vet it, render it, yield it.

Every item has its own random stream, so item i is the same whatever ``count`` is and whatever
the items before it needed; a draw that fails or does not pass the vet is thrown away and drawn
again from the same stream, and the rejections are counted by reason. The order in which the
stream is consumed (draw, draw again, …) is the generator's own, so moving a family onto this
loop does not change one byte of its items.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
from PIL import Image

from studio.core.verdict import Verdict
from studio.stimuli.items import StimulusItem

Record = dict[str, Any]


class ItemGenerator:
    """What the spatial generators share besides the loop: the answer-set design they draw
    (checked once here, so every family refuses an unknown design with the same message) and
    ``rejections``, the refused draws counted by reason, which :func:`vetted_items` adds to."""

    def __init__(self, design: str, designs: Sequence[str]) -> None:
        if design not in designs:
            raise ValueError(f"design must be one of {', '.join(designs)}, not {design!r}")
        self.design = design
        self.rejections: Counter[str] = Counter()

    def _reject(self, reason: str) -> None:
        self.rejections[reason] += 1


def vetted_items(
    family: str,
    count: int,
    seed: int,
    stream: Sequence[int],
    *,
    draw: Callable[[np.random.Generator, int], Record | None],
    vet: Callable[[Record], Verdict],
    render: Callable[[Record], Mapping[str, Image.Image]],
    sheet: Callable[[Image.Image, Sequence[Image.Image]], Image.Image],
    rejections: MutableMapping[str, int],
    progress: Callable[[int, int], None] | None = None,
    attempts: int = 1000,
) -> Iterator[StimulusItem]:
    """Yield ``count`` vetted items with ids ``{family}-{seed}-{i:05d}``.

    Item i draws from ``SeedSequence([seed, *stream, i])``: ``draw(rng, i)`` returns a record,
    or None for a draw to throw away (it counts its own reason in ``rejections``); a record that
    ``vet`` refuses counts one ``vet:<check>`` per failed check and is drawn again, at most
    ``attempts`` times in all (then RuntimeError, with the rejections so far). The kept record
    is rendered to its images (``question``, ``candidate-0`` …), which ``sheet`` lays out as
    one picture; ``progress(i + 1, count)`` follows each item."""
    for i in range(count):
        rng = np.random.default_rng(np.random.SeedSequence([seed, *stream, i]))
        for _attempt in range(attempts):
            record = draw(rng, i)
            if record is None:
                continue
            verdict = vet(record)
            if verdict.valid:
                break
            for check in verdict.errors:
                reason = f"vet:{check.check}"
                rejections[reason] = rejections.get(reason, 0) + 1
        else:  # pragma: no cover - the families narrow their draws so that this is not reached
            raise RuntimeError(
                f"no valid {family} item after {attempts} attempts: {dict(rejections)}"
            )
        images = render(record)
        candidates = sum(1 for name in images if name.startswith("candidate-"))
        yield StimulusItem(
            id=f"{family}-{seed}-{i:05d}",
            family=family,
            record=record,
            images=images,
            sheet=sheet(images["question"], [images[f"candidate-{k}"] for k in range(candidates)]),
            verdict=verdict,
        )
        if progress is not None:
            progress(i + 1, count)
