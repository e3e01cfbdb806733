"""Background work in the GUI, one way for each kind (issue 27).

- :class:`ThreadJob`: a one-shot piece of work on a worker thread — a call, or a generator
  that yields progress — whose outcome (``succeeded``, ``errored``/``failed`` or
  ``cancelled``, then ``ended``) is delivered on the GUI thread through Qt signals. A running
  job is kept alive by the class until it has ended, whoever holds it; tests and closing
  windows wait for jobs with :meth:`ThreadJob.wait` and :meth:`ThreadJob.wait_all`.
- :class:`ServiceThread`: one long-lived thread fed requests (first in, first out, or newest
  first; a request with the key of one still waiting replaces it), for work that must stay on
  one thread — an EGL context, a font renderer's cache. Answers reach the GUI thread in
  batches, through the event loop, never inside :meth:`ServiceThread.submit`.

Both build on superqt only where it helps (its ``FunctionWorker`` turns an exception into a
signal); the rest is here, once.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import threading
import time
import traceback
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from PySide6.QtCore import QCoreApplication, QMetaMethod, QObject, Qt, QThreadPool, QTimer, Signal
from superqt.utils import create_worker

if TYPE_CHECKING:
    from psygnal import SignalInstance


class ThreadJob(QObject):
    """One piece of work on a worker thread; its outcome on the GUI thread.

    :meth:`start` runs :meth:`_work` (a subclass's, or the call given to :meth:`call`) on a
    thread of Qt's global pool. When it returns a generator, the job drives it there: each value
    it yields is ``yielded(value)``, and :meth:`cancel` closes it at its next yield. Then exactly
    one of

    - ``succeeded(result)``;
    - ``errored(exception)`` with ``failed(message)`` (the exception's text, else its type) — an
      exception nobody listens for is raised on the GUI thread (the studio's error hook shows
      it), as superqt does;
    - ``cancelled()``: :meth:`cancel` was called before the outcome was delivered — the work's
      result is dropped (unless :attr:`DELIVER_AFTER_CANCEL`) and an exception it raised on
      being stopped is not an error;

    and last ``ended()``. Every one of these is emitted on the GUI thread (the job lives there;
    the worker only emits, and must make no QObject). A subclass's own progress signals, emitted
    by :meth:`_work` on the worker, arrive queued on the GUI thread the same way, before the
    outcome.

    ``parent`` is the job's owner, not its Qt parent: the job is kept alive by the class from
    :meth:`start` until ``ended`` (a caller may drop it), and when the owner is destroyed the job
    is cancelled and falls silent (no signal reaches the closures of a widget that is gone).
    ``announce``: studio events (psygnal signals) the work would fire on its own thread, where Qt
    views must not hear them; they are blocked while it runs and emitted once on the GUI thread
    when it ends, before its outcome ("QObject::startTimer: Timers cannot be started from another
    thread")."""

    succeeded = Signal(object)
    errored = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    yielded = Signal(object)
    ended = Signal()

    #: True for work whose result is something done — a folder written: when it completed
    #: before noticing a cancel, the result is still delivered (a cancel that came too late
    #: must not say that nothing was written)
    DELIVER_AFTER_CANCEL: ClassVar[bool] = False

    #: the jobs started and not yet ended (what keeps a job whose caller dropped it alive)
    _running: ClassVar[set[ThreadJob]] = set()

    def __init__(
        self,
        request: Mapping[str, Any] | None = None,
        parent: QObject | None = None,
        *,
        announce: Iterable[SignalInstance] = (),
    ) -> None:
        super().__init__()
        self.request = dict(request or {})
        self._stop = threading.Event()
        self._work_over = threading.Event()
        self._call: Callable[[], Any] | None = None
        self._announce = list(announce)
        self._held = contextlib.ExitStack()
        self.worker: Any = None
        self._ended = False
        if parent is not None:
            parent.destroyed.connect(self._orphan)

    # ---- one call ----------------------------------------------------------------------------
    @classmethod
    def call(
        cls,
        fn: Callable[..., Any],
        *args: Any,
        succeeded: Callable[[Any], Any] | None = None,
        errored: Callable[[BaseException], Any] | None = None,
        failed: Callable[[str], Any] | None = None,
        cancelled: Callable[[], Any] | None = None,
        yielded: Callable[[Any], Any] | None = None,
        ended: Callable[[], Any] | None = None,
        parent: QObject | None = None,
        stoppable: bool = False,
        announce: Iterable[SignalInstance] = (),
        start: bool = True,
    ) -> ThreadJob:
        """Run ``fn(*args)`` on a worker thread as a job (started, unless ``start`` is False);
        each callback given is connected to the signal of its name. With ``stoppable``, ``fn``
        also gets ``should_stop=`` a callable that turns true once :meth:`cancel` is called.
        Give bound methods of widgets where you can: Qt drops such a connection when its
        widget is deleted."""
        job = cls(parent=parent, announce=announce)
        job._call = (
            (lambda: fn(*args, should_stop=job._stop.is_set)) if stoppable else (lambda: fn(*args))
        )
        for signal, slot in (
            (job.succeeded, succeeded),
            (job.errored, errored),
            (job.failed, failed),
            (job.cancelled, cancelled),
            (job.yielded, yielded),
            (job.ended, ended),
        ):
            if slot is not None:
                signal.connect(slot)
        if start:
            job.start()
        return job

    # ---- control (GUI thread) ------------------------------------------------------------------
    def start(self) -> None:
        if self.worker is not None:
            raise RuntimeError("this job was started already")
        for signal in self._announce:
            self._held.enter_context(signal.blocked())
        # the work's value travels boxed: superqt raises a returned exception instead
        self.worker = create_worker(self._run, _start_thread=False, _ignore_errors=True)
        self.worker.returned.connect(self._on_returned)
        self.worker.errored.connect(self._on_errored)
        ThreadJob._running.add(self)
        # straight into the pool (superqt's start() defers it by a timer when an event loop
        # runs, and a wait() in the same slot would then wait for a job that never began)
        QThreadPool.globalInstance().start(self.worker)

    def cancel(self) -> None:
        """Ask the work to stop (``should_stop`` turns true; a generator is closed at its next
        yield). The job then ends with ``cancelled``, not with its result."""
        self._stop.set()

    @property
    def cancel_requested(self) -> bool:
        return self._stop.is_set()

    @property
    def running(self) -> bool:
        """Started and not yet ended (its outcome not yet delivered)."""
        return self.worker is not None and not self._ended

    def wait(self, timeout_ms: int = 5000) -> bool:
        """Block (without processing events) until the work has returned on its thread, for a
        window that closes; its outcome is delivered, if ever, by the event loop later. False
        if it had not returned in time. A job never started counts as returned."""
        if self.worker is None:
            return True
        return self._work_over.wait(timeout_ms / 1000)

    @classmethod
    def wait_all(cls, timeout_ms: int = 10_000) -> bool:
        """Process events until every job started has ended — its outcome delivered, and any
        job started by those slots ended too — for tests and the screenshot tool. False if some
        had not ended in time."""
        deadline = time.monotonic() + timeout_ms / 1000
        while cls._running:
            if time.monotonic() > deadline:
                return False
            QCoreApplication.processEvents()
            working = [j for j in cls._running if not j._work_over.is_set()]
            if working:
                working[0]._work_over.wait(0.01)
        return True

    @classmethod
    def running_jobs(cls) -> list[ThreadJob]:
        return list(cls._running)

    # ---- the work (worker thread) ----------------------------------------------------------------
    def _work(self) -> Any:
        """Runs on the worker thread: a subclass's work, or the call given to :meth:`call`.
        It may emit this job's signals (they are queued to the GUI thread) and return a
        generator (driven by the job)."""
        if self._call is None:
            raise NotImplementedError
        return self._call()

    def _run(self) -> tuple[Any]:
        try:
            result = self._work()
            if inspect.isgenerator(result):
                result = self._drive(result)
            return (result,)
        finally:
            self._work_over.set()

    def _drive(self, gen: Any) -> Any:
        while True:
            if self._stop.is_set():
                gen.close()  # its clean-up runs here, on the thread it ran on
                return None
            try:
                value = next(gen)
            except StopIteration as done:
                return done.value
            self.yielded.emit(value)

    # ---- the outcome (GUI thread) ------------------------------------------------------------
    def _on_returned(self, boxed: tuple[Any]) -> None:
        if self.cancel_requested and not self.DELIVER_AFTER_CANCEL:
            self._end(self.cancelled.emit)
        else:
            self._end(lambda: self.succeeded.emit(boxed[0]))

    def _on_errored(self, error: BaseException) -> None:
        self._end(lambda: self._errored(error))

    def _errored(self, e: BaseException) -> None:
        """The work raised ``e``: after :meth:`cancel` that is its way of stopping
        (``cancelled``), else an error. A subclass may say a stop otherwise."""
        if self.cancel_requested:
            self.cancelled.emit()
        else:
            self._fail(e)

    def _fail(self, e: BaseException) -> None:
        if (
            not (self._heard(self.errored) or self._heard(self.failed))
            and not self.signalsBlocked()
        ):
            raise e  # nobody listens: the error hook shows it
        self.errored.emit(e)
        self.failed.emit(str(e) or type(e).__name__)

    def _heard(self, signal: Any) -> bool:
        return self.isSignalConnected(QMetaMethod.fromSignal(signal))

    def _end(self, outcome: Callable[[], None]) -> None:
        self._held.close()
        if not self.signalsBlocked():
            for signal in self._announce:
                signal.emit()
        try:
            outcome()
        finally:
            self._ended = True
            ThreadJob._running.discard(self)
            self.ended.emit()

    def _orphan(self, *_args: object) -> None:
        """The owner is gone: stop, and say nothing more to anyone."""
        self.cancel()
        self.blockSignals(True)


# ---- long-lived threads -------------------------------------------------------------------------
class ServiceThread(QObject):
    """One long-lived worker thread fed requests, for work that must stay on one thread.

    :meth:`submit` queues ``fn(*args)`` and returns its number (0 once shut down). The thread
    takes the waiting requests first in, first out, or newest first (``newest_first``: what is on
    screen now); a request given the ``key`` of one still waiting replaces it (latest wins: the
    replaced one is never answered), and beyond ``limit`` waiting requests the oldest is dropped.
    Each answer is ``finished(number, result)`` or ``failed(number, message)`` (the exception as
    ``traceback.format_exception_only`` writes it), emitted on the GUI thread through the event
    loop (never inside :meth:`submit`): those that finish within ``pace_ms`` go together, at
    most ``batch`` at a time (0: all there are), each batch followed by ``delivered()``.
    :meth:`shutdown` drops what waits, runs ``on_stop`` on the thread (to close what belongs to
    it) and joins it. The thread starts with the first request."""

    finished = Signal(int, object)
    failed = Signal(int, str)
    delivered = Signal()
    _answered = Signal()  # from the thread: answers wait (queued to the GUI thread)

    def __init__(
        self,
        name: str,
        *,
        newest_first: bool = False,
        limit: int = 0,
        batch: int = 0,
        pace_ms: int = 0,
        on_stop: Callable[[], None] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.name = name
        self._newest_first = newest_first
        self._limit = limit
        self._batch = batch
        self._pace_ms = pace_ms
        self._on_stop = on_stop
        self._cond = threading.Condition()
        self._waiting: collections.OrderedDict[
            Hashable, tuple[int, Callable[..., Any], tuple[Any, ...]]
        ] = collections.OrderedDict()
        self._answers: collections.deque[tuple[int, bool, Any]] = collections.deque()
        self._delivering = False
        self._seq = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._answered.connect(self._answers_waiting, Qt.ConnectionType.QueuedConnection)
        # deleted without a shutdown (a widget closed in a test): the thread ends on its own
        self.destroyed.connect(functools.partial(ServiceThread._abandon, self))

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def thread_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def submit(self, fn: Callable[..., Any], *args: Any, key: Hashable | None = None) -> int:
        """Queue ``fn(*args)``; its number, or 0 once shut down (a debounce timer may still fire
        while a tab closes: that request is simply dropped)."""
        with self._cond:
            if self._closed:
                return 0
            self._seq += 1
            seq = self._seq
            slot = ("seq", seq) if key is None else ("key", key)
            self._waiting.pop(slot, None)
            self._waiting[slot] = (seq, fn, args)
            while self._limit and len(self._waiting) > self._limit:
                self._waiting.popitem(last=False)
            self._cond.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
        return seq

    def shutdown(self, timeout: float | None = None) -> None:
        """Drop the waiting requests and answers, let the running one finish, run ``on_stop`` on
        the thread, and join it (up to ``timeout`` seconds; None: as long as it takes)."""
        if self._abandon():
            return
        if self._thread is not None:
            self._thread.join(timeout)

    def _abandon(self, *_args: object) -> bool:
        """Close: nothing more is taken or answered; the thread ends after what it runs. Whether
        it was closed already."""
        with self._cond:
            was_closed, self._closed = self._closed, True
            self._waiting.clear()
            self._answers.clear()
            self._cond.notify_all()
        return was_closed

    # ---- the thread ----------------------------------------------------------------------------
    def _serve(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._waiting and not self._closed:
                        self._cond.wait()
                    if self._closed:
                        return
                    _slot, (seq, fn, args) = self._waiting.popitem(last=self._newest_first)
                try:
                    answer: tuple[int, bool, Any] = (seq, True, fn(*args))
                except Exception as e:
                    answer = (seq, False, "".join(traceback.format_exception_only(e)).strip())
                with self._cond:
                    if self.closed:  # shut down while it ran: the answer is dropped
                        return
                    self._answers.append(answer)
                    wake = not self._delivering
                    self._delivering = True
                if wake:
                    try:
                        self._answered.emit()
                    except RuntimeError:  # this object was deleted meanwhile
                        return
        finally:
            if self._on_stop is not None:
                try:
                    self._on_stop()
                except Exception:
                    traceback.print_exc()

    # ---- the GUI thread --------------------------------------------------------------------------
    def _answers_waiting(self) -> None:
        """The first answer after a pause: delivered now, or (paced) with those that follow it
        within ``pace_ms`` — a grid repaints once for a batch of thumbnails, not once each."""
        if self._pace_ms:
            QTimer.singleShot(self._pace_ms, self, self._deliver)
        else:
            self._deliver()

    def _deliver(self) -> None:
        with self._cond:
            n = len(self._answers) if not self._batch else min(self._batch, len(self._answers))
            batch = [self._answers.popleft() for _ in range(n)]
            more = bool(self._answers) and not self._closed
            self._delivering = more
        if self._closed:
            return
        for seq, ok, value in batch:
            if ok:
                self.finished.emit(seq, value)
            else:
                self.failed.emit(seq, value)
        if batch:
            self.delivered.emit()
        if more:
            QTimer.singleShot(self._pace_ms, self, self._deliver)


__all__ = ["ServiceThread", "ThreadJob"]
