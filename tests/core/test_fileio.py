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


def test_a_killed_run_s_staging_is_swept_and_a_live_one_is_kept(tmp_path: Path) -> None:
    """Issue 25: kill -9 of ``export-set`` left its hidden staging folder behind for good.
    A run holds a lock beside its folder; the next run on the same target removes the
    folders whose lock nobody holds — here a real process holds one, then is killed."""
    import signal
    import subprocess
    import sys

    from studio.core.fileio import staging_area, sweep_stale_staging

    with staging_area(tmp_path, ".bench.", ".export") as live:
        (live / "card.md").write_text("half")
        holder = (tmp_path / ".bench.zz.export.lock", tmp_path / ".bench.zz.export")
        holder[0].touch()
        holder[1].mkdir()
        (holder[1] / "x").write_text("half")
        child = subprocess.Popen(
            [sys.executable, "-c",
             "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR);"
             " fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
             str(holder[0])],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "held"
            assert sweep_stale_staging(tmp_path, ".bench.", ".export") == []  # both alive
            assert live.is_dir() and holder[1].is_dir()
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            assert sweep_stale_staging(tmp_path, ".bench.", ".export") == [holder[1]]
            assert not holder[1].exists() and not holder[0].exists()
            assert live.is_dir()  # this run's own, still held
        finally:
            child.kill()
            child.wait(timeout=30)
            if child.stdout is not None:
                child.stdout.close()
    # the run ended: its lock is gone; its folder was the caller's to rename or remove
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]


def test_an_export_after_a_killed_one_leaves_no_staging_behind(tmp_path: Path) -> None:
    from studio.core.fileio import staging_area

    stale = tmp_path / ".bench.k1.export"
    stale.mkdir()
    (stale / "README.md").write_text("half a card")
    (tmp_path / ".bench.k1.export.lock").touch()  # its process is gone: nobody holds it
    with staging_area(tmp_path, ".bench.", ".export") as staging:
        staging.rename(tmp_path / "bench")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]


def test_json_text_reads_back_and_keeps_plain_lists_on_one_line() -> None:
    import json

    from studio.core.fileio import json_text

    report = {
        "models": {"blind": {"choices": list(range(50)), "recipe": "x" * 150}},
        "predictions": [
            {"id": f"p{k}", "models": {"blind": {"choices": [k % 4]}}} for k in range(3)
        ],
        "empty": {},
        "nothing": [],
        "text": "é ∑",
        "nested": [[1, [2]], {"a": None}],
    }
    text = json_text(report)
    assert json.loads(text) == report
    lines = text.splitlines()
    # a list of numbers on its line, each puzzle on its own line, a long member unfolded
    assert f'   "choices": {json.dumps(list(range(50)))},' in lines
    assert '  {"id": "p1", "models": {"blind": {"choices": [1]}}},' in lines
    assert ' "empty": {},' in lines and "é ∑" in text
    assert len(lines) == 17
    for value in ({}, [], "s", 1.5, None, [[]], {"k": (1, 2)}, {1: [{}]}):
        assert json.loads(json_text(value)) == json.loads(json.dumps(value))
    # keys as json writes them, on the unfolded path too
    odd = {True: "x" * 120, None: [1], 1.5: {}, float("nan"): 2}
    assert json.loads(json_text(odd)) == json.loads(json.dumps(odd))
    with pytest.raises(TypeError):
        json_text({(1, 2): "x" * 120})
