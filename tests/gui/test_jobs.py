"""The GUI's two ways of working in the background (studio.gui.jobs, issue 27): a one-shot
ThreadJob and a long-lived ServiceThread."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QObject, Qt, QThread
from PySide6.QtWidgets import QApplication

from studio.gui.jobs import ServiceThread, ThreadJob

pytestmark = pytest.mark.gui

WAIT_MS = 10_000


#: slots connected directly run on the thread that emits: a lambda connected the default way
#: would be queued to the GUI thread by PySide whoever emitted
DIRECT = Qt.ConnectionType.DirectConnection


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

    job = ThreadJob.call(work, 2, 3, start=False)
    job.succeeded.connect(lambda r: seen.append((r, on_gui_thread())), DIRECT)
    job.ended.connect(lambda: seen.append(("ended", on_gui_thread())), DIRECT)
    job.start()
    assert job.running
    assert ThreadJob.wait_all(WAIT_MS)
    assert seen == [(5, True), ("ended", True)]
    assert worker_threads and worker_threads[0] != threading.main_thread().name
    assert not job.running


def test_a_job_delivers_an_exception_on_the_gui_thread(qtbot) -> None:
    seen: list[tuple[object, bool]] = []

    def work() -> None:
        raise ValueError("the store is locked")

    job = ThreadJob.call(work, succeeded=lambda r: seen.append(("succeeded", r)), start=False)
    job.errored.connect(lambda e: seen.append((e, on_gui_thread())), DIRECT)
    job.failed.connect(lambda m: seen.append((m, on_gui_thread())), DIRECT)
    job.start()
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


# ---- the service thread -------------------------------------------------------------------------
def test_a_service_answers_in_order_on_the_gui_thread(qtbot) -> None:
    service = ServiceThread("test-fifo")
    answers: list[tuple[int, object, bool]] = []
    service.finished.connect(lambda seq, r: answers.append((seq, r, on_gui_thread())), DIRECT)
    seqs = [service.submit(lambda i=i: i * 10) for i in range(5)]
    qtbot.waitUntil(lambda: len(answers) == 5, timeout=5000)
    assert answers == [(s, i * 10, True) for i, s in enumerate(seqs)]
    service.shutdown()


def test_a_service_reports_a_failure_by_its_number(qtbot) -> None:
    service = ServiceThread("test-failed")
    failures: list[tuple[int, str]] = []
    service.failed.connect(lambda seq, m: failures.append((seq, m)))

    def broken() -> None:
        raise ValueError("no such glyph")

    seq = service.submit(broken)
    qtbot.waitUntil(lambda: bool(failures), timeout=5000)
    assert failures == [(seq, "ValueError: no such glyph")]
    service.shutdown()


def _blocked(service: ServiceThread) -> threading.Event:
    """Keep the service's thread busy until the returned event is set."""
    busy, release = threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        release.wait(5)

    service.submit(hold)
    assert busy.wait(5)
    return release


def test_a_keyed_request_replaces_the_one_waiting_latest_wins(qtbot) -> None:
    service = ServiceThread("test-latest")
    answers: list[object] = []
    service.finished.connect(lambda _seq, r: answers.append(r))
    release = _blocked(service)
    service.submit(lambda: "old view", key="view")
    other = service.submit(lambda: "other", key="other")
    newest = service.submit(lambda: "new view", key="view")
    assert newest > other
    release.set()
    qtbot.waitUntil(lambda: len(answers) == 3, timeout=5000)
    QApplication.processEvents()
    assert answers == [None, "other", "new view"]  # the old view was never drawn
    service.shutdown()


def test_newest_first_with_a_limit(qtbot) -> None:
    """The thumbnails' order: what was asked last (on screen now) first; beyond the limit the
    oldest requests are forgotten."""
    service = ServiceThread("test-newest", newest_first=True, limit=3)
    answers: list[object] = []
    service.finished.connect(lambda _seq, r: answers.append(r))
    release = _blocked(service)
    for i in range(5):
        service.submit(lambda i=i: i, key=i)
    release.set()
    qtbot.waitUntil(lambda: len(answers) == 4, timeout=5000)
    QApplication.processEvents()
    assert answers == [None, 4, 3, 2]
    service.shutdown()


def test_answers_come_in_batches(qtbot) -> None:
    service = ServiceThread("test-batch", batch=2, pace_ms=5)
    batches: list[list[object]] = [[]]
    service.finished.connect(lambda _seq, r: batches[-1].append(r))
    service.delivered.connect(lambda: batches.append([]))
    release = _blocked(service)
    for i in range(5):
        service.submit(lambda i=i: i)
    release.set()
    qtbot.waitUntil(lambda: sum(len(b) for b in batches) == 6, timeout=5000)
    assert all(len(b) <= 2 for b in batches)
    assert [r for b in batches for r in b] == [None, 0, 1, 2, 3, 4]
    service.shutdown()


def test_an_answer_never_arrives_inside_submit(qtbot) -> None:
    """A consumer keeps the number submit returns and compares answers with it: an answer
    delivered before submit returned would be dropped (the catalog's flaky test). Answers
    travel through the event loop, so even a job finished at once waits for it."""
    service = ServiceThread("test-order")
    answers: list[int] = []
    done = threading.Event()
    service.finished.connect(lambda seq, _r: answers.append(seq))
    seq = service.submit(done.set)
    assert done.wait(5)
    time.sleep(0.05)  # the answer is queued by now
    assert answers == []
    qtbot.waitUntil(lambda: answers == [seq], timeout=5000)
    service.shutdown()


def test_shutting_a_service_down_joins_its_thread(qtbot) -> None:
    stopped_on: list[str] = []
    service = ServiceThread(
        "test-stop", on_stop=lambda: stopped_on.append(threading.current_thread().name)
    )
    answers: list[object] = []
    service.finished.connect(lambda _seq, r: answers.append(r))
    release = _blocked(service)
    service.submit(lambda: "dropped")
    assert service.thread_alive
    threading.Timer(0.05, release.set).start()
    service.shutdown()
    assert not service.thread_alive
    assert stopped_on == ["test-stop"]  # on_stop ran on the service's own thread
    assert service.submit(lambda: "late") == 0
    QApplication.processEvents()
    assert answers == []  # what waited, and the running one's answer, are dropped


def test_a_service_deleted_without_shutdown_ends_its_thread(qtbot) -> None:
    """A widget closed without its shutdown (a test's board): the thread ends on its own."""
    owner = QObject()
    service = ServiceThread("test-abandoned", parent=owner)
    service.submit(lambda: 1)
    assert service.thread_alive
    owner.deleteLater()
    qtbot.waitUntil(lambda: not service.thread_alive, timeout=5000)
