"""The baseline report's charts, headless: the figures carry the report's numbers (bar heights,
error bars, curves, chance), every model keeps its colour, and the PNGs are real images.

The report is written by hand after the spec's format: a plotting test needs exact, known
numbers, not a training run (tests/baselines' other files cover real runs)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from PIL import Image

from studio.baselines.plots import (
    PLOT_NAMES,
    figures,
    model_colour,
    model_summary_rows,
    write_plots,
    write_report_bundle,
)
from studio.core.errors import StudioError

RULES = ("progression", "constant", "distribute-three")
CONCEPTS = ("closure", "symmetry-about-the-vertical-axis-of-the-glyph", "number-of-strokes")
LONG = CONCEPTS[1]


def wilson(acc: float, n: int) -> list[float]:
    z = 1.959964
    d = 1 + z * z / n
    c = (acc + z * z / (2 * n)) / d
    h = z * math.sqrt(acc * (1 - acc) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


def summary(acc: float, n: int, flagged: bool = False) -> dict[str, Any]:
    return {"n": n, "accuracy": acc, "ci95": wilson(acc, n), "chance": 0.25, "p_value": 0.3,
            "flagged": flagged}  # fmt: skip


def curve(seed: int, base: float) -> list[dict[str, Any]]:
    return [
        {"epoch": e, "loss": round(1.4 - 0.05 * e - 0.01 * seed, 4), "train_acc": 0.3,
         "val_acc": round(base + 0.02 * e + 0.01 * seed, 4)}
        for e in range(1, 6)
    ]  # fmt: skip


def model(label: str, base: float, trained: bool, group: str) -> dict[str, Any]:
    seeds = (0, 1, 2) if trained else (None,)
    return {
        "label": label,
        "group": group,
        "recipe": "…",
        "trained": trained,
        "family_kind": "any",
        "overall": {**summary(base, 300), "correct": base * 300},
        "per_seed": [
            {
                "seed": s,
                "accuracy": base,
                "train_seconds": 1.0,
                "epochs": 5 if trained else 0,
                "curve": curve(s or 0, base) if trained else [],
            }
            for s in seeds
        ],
        "groups": {
            "rule": {
                r: summary(round(base + 0.1 * i, 4), 100, flagged=(group == "blind" and i == 2))
                for i, r in enumerate(RULES)
            },
            "concept": {c: summary(round(base + 0.05 * i, 4), 100) for i, c in enumerate(CONCEPTS)},
        },
        "group_accuracy": None,
        "throughput": {"train_puzzles_per_s": 900.0, "infer_puzzles_per_s": 6000.0},
    }


def make_report() -> dict[str, Any]:
    return {
        "format": "analogy-studio.baseline-report",
        "format_version": 1,
        "source": {"kind": "split-dir", "path": "/data/splits/glyph-vetted", "set_id": None,
                   "family": "glyph-pmp", "puzzles": 1500,
                   "parts": {"train": 1050, "val": 150, "test": 300}, "answers": 4},
        "device": "cpu (1 thread)",
        "seeds": [0, 1, 2],
        "eval_part": "test",
        "chance": 0.25,
        "models": {
            "blind": model("Context-blind CNN", 0.3, True, "blind"),
            "context": model("Full-context ResNet", 0.55, True, "context"),
            "pixel-similarity": model("Pixel similarity", 0.4, False, "similarity"),
        },
        "predictions": [],
        "flags": {
            "puzzles": [{"id": "test-00012", "model": "blind", "confidence": 0.91,
                         "seeds_correct": 3, "seeds": 3}],
            "groups": [{"model": "blind", "by": "rule", "value": "distribute-three", "n": 100,
                        "accuracy": 0.5, "chance": 0.25, "excess_points": 25.0,
                        "p_value": 0.0001}],
        },
        "plots": {},
    }  # fmt: skip


@pytest.fixture
def report() -> dict[str, Any]:
    return make_report()


def bars(fig: Figure) -> dict[str, Rectangle]:
    """The figure's bars by gid ("model|group")."""
    return {
        p.get_gid(): p
        for ax in fig.axes
        for p in ax.patches
        if isinstance(p, Rectangle) and p.get_gid()
    }


