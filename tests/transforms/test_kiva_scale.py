"""KiVA at scale (issue 15): pictures kept across trials, trials drawn over worker processes.

Byte identity across worker counts is not tested: pyrender draws a scene's meshes in set order,
so where parts meet at equal depth a pixel can depend on the process's history."""

from __future__ import annotations

import io

from PIL import Image

from studio.families.kiva.generator import KivaGenerator, default_workers
from studio.families.kiva.transforms import PictureCache, StateRenderer, StimulusState
from studio.render3d.objects import library_object
from studio.render3d.scene import Camera, Renderer


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def test_trials_drawn_over_two_workers_come_back_whole_and_in_order() -> None:
    gen = KivaGenerator(mode="kiva-adults", design="published", size=64)
    seen: list[tuple[int, int]] = []
    items = list(gen.items(9, 5, lambda i, n: seen.append((i, n)), workers=2, keep_pictures=True))
    assert [i.id for i in items] == [f"kiva-5-{k:05d}" for k in range(9)]
    assert all(i.verdict.valid and set(i.images) >= {"train-before", "option-2"} for i in items)
    assert seen == [(k, 9) for k in range(1, 10)]
    symbolic = list(KivaGenerator(mode="kiva-adults", design="published", size=64).records(9, 5))
    assert [i.record["domain"] for i in items] == [r["domain"] for r in symbolic]


def test_default_workers() -> None:
    assert default_workers(1000) == 1  # in-process unless asked (pyrender's draw order)
    assert default_workers(5, 0) == 1  # too few trials to start a pool
    assert default_workers(5, 8) == 2  # never more workers than chunks
    assert default_workers(100, 1) == 1
    assert default_workers(1000, 0) >= 1


def _picture(size: int, value: int) -> Image.Image:
    return Image.new("RGB", (size, size), (value, value, value))


def test_picture_cache_drops_the_least_recently_used_first() -> None:
    cache = PictureCache(max_bytes=3 * 8 * 8 * 3)
    src = object()
    keys = [cache.key(src, i) for i in range(4)]
    for i, key in enumerate(keys[:3]):
        cache.put(key, _picture(8, i))
    assert cache.get(keys[0]) is not None  # 0 is now the most recent
    cache.put(keys[3], _picture(8, 3))
    assert len(cache) == 3 and cache.bytes == 3 * 8 * 8 * 3
    assert cache.get(keys[1]) is None  # the least recently used went
    assert cache.get(keys[0]) is not None and cache.get(keys[3]) is not None
    assert (cache.hits, cache.misses) == (3, 1)
    assert cache.key(object(), 0) != keys[0]  # objects are told apart by identity


def test_a_kept_picture_is_the_one_a_new_render_makes() -> None:
    mug = library_object("mug")
    state = StimulusState(rotation=90.0, color="blue")
    cache = PictureCache()
    with Renderer(64) as renderer:
        first = StateRenderer(mug, renderer, Camera(), 64, shared=cache).image(state, 0.9)
        kept = StateRenderer(mug, renderer, Camera(), 64, shared=cache).image(state, 0.9)
        anew = StateRenderer(mug, renderer, Camera(), 64).image(state, 0.9)
        other_fit = StateRenderer(mug, renderer, Camera(), 64, shared=cache).image(state, 0.8)
    assert kept is first and cache.hits == 1
    assert _png(kept) == _png(anew)
    assert _png(other_fit) != _png(kept)  # the exact fit is part of the key
