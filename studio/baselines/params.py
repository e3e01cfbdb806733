"""A baseline job's parameters, one type for every front end (issue 27).

The CLI's ``jobs baseline``, the Baselines tab's dialog and the worker's job all read and
write the same :class:`BaselineJobParams`: before, the CLI and the dialog each built the
queue's dict with their own defaults (the CLI ran blind and the probes, the dialog five model
groups). The defaults here come from one definition each: :data:`studio.baselines.DEFAULT_MODELS`
and :data:`DEFAULT_SEEDS`. No torch here: the GUI imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from studio.baselines import DEFAULT_MODELS
from studio.core.errors import StudioError

#: Seeds a job trains each model with when none are given.
DEFAULT_SEEDS = 3
#: Where a job's puzzles come from.
SOURCE_KINDS = ("project-set", "split-dir")


@dataclass(frozen=True)
class BaselineJobParams:
    """What one baseline job runs (:mod:`studio.baselines.job` says what each field does).
    ``beside_window``: the job runs beside the studio's window (a core left free, niced);
    ``analogy-studio jobs`` runs jobs with no window and says False."""

    source: Mapping[str, Any]
    models: tuple[str, ...] = DEFAULT_MODELS
    seeds: int = DEFAULT_SEEDS
    device: str = "auto"
    epochs: int | None = None
    beside_window: bool = True
    cross_fit: bool = True
    cuda_speedups: bool = False
    compile: bool = False
    #: on a GPU, replay each batched training step as a CUDA graph (off: launch its kernels
    #: one by one, for a lab that suspects the graphs)
    cuda_graphs: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kind = self.source.get("kind") if isinstance(self.source, Mapping) else None
        if kind not in SOURCE_KINDS:
            raise StudioError(
                f"a baseline job's source must be one of {', '.join(SOURCE_KINDS)}, not {kind!r}"
            )
        if isinstance(self.models, str) or not all(isinstance(m, str) for m in self.models):
            raise StudioError(f"models must be a list of model ids or groups, not {self.models!r}")
        if not self.models:
            raise StudioError("a baseline job needs at least one model")
        if type(self.seeds) is not int or self.seeds < 1:
            raise StudioError(f"seeds must be a whole number of at least 1, not {self.seeds!r}")
        if self.epochs is not None and (type(self.epochs) is not int or self.epochs < 1):
            raise StudioError(f"epochs must be a whole number of at least 1, not {self.epochs!r}")
        for name in ("beside_window", "cross_fit", "cuda_speedups", "compile", "cuda_graphs"):
            if not isinstance(getattr(self, name), bool):
                raise StudioError(f"{name} must be true or false, not {getattr(self, name)!r}")

    @classmethod
    def of(cls, source: Mapping[str, Any], models: Sequence[str] | str | None = None,
           **kw: Any) -> BaselineJobParams:  # fmt: skip
        """Parameters from front-end values: ``models`` a list or a comma-separated string
        (None or empty: :data:`DEFAULT_MODELS`)."""
        if isinstance(models, str):
            models = [m.strip() for m in models.split(",") if m.strip()]
        return cls(dict(source), tuple(models) if models else DEFAULT_MODELS, **kw)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaselineJobParams:
        """The parameters a job was queued with (older jobs lack fields: the defaults)."""
        if not isinstance(data.get("source"), Mapping):
            raise StudioError("the job has no source (expected a split-dir or project-set dict)")
        known = {f for f in cls.__dataclass_fields__ if f not in ("extra",)}
        given = {k: v for k, v in data.items() if k in known and v is not None}
        models = given.pop("models", None)
        if isinstance(models, str):  # "blind,probes", as the CLI takes them
            models = [m.strip() for m in models.split(",") if m.strip()]
        given["models"] = tuple(models) if models else DEFAULT_MODELS
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**given, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The queue's dict (JSON-ready)."""
        return {
            **self.extra,
            "source": dict(self.source),
            "models": list(self.models),
            "seeds": self.seeds,
            "device": self.device,
            "epochs": self.epochs,
            "beside_window": self.beside_window,
            "cross_fit": self.cross_fit,
            "cuda_speedups": self.cuda_speedups,
            "compile": self.compile,
            "cuda_graphs": self.cuda_graphs,
        }


__all__ = ["DEFAULT_SEEDS", "SOURCE_KINDS", "BaselineJobParams"]
