"""What a split is generated from, for every family alike (issue 27).

The command line, the Generate dialog and the curator's board each used to build their own
arguments for the family's kind: split parameters for a glyph family, a dictionary of
``generate_stimulus_split``'s arguments for the others. A :class:`GenerationRequest` is the one
type all three build and every pipeline reads: the family, ``n``, the seed, the train/val/test
ratios and the family's own options (a glyph family's split parameters are its options), plus
where the work goes (a set's name on the board, a split folder) and how it runs.

Whether a family reads a project's annotations is the family's to say
(:attr:`studio.core.family.Family.needs_project`); :meth:`GenerationRequest.check` says, in
words, when a request was made without one that it needs or with one that it would ignore.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from studio.core.errors import StudioError

DEFAULT_RATIOS = (0.7, 0.1, 0.2)
#: the most puzzles one request may ask for (per fold): beyond it a typo, not a benchmark
MAX_N = 10_000_000


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _shares(ratios: object) -> tuple[float, float, float]:
    """Three finite, non-negative train/val/test shares with a positive sum."""
    import math

    try:
        got = tuple(float(r) for r in ratios)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        got = ()
    if (
        len(got) != 3
        or not all(math.isfinite(r) and r >= 0 for r in got)
        or not math.isfinite(sum(got))
        or sum(got) <= 0
    ):
        raise StudioError(f"ratios {ratios!r}: expected three shares like 0.7, 0.1, 0.2")
    return got  # type: ignore[return-value]


__all__ = ["DEFAULT_RATIOS", "GenerationRequest"]


@dataclass(frozen=True)
class GenerationRequest:
    """One split of one family. ``options`` are the family's own (checked by its schema in
    :meth:`check`); ``out_dir``: also write the split folder there (the CLI always does; the
    board only when asked); ``name``: the puzzle set's name on the board; ``workers`` and
    ``require_coverage`` are honoured by the families that split work or count coverage."""

    family: str
    n: int = 1000
    seed: int = 1
    ratios: tuple[float, float, float] = DEFAULT_RATIOS
    options: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    out_dir: str | None = None
    workers: int | None = None
    require_coverage: int | None = None

    def check(self, project: bool | None = None) -> GenerationRequest:
        """This request with its options resolved by the family's schema; StudioError names
        what is wrong. ``project``: whether the caller has a project to generate from (None:
        not asked) — a family that reads annotations needs one, the others take none."""
        from studio.plugins import family

        fam = family(self.family)
        if not _whole(self.n) or not 1 <= self.n <= MAX_N:
            raise StudioError(f"n must be a whole number from 1 to {MAX_N:,} (got {self.n!r})")
        if not _whole(self.seed) or not 0 <= self.seed < 2**32:
            raise StudioError(
                f"the seed must be a whole number from 0 to 2^32 − 1 (got {self.seed!r})"
            )
        ratios = _shares(self.ratios)
        if not isinstance(self.options, Mapping):
            raise StudioError(f"the options must be names and values (got {self.options!r})")
        if self.require_coverage is not None and (
            not _whole(self.require_coverage) or self.require_coverage < 1
        ):
            raise StudioError(f"--require-coverage {self.require_coverage}: expected at least 1")
        if project is False and fam.needs_project:
            raise StudioError(f"the {fam.id} family generates from a project's annotations")
        if project is True and not fam.needs_project:
            raise StudioError(f"the {fam.id} family takes no project (it needs only a folder)")
        if self.require_coverage is not None and not fam.counts_coverage:
            raise StudioError(
                f"--require-coverage counts (rule, concept) tuples, which {fam.id} items do "
                "not have"
            )
        options = fam.resolve_options(self.options, fill_recorded=True)
        return GenerationRequest(
            self.family,
            int(self.n),
            int(self.seed),
            ratios,
            options,
            self.name,
            self.out_dir,
            self.workers,
            self.require_coverage,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "n": self.n,
            "seed": self.seed,
            "ratios": list(self.ratios),
            "options": dict(self.options),
            "name": self.name,
            "out_dir": self.out_dir,
            "workers": self.workers,
            "require_coverage": self.require_coverage,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GenerationRequest:
        return cls(
            family=str(d["family"]),
            n=int(d.get("n", 1000)),
            seed=int(d.get("seed", 1)),
            ratios=tuple(d.get("ratios") or DEFAULT_RATIOS),  # type: ignore[arg-type]
            options=dict(d.get("options") or {}),
            name=str(d.get("name") or ""),
            out_dir=d.get("out_dir"),
            workers=d.get("workers"),
            require_coverage=d.get("require_coverage"),
        )
