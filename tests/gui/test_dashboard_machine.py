"""The Baselines tab shows which machine ran which job (issue 17): a job a worker on another
machine claimed names that machine; one this studio ran says "this computer". Real project,
real worker process for the local job, the remote one claimed as a `worker serve` would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from studio.app import Studio
from studio.core.schema import Schema
from studio.gui.dashboard import BaselineDashboard
from studio.gui.job_list import COL_MACHINE, JOB_COLUMNS
from studio.store.jobs import JobQueue
from studio.store.project import Project
from studio.worker.jobtext import THIS_COMPUTER

pytestmark = pytest.mark.gui

WAIT = 30_000  # ms


@pytest.fixture
def dashboard(qtbot, tmp_path: Path, ua_schema: Schema) -> Iterator[tuple[BaselineDashboard, Path]]:
    path = tmp_path / "jobs.studio"
    Project.create(path, ua_schema, author="setup").close()
    with JobQueue(path) as queue:
        remote = queue.submit("diagnostic", {"seconds": 60}, "on the GPU server")
        assert queue.claim(remote, 4242, worker="gpu-box-1 · pid 4100")
        queue.submit("diagnostic", {"seconds": 0.1, "steps": 1}, "here")
    studio = Studio(Project.open(path), author="ann")
    dash = BaselineDashboard(studio, poll_interval=50)
    qtbot.addWidget(dash)
    dash.show()
    qtbot.waitExposed(dash)
    yield dash, path
    dash.shutdown()
    studio.close()


def test_the_machine_column_names_the_worker_s_machine(qtbot, dashboard) -> None:
    dash, path = dashboard
    assert JOB_COLUMNS[COL_MACHINE] == "Machine"
    model = dash.model
    header = model.headerData(COL_MACHINE, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole)
    assert header == "Machine"

    def machine(job_id: int) -> str:
        row = model.row_of(job_id)
        assert row is not None
        return str(model.data(model.index(row, COL_MACHINE), Qt.ItemDataRole.DisplayRole))

    qtbot.waitUntil(
        lambda: model.row_of(2) is not None and model.job(model.row_of(2)).final, timeout=WAIT
    )
    assert model.job(model.row_of(2)).status == "done"
    assert machine(2) == THIS_COMPUTER  # this studio's worker host ran it
    assert machine(1) == "gpu-box-1"  # still running over there: the studio leaves it alone
    assert model.job(model.row_of(1)).status == "running"
    tip = model.data(model.index(model.row_of(1), 0), Qt.ItemDataRole.ToolTipRole)
    assert "worker gpu-box-1 · pid 4100" in tip
    dash.table.selectRow(model.row_of(1))
    qtbot.waitUntil(lambda: "machine: gpu-box-1" in dash.job_title.text(), timeout=WAIT)
    with JobQueue(path) as queue:
        queue.submit("diagnostic", {}, "nobody has it yet")
        queue.request_cancel(3)
    dash.controller.refresh()
    qtbot.waitUntil(lambda: model.row_of(3) is not None, timeout=WAIT)
    assert machine(3) == "—"  # never claimed


def test_a_lab_database_s_jobs_wait_for_its_workers(qtbot, pg_server, ua_schema: Schema) -> None:
    """On a lab database the window claims nothing unless "Run jobs on this computer too" is
    ticked: a job queued from a laptop is for the lab's GPU servers."""
    from studio.gui.settings import StudioSettings

    StudioSettings().set_run_lab_jobs_here(False)
    url = pg_server.fresh_database("dashlab")
    Project.create(url, ua_schema, author="setup").close()
    with JobQueue(url) as queue:
        job = queue.submit("diagnostic", {"seconds": 0.1, "steps": 1}, "for a lab worker")
    studio = Studio(Project.open(url), author="ann")
    dash = BaselineDashboard(studio, poll_interval=50)
    qtbot.addWidget(dash)
    try:
        dash.show()
        qtbot.waitUntil(lambda: dash.model.row_of(job) is not None, timeout=WAIT)
        assert dash.run_here_check.isVisible() and not dash.run_here_check.isChecked()
        qtbot.wait(1500)  # many polls: still nobody has claimed it
        assert dash.model.job(dash.model.row_of(job)).status == "queued"
        assert "wait for a lab worker" in dash.summary_label.text()
        qtbot.mouseClick(dash.run_here_check, Qt.MouseButton.LeftButton)
        assert StudioSettings().run_lab_jobs_here()
        qtbot.waitUntil(
            lambda: dash.model.job(dash.model.row_of(job)).status == "done", timeout=WAIT
        )
    finally:
        dash.shutdown()
        studio.close()
        StudioSettings().set_run_lab_jobs_here(False)
