"""Baselines: quick models run against a split or a drafted puzzle set to catch shortcuts.

The UA paper's context-blind model (§4.1), VASR's partial-input and training-free baselines
(§4.2, Table 3), the spatial-reasoning paper's CNN+MLP / Siamese / CNN+Max (§4) and MARVEL's
group accuracy (perception and reasoning together). Every baseline is registered in
``studio.plugins.REGISTRIES["baselines"]`` with its documented recipe.

Modules, and what they may import:

- :mod:`studio.baselines.data` (numpy): the puzzles of a source as arrays, with their row
  structure, parts, group labels and perception questions;
- :mod:`studio.baselines.metrics` (numpy/scipy): accuracy with Wilson intervals, binomial tests,
  Holm-corrected group flags, puzzle flags, MARVEL group accuracy;
- :mod:`studio.baselines.training_free` (numpy): pixel and feature similarity, distractor
  elimination, embedding arithmetic over a fixed hand-designed encoder;
- :mod:`studio.baselines.probes` (numpy/scipy): the answers-only shortcut probes (a
  conditional logit over each answer's tags or image pseudo-tags), cross-fitted, with reasons;
- :mod:`studio.baselines.perception` (numpy): perception questions answered by a probe on a
  model's encoder, for MARVEL's group accuracy;
- :mod:`studio.baselines.nets` and :mod:`studio.baselines.trained` (torch): the trained models;
- :mod:`studio.baselines.run`: ``run_baselines`` (torch only inside functions), the report;
- :mod:`studio.baselines.job`: the worker's ``baseline`` job kind;
- :mod:`studio.baselines.plots` (matplotlib, no Qt): the report's charts.

Nothing here imports torch at module level except ``nets`` and ``trained``, which only
``run`` imports, inside a function: the GUI and the CLI start without torch.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TypeVar

from studio.core.errors import StudioError

_T = TypeVar("_T")
#: A piece of training that yields after each optimiser step and returns its result, so that
#: several models can take turns on one thread (:meth:`studio.baselines.run._Runner.take_turns`).
Steps = Generator[None, None, _T]


def run_steps(steps: Steps[_T]) -> _T:
    """Run a :data:`Steps` generator to its end and return its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


class BaselineCancelled(StudioError):
    """``should_stop()`` said stop: the run ends between two batches."""

    def __init__(self, message: str = "the baseline run was cancelled") -> None:
        super().__init__(message)


#: Group names the CLI and the job accept, and the model ids they stand for.
MODEL_GROUPS: dict[str, tuple[str, ...]] = {
    "blind": ("blind",),
    "context": ("context",),
    "similarity": ("pixel-similarity", "feature-similarity", "elimination", "arithmetic"),
    "partial": ("partial-answers", "partial-row1", "partial-row2"),
    "spatial": ("cnn-mlp", "siamese", "cnn-max"),
    "probes": ("probe-tags", "probe-image", "probe-row1", "probe-row2"),
    # the papers' solvers (issue 26): asked for by name, never in the default job (minutes
    # on a CPU for 1,000 puzzles, where the default job takes seconds)
    "published": ("resnet18", "wren", "scl"),
}

#: What a job and ``analogy-studio baseline`` run when no models are named: the probes are
#: cheap (seconds on a CPU) and catch answer-set leaks the blind CNN misses.
DEFAULT_MODELS: tuple[str, ...] = ("blind", "context", "similarity", "partial", "probes")

#: Every built-in model id, in report order.
ALL_MODELS: tuple[str, ...] = tuple(m for ms in MODEL_GROUPS.values() for m in ms)


#: Epochs a fit takes at most when none are asked for (early stopping ends most sooner).
DEFAULT_EPOCHS = 10


def run_counts(epochs: int | None, seeds: int | Sequence[int]) -> tuple[int, list[int]]:
    """A run's epochs (the default for None) and seeds (a count: seeds 0..n-1), checked.
    Here, not in the runner, so that the command line refuses a bad count before it reads
    the split (it reads it while the runner's modules import)."""
    epochs = DEFAULT_EPOCHS if epochs is None else int(epochs)
    if epochs < 1:
        raise StudioError(f"--epochs must be at least 1 (got {epochs})")
    if isinstance(seeds, int):
        if seeds < 1:
            raise StudioError(f"--seeds must be at least 1 (got {seeds})")
        return epochs, list(range(seeds))
    out = [int(s) for s in seeds]
    if not out:
        raise StudioError("no seeds given")
    return epochs, out


def expand_models(models: str | Sequence[str]) -> list[str]:
    """Model ids from ids and group names (``blind,context,similarity,partial``), in the
    order given, without repeats; StudioError for an unknown name."""
    from studio.plugins import registry

    names = models.split(",") if isinstance(models, str) else list(models)
    reg = registry("baselines")
    out: list[str] = []
    for raw in names:
        name = str(raw).strip()
        if not name:
            continue
        if name in MODEL_GROUPS:
            ids = [m for m in MODEL_GROUPS[name] if m in reg]
        elif name in reg:
            ids = [name]
        else:
            groups = ", ".join(MODEL_GROUPS)
            raise StudioError(
                f"no baseline or group called {name!r} (groups: {groups}; models: "
                f"{', '.join(reg.ids())})"
            )
        out.extend(m for m in ids if m not in out)
    if not out:
        raise StudioError("no models given")
    return out


__all__ = [
    "ALL_MODELS",
    "DEFAULT_EPOCHS",
    "DEFAULT_MODELS",
    "MODEL_GROUPS",
    "BaselineCancelled",
    "Steps",
    "expand_models",
    "run_counts",
    "run_steps",
]
