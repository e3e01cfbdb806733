"""The spatial families over worker processes (issue 15): the same bytes for 1, 2 and 3 workers,
the rejections of every worker counted, the items in index order."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from studio.families.cube_net.generator import CubeNetGenerator
from studio.families.polycube_rotation.generator import PolycubeRotationGenerator
from studio.families.shape_composition.generator import ShapeCompositionGenerator
from studio.stimuli.loop import pool_workers, pooled_items


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _digest(items: list[Any]) -> str:
    h = hashlib.sha256()
    for item in items:
        h.update(json.dumps(item.to_json(), sort_keys=True).encode())
        for name, image in sorted([*item.images.items(), ("sheet", item.sheet)]):
            h.update(name.encode() + _png(image))
    return h.hexdigest()


FAMILIES: dict[str, Callable[[], Any]] = {
    "polycube-rotation": lambda: PolycubeRotationGenerator(level=2, size=96),
    "shape-composition": lambda: ShapeCompositionGenerator(pieces=3, size=96),
    "cube-net": lambda: CubeNetGenerator(size=96),
}


def _recorder(seen: list[tuple[int, int]]) -> Callable[[int, int], None]:
    return lambda done, count: seen.append((done, count))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_one_two_and_three_workers_give_the_same_bytes(family: str) -> None:
    n, seed = 6, 4
    one = FAMILIES[family]()
    reference = list(one.items(n, seed, workers=1))
    assert [i.id for i in reference] == [f"{family}-{seed}-{k:05d}" for k in range(n)]
    for workers in (2, 3):
        gen = FAMILIES[family]()
        seen: list[tuple[int, int]] = []
        items = list(pooled_items(gen, n, seed, workers, _recorder(seen), chunk=2))
        assert _digest(items) == _digest(reference), f"{workers} workers"
        assert seen == [(k, n) for k in range(1, n + 1)]
        assert gen.rejections == one.rejections  # every worker's refusals are counted


def test_items_draw_over_workers_when_asked() -> None:
    gen = FAMILIES["cube-net"]()
    items = list(gen.items(20, 7, workers=2))
    assert _digest(items) == _digest(list(FAMILIES["cube-net"]().items(20, 7, workers=1)))


def test_items_by_index_are_those_of_the_whole_set() -> None:
    gen = FAMILIES["shape-composition"]()
    whole = list(gen.items(6, 2, workers=1))
    part = list(FAMILIES["shape-composition"]().items(6, 2, indices=[4, 1]))
    assert _digest(part) == _digest([whole[4], whole[1]])


def test_pool_workers() -> None:
    assert pool_workers(10) == 1  # too few items to start a pool
    assert pool_workers(10, 4, chunk=4) == 3  # never more workers than chunks
    assert pool_workers(10_000, 1) == 1
    assert pool_workers(10_000) == pool_workers(10_000, 0) >= 1
