"""What a baseline job starts first: the split's reading on a thread of its own, so the pool
reads while the caller imports the runner (studio.baselines.start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.baselines.data import load_source
from studio.baselines.start import load_beside
from studio.core.errors import StudioError
from tests.baselines.conftest import SPLIT_N


def test_load_beside_gives_what_load_source_gives(glyph_split: Path) -> None:
    future = load_beside(glyph_split)
    data = future.result(timeout=120)
    assert data.fingerprint() == load_source(glyph_split).fingerprint()
    assert data.n == len((glyph_split / "puzzles.jsonl").read_text().splitlines())


def test_load_beside_hands_the_loaders_error_to_the_caller(tmp_path: Path) -> None:
    with pytest.raises(StudioError, match="not found") as caught:
        load_beside(tmp_path / "nowhere").result(timeout=60)
    assert str(tmp_path / "nowhere") in str(caught.value)


def test_a_stopped_load_ends_at_its_next_chunk(
    glyph_split: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl+C while the split loads beside the imports: the reading stops at the next chunk
    rather than reading the whole split first."""
    import studio.baselines.data as data_mod
    from studio.baselines.start import LoadStopped

    monkeypatch.setattr(data_mod, "READ_CHUNK", 10)  # 80 chunks: stopped long before the end
    loading = load_beside(glyph_split)
    loading.stop()
    with pytest.raises(LoadStopped):
        loading.result(timeout=60)
    assert loading.read[0] < SPLIT_N  # stopped before the last chunk was read
