"""Benchmark `worker`: the baselines' training and inference throughput on a 10,000-puzzle glyph
split, and how long the GUI's main thread stalls while a training job runs.

Set-up (untimed, reported): a project from the shared UA annotations, its glyphs rendered, and
a 10,000-puzzle two-row split written with ``analogy-studio generate`` (balanced sampling), read
back as arrays (``studio.baselines.data.load_glyph_split``).

Timed, in one process, on the device asked for (``--device``; ``auto`` picks CUDA when torch
sees a GPU):

- **throughput** — for the context-blind and the full-context model: training puzzles/s (the
  training steps of ``--epochs`` epochs over the split's train part, batch 64, as
  ``TorchBaseline.fit`` runs them) and inference puzzles/s (``predict`` over all 10,000).
  **Reference**, same network and data: a hand-written loop that trains on one puzzle per step
  (``--reference-steps`` steps), as a first prototype would. ``ratio`` = ours over it.
- **stall** — the GUI (a real ``BaselineDashboard`` on the offscreen platform, refreshing from
  the project every 250 ms and polling its ``WorkerHost``) while a real ``baseline`` job trains
  the full-context model on the split in the worker process. A 5 ms ``QTimer`` on the main
  thread records the longest gap between its ticks, less 5 ms: the longest the window would
  not answer. **Reference**: the same training on a thread inside the GUI process (what a
  worker *thread* would do). Aim: under 50 ms with the worker process.

Prints one JSON object on stdout. CUDA figures come from running this on a machine with a GPU
(the device tool): ``python bench/run.py worker --device cuda``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import ua_csv


def make_split(tmp: Path, n: int, seed: int) -> tuple[Path, Path, dict[str, float]]:
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the JSON alone
        return _make_split(tmp, n, seed)


def _make_split(tmp: Path, n: int, seed: int) -> tuple[Path, Path, dict[str, float]]:
    from studio.cli import main as cli

    times: dict[str, float] = {}
    project = tmp / "bench.studio"
    t = time.perf_counter()
    assert cli(["-q", "init", str(project)]) == 0
    assert cli(["-q", "import-annotations", str(project), str(ua_csv()), "--render"]) == 0
    times["project_s"] = time.perf_counter() - t
    split = tmp / "split"
    t = time.perf_counter()
    args = ["-q", "generate", str(project), str(split), "--n", str(n), "--seed", str(seed)]
    assert cli([*args, "--sampling", "balanced"]) == 0
    times["generate_s"] = time.perf_counter() - t
    return project, split, times


def throughput(data: Any, device: str, epochs: int, reference_steps: int) -> dict[str, Any]:
    import torch

    from studio.baselines.trained import BlindBaseline, ContextBaseline, DeviceData
    from studio.worker.device import apply_device, choose_device

    choice = choose_device(device)
    apply_device(choice, lower_priority=False)
    dd = DeviceData(data, choice.torch_device)
    train = data.part_indices("train")
    val = data.part_indices("val")
    everything = np.arange(data.n)
    out: dict[str, Any] = {"device": choice.name, "threads": choice.threads}
    for baseline in (BlindBaseline(), ContextBaseline()):
        fit = baseline.fit(dd, train, val, seed=0, rng=np.random.default_rng(0), epochs=epochs)
        t = time.perf_counter()
        baseline.predict(dd, everything)
        infer_s = time.perf_counter() - t
        # reference: the same network, one puzzle per optimiser step
        net = baseline.build(data).to(dd.device)
        baseline.net = net
        opt = torch.optim.Adam(net.parameters(), lr=3e-3)
        keys = dd.get("keys")
        steps = min(reference_steps, len(train))
        t = time.perf_counter()
        for i in train[:steps]:
            idx = torch.tensor([int(i)], device=dd.device)
            loss = baseline.loss(baseline.outputs(dd, idx), keys[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if dd.device.type == "cuda":
            torch.cuda.synchronize(dd.device)
        ref_s = time.perf_counter() - t
        ours = fit.puzzles / fit.seconds
        ref = steps / ref_s
        out[baseline.id] = {
            "train_puzzles": fit.puzzles,
            "epochs": fit.epochs,
            "train_puzzles_per_s": round(ours, 1),
            "infer_puzzles_per_s": round(data.n / infer_s, 1),
            "reference_one_puzzle_per_step_per_s": round(ref, 1),
            "ratio": round(ours / ref, 2),
            "val_accuracy_last_epoch": fit.curve[-1]["val_acc"] if fit.curve else None,
        }
    return out


class StallMeter:
    """Longest gap between the ticks of a 5 ms timer on the main thread, less the interval."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.interval_ms = 5
        self.longest = 0.0
        self.ticks = 0
        self._last = time.perf_counter()
        self.timer = QTimer(interval=self.interval_ms)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, (now - self._last) * 1000 - self.interval_ms)
        self._last = now
        self.ticks += 1

    def start(self) -> None:
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> dict[str, float]:
        self.timer.stop()
        return {"longest_stall_ms": round(max(self.longest, 0.0), 1), "ticks": self.ticks}


