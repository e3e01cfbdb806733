"""What a stimulus family is: one definition, registered once, that every front end reads.

A :class:`Family` names its generator, its record vetting, how the baselines read its records
and its options. The options schema (:class:`Option`: name, type, range or choices, default,
help) is the single place an option is described: the CLI's arguments, the Generate dialog and
the Preview tab's controls are built from it, and :meth:`Family.resolve_options` checks what a
person typed before a generator sees it.

Two kinds of family exist:

- ``"glyph"``: made from a project's annotations (``studio.splits``); the split folder holds
  ``puzzles.jsonl``, ``.npz`` frames and sheets (``studio.families.glyph_pmp.export``).
- ``"stimulus"``: made from nothing but its options and a seed (``studio.stimuli.split``); the
  generator is a class taking the options as keywords with ``items(n, seed, progress)`` yielding
  :class:`~studio.stimuli.items.StimulusItem` and a ``rejections`` count; the folder holds
  ``items.jsonl``, sheets and the separate images.

Heavy parts are :mod:`lazy references <studio.core.refs>`, so defining and listing families
imports nothing but this module. Core layer: no Qt, no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from studio.core.errors import StudioError
from studio.core.refs import resolve

#: Option types: ``int``, ``float``, ``bool``, ``choice`` (one of ``choices``), ``subset``
#: (some of ``choices``, written ``a,b`` or ``all``), ``names`` (free names, written ``a,b``).
OPTION_TYPES = ("int", "float", "bool", "choice", "subset", "names")
KINDS = ("glyph", "stimulus")
#: The built-in glyph family's id, which its definition registers and its split parameters
#: (:class:`~studio.generate.params.SplitParams`) default to. Front ends never use it: they
#: ask for :func:`studio.plugins.default_family` (issue 27)
GLYPH_FAMILY = "glyph-pmp"


@dataclass(frozen=True)
class Option:
    """One option of a family, as the generator's keyword ``name`` takes it.

    ``flag`` is the command-line name (``--<flag>``; default: ``name`` with dashes) and may be
    shared by families (``--level`` is a polycube level and a composition's piece count).
    ``record_default``: the default is written into ``split.json`` even when not given (kept
    where older splits recorded it). ``preview``: shown among the Preview tab's controls.
    ``dynamic``: the choices come from the project at hand (``"concepts"``: the schema's)."""

    name: str
    type: str
    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    flag: str = ""
    label: str = ""
    record_default: bool = False
    preview: bool = True
    dynamic: str = ""

    def __post_init__(self) -> None:
        if self.type not in OPTION_TYPES:
            raise StudioError(
                f"option {self.name!r}: type {self.type!r} is not one of {OPTION_TYPES}"
            )
        if self.type == "choice" and not self.choices:
            raise StudioError(f"option {self.name!r}: a choice needs choices")

    @property
    def cli_flag(self) -> str:
        return "--" + (self.flag or self.name.replace("_", "-"))

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    def parse(self, text: str) -> Any:
        """A value typed as text (the CLI), checked like :meth:`check`."""
        text = str(text).strip()
        try:
            if self.type == "int":
                return self.check(int(text))
            if self.type == "float":
                return self.check(float(text))
            if self.type == "bool":
                low = text.lower()
                if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(text)
                return low in ("1", "true", "yes", "on")
        except ValueError:
            raise StudioError(f"{self.cli_flag} {text!r}: expected {self._expected()}") from None
        if self.type == "choice":
            return self.check(text)
        if self.type == "subset" and text.lower() == "all":
            return tuple(self.choices)
        return self.check(tuple(p.strip() for p in text.split(",") if p.strip()))

    def check(self, value: Any) -> Any:
        """``value`` in this option's type and range; StudioError names the flag otherwise."""
        shown = ",".join(map(str, value)) if isinstance(value, tuple | list) else value
        bad = StudioError(f"{self.cli_flag} {shown!r}: expected {self._expected()}")
        if self.type in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise bad
            if self.type == "int" and int(value) != value:
                raise bad
            value = int(value) if self.type == "int" else float(value)
            if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum
            ):
                raise bad
            return value
        if self.type == "bool":
            if not isinstance(value, bool):
                raise bad
            return value
        if self.type == "choice":
            if value not in self.choices:
                raise bad
            return value
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise bad
        items = tuple(str(v) for v in value)
        if self.type == "subset" and self.choices and any(v not in self.choices for v in items):
            raise bad
        return items

    def _expected(self) -> str:
        if self.type in ("int", "float"):
            lo = "" if self.minimum is None else f"{self.minimum:g}"
            hi = "" if self.maximum is None else f"{self.maximum:g}"
            span = f" within {lo}..{hi}" if lo or hi else ""
            return f"{'an integer' if self.type == 'int' else 'a number'}{span}"
        if self.type == "bool":
            return "true or false"
        if self.type == "choice":
            return "one of " + ", ".join(map(str, self.choices))
        if self.type == "subset":
            return "all, or a list of " + ", ".join(map(str, self.choices))
        return "a list of names like a,b"


@dataclass(frozen=True)
class Family:
    """One stimulus family. References (``"module:attribute"`` or the object itself):

    - ``generator``: stimulus families, a class taking the options as keywords (module
      docstring); glyph families, ``(params, annotations, schema, fold, questions)`` → a
      generator with ``run()`` and ``result``.
    - ``vet_record``: ``record → Verdict``, the checks re-run on an exported record.
    - ``baseline_layout``: ``record → dict`` with ``context`` and ``answers`` (image names
      under ``images/<id>/``), ``rows``, ``key``, ``rule``, ``concept`` and ``layout``
      (``"analogy"`` or ``"question-candidates"``): how the baselines read one record.
    - ``answer_attributes``: ``record → [{attribute: values}]`` per answer, from the symbolic
      record (the tag probe and the answer-set audit); None where the family has none.
    - ``partial_views``: ``records → dict`` in :func:`studio.vet.partial.partial_views`'s
      shape: how far an exact solver seeing part of each item gets (the floors of issue 24);
      None where the family has no such solver.
    - ``render_record``: ``record → (images, sheet)``, the item's pictures by name (as
      :attr:`~studio.stimuli.items.StimulusItem.images`) and its sheet, re-drawn from the record
      alone (an ``items.jsonl`` line, or the bare ``StimulusItem.record``) as generation drew
      them: the curator's board and ``export-set`` keep records, not pictures, and draw them
      again when shown or written (:func:`studio.stimuli.split.render_record`); None where the
      family's items cannot be re-drawn.
    - ``vet_render_record``: ``record → (verdict, images, sheet)``, ``vet_record``'s verdict
      and ``render_record``'s pictures from one drawing, for a family whose vetting renders
      (KiVA's pixel checks): ``export-set`` then draws each item once. None: the two are called.
    - ``foil_candidates``: ``(record, answer_index, seed, n) → [record]``, up to ``n`` copies
      of the item's record in which answer ``answer_index`` (a foil, as ``baseline_layout``
      numbers the answers) is replaced by another foil the family's design could have drawn
      there, drawn the way its generator draws that foil (so a balanced design's "every answer
      could have been the key" still holds); the key, every other answer and the context
      unchanged; each candidate different from the current foil, the other answers and the
      other candidates, passing ``vet_record`` (its ``verdict`` written in, as ``items.jsonl``
      has it); deterministic for a seed. A StudioError says why a foil has none by design
      (KiVA's "no change" option is in every trial). The curator's Replace foil (F) on an
      item; None where the family offers no replacement foils.

    ``prompt``: what a person is asked, in the family's own words (a pilot study shows it;
    empty: the matrix question "which answer completes the last row").
    ``spatial``: the spatial-reasoning models (CNN+MLP …) apply. ``cut_pieces``: the baselines
    cut each candidate into its ink regions. ``odd_designs``: designs in which the key is the
    answer unlike the question. ``rotation_views``: each candidate shows the question's object
    or another one (its mirror) turned, so the Siamese "is it a rotation" model applies.
    ``preview``: option values the Preview tab starts from (a smaller picture, say).
    ``default``: the family a split or set is of when none is named (``generate`` without
    ``--family``, the Generate dialog's first choice, a set recorded before sets named their
    family); exactly one registered family says so (:func:`studio.plugins.default_family`), so
    no front end names one. ``check``: ``options → None``, raising StudioError for a
    combination the types cannot say is wrong.
    """

    id: str
    kind: str
    label: str
    description: str
    options: tuple[Option, ...] = ()
    generator: Any = None
    vet_record: Any = None
    baseline_layout: Any = None
    answer_attributes: Any = None
    partial_views: Any = None
    render_record: Any = None
    vet_render_record: Any = None
    foil_candidates: Any = None
    prompt: str = ""
    spatial: bool = False
    cut_pieces: bool = False
    odd_designs: tuple[str, ...] = ()
    rotation_views: bool = False
    preview: Mapping[str, Any] = field(default_factory=dict)
    default: bool = False
    check: Any = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise StudioError(f"family {self.id!r}: kind {self.kind!r} is not one of {KINDS}")
        names = [o.name for o in self.options]
        if len(set(names)) != len(names):
            raise StudioError(f"family {self.id!r}: an option is defined twice ({names})")
        if self.kind == "stimulus" and (self.generator is None or self.vet_record is None):
            raise StudioError(
                f"family {self.id!r}: a stimulus family needs a generator and vet_record"
            )

    @property
    def needs_project(self) -> bool:
        """Does a split of this family read a project's annotations and renders? (A glyph
        family does; a stimulus family draws from nothing but its options.) The one place the
        kind decides how a split is made: front ends pass a project or not, and
        :meth:`studio.generate.request.GenerationRequest.check` says when that is wrong."""
        return self.kind == "glyph"

    @property
    def counts_coverage(self) -> bool:
        """Are its puzzles (rule, concept) tuples whose coverage a split reports per part?"""
        return self.kind == "glyph"

    def option(self, name: str) -> Option:
        for o in self.options:
            if o.name == name:
                return o
        raise StudioError(
            f"family {self.id} has no option {name!r} (it takes: "
            f"{', '.join(o.name for o in self.options) or 'none'})"
        )

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options}

    def resolve_options(
        self, given: Mapping[str, Any], fill_recorded: bool = False
    ) -> dict[str, Any]:
        """The options to record and pass on: those given, checked (``None`` meaning "not
        given"), plus, with ``fill_recorded`` (the front ends), the defaults marked
        ``record_default``. Unknown names are refused (a typo is never silently ignored)."""
        unknown = sorted(k for k in given if k not in {o.name for o in self.options})
        if unknown:
            raise StudioError(
                f"family {self.id} has no option {', '.join(unknown)} (it takes: "
                f"{', '.join(o.name for o in self.options) or 'none'})"
            )
        out = {o.name: o.default for o in self.options if fill_recorded and o.record_default}
        out.update({k: self.option(k).check(v) for k, v in given.items() if v is not None})
        if self.check is not None:
            resolve(self.check)(out)
        return out

    def load(self, part: str) -> Callable[..., Any]:
        """The object behind a reference (``"generator"``, ``"vet_record"`` …)."""
        ref = getattr(self, part)
        if ref is None:
            raise StudioError(f"family {self.id} has no {part.replace('_', ' ')}")
        return resolve(ref)  # type: ignore[no-any-return]


__all__ = ["KINDS", "OPTION_TYPES", "Family", "Option"]
