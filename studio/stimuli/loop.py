"""The item loop that the spatial families share: draw a record, vet it, render it, yield it.

Every item has its own random stream, so item i is the same whatever ``count`` is and whatever
the items before it needed; a draw that fails or does not pass the vet is thrown away and drawn
again from the same stream, and the rejections are counted by reason. The order in which the
stream is consumed (draw, draw again, …) is the generator's own, so moving a family onto this
loop does not change one byte of its items.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
from PIL import Image

from studio.core.procs import pool_context, pool_worker_start, usable_cores
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
    indices: Iterable[int] | None = None,
) -> Iterator[StimulusItem]:
    """Yield ``count`` vetted items with ids ``{family}-{seed}-{i:05d}`` (only items
    ``indices`` of them, in that order, when given: a pool worker's share).

    Item i draws from ``SeedSequence([seed, *stream, i])``: ``draw(rng, i)`` returns a record,
    or None for a draw to throw away (it counts its own reason in ``rejections``); a record that
    ``vet`` refuses counts one ``vet:<check>`` per failed check and is drawn again, at most
    ``attempts`` times in all (then RuntimeError, with the rejections so far). The kept record
    is rendered to its images (``question``, ``candidate-0`` …), which ``sheet`` lays out as
    one picture; ``progress(i + 1, count)`` follows each item."""
    for done, i in enumerate(range(count) if indices is None else indices):
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
        images, picture = drawn_item(record, render, sheet)
        yield StimulusItem(
            id=f"{family}-{seed}-{i:05d}",
            family=family,
            record=record,
            images=images,
            sheet=picture,
            verdict=verdict,
        )
        if progress is not None:
            progress(done + 1, count)


def drawn_item(
    record: Record,
    render: Callable[[Record], Mapping[str, Image.Image]],
    sheet: Callable[[Image.Image, Sequence[Image.Image]], Image.Image],
) -> tuple[dict[str, Image.Image], Image.Image]:
    """An item's images (``render(record)``: ``question``, ``candidate-0`` …) and the sheet
    ``sheet`` lays them out on: what :func:`vetted_items` draws for a kept record, and what a
    family's ``render_record`` re-draws from a stored one, so both are the same pictures."""
    images = dict(render(record))
    candidates = sum(1 for name in images if name.startswith("candidate-"))
    return images, sheet(images["question"], [images[f"candidate-{k}"] for k in range(candidates)])


# ---------------------------------------------------------------------------------- every core

#: Items per task sent to a pool worker by :func:`pooled_items`.
POOL_CHUNK = 16
#: Items from which the spatial families draw over a process pool by default: below, starting
#: the workers (Python and the family's imports each, about a second) costs more than it saves.
POOL_MIN_ITEMS = 64


def pool_workers(
    count: int,
    workers: int | None = None,
    *,
    min_items: int = POOL_MIN_ITEMS,
    chunk: int = POOL_CHUNK,
) -> int:
    """Processes that draw ``count`` items: ``workers`` when given; None or 0 means every core
    this process may use, and 1 below ``min_items`` items or inside a daemonic process (which
    may not start its own); never more than there are chunks of ``chunk`` items."""
    import multiprocessing

    if workers is None or workers == 0:
        if count < min_items or multiprocessing.current_process().daemon:
            return 1
        workers = usable_cores()
    return max(1, min(int(workers), -(-count // chunk)))


class ShardableGenerator(Protocol):
    """A generator whose items can be drawn by index in another process (picklable, with
    ``rejections`` counted per process)."""

    rejections: Counter[str]

    def items(
        self,
        count: int,
        seed: int,
        progress: Callable[[int, int], None] | None = None,
        *,
        workers: int | None = None,
        indices: Iterable[int] | None = None,
    ) -> Iterator[StimulusItem]: ...


R = TypeVar("R")

#: A pool worker's generator (set by the pool's initializer).
_WORKER: dict[str, Any] = {}


def _init_worker(generator: ShardableGenerator) -> None:
    _WORKER["generator"] = generator


def _worker_items(count: int, seed: int, indices: range) -> tuple[list[StimulusItem], Counter[str]]:
    """Items ``indices`` drawn in a pool worker, and the draws it refused for them."""
    generator: ShardableGenerator = _WORKER["generator"]
    generator.rejections = Counter()
    items = list(generator.items(count, seed, workers=1, indices=indices))
    return items, generator.rejections


def _start_worker(initializer: Callable[..., None], *initargs: Any) -> None:
    """A pool worker's start: die with the pool's parent, then the caller's initializer."""
    pool_worker_start()
    initializer(*initargs)


def ordered_chunks(
    count: int,
    chunk: int,
    workers: int,
    task: Callable[..., R],
    args: tuple[Any, ...],
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
    what: str,
) -> Iterator[R]:
    """``task(*args, range)`` for consecutive ranges of ``chunk`` indices below ``count``, run
    over ``workers`` processes (started with ``initializer(*initargs)``), yielded in index
    order with at most four chunks per worker in flight (memory stays flat). A worker that
    dies raises StudioError naming ``what`` it was drawing."""
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from studio.core.errors import StudioError

    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=pool_context(),
        initializer=_start_worker,
        initargs=(initializer, *initargs),
    )
    chunks = iter([range(a, min(a + chunk, count)) for a in range(0, count, chunk)])
    pending: list[Future[R]] = []
    try:
        for part in chunks:
            pending.append(pool.submit(task, *args, part))
            if len(pending) >= 4 * workers:
                break
        while pending:
            result = pending.pop(0).result()
            following = next(chunks, None)
            if following is not None:
                pending.append(pool.submit(task, *args, following))
            yield result
    except BrokenProcessPool as e:
        raise StudioError(
            f"a process drawing {what} stopped abruptly ({e}); try again with fewer workers"
        ) from e
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def pooled_items(
    generator: ShardableGenerator,
    count: int,
    seed: int,
    workers: int,
    progress: Callable[[int, int], None] | None = None,
    chunk: int = POOL_CHUNK,
) -> Iterator[StimulusItem]:
    """``generator.items(count, seed)`` drawn over ``workers`` processes
    (:func:`ordered_chunks`); the workers' rejections are added to ``generator.rejections``.
    Item i depends only on (seed, i), so the items are those drawn in one process, byte for
    byte."""
    done = 0
    results = ordered_chunks(
        count, chunk, workers, _worker_items, (count, seed), _init_worker, (generator,), "items"
    )
    for items, rejected in results:
        generator.rejections.update(rejected)
        for item in items:
            yield item
            done += 1
            if progress is not None:
                progress(done, count)
