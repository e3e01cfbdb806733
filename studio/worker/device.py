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

__all__ = [
    "DEVICE_CHOICES",
    "DeviceChoice",
    "GpuUtilisation",
    "apply_device",
    "choose_device",
    "cpu_threads",
]

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


def _physical_gpu(index: int) -> str:
    """The id ``nvidia-smi`` knows a GPU by, for torch's ``cuda:index``: torch counts only the
    GPUs ``CUDA_VISIBLE_DEVICES`` lets it see (indices or UUIDs), nvidia-smi counts them all."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    visible = [v for v in visible if v]
    if 0 <= index < len(visible):
        return visible[index]
    return str(index)


class GpuUtilisation:
    """The GPU's utilisation while a job runs, sampled on a thread every ``interval`` s: the
    share of each sample period in which a kernel ran, as NVML reports it (through
    ``torch.cuda.utilization``, which needs the ``nvidia-ml-py`` package, or else the
    ``nvidia-smi`` program). A report that says how busy the GPU was tells a lab whether
    a faster GPU would help at all (issue 26: the first GPU runs kept it 5–9 % busy).

    Use as a context manager; :meth:`summary` is None when neither source answers."""

    def __init__(self, index: int = 0, interval: float = 0.2) -> None:
        import threading

        self.index = index
        self.interval = interval
        self.samples: list[float] = []
        self.source: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-utilisation", daemon=True)

    def _read(self) -> float | None:
        if self.source in (None, "nvml"):
            try:
                import torch

                value = float(torch.cuda.utilization(self.index))
                self.source = "nvml"
                return value
            except Exception:  # no nvidia-ml-py, or NVML refused: try the program
                if self.source == "nvml":
                    return None
        import shutil
        import subprocess

        smi = shutil.which("nvidia-smi")
        if smi is None:
            return None
        query = [smi, f"--id={_physical_gpu(self.index)}", "--query-gpu=utilization.gpu"]
        try:
            out = subprocess.run(
                [*query, "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            value = float(out.stdout.split()[0])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return None
        self.source = "nvidia-smi"
        return value

    def _run(self) -> None:
        while not self._stop.is_set():
            value = self._read()
            if value is None and self.source is None:
                return  # neither source answers: nothing to sample
            if value is not None:
                self.samples.append(value)
            self._stop.wait(self.interval)

    def __enter__(self) -> GpuUtilisation:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def summary(self) -> dict[str, float | int | str] | None:
        """Mean percent, the share of samples above 50 %, the sample count and the source."""
        if not self.samples or self.source is None:
            return None
        n = len(self.samples)
        return {
            "mean_percent": round(sum(self.samples) / n, 1),
            "share_above_50": round(sum(s > 50 for s in self.samples) / n, 3),
            "samples": n,
            "source": self.source,
        }