def chance_lines(fig: Figure) -> list[Line2D]:
    return [
        ln
        for ax in fig.axes
        for ln in ax.get_lines()
        if ln.get_linestyle() == "--" and str(ln.get_label()).startswith("chance")
    ]


# ---- the figures ---------------------------------------------------------------------------------


def test_every_figure_is_drawn_in_order(report: dict[str, Any]) -> None:
    figs = figures(report)
    assert list(figs) == list(PLOT_NAMES)
    for name, fig in figs.items():
        assert isinstance(fig, Figure), name
        title = fig.get_suptitle()
        assert "glyph-vetted" in title and "cpu (1 thread)" in title, title
        assert "test part, 300 puzzles" in title


def test_accuracy_bars_carry_the_numbers(report: dict[str, Any]) -> None:
    fig = figures(report)["accuracy-rule"]
    found = bars(fig)
    models = report["models"]
    # one bar per model and group, after an "all puzzles" cluster
    assert len(found) == len(models) * (len(RULES) + 1)
    for m, entry in models.items():
        assert found[f"{m}|all puzzles"].get_height() == pytest.approx(entry["overall"]["accuracy"])
        for r in RULES:
            bar = found[f"{m}|{r}"]
            assert bar.get_height() == pytest.approx(entry["groups"]["rule"][r]["accuracy"])
            assert bar.get_facecolor()[:3] == pytest.approx(_rgb(model_colour(m)))
    # bars of one group sit side by side, groups left to right in name order
    xs = [found[f"blind|{r}"].get_x() for r in sorted(RULES)]
    assert xs == sorted(xs)
    ax = fig.axes[0]
    # error bars: Wilson intervals around each bar
    segments = np.concatenate([c.get_segments() for c in ax.collections if c.get_segments()])
    blind_const = report["models"]["blind"]["groups"]["rule"]["constant"]["ci95"]
    assert any(
        s[0][1] == pytest.approx(blind_const[0]) and s[1][1] == pytest.approx(blind_const[1])
        for s in segments
    )
    (chance,) = chance_lines(fig)
    assert list(chance.get_ydata()) == pytest.approx([0.25, 0.25])
    # the flagged group carries a star
    assert any(t.get_text() == "*" for t in ax.texts)


def test_long_concept_names_are_cut_and_turned(report: dict[str, Any]) -> None:
    fig = figures(report)["accuracy-concept"]
    ax = fig.axes[0]
    labels = {t.get_text(): t for t in ax.get_xticklabels()}
    assert "all puzzles" in labels and "closure" in labels
    long = [t for text, t in labels.items() if text.startswith(LONG[:10])]
    assert len(long) == 1
    assert long[0].get_text().endswith("…") and len(long[0].get_text()) <= 22
    assert long[0].get_rotation() == pytest.approx(35)


def test_training_curves_are_the_mean_over_seeds(report: dict[str, Any]) -> None:
    fig = figures(report)["training-curves"]
    acc_ax, loss_ax = fig.axes[:2]
    lines = {ln.get_gid(): ln for ln in acc_ax.get_lines() if ln.get_gid()}
    # trained models only: the training-free one has no curve
    assert set(lines) == {"Context-blind CNN (blind)", "Full-context ResNet (context)"}
    blind = lines["Context-blind CNN (blind)"]
    seeds = report["models"]["blind"]["per_seed"]
    want = [np.mean([s["curve"][e]["val_acc"] for s in seeds]) for e in range(5)]
    assert list(blind.get_xdata()) == [1, 2, 3, 4, 5]
    assert list(blind.get_ydata()) == pytest.approx(want)
    assert blind.get_color() == model_colour("blind")
    loss = {ln.get_gid(): ln for ln in loss_ax.get_lines() if ln.get_gid()}
    want_loss = [np.mean([s["curve"][e]["loss"] for s in seeds]) for e in range(5)]
    assert list(loss["Context-blind CNN (blind)"].get_ydata()) == pytest.approx(want_loss)
    assert chance_lines(fig)


