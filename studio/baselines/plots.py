"""The baseline report's charts: matplotlib ``Figure`` objects, never pyplot, never Qt.

The same figures serve two front ends: :func:`write_plots` saves them as PNG (the Agg
renderer: the CLI, the worker, a split's report, the dashboard's *Export report…*), and the
studio's Baselines tab puts them on a ``FigureCanvasQTAgg``. Nothing here imports Qt or
pyplot, so the module is safe in the worker, the CLI and tests without a display, and it holds
no global figure state (pyplot's figure manager would keep every figure alive).

Figures (keys of :func:`figures`, file stems of :func:`write_plots`), each drawn only when the
report has data for it:

- ``accuracy-rule`` / ``accuracy-concept``: per rule (concept) and for all puzzles, one bar
  per model (its accuracy on the report's ``eval_part``, mean over seeds) with its Wilson 95%
  interval as an error bar, and chance as a dashed line. A group flagged at split level (more
  than 5 points over chance, Holm-corrected p < 0.05) carries a star above its bar.
- ``training-curves``: for each trained model, validation accuracy and training loss per epoch,
  mean over seeds (the band spans the seeds' lowest and highest values).
- ``blind-vs-context``: per concept, the context-blind model against the full-context one,
  with chance; only when both ran.

A model keeps its colour in every figure (:func:`model_colour`), and titles name the split,
the evaluated part and the device.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from studio.baselines import ALL_MODELS
from studio.core.errors import StudioError

__all__ = [
    "PLOT_NAMES",
    "PLOT_TITLES",
    "ModelSummaryRow",
    "accuracy_figure",
    "blind_vs_context_figure",
    "figures",
    "model_colour",
    "model_summary_rows",
    "report_caption",
    "training_curves_figure",
    "write_plots",
    "write_report_bundle",
]

#: Every figure this module can draw, in display order.
PLOT_NAMES: tuple[str, ...] = (
    "accuracy-rule",
    "accuracy-concept",
    "training-curves",
    "blind-vs-context",
)
#: A short title per figure (tab names in the GUI).
PLOT_TITLES: dict[str, str] = {
    "accuracy-rule": "Accuracy per rule",
    "accuracy-concept": "Accuracy per concept",
    "training-curves": "Training curves",
    "blind-vs-context": "Blind vs context",
}

# Colour-blind-safe first (Okabe-Ito), then distinct extras; one fixed colour per built-in
# model so "blind" is the same vermillion in every chart, the GUI's tables and the PNGs.
_MODEL_COLOURS: dict[str, str] = dict(
    zip(
        ALL_MODELS,
        (
            "#D55E00",  # blind
            "#0072B2",  # context
            "#009E73",  # pixel-similarity
            "#56B4E9",  # feature-similarity
            "#CC79A7",  # elimination
            "#E69F00",  # arithmetic
            "#8C564B",  # partial-answers
            "#9467BD",  # partial-row1
            "#BCBD22",  # partial-row2
            "#17BECF",  # cnn-mlp
            "#7F7F7F",  # siamese
            "#1F3A5F",  # cnn-max
        ),
        strict=False,
    )
)
_EXTRA_COLOURS = ("#E377C2", "#2CA02C", "#FF7F0E", "#AEC7E8", "#98DF8A", "#C5B0D5", "#C49C94")
_CHANCE_STYLE: dict[str, Any] = {"color": "#444444", "linestyle": "--", "linewidth": 1.2}
_LABEL_CHARS = 22  # longer group names are cut with an ellipsis
_DPI = 100
_LEGEND_WIDTH = 3.2  # inches right of the axes for the legend


def model_colour(model: str) -> str:
    """The model's colour in every chart: fixed for the built-ins, stable for others (from a
    checksum of the id, so a plugin's model keeps its colour between runs)."""
    colour = _MODEL_COLOURS.get(model)
    if colour is not None:
        return colour
    return _EXTRA_COLOURS[zlib.crc32(model.encode()) % len(_EXTRA_COLOURS)]


