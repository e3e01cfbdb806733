"""The GUI's two ways of working in the background (studio.gui.jobs, issue 27): a one-shot
ThreadJob and a long-lived ServiceThread."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QObject, QThread
from PySide6.QtWidgets import QApplication

from studio.gui.jobs import ThreadJob

pytestmark = pytest.mark.gui

WAIT_MS = 10_000


def on_gui_thread() -> bool:
    app = QApplication.instance()
    assert app is not None
    return QThread.currentThread() is app.thread()


def test_a_job_delivers_its_result_on_the_gui_thread(qtbot) -> None:
    seen: list[tuple[object, bool]] = []
    worker_threads: list[str] = []

    def work(a: int, b: int) -> int:
        worker_threads.append(threading.current_thread().name)
        return a + b

    job = ThreadJob.call(
        work,
        2,
        3,
        succeeded=lambda r: seen.append((r, on_gui_thread())),
        ended=lambda: seen.append(("ended", on_gui_thread())),
    )
    assert job.running
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen == [(5, True), ("ended", True)]
    assert worker_threads and worker_threads[0] != threading.main_thread().name
    assert not job.running


def test_a_job_delivers_an_exception_on_the_gui_thread(qtbot) -> None:
    seen: list[tuple[object, bool]] = []

    def work() -> None:
        raise ValueError("the store is locked")

    ThreadJob.call(
        work,
        errored=lambda e: seen.append((e, on_gui_thread())),
        failed=lambda m: seen.append((m, on_gui_thread())),
        succeeded=lambda r: seen.append(("succeeded", r)),
    )
    assert ThreadJob.wait_all(WAIT_MS)
    [(error, first_on_gui), (message, second_on_gui)] = seen
    assert isinstance(error, ValueError) and message == "the store is locked"
    assert first_on_gui and second_on_gui


def test_a_generator_s_progress_arrives_in_order_before_its_result(qtbot) -> None:
    seen: list[object] = []

    def work() -> Iterator[int]:
        yield from range(5)
        return "done"

    ThreadJob.call(work, yielded=seen.append, succeeded=seen.append)
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen == [0, 1, 2, 3, 4, "done"]


def test_a_cancelled_job_does_not_deliver_its_result(qtbot) -> None:
    release = threading.Event()
    seen: list[object] = []

    def work() -> str:
        release.wait(5)
        return "result"

    job = ThreadJob.call(
        work, succeeded=seen.append, cancelled=lambda: seen.append("cancelled"), failed=seen.append
    )
    job.cancel()
    release.set()
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen == ["cancelled"]


def test_a_cancelled_generator_is_closed_on_its_thread(qtbot) -> None:
    """cancel() stops a generator at its next yield; its clean-up runs on the worker."""
    started, release = threading.Event(), threading.Event()
    closed_on: list[str] = []
    seen: list[object] = []

    def work() -> Iterator[int]:
        try:
            yield 0
            started.set()
            release.wait(5)
            yield 1
            yield 2
        finally:
            closed_on.append(threading.current_thread().name)

    job = ThreadJob.call(work, succeeded=seen.append, cancelled=lambda: seen.append("cancelled"))
    assert started.wait(5)
    job.cancel()
    release.set()
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen[-1] == "cancelled" and "succeeded" not in seen
    assert closed_on and closed_on[0] != threading.main_thread().name


def test_a_stoppable_call_is_told_to_stop(qtbot) -> None:
    started = threading.Event()
    seen: list[object] = []

    def work(n: int, should_stop) -> int:  # type: ignore[no-untyped-def]
        started.set()
        while not should_stop():
            time.sleep(0.005)
        raise RuntimeError("stopped")  # how a long computation says it was stopped

    job = ThreadJob.call(
        work, 3, stoppable=True, cancelled=lambda: seen.append("cancelled"), failed=seen.append
    )
    assert started.wait(5)
    job.cancel()
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen == ["cancelled"]  # an exception on being stopped is no error


def test_a_running_job_is_not_garbage_collected(qtbot) -> None:
    """A caller may drop its job: it is kept until it has ended — while its work runs, and
    after the work returned until its result has been delivered."""
    release = threading.Event()
    seen: list[object] = []

    def work() -> str:
        release.wait(5)
        return "kept"

    job = ThreadJob.call(work, succeeded=seen.append)
    alive = weakref.ref(job)
    del job
    gc.collect()
    QApplication.processEvents()
    release.set()
    job = alive()
    assert job is not None and job.wait(5000)  # returned; its result not yet delivered
    del job
    gc.collect()
    assert alive() is not None
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen == ["kept"]


def test_a_job_whose_owner_is_gone_is_cancelled_and_falls_silent(qtbot) -> None:
    release = threading.Event()
    seen: list[object] = []
    owner = QObject()
    job = ThreadJob.call(
        lambda: release.wait(5),
        parent=owner,
        succeeded=seen.append,
        cancelled=lambda: seen.append("cancelled"),
        ended=lambda: seen.append("ended"),
    )
    owner.deleteLater()
    qtbot.waitUntil(lambda: job.cancel_requested, timeout=5000)
    release.set()
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen == [] and not job.running


def test_waiting_for_all_jobs(qtbot) -> None:
    """wait_all returns once every job has ended, those its slots start included; a job's own
    wait() blocks until its work has returned."""
    order: list[str] = []

    def slow(name: str) -> str:
        time.sleep(0.05)
        return name

    def then_another(name: str) -> None:
        order.append(name)
        if name == "first":
            ThreadJob.call(slow, "chained", succeeded=order.append)

    jobs = [ThreadJob.call(slow, name, succeeded=then_another) for name in ("first", "second")]
    assert jobs[0].wait(5000) and jobs[1].wait(5000)
    assert order == []  # returned on their threads; nothing delivered without the event loop
    assert ThreadJob.wait_all(WAIT_MS)
    assert sorted(order) == ["chained", "first", "second"]
    assert ThreadJob.running_jobs() == []


def test_wait_all_gives_up_at_its_timeout(qtbot) -> None:
    release = threading.Event()
    ThreadJob.call(lambda: release.wait(5), succeeded=lambda _r: None)
    try:
        assert not ThreadJob.wait_all(50)
    finally:
        release.set()
    assert ThreadJob.wait_all(WAIT_MS)


def test_an_unheard_error_reaches_the_error_hook(qtbot) -> None:
    def work() -> None:
        raise LookupError("nobody listens")

    with qtbot.captureExceptions() as raised:
        ThreadJob.call(work)
        assert ThreadJob.wait_all(WAIT_MS)
    assert [type(e[1]) for e in raised] == [LookupError]


def test_announced_events_are_held_back_and_emitted_on_the_gui_thread(qtbot) -> None:
    from psygnal import Signal as PsygnalSignal

    class Events:
        changed = PsygnalSignal()

    events = Events()
    heard: list[bool] = []
    events.changed.connect(lambda: heard.append(on_gui_thread()))

    def work() -> Iterator[int]:
        events.changed.emit()  # on the worker: held back
        yield 1
        events.changed.emit()

    ThreadJob.call(work, announce=[events.changed], succeeded=lambda _r: None)
    assert ThreadJob.wait_all(WAIT_MS)
    assert heard == [True]  # once, at the end, on the GUI thread
