"""Which device a job trains on, and setting the process up for it.

torch is imported inside the functions only: this module may be imported by code that must not
pay for torch (or does not have it) until a job actually runs.
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.procs import usable_cores

__all__ = ["DEVICE_CHOICES", "DeviceChoice", "apply_device", "choose_device", "cpu_threads"]

DEVICE_CHOICES = ("auto", "cpu", "cuda")

_niced = False


@dataclass(frozen=True)
class DeviceChoice:
    kind: str  # "cuda" | "cpu"
    name: str  # for the record and the report: "cpu (3 threads)", "cuda:0 NVIDIA H100 …"
    threads: int  # torch's intra-op threads
    index: int = 0  # the CUDA device index

    @property
    def torch_device(self) -> str:
        """The string ``torch.device`` takes: ``"cpu"`` or ``"cuda:N"``."""
        return f"cuda:{self.index}" if self.kind == "cuda" else "cpu"


def cpu_threads(leave_core_free: bool = True) -> int:
    """Cores this process may use, less one when ``leave_core_free`` (a job beside the
    studio's window, which must stay responsive); all of them otherwise (the command line)."""
    n = usable_cores()
    return max(1, n - 1) if leave_core_free else n


def _cpu_choice(leave_core_free: bool = True) -> DeviceChoice:
    n = cpu_threads(leave_core_free)
    return DeviceChoice("cpu", f"cpu ({n} thread{'s' if n != 1 else ''})", n)


def choose_device(requested: str = "auto", *, leave_core_free: bool = True) -> DeviceChoice:
    """``auto``: CUDA when torch sees a GPU, else the CPU with :func:`cpu_threads` threads
    (``leave_core_free``: one core fewer, for a job beside the studio's window); ``cpu``;
    ``cuda`` or ``cuda:N`` (StudioError when torch sees no such GPU)."""
    req = (requested or "auto").strip().lower()
    if req not in DEVICE_CHOICES and not (req.startswith("cuda:") and req[5:].isdigit()):
        raise StudioError(f"unknown device {requested!r}: use auto, cpu, cuda or cuda:N")
    if req == "cpu":
        return _cpu_choice(leave_core_free)
    import torch

    available = torch.cuda.is_available()
    if req == "auto" and not available:
        return _cpu_choice(leave_core_free)
    if not available:
        build = "without CUDA" if torch.version.cuda is None else f"for CUDA {torch.version.cuda}"
        raise StudioError(
            f"device {requested!r} was asked for but torch {torch.__version__} (built {build}) "
            "sees no GPU; use --device cpu or auto"
        )
    index = int(req[5:]) if req.startswith("cuda:") else 0
    count = torch.cuda.device_count()
    if index >= count:
        raise StudioError(f"device {requested!r}: torch sees {count} GPU(s)")
    name = torch.cuda.get_device_name(index)
    return DeviceChoice("cuda", f"cuda:{index} {name}", cpu_threads(leave_core_free), index)


def apply_device(choice: DeviceChoice, *, lower_priority: bool = True) -> None:
    """Set torch's thread count for the choice and, on the CPU, lower this process's priority
    (``nice`` +10, once per process) so a training job never starves the window. Call it in the
    worker process, not in the GUI's."""
    global _niced
    import torch

    torch.set_num_threads(choice.threads)
    if choice.kind == "cuda":
        torch.cuda.set_device(choice.index)
    elif lower_priority and not _niced and hasattr(os, "nice"):
        with suppress(OSError):  # not allowed here: run at normal priority
            os.nice(10)
        _niced = True