def test_blind_vs_context_per_concept(report: dict[str, Any]) -> None:
    fig = figures(report)["blind-vs-context"]
    found = bars(fig)
    assert {k.split("|")[0] for k in found} == {"blind", "context"}
    for c in CONCEPTS:
        for m in ("blind", "context"):
            want = report["models"][m]["groups"]["concept"][c]["accuracy"]
            assert found[f"{m}|{c}"].get_height() == pytest.approx(want)
    assert chance_lines(fig)


def test_figures_without_data_are_left_out(report: dict[str, Any]) -> None:
    del report["models"]["context"]
    assert "blind-vs-context" not in figures(report)
    for entry in report["models"].values():
        entry["trained"] = False
        for s in entry["per_seed"]:
            s["curve"] = []
    assert list(figures(report)) == ["accuracy-rule", "accuracy-concept"]
    with pytest.raises(StudioError, match="models"):
        figures({"format": "analogy-studio.baseline-report"})


def test_summary_rows(report: dict[str, Any]) -> None:
    rows = {r.model: r for r in model_summary_rows(report)}
    assert list(rows) == ["blind", "context", "pixel-similarity"]
    blind = rows["blind"]
    assert blind.accuracy == 0.3 and blind.chance == 0.25 and blind.n == 300
    assert (blind.ci_low, blind.ci_high) == tuple(report["models"]["blind"]["overall"]["ci95"])
    assert blind.seeds == 3 and rows["pixel-similarity"].seeds == 1
    assert blind.flagged_puzzles == 1 and blind.flagged_groups == 1
    assert rows["context"].flagged_puzzles == 0
    assert blind.excess_points == pytest.approx(5.0)
    assert blind.colour == model_colour("blind")


# ---- files -------------------------------------------------------------------------------------


def _rgb(hex_colour: str) -> tuple[float, float, float]:
    h = hex_colour.lstrip("#")
    return tuple(int(h[i : i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def test_write_plots_makes_real_pngs(report: dict[str, Any], tmp_path: Path) -> None:
    written = write_plots(report, tmp_path / "plots")
    assert written == {name: f"plots/{name}.png" for name in PLOT_NAMES}
    for name, rel in written.items():
        path = tmp_path / rel
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        with Image.open(path) as im:
            pixels = np.asarray(im.convert("RGB"))
        assert pixels.shape[0] >= 400 and pixels.shape[1] >= 700, (name, pixels.shape)
        colours = {tuple(c) for c in pixels.reshape(-1, 3)[::7]}
        assert len(colours) > 20, name  # not a blank canvas
        # the blind model's colour is painted in every chart that shows it
        r, g, b = (round(255 * v) for v in _rgb(model_colour("blind")))
        near = np.abs(pixels.astype(int) - (r, g, b)).sum(axis=2) < 12
        assert near.sum() > 50, name


def test_report_bundle_lists_its_plots(report: dict[str, Any], tmp_path: Path) -> None:
    path = write_report_bundle(report, tmp_path / "out")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["models"].keys() == report["models"].keys()
    assert set(data["plots"]) == set(PLOT_NAMES)
    for rel in data["plots"].values():
        assert (path.parent / rel).is_file()
    assert report["plots"] == {}  # the caller's report is not changed


def test_no_qt_and_no_pyplot() -> None:
    """The worker and the CLI import the module: it must pull in neither Qt nor pyplot."""
    code = (
        "import sys, studio.baselines.plots\n"
        "bad = [m for m in sys.modules if m.startswith(('PySide6', 'matplotlib.pyplot',"
        " 'matplotlib.backends.backend_qt'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
