"""A baseline job handed to a worker's warm spare runs as it does in a fresh child: the
spare started torch and the baselines' modules before the job came, and the job's report is
the job's own."""

from __future__ import annotations

from pathlib import Path

from studio.worker.host import WorkerHost
from tests.worker.conftest import create_project, poll_until


def test_a_baseline_job_runs_in_the_warm_spare(glyph_split: Path, tmp_path: Path) -> None:
    project = tmp_path / "jobs.studio"
    create_project(project)
    host = WorkerHost(project, spare=True, device="cpu")
    host.start()
    try:
        host.poll()
        spare = host.spare_pid
        assert spare is not None
        params = {
            "source": {"kind": "split-dir", "path": str(glyph_split)},
            "models": ["blind", "pixel-similarity"],
            "seeds": 1,
            "epochs": 1,
            "beside_window": False,
        }
        job_id = host.queue.submit("baseline", params)
        job = poll_until(host, host.queue, job_id, lambda j: j.final, deadline=180)
        assert job.status == "done", job.error
        assert job.pid == spare
        assert job.device is not None and job.device.startswith("cpu")
        report = job.result
        assert set(report["models"]) == {"blind", "pixel-similarity"}
        assert report["models"]["blind"]["trained"] and report["models"]["blind"]["per_seed"]
        assert (host.queue.work_dir(job_id) / "report.json").is_file()
    finally:
        host.shutdown()
