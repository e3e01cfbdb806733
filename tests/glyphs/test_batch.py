"""Batch rendering: same images as single renders, cache use, cancellation, threads, errors."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from studio.core.errors import FontError
from studio.glyphs import render
from studio.glyphs.fonts import read_font
from studio.glyphs.render import (
    EMPTY_OUTLINE,
    NOT_IN_CMAP,
    BatchEvent,
    GlyphRenderer,
    RenderCache,
    RenderJob,
    RenderResult,
    render_batch,
)


@pytest.fixture(scope="module")
def symbola_jobs(symbola: Path) -> list[RenderJob]:
    """120 code points of Symbola, with a space (empty outline) and an unassigned one."""
    info, cps = read_font(symbola)
    chosen = [*sorted(cp for cp in cps if cp >= 0x2190)[:118], 0x20, 0x0378]
    return [RenderJob(symbola, 0, info.sha256, cp) for cp in chosen]


@pytest.fixture(scope="module")
def expected(symbola: Path, symbola_jobs: list[RenderJob]) -> dict[int, np.ndarray | str]:
    with GlyphRenderer(symbola) as r:
        out: dict[int, np.ndarray | str] = {}
        for job in symbola_jobs:
            image, reason = r.render_or_reason(job.codepoint)
            out[job.codepoint] = image if image is not None else reason
        return out


def _collect(events: list[BatchEvent]) -> dict[int, RenderResult]:
    return {r.job.codepoint: r for e in events for r in e.results}


def _check(results: dict[int, RenderResult], expected: dict[int, np.ndarray | str]) -> None:
    assert results.keys() == expected.keys()
    for cp, want in expected.items():
        got = results[cp]
        if isinstance(want, str):
            assert got.image is None and got.missing == want, hex(cp)
        else:
            assert got.missing is None and got.image is not None
            assert got.image.dtype == np.uint8 and np.array_equal(got.image, want), hex(cp)


def test_in_process_batch_equals_single_renders(
    symbola_jobs: list[RenderJob], expected: dict[int, np.ndarray | str]
) -> None:
    events = list(render_batch(symbola_jobs, workers=1, chunk_size=50))
    assert [e.done for e in events] == [50, 100, 120]
    assert all(e.total == 120 for e in events)
    results = _collect(events)
    _check(results, expected)
    assert results[0x20].missing == EMPTY_OUTLINE and results[0x0378].missing == NOT_IN_CMAP


def test_pool_batch_equals_single_renders(
    symbola_jobs: list[RenderJob], expected: dict[int, np.ndarray | str]
) -> None:
    events = list(render_batch(symbola_jobs, workers=2, chunk_size=16))
    assert len(events) == 8 and events[-1].done == 120
    assert sorted(e.done for e in events) == [e.done for e in events]
    _check(_collect(events), expected)
    assert multiprocessing.active_children() == []


def test_cached_glyphs_are_not_rendered_again(
    symbola_jobs: list[RenderJob],
    expected: dict[int, np.ndarray | str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = RenderCache(tmp_path / "renders")
    first = _collect(list(render_batch(symbola_jobs, cache=cache, workers=1)))
    assert not any(r.from_cache for r in first.values())
    assert cache.get_missing(symbola_jobs[0].sha256, 0x20, 80) == EMPTY_OUTLINE

    def no_rendering(*args: object) -> None:
        raise AssertionError("a cached glyph was rendered")

    monkeypatch.setattr(render, "_render_cps", no_rendering)
    second = _collect(list(render_batch(symbola_jobs, cache=cache, workers=2)))
    assert all(r.from_cache for r in second.values())
    _check(second, expected)


def test_corrupt_cache_entry_is_rendered_and_overwritten(
    symbola_jobs: list[RenderJob], expected: dict[int, np.ndarray | str], tmp_path: Path
) -> None:
    cache = RenderCache(tmp_path / "renders")
    job = symbola_jobs[5]
    path = cache.image_path(job.sha256, job.codepoint, 80)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n broken")
    (result,) = next(render_batch([job], cache=cache)).results
    assert not result.from_cache and np.array_equal(result.image, expected[job.codepoint])
    assert np.array_equal(cache.get(job.sha256, job.codepoint, 80), expected[job.codepoint])


def test_closing_early_cancels_the_rest(symbola: Path, tmp_path: Path) -> None:
    info, cps = read_font(symbola)
    jobs = [RenderJob(symbola, 0, info.sha256, cp) for cp in sorted(cps)[:3000]]
    cache = RenderCache(tmp_path / "renders")
    gen = render_batch(jobs, cache=cache, workers=2, chunk_size=16)
    first = next(gen)
    assert 0 < first.done < first.total == 3000
    started = time.perf_counter()
    gen.close()
    assert time.perf_counter() - started < 5
    assert multiprocessing.active_children() == []
    written = sum(1 for _ in (tmp_path / "renders").rglob("*.png"))
    assert written < 1000  # most chunks never ran


def test_batch_runs_from_a_worker_thread(
    symbola_jobs: list[RenderJob], expected: dict[int, np.ndarray | str]
) -> None:
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["events"] = list(render_batch(symbola_jobs, workers=2, chunk_size=32))
        except BaseException as e:  # reported below, on the test's thread
            box["error"] = e

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert "error" not in box, box.get("error")
    _check(_collect(box["events"]), expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("workers", [1, 2])
def test_unreadable_font_raises_font_error(tmp_path: Path, workers: int) -> None:
    bad = tmp_path / "bad.ttf"
    bad.write_text("not a font")
    jobs = [RenderJob(bad, 0, "0" * 64, cp) for cp in range(0x41, 0x41 + 40)]
    with pytest.raises(FontError) as e:
        list(render_batch(jobs, workers=workers, chunk_size=20))
    assert e.value.path == str(bad)


def test_empty_batch_yields_nothing() -> None:
    assert list(render_batch([])) == []


def test_the_pool_takes_the_cores_this_process_may_use(
    symbola: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``workers`` left out: as many as the cores the process may use (its CPU affinity, a
    container's limit), not the machine's count — one core, no pool at all."""

    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pool was started on one usable core")

    monkeypatch.setattr(render, "usable_cores", lambda: 1)
    monkeypatch.setattr(render, "ProcessPoolExecutor", no_pool)
    sha = read_font(symbola)[0].sha256
    jobs = [RenderJob(symbola, 0, sha, cp) for cp in range(0x2600, 0x2600 + 300)]
    events = list(render_batch(jobs, chunk_size=64))
    assert sum(len(e.results) for e in events) == 300
