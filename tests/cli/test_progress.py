"""Progress of long commands on stderr: whole lines every few seconds when stderr is not a
terminal (a pipe here, as in CI or ``2> log``), each counting what it names."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from studio.cli import PROGRESS_INTERVAL_ENV, main
from studio.core.progress import ProgressReporter, time_left_text

LINE = re.compile(
    r"^(?P<task>[a-z]+): (?P<done>[\d,]+)/(?P<total>[\d,]+) (?P<unit>\w+)(?P<left>, .+ left)?$"
)


def run_cli(*args: str, interval: float = 0.0) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, stderr piped (not a terminal)."""
    env = {**os.environ, PROGRESS_INTERVAL_ENV: str(interval)}
    return subprocess.run(
        [sys.executable, "-m", "studio", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def progress_lines(stderr: str) -> list[re.Match[str]]:
    assert "\r" not in stderr  # no carriage returns piling up in a log
    return [m for line in stderr.splitlines() if (m := LINE.match(line))]


def number(text: str) -> int:
    return int(text.replace(",", ""))


def test_a_stimulus_split_counts_the_items_it_writes(tmp_path: Path) -> None:
    out = tmp_path / "split"
    result = run_cli("generate", "--family", "shape-count", str(out), "--n", "20", "--seed", "3")
    assert result.returncode == 0, result.stderr
    lines = progress_lines(result.stderr)
    assert len(lines) >= 2  # lines while it runs, not only at the end
    assert {m["task"] for m in lines} == {"generate"}
    assert {m["unit"] for m in lines} == {"items"}
    done = [number(m["done"]) for m in lines]
    assert done == sorted(done)
    assert {number(m["total"]) for m in lines} == {20}
    assert done[-1] == 20 and lines[-1]["left"] is None  # the last line: finished
    assert any(m["left"] for m in lines[:-1])  # the time left while it runs
    # it counts what it says it counts: the items in the split
    records = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines() if x]
    assert len(records) == 20


def test_quiet_prints_no_progress(tmp_path: Path) -> None:
    result = run_cli("-q", "generate", "--family", "shape-count", str(tmp_path / "s"), "--n", "5")
    assert result.returncode == 0, result.stderr
    assert progress_lines(result.stderr) == []


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> str:
    path = str(tmp_path_factory.mktemp("progress-project") / "ua.studio")
    assert main(["-q", "init", path]) == 0
    assert main(["-q", "import-annotations", path, str(ua_csv)]) == 0
    return path


def test_a_glyph_split_counts_puzzles_generated_then_written(project: str, tmp_path: Path) -> None:
    out = tmp_path / "split"
    result = run_cli("generate", project, str(out), "--n", "60", "--seed", "2")
    assert result.returncode == 0, result.stderr
    lines = progress_lines(result.stderr)
    stages = [m["task"] for m in lines]
    # the pending glyphs are rendered first (counted in glyphs), then the puzzles are made
    # and written (each counted in puzzles, out of the puzzles asked for: not twice as many)
    assert stages[0] == "render" and "generate" in stages and stages[-1] == "write"
    assert stages == sorted(stages, key=["render", "generate", "write"].index)
    for m in lines:
        assert m["unit"] == ("glyphs" if m["task"] == "render" else "puzzles")
        if m["task"] != "render":
            assert number(m["total"]) == 60
    finals = {m["task"]: number(m["done"]) for m in lines if m["done"] == m["total"]}
    assert finals["generate"] == finals["write"] == 60
    assert "wrote 60 puzzles" in result.stdout


# ---- the reporter itself, on a clock the test moves ----------------------------------------
class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_off_a_terminal_one_line_per_interval_then_the_last() -> None:
    clock, stream = Clock(), io.StringIO()
    report = ProgressReporter("generate", "puzzles", stream=stream, tty=False, interval=5,
                              clock=clock)  # fmt: skip
    for done in range(0, 10_001, 100):
        report.update(done, 10_000)
        clock.t += 0.4  # 100 puzzles every 0.4 s: 40 s in all
    lines = stream.getvalue().splitlines()
    # a line once 5 s have passed (at 5.2, 10.4, … 36.4 s), then the finished one at 40 s
    assert len(lines) == 7 + 1
    assert lines[0] == "generate: 1,300/10,000 puzzles, 35 s left"
    assert lines[-1] == "generate: 10,000/10,000 puzzles"


def test_on_a_terminal_the_line_is_rewritten_in_place() -> None:
    clock, stream = Clock(), io.StringIO()
    report = ProgressReporter("render", "glyphs", stream=stream, tty=True, clock=clock)
    for done in range(1, 4):
        clock.t += 1
        report.update(done, 3)
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 1 and text.endswith("\n")
    assert "render: 2/3 glyphs, 1 s left" in text


def test_a_share_with_a_message_and_the_time_left() -> None:
    clock, stream = Clock(), io.StringIO()
    report = ProgressReporter("baseline", stream=stream, tty=False, interval=5, clock=clock)
    clock.t += 6
    report.fraction(0.25, "blind · seed 2")  # the work begins: no rate yet
    clock.t += 10
    report.fraction(0.5, "context · seed 1")  # a unit done: a quarter in 10 s
    clock.t += 20
    report.fraction(1.0, "done")
    assert stream.getvalue().splitlines() == [
        "baseline: 25% · blind · seed 2",
        "baseline: 50%, 20 s left · context · seed 1",
        "baseline: 100% · done",
    ]


def test_no_time_left_is_told_before_one_unit_has_finished() -> None:
    """Issue 28: a baseline job that took 57 s first said "1 h 23 min left": its first share
    came after the start-up, tiny. Now the first model's seed must end (a new message) or a
    tenth be done before the rate is extrapolated."""
    clock, stream = Clock(), io.StringIO()
    report = ProgressReporter("baseline", stream=stream, tty=True, clock=clock)
    clock.t += 5  # reading the split, importing torch
    report.fraction(0.001, "blind · seed 1")
    clock.t += 1
    report.fraction(0.05, "blind · seed 1")
    first = stream.getvalue()
    assert "left" not in first and "5%" in first
    clock.t += 1
    report.fraction(0.08, "blind · seed 2")  # one unit finished: now there is a rate
    assert "left" in stream.getvalue()[len(first) :]
    # start-up reported as a share of 0 with its own message (run_baselines' "loading the
    # puzzles"): no unit of work, and its time is not in the rate (review of issue 28: "1 h
    # 24 min left" after 50 s of loading)
    report.stage("baselines")
    before = len(stream.getvalue())
    report.fraction(0.0, "loading the puzzles")
    clock.t += 50
    report.fraction(0.01, "blind · seed 0 · epoch 1/20")
    clock.t += 1
    report.fraction(0.02, "blind · seed 0 · epoch 2/20")
    text = stream.getvalue()[before:]
    assert "1 min 38 s left" in text and " h " not in text
    # a new stage starts a new estimate, with its own first unit
    report.stage("export")
    before = len(stream.getvalue())
    clock.t += 1
    report.fraction(0.01, "write")
    assert "left" not in stream.getvalue()[before:]


def test_time_left_reads_like_a_person_writes_it() -> None:
    assert time_left_text(0.2) == "under 1 s"
    assert time_left_text(12.4) == "12 s"
    assert time_left_text(185) == "3 min 05 s"
    assert time_left_text(3720) == "1 h 02 min"
