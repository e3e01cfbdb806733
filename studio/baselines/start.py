"""What a baseline job starts before anything else (no torch, no scipy, at import): the
thread that imports torch and starts the GPU, and the one that reads the split. A job's
first seconds on a GPU server are imports — on the H200 server measured, ``import torch``
alone took 5.4 s — so the front ends (the command line, the worker's job) start these
threads before they import the baselines' heavier modules (numpy, scipy's statistics, the
models), which then load beside them."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any


def warm_device(device: str, models: Sequence[str] | None = None) -> threading.Thread | None:
    """Import torch and start the GPU's context on a thread, where a GPU may be used, so
    that the seconds they take pass while the split is read rather than after it; nothing
    for ``--device cpu``. On the measured H200 server the first trained model took 4.7 s
    more than its training on 1,000 puzzles: ``torch.func`` builds the ensembles, and the
    first convolution and matrix product load cuDNN's and cuBLAS's kernels; all of it is
    done here (``torch._dynamo``, which torch's optimisers import, is not imported at all:
    :class:`studio.baselines.trained.Adam`). ``models``: the job's model ids; nothing
    starts when none of them trains."""
    req = (device or "auto").strip().lower()
    if req == "cpu":
        return None
    if models is not None:
        from studio.plugins import registry

        reg = registry("baselines")
        if not any(m in reg and reg.meta(m).get("trained") for m in models):
            return None

    def warm() -> None:
        with contextlib.suppress(Exception):  # the device is chosen, and refused, later
            import torch
            import torch.func

            if torch.cuda.is_available():
                index = int(req[5:]) if req.startswith("cuda:") and req[5:].isdigit() else 0
                if index < torch.cuda.device_count():
                    x = torch.zeros(2, 1, 8, 8, device=f"cuda:{index}", requires_grad=True)
                    w = torch.zeros(2, 1, 3, 3, device=f"cuda:{index}", requires_grad=True)
                    y = torch.nn.functional.conv2d(x, w).flatten(1)
                    (y @ y.T).sum().backward()
                    torch.cuda.synchronize(index)

    thread = threading.Thread(target=warm, name="baselines-warm-device", daemon=True)
    thread.start()
    return thread


class LoadStopped(Exception):
    """The split's reading was stopped (:meth:`Loading.stop`) before it ended."""


class Loading:
    """A split being read on a thread (:func:`load_beside`)."""

    def __init__(self, source: Any) -> None:
        self._future: Future[Any] = Future()
        self._stop = threading.Event()
        #: the last (puzzles read, puzzles in all) the loader reported
        self.read: tuple[int, int] = (0, 0)
        #: seconds from the start to the end of the reading (0 until it ends)
        self.seconds = 0.0
        self._began = time.perf_counter()
        self._thread = threading.Thread(
            target=self._load, args=(source,), name="baselines-load", daemon=True
        )
        self._thread.start()

    def _load(self, source: Any) -> None:
        def progress(done: int, total: int) -> None:
            # asked before the pool starts and after each chunk: chunks not started are dropped
            self.read = (done, total)
            if self._stop.is_set():
                raise LoadStopped()

        self._future.set_running_or_notify_cancel()
        try:
            from studio.baselines.data import load_source

            if self._stop.is_set():
                raise LoadStopped()
            data = load_source(source, progress)
        except BaseException as e:  # handed to the caller, who raises it
            self.seconds = time.perf_counter() - self._began
            self._future.set_exception(e)
        else:
            self.seconds = time.perf_counter() - self._began
            self._future.set_result(data)

    def result(self, timeout: float | None = None) -> Any:
        """The :class:`~studio.baselines.data.PuzzleArrays`, or the loader's error."""
        return self._future.result(timeout)

    def __enter__(self) -> Loading:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:  # interrupted (Ctrl+C) or failed meanwhile: stop reading
            self.stop()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop reading at the next chunk and wait for the thread (the caller was
        interrupted: Ctrl+C must not wait for the whole split)."""
        self._stop.set()
        self._thread.join(timeout)


def load_beside(source: Any) -> Loading:
    """Start reading ``source`` (what :func:`studio.baselines.data.load_source` takes) on a
    thread. A split's records and archives are read by a process pool; this thread only
    waits for it and merges, so the pool works while the caller imports the runner's modules
    (numpy, scipy's statistics, the models: on the H200 server measured, 4.85 s with torch's
    import beside them, before the load could start). Used as a context manager, it stops
    the reading when the block is left by an exception (:meth:`Loading.stop`)."""
    return Loading(source)


__all__ = ["LoadStopped", "Loading", "load_beside", "warm_device"]
