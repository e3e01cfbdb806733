"""Files as a colleague expects them (issue 25): what the studio writes follows the umask
like any program's output — ``mkstemp`` and ``mkdtemp`` would make it 0600 and 0700."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from studio.core.fileio import atomic_write_text, current_umask, staging_dir


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_umask_is_read_without_changing_it(umask_022: None) -> None:
    assert current_umask() == 0o022
    os.umask(0o027)
    assert current_umask() == 0o027
    assert current_umask() == 0o027  # still set: reading it did not reset it


def test_a_new_file_follows_the_umask_and_a_replaced_one_keeps_its_mode(
    umask_022: None, tmp_path: Path
) -> None:
    card = tmp_path / "out" / "README.md"
    atomic_write_text(card, "# a card\n")
    assert mode(card) == 0o644
    private = tmp_path / "private.json"
    private.write_text("{}")
    private.chmod(0o600)
    atomic_write_text(private, '{"a": 1}')
    assert mode(private) == 0o600 and private.read_text() == '{"a": 1}'
    os.umask(0o077)
    atomic_write_text(tmp_path / "mine.txt", "x")
    assert mode(tmp_path / "mine.txt") == 0o600


def test_a_staging_folder_gets_the_mode_mkdir_would_give(umask_022: None, tmp_path: Path) -> None:
    staging = staging_dir(tmp_path, ".out.", ".export")
    assert staging.parent == tmp_path and staging.name.startswith(".out.")
    assert mode(staging) == 0o755