def stall(project: Path, split: Path, epochs: int, device: str) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from studio.app import Studio
    from studio.gui.dashboard import BaselineDashboard
    from studio.store.project import Project

    app = QApplication.instance() or QApplication([])
    studio = Studio(Project.open(project), author="bench")
    dash = BaselineDashboard(studio)
    dash.resize(1200, 800)
    dash.show()
    params = {
        "source": {"kind": "split-dir", "path": str(split)},
        "models": ["context"],
        "seeds": 1,
        "device": device,
        "epochs": epochs,
        "cross_fit": False,
    }
    queue = studio.project.jobs
    job_id = queue.submit("baseline", params, title="bench: full-context")
    meter = StallMeter()
    meter.start()
    t = time.perf_counter()
    while True:
        app.processEvents()
        job = queue.job(job_id)
        if job is not None and job.final:
            break
        time.sleep(0.002)
    wall = time.perf_counter() - t
    worker = meter.stop()
    worker.update(
        {"job_status": job.status, "job_seconds": round(wall, 1), "job_error": job.error[-300:]}
    )

    # reference: the same training on a thread of the GUI process
    from studio.baselines.run import run_baselines

    done = threading.Event()
    box: dict[str, Any] = {}

    def train_in_thread() -> None:
        try:
            box["report"] = run_baselines(
                split, ["context"], seeds=1, device=device, epochs=epochs, cross_fit=False
            )
        finally:
            done.set()

    meter = StallMeter()
    meter.start()
    t = time.perf_counter()
    thread = threading.Thread(target=train_in_thread, daemon=True)
    thread.start()
    while not done.is_set():
        app.processEvents()
        time.sleep(0.002)
    reference = meter.stop()
    reference["seconds"] = round(time.perf_counter() - t, 1)
    dash.close()
    dash.deleteLater()
    app.processEvents()
    studio.close()
    return {"worker_process": worker, "reference_thread_in_gui": reference}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--epochs", type=int, default=1, help="epochs timed per model")
    parser.add_argument("--reference-steps", type=int, default=300)
    parser.add_argument("--stall-epochs", type=int, default=1)
    parser.add_argument("--skip-stall", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        os.environ["XDG_DATA_HOME"] = str(tmp / "data")
        os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
        os.environ["ANALOGY_STUDIO_SETTINGS"] = str(tmp / "settings.ini")
        project, split, setup = make_split(tmp, args.n, args.seed)
        from studio.baselines.data import load_glyph_split

        t = time.perf_counter()
        data = load_glyph_split(split)
        setup["load_s"] = time.perf_counter() - t
        result: dict[str, Any] = {
            "puzzles": data.n,
            "parts": {p: len(data.part_indices(p)) for p in ("train", "val", "test")},
            "setup": {k: round(v, 1) for k, v in setup.items()},
            "throughput": throughput(data, args.device, args.epochs, args.reference_steps),
        }
        if not args.skip_stall:
            result["stall"] = stall(project, split, args.stall_epochs, args.device)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