def _short(text: str, limit: int = _LABEL_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _models(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    models = report.get("models")
    if not isinstance(models, Mapping):
        raise StudioError("the baseline report has no 'models' table")
    return dict(models)


def _model_label(report: Mapping[str, Any], model: str) -> str:
    label = str(_models(report)[model].get("label") or model)
    return label if label == model else f"{label} ({model})"


def _source_name(source: Mapping[str, Any]) -> str:
    path = str(source.get("path") or "")
    name = Path(path).name if path else "?"
    if source.get("kind") == "project-set" or source.get("set_id") is not None:
        return f"set {source.get('set_id')} of {name}"
    return f"split {name}"


def report_caption(report: Mapping[str, Any]) -> str:
    """One line naming what was measured: the split (or project set), its family, the
    evaluated part and its size, the seeds and the device. Subtitle of every figure."""
    source = report.get("source") or {}
    part = str(report.get("eval_part") or "test")
    n_part = (source.get("parts") or {}).get(part)
    bits = [_source_name(source)]
    if source.get("family"):
        bits[0] += f" ({source['family']})"
    bits.append(f"{part} part" + (f", {n_part:,} puzzles" if n_part is not None else ""))
    seeds = report.get("seeds") or []
    if seeds:
        bits.append(f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}")
    bits.append(str(report.get("device") or "device unknown"))
    return " · ".join(bits)


# ---- the summary table (GUI and CLI) -----------------------------------------------------------
@dataclass(frozen=True)
class ModelSummaryRow:
    """One model's headline numbers, as the dashboard's table and the CLI's summary print
    them. ``group_accuracy`` is MARVEL's (puzzle and its perception questions all right)."""

    model: str
    label: str
    group: str
    trained: bool
    n: int
    accuracy: float
    ci_low: float
    ci_high: float
    chance: float
    p_value: float | None
    seeds: int
    flagged_groups: int
    flagged_puzzles: int
    group_accuracy: float | None
    colour: str

    @property
    def excess_points(self) -> float:
        """Accuracy over chance, in percentage points."""
        return 100.0 * (self.accuracy - self.chance)


def model_summary_rows(report: Mapping[str, Any]) -> list[ModelSummaryRow]:
    """Per model, in report order: accuracy with its 95% interval, chance, p, seeds, and how
    many groups and puzzles it flagged."""
    flags = report.get("flags") or {}
    group_flags: dict[str, int] = {}
    for f in flags.get("groups") or []:
        group_flags[f.get("model", "")] = group_flags.get(f.get("model", ""), 0) + 1
    puzzle_flags: dict[str, int] = {}
    for f in flags.get("puzzles") or []:
        puzzle_flags[f.get("model", "")] = puzzle_flags.get(f.get("model", ""), 0) + 1
    chance_default = float(report.get("chance") or 0.0)
    rows = []
    for model, entry in _models(report).items():
        overall = entry.get("overall") or {}
        ci = overall.get("ci95") or [math.nan, math.nan]
        ga = entry.get("group_accuracy")
        p = overall.get("p_value")
        rows.append(
            ModelSummaryRow(
                model=model,
                label=str(entry.get("label") or model),
                group=str(entry.get("group") or ""),
                trained=bool(entry.get("trained", False)),
                n=int(overall.get("n") or 0),
                accuracy=float(overall.get("accuracy") or 0.0),
                ci_low=float(ci[0]),
                ci_high=float(ci[1]),
                chance=float(overall.get("chance", chance_default)),
                p_value=None if p is None else float(p),
                seeds=len(entry.get("per_seed") or []),
                flagged_groups=group_flags.get(model, 0),
                flagged_puzzles=puzzle_flags.get(model, 0),
                group_accuracy=None if not ga else float(ga.get("accuracy") or 0.0),
                colour=model_colour(model),
            )
        )
    return rows


# ---- drawing helpers ---------------------------------------------------------------------------
def _new_figure(width: float, height: float) -> Figure:
    # constrained layout makes room for rotated labels and the legend above the axes
    return Figure(figsize=(width, height), dpi=_DPI, layout="constrained")


def _titles(fig: Figure, title: str, report: Mapping[str, Any]) -> None:
    fig.suptitle(f"{title}\n{report_caption(report)}", fontsize=11)


def _err(acc: float, ci: Sequence[float] | None) -> tuple[float, float]:
    """(below, above) error-bar lengths from a 95% interval; never negative (rounded intervals
    may sit a hair beside the accuracy)."""
    if not ci or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return 0.0, 0.0
    return max(0.0, acc - float(ci[0])), max(0.0, float(ci[1]) - acc)


def _chance_line(ax: Axes, chances: Sequence[float], xs: Sequence[float], half: float) -> None:
    """Chance as one dashed line, or per group when groups differ (mixed answer counts)."""
    if not chances:
        return
    if max(chances) - min(chances) < 1e-9:
        ax.axhline(chances[0], label=f"chance ({chances[0]:.0%})", zorder=1, **_CHANCE_STYLE)
        return
    for i, (x, c) in enumerate(zip(xs, chances, strict=True)):
        ax.hlines(c, x - half, x + half, label="chance" if i == 0 else None, zorder=1,
                  **_CHANCE_STYLE)  # fmt: skip


def _group_axis(ax: Axes, labels: Sequence[str]) -> None:
    ax.set_xticks(range(len(labels)))
    rotate = len(labels) > 6 or any(len(lb) > 10 for lb in labels)
    ax.set_xticklabels(
        [_short(lb) for lb in labels],
        rotation=35 if rotate else 0,
        ha="right" if rotate else "center",
        rotation_mode="anchor",
        fontsize=9,
    )
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(0.0, 1.05)
    ax.grid(axis="y", color="#dddddd", linewidth=0.7)
    ax.set_axisbelow(True)


def _grouped_bars(
    ax: Axes,
    report: Mapping[str, Any],
    models: Sequence[str],
    columns: Sequence[tuple[str, Mapping[str, Mapping[str, Any]]]],
) -> None:
    """Bars: one cluster per column (a label and, per model, its summary dict), one bar per
    model, with Wilson error bars, stars on flagged groups and the chance line. Each bar's
    ``gid`` is ``"<model>|<column label>"`` (tests and tooltips find a bar by it)."""
    k = max(1, len(models))
    width = 0.8 / k
    chance_default = float(report.get("chance") or 0.0)
    any_star = False
    for j, model in enumerate(models):
        xs, heights, lows, highs, gids = [], [], [], [], []
        for i, (label, per_model) in enumerate(columns):
            summary = per_model.get(model)
            if not summary or summary.get("accuracy") is None:
                continue
            acc = float(summary["accuracy"])
            lo, hi = _err(acc, summary.get("ci95"))
            xs.append(i + (j - (k - 1) / 2) * width)
            heights.append(acc)
            lows.append(lo)
            highs.append(hi)
            gids.append(f"{model}|{label}")
            if summary.get("flagged"):
                any_star = True
                ax.text(xs[-1], min(1.02, acc + hi + 0.01), "*", ha="center", va="bottom",
                        color=model_colour(model), fontsize=12, fontweight="bold")  # fmt: skip
        bars = ax.bar(
            xs, heights, width * 0.92, color=model_colour(model),
            label=_model_label(report, model), zorder=2,
        )  # fmt: skip
        for bar, gid in zip(bars, gids, strict=True):
            bar.set_gid(gid)
        if xs:
            ax.errorbar(xs, heights, yerr=[lows, highs], fmt="none", ecolor="#222222",
                        elinewidth=0.8, capsize=2 if k <= 6 else 0, zorder=3)  # fmt: skip
    chances = []
    for _label, per_model in columns:
        values = [float(s.get("chance", chance_default)) for s in per_model.values() if s]
        chances.append(values[0] if values else chance_default)
    _chance_line(ax, chances, list(range(len(columns))), 0.45)
    if columns and columns[0][0] == "all puzzles" and len(columns) > 1:
        ax.axvline(0.5, color="#999999", linewidth=0.8, linestyle=":")
    _group_axis(ax, [label for label, _ in columns])
    ax.set_ylabel(f"accuracy on the {report.get('eval_part') or 'test'} part")
    if any_star:
        ax.plot([], [], " ", label="* flagged: > 5 points over chance, Holm p < 0.05")


def _legend(ax: Axes, source: Axes | None = None) -> None:
    """The legend right of ``ax`` (outside it; constrained layout makes room): the models in
    report order, then chance and notes. ``source`` lends its entries (default ``ax``)."""
    handles, labels = (source or ax).get_legend_handles_labels()
    if not handles:
        return
    order = sorted(
        range(len(labels)),
        key=lambda i: (labels[i].startswith(("chance", "*")), i),
    )
    ax.legend([handles[i] for i in order], [labels[i] for i in order], loc="upper left",
              bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8,
              frameon=False)  # fmt: skip


def _width_for(columns: int, bars_per_column: int) -> float:
    per_column = max(0.5, 0.14 * bars_per_column + 0.25)
    return max(7.0, min(24.0, 1.6 + columns * per_column)) + _LEGEND_WIDTH


# ---- the figures -------------------------------------------------------------------------------
def accuracy_figure(report: Mapping[str, Any], by: str) -> Figure | None:
    """Accuracy per ``by`` group (``"rule"``, ``"concept"``, ``"layout"``, ``"family"``) for
    every model with such groups, after an "all puzzles" cluster; None when no model has any."""
    models = _models(report)
    ids = [m for m, e in models.items() if (e.get("groups") or {}).get(by)]
    if not ids:
        return None
    values = sorted({v for m in ids for v in models[m]["groups"][by]})
    columns: list[tuple[str, Mapping[str, Mapping[str, Any]]]] = [
        ("all puzzles", {m: models[m].get("overall") or {} for m in ids})
    ]
    columns += [(v, {m: models[m]["groups"][by].get(v) or {} for m in ids}) for v in values]
    fig = _new_figure(_width_for(len(columns), len(ids)), 5.4)
    ax = fig.add_subplot()
    _grouped_bars(ax, report, ids, columns)
    ax.set_xlabel(by)
    _titles(fig, f"Accuracy per {by}, each model against chance (95% intervals)", report)
    _legend(ax)
    return fig


def _curve_series(per_seed: Sequence[Mapping[str, Any]], key: str) -> dict[int, list[float]]:
    by_epoch: dict[int, list[float]] = {}
    for seed in per_seed:
        for point in seed.get("curve") or []:
            value = point.get(key)
            if value is not None and point.get("epoch") is not None:
                by_epoch.setdefault(int(point["epoch"]), []).append(float(value))
    return by_epoch


def _plot_mean(ax: Axes, by_epoch: Mapping[int, list[float]], colour: str, label: str) -> None:
    epochs = sorted(by_epoch)
    means = [sum(by_epoch[e]) / len(by_epoch[e]) for e in epochs]
    line = ax.plot(epochs, means, marker="o", markersize=3.5, color=colour, label=label)[0]
    line.set_gid(label)
    if any(len(by_epoch[e]) > 1 for e in epochs):
        ax.fill_between(epochs, [min(by_epoch[e]) for e in epochs],
                        [max(by_epoch[e]) for e in epochs], color=colour, alpha=0.15,
                        linewidth=0)  # fmt: skip


def training_curves_figure(report: Mapping[str, Any]) -> Figure | None:
    """Validation accuracy and training loss per epoch of every trained model (mean over
    seeds, band = the seeds' range); None when no model recorded a curve."""
    models = _models(report)
    trained = [
        m for m, e in models.items()
        if any(s.get("curve") for s in e.get("per_seed") or [])
    ]  # fmt: skip
    if not trained:
        return None
    fig = _new_figure(10.0 + _LEGEND_WIDTH, 5.0)
    ax_acc, ax_loss = fig.subplots(1, 2)
    acc_key = "val_acc"
    if not any(_curve_series(models[m]["per_seed"], "val_acc") for m in trained):
        acc_key = "train_acc"  # no validation part: show what was measured, and say so
    max_epoch = 1
    for m in trained:
        per_seed = models[m]["per_seed"]
        acc = _curve_series(per_seed, acc_key)
        loss = _curve_series(per_seed, "loss")
        label = _model_label(report, m)
        if acc:
            _plot_mean(ax_acc, acc, model_colour(m), label)
            max_epoch = max(max_epoch, *acc)
        if loss:
            _plot_mean(ax_loss, loss, model_colour(m), label)
            max_epoch = max(max_epoch, *loss)
    chance = report.get("chance")
    if chance is not None:
        ax_acc.axhline(float(chance), label=f"chance ({float(chance):.0%})", **_CHANCE_STYLE)
    which = "validation" if acc_key == "val_acc" else "training"
    ax_acc.set_title(f"{which} accuracy", fontsize=10)
    ax_acc.set_ylabel(f"{which} accuracy")
    ax_acc.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax_acc.set_ylim(0.0, 1.05)
    ax_loss.set_title("training loss (cross-entropy)", fontsize=10)
    ax_loss.set_ylabel("loss")
    for ax in (ax_acc, ax_loss):
        ax.set_xlabel("epoch")
        ax.set_xlim(0.5, max_epoch + 0.5)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(color="#dddddd", linewidth=0.7)
        ax.set_axisbelow(True)
    seeds = max(len(models[m].get("per_seed") or []) for m in trained)
    _titles(fig, f"Training curves, mean over {seeds} seed{'s' if seeds != 1 else ''}", report)
    _legend(ax_loss, ax_acc)
    return fig


def blind_vs_context_figure(report: Mapping[str, Any]) -> Figure | None:
    """Per concept (per rule when the puzzles have no concepts): the context-blind model
    against the full-context one, with chance. None unless both ran."""
    models = _models(report)
    if "blind" not in models or "context" not in models:
        return None
    pair = ("blind", "context")
    by = "concept"
    if not any((models[m].get("groups") or {}).get(by) for m in pair):
        by = "rule"
    groups = {m: (models[m].get("groups") or {}).get(by) or {} for m in pair}
    values = sorted(set(groups["blind"]) | set(groups["context"]))
    columns: list[tuple[str, Mapping[str, Mapping[str, Any]]]] = [
        ("all puzzles", {m: models[m].get("overall") or {} for m in pair})
    ]
    columns += [(v, {m: groups[m].get(v) or {} for m in pair}) for v in values]
    fig = _new_figure(_width_for(len(columns), 2), 5.4)
    ax = fig.add_subplot()
    _grouped_bars(ax, report, list(pair), columns)
    ax.set_xlabel(by)
    _titles(fig, f"Context-blind vs full-context accuracy per {by}", report)
    _legend(ax)
    return fig


def figures(report: Mapping[str, Any]) -> dict[str, Figure]:
    """Every figure the report has data for, keyed by :data:`PLOT_NAMES` (in that order).
    A figure without data is left out (no trained model: no ``training-curves``; blind or
    context missing: no ``blind-vs-context``)."""
    made: dict[str, Figure | None] = {
        "accuracy-rule": accuracy_figure(report, "rule"),
        "accuracy-concept": accuracy_figure(report, "concept"),
        "training-curves": training_curves_figure(report),
        "blind-vs-context": blind_vs_context_figure(report),
    }
    return {name: fig for name, fig in made.items() if fig is not None}


# ---- files -------------------------------------------------------------------------------------
def write_plots(report: Mapping[str, Any], out_dir: str | Path, dpi: int = 110) -> dict[str, str]:
    """Save every figure of :func:`figures` as ``out_dir/<name>.png`` (Agg; the folder is
    made). Returns name -> path **relative to out_dir's parent**, i.e. ``"plots/<name>.png"``
    when ``out_dir`` is ``<report folder>/plots``: exactly what the report's ``plots`` field
    holds when ``report.json`` sits in ``out_dir``'s parent (see :func:`write_report_bundle`).
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StudioError(f"cannot make the plots folder: {e.strerror or e}", out) from None
    written: dict[str, str] = {}
    for name, fig in figures(report).items():
        path = out / f"{name}.png"
        try:
            fig.savefig(path, dpi=dpi, format="png", facecolor="white")
        except OSError as e:
            raise StudioError(f"cannot write the plot: {e.strerror or e}", path) from None
        written[name] = f"{out.name}/{name}.png"
    return written


def write_report_bundle(report: Mapping[str, Any], folder: str | Path) -> Path:
    """Write ``folder/report.json`` and its charts in ``folder/plots/``; the JSON's ``plots``
    field lists them (paths relative to ``folder``). Returns the JSON's path."""
    folder = Path(folder)
    plots = write_plots(report, folder / "plots")
    data = dict(report)
    data["plots"] = plots
    path = folder / "report.json"
    try:
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise StudioError(f"cannot write the report: {e.strerror or e}", path) from None
    return path
