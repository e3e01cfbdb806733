"""`analogy-studio jobs`: a baseline job queued from the command line runs in a real worker
process (as the Baselines tab runs it), writes its report into the job's folder and is listed
with its device; `jobs run` runs what is queued; a failing job makes the command fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.cli import EXIT_USER_ERROR, main
from studio.store.jobs import JobQueue, job_work_dir
from studio.worker.device import cpu_threads

GEN = ["--n", "150", "--seed", "5", "--sampling", "balanced"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("jobs-cli")
    project = base / "ua.studio"
    assert main(["-q", "init", str(project)]) == 0
    assert main(["-q", "import-annotations", str(project), str(ua_csv), "--render"]) == 0
    split = base / "split"
    assert main(["-q", "generate", str(project), str(split), *GEN]) == 0
    return project, split


def test_a_baseline_job_runs_in_a_worker_process_and_writes_its_report(
    made: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    project, split = made
    code, out, err = run(
        capsys, "jobs", "baseline", str(project), str(split),
        "--models", "blind", "--seeds", "1", "--epochs", "1", "--device", "cpu",
    )  # fmt: skip
    assert code == 0, err
    # the progress shown is sampled (every 0.2 s at most), so a model that trains in less
    # may never be shown; the job's log has every model's result
    assert "queued job" in err and "running" in err
    with JobQueue(project) as queue:
        [job] = [j for j in queue.jobs() if j.kind == "baseline"][-1:]
        lines = [entry.line for entry in queue.logs(job.id)]
    assert any(line.startswith("blind/0: test accuracy") for line in lines), lines
    n = cpu_threads(leave_core_free=False)  # no window beside it: every core
    assert job.status == "done" and job.device == f"cpu ({n} thread{'s' if n != 1 else ''})"
    assert job.pid is not None and job.pid != __import__("os").getpid()  # another process ran it
    report_path = job_work_dir(project, job.id) / "report.json"
    assert f"job {job.id} done: {report_path}" in out
    report = json.loads(report_path.read_text())
    assert report["source"]["puzzles"] == 150 and "blind" in report["models"]
    assert (job_work_dir(project, job.id) / "worker.log").is_file()

    code, out, _ = run(capsys, "jobs", "list", str(project), "--json")
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out)}
    assert rows[job.id]["status"] == "done" and rows[job.id]["device"] == job.device


def test_queued_jobs_run_with_jobs_run_and_a_failure_fails_the_command(
    made: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, _ = made
    missing = tmp_path / "no-such-split"
    missing.mkdir()  # a folder, but not a split: the job itself must fail, in the worker
    code, out, _ = run(capsys, "-q", "jobs", "baseline", str(project), str(missing), "--no-wait")
    assert code == 0
    job_id = int(out.strip())
    with JobQueue(project) as queue:
        assert queue.job(job_id).status == "queued"
    code, out, _ = run(capsys, "-q", "jobs", "run", str(project))
    assert code == 1
    assert f"job {job_id} failed" in out
    with JobQueue(project) as queue:
        job = queue.job(job_id)
    assert job.status == "failed" and str(missing) in job.error


def test_jobs_refuses_a_split_folder_that_does_not_exist(
    made: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, _ = made
    code, _, err = run(capsys, "jobs", "baseline", str(project), str(tmp_path / "nope"))
    assert code == EXIT_USER_ERROR and "nope" in err and "not found" in err
