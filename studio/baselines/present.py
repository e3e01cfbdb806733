"""How a baseline job's report reads to people: whether a result is a report, the model
groups with their labels and recipes, why a puzzle or a group was flagged, how the job ran and
how many of something, in words. Below the GUI (issue 27: the dashboard's pure helpers), so a
card or a CLI can say the same."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from studio.baselines import MODEL_GROUPS
from studio.core.errors import StudioError

#: The format of a baseline job's report (``report["format"]``)
REPORT_FORMAT = "analogy-studio.baseline-report"
#: The model groups in the order the dialog and the charts list them
GROUP_ORDER: tuple[str, ...] = tuple(MODEL_GROUPS)


def is_report(result: Any) -> bool:
    """Whether a job's result is a baseline report (the dashboard shows its charts)."""
    return isinstance(result, Mapping) and result.get("format") == REPORT_FORMAT


def baseline_groups() -> dict[str, list[tuple[str, str, str]]]:
    """Model group -> ``[(model id, label, recipe)]``: from ``REGISTRIES["baselines"]`` (meta
    ``group``) when the baselines are registered, else the built-in groups of
    :data:`studio.baselines.MODEL_GROUPS` (ids only)."""
    groups: dict[str, list[tuple[str, str, str]]] = {}
    try:
        from studio.plugins import registry

        reg = registry("baselines")
        for model in reg.ids():
            meta = reg.meta(model)
            group = str(meta.get("group") or model)
            groups.setdefault(group, []).append(
                (model, str(meta.get("label") or model), str(meta.get("recipe") or ""))
            )
    except StudioError:
        groups = {}
    if not groups:
        from studio.baselines import MODEL_GROUPS

        groups = {g: [(m, m, "") for m in ids] for g, ids in MODEL_GROUPS.items()}
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    return dict(sorted(groups.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


# ---- flags and the compute record, in words -----------------------------------------------------


def flag_reason(flag: Mapping[str, Any]) -> str:
    """Why a puzzle is flagged, in words, for a model that gives no reason of its own (the
    trained partial-input CNNs; the probes name their features)."""
    model = str(flag.get("model", "a model"))
    right, seeds = flag.get("seeds_correct", "?"), flag.get("seeds", "?")
    conf = flag.get("confidence")
    sure = f", mean confidence {float(conf):.2f}" if conf is not None else ""
    return f"{model} chose the key in {right} of {seeds} seeds without the whole context{sure}"


def group_flag_reason(group: Mapping[str, Any]) -> str:
    """Why a rule or concept is flagged, in words, where the model gave no reason."""
    model = str(group.get("model", "a model"))
    excess = group.get("excess_points")
    by = f" by {float(excess):.1f} points" if excess is not None else ""
    return f"{model} beats chance{by} here without the whole context"


def compute_text(report: Mapping[str, Any]) -> str:
    """How a job ran, in one line (issue 26), from the report's ``compute`` record: the
    device and GPU, how the seeds trained, the peak GPU memory and how busy the GPU was — a
    lab reads there whether its GPU did the work. Empty for a report without the record."""
    compute = report.get("compute")
    if not isinstance(compute, Mapping):
        return ""
    device = str(report.get("device") or compute.get("device") or "?")
    bits = [f"Ran on {device}"]
    if compute.get("trained"):
        how = {
            "vmap": "the seeds trained in one batched step",
            "loop": "the seeds trained together, their forward passes in turn",
        }
        ensemble = how.get(str(compute.get("ensemble")))
        if ensemble:
            graphs = " replayed as CUDA graphs" if compute.get("cuda_graphs") else ""
            bits.append(ensemble + graphs)
        turns = compute.get("side_by_side")
        if isinstance(turns, list) and len(turns) > 1:
            bits.append(f"{len(turns)} models side by side, taking turns on their own streams")
        if compute.get("cuda_graph_failure"):
            bits.append(f"CUDA graphs off ({compute['cuda_graph_failure']})")
        if compute.get("autocast"):
            bits.append(f"{compute['autocast']} autocast")
        if compute.get("compiled"):
            bits.append(f"compiled ({compute['compiled']})")
        peak = compute.get("peak_gpu_memory_mib")
        if _number(peak):
            bits.append(f"peak GPU memory {peak:,.0f} MiB")
        busy = compute.get("gpu_utilisation")
        mean = busy.get("mean_percent") if isinstance(busy, Mapping) else None
        if _number(mean):
            bits.append(f"GPU busy {mean:.0f} % of the time")
    return " · ".join(bits)


def count_text(n: int, singular: str, plural: str | None = None) -> str:
    """A count and its noun, as the report's lines say it: ``1 shortcut-prone puzzle``,
    ``3 shortcut-prone puzzles``, ``2 rules or concepts`` (``plural`` where adding an s is
    wrong)."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def _number(value: Any) -> bool:
    """A number a report may hold (an edited or foreign report's text or flag is left out)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


__all__ = [
    "GROUP_ORDER",
    "REPORT_FORMAT",
    "baseline_groups",
    "compute_text",
    "count_text",
    "flag_reason",
    "group_flag_reason",
    "is_report",
]
