"""One vocabulary for what vetting found, whatever was vetted: a glyph puzzle or a stimulus item.

A :class:`Finding` is the outcome of one named check; a :class:`Verdict` gathers the findings
about one subject (a puzzle id, an item id). A subject is valid when no finding is a failed
error; failed warnings flag it but keep it.

Both kinds of vetting use these two classes; they differ only in what they record:

- a stimulus item's checks (KiVA, polycube rotation, shape composition, cube nets, plugins)
  record every check that ran, passed ones too (``ok``), with the measure behind it (an IoU, a
  pixel difference, a count);
- a glyph puzzle's findings record only failures (``ok`` False), and say where: which answer,
  which (rule, concept) it completes, the values per row and the ``source`` that showed it
  (``annotations``; ``image-features`` or ``shifted-reading`` for warnings).

Each on-disk format has its own serialiser, and their bytes must not change:

- *item form* (``items.jsonl``'s ``verdict``, ``vet --json`` of a stimulus split):
  :meth:`Verdict.to_item_json`, each finding :meth:`Finding.to_item_json`;
- *puzzle form* (a glyph split's ``report.json`` ``verdicts``, ``vet --json`` of a glyph split,
  the curation store): :meth:`Verdict.to_puzzle_json`, each finding
  :meth:`Finding.to_puzzle_json`, read back by :meth:`Finding.from_puzzle_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]
ERROR: Severity = "error"
WARNING: Severity = "warning"

#: the source of a glyph finding read from the annotations; any other source (image features,
#: a shifted reading in a lenient split) only ever gives warnings
ANNOTATIONS = "annotations"

#: glyph checks whose message names the (rule, concept) completed and the values per row
_COMPLETION_CHECKS = ("emergent", "foil-completes-intended", "shifted-reading")


def severity_of_source(source: str) -> Severity:
    """The severity a glyph finding from ``source`` has: what the annotations show is an
    error; what another source shows is a warning (the annotations may have missed it, or it
    is a reading the split does not forbid). The puzzle form stores no severity; it follows
    from the source, always has, and :meth:`Finding.from_puzzle_json` relies on it."""
    return ERROR if source == ANNOTATIONS else WARNING


@dataclass(frozen=True, slots=True)
class Finding:
    """The outcome of one check on a puzzle or an item.

    ``check`` names the check (``key-fails``, ``emergent``, ``unique-transform`` …); ``ok``
    says it passed (glyph findings are failures only); ``measure`` is the number behind the
    outcome where there is one; ``severity`` ``error`` refuses the subject when the check
    failed, ``warning`` flags it.

    The keyword-only fields say where in a glyph puzzle: ``answer`` (the answer index; None
    for a stimulus item's checks), the ``rule`` and ``concept`` a foil completes, ``rows`` the
    values that instantiate the rule, row by row, and ``source``, what showed it.
    """

    check: str
    ok: bool = False
    measure: float | None = None
    detail: str = ""
    severity: Severity = ERROR
    answer: int | None = field(default=None, kw_only=True)
    rule: str = field(default="", kw_only=True)
    concept: str = field(default="", kw_only=True)
    rows: tuple[tuple[str, ...], ...] = field(default=(), kw_only=True)
    source: str = field(default=ANNOTATIONS, kw_only=True)

    @property
    def is_error(self) -> bool:
        """A failed check that refuses the subject."""
        return not self.ok and self.severity == ERROR

    @property
    def is_warning(self) -> bool:
        """A failed check that flags the subject but keeps it."""
        return not self.ok and self.severity == WARNING

    def message(self) -> str:
        """One readable line: for a glyph finding, where and what (``answer 2 completes …``);
        for an item's check, ``check (measure): detail``."""
        if self.answer is None:
            return f"{self.check} ({self.measure}): {self.detail}"
        where = f"answer {self.answer + 1}"
        if self.check in _COMPLETION_CHECKS:
            vals = " | ".join(", ".join(r) for r in self.rows)
            what = "also completes" if self.check == "foil-completes-intended" else "completes"
            if self.check == "shifted-reading" or self.source == "shifted-reading":
                via = " under a shifted reading (each row with its own values)"
            else:
                via = "" if self.source == ANNOTATIONS else f" (by {self.source})"
            return f"{where} {what} {self.rule} over {self.concept} [{vals}]{via}"
        return f"{where}: {self.detail or self.check}"

    # ---- item form ------------------------------------------------------------------------
    def to_item_json(self) -> dict[str, Any]:
        """One entry of an item verdict's ``checks`` (the measure rounded to 6 places)."""
        return {
            "check": self.check,
            "ok": self.ok,
            "measure": None if self.measure is None else round(float(self.measure), 6),
            "detail": self.detail,
            "severity": self.severity,
        }

    @classmethod
    def from_item_json(cls, d: Mapping[str, Any]) -> Finding:
        """The inverse of :meth:`to_item_json` (an item's check, read back from a record)."""
        measure = d.get("measure")
        return cls(
            str(d["check"]),
            bool(d.get("ok", False)),
            None if measure is None else float(measure),
            str(d.get("detail", "")),
            WARNING if d.get("severity") == WARNING else ERROR,
        )

    # ---- puzzle form ----------------------------------------------------------------------
    def to_puzzle_json(self) -> dict[str, Any]:
        """One entry of a puzzle verdict's ``findings`` or ``warnings``: the check as
        ``kind``, the empty glyph fields left out, the message spelled out."""
        d: dict[str, Any] = {"kind": self.check, "answer": self.answer, "source": self.source}
        if self.answer is None:
            # an item's check (a stimulus set on the board): its severity and measure are its
            # own, not a source's (a glyph finding always names its answer, so its bytes stay)
            d["severity"] = self.severity
            d["measure"] = None if self.measure is None else round(float(self.measure), 6)
        if self.rule:
            d["rule"] = self.rule
        if self.concept:
            d["concept"] = self.concept
        if self.rows:
            d["rows"] = [list(r) for r in self.rows]
        if self.detail:
            d["detail"] = self.detail
        d["message"] = self.message()
        return d

    @classmethod
    def from_puzzle_json(cls, d: Mapping[str, Any]) -> Finding:
        """The inverse of :meth:`to_puzzle_json` (the message is derived, so it is dropped;
        the severity follows from the source, see :func:`severity_of_source`)."""
        source = str(d.get("source", ANNOTATIONS))
        answer = d.get("answer")
        if answer is None:  # an item's check: its own severity and measure
            severity: Severity = WARNING if d.get("severity") == WARNING else ERROR
            measure = d.get("measure")
            return cls(
                str(d["kind"]),
                measure=None if measure is None else float(measure),
                detail=str(d.get("detail", "")),
                severity=severity,
                source=source,
            )
        return cls(
            str(d["kind"]),
            detail=str(d.get("detail", "")),
            severity=severity_of_source(source),
            answer=int(answer),
            rule=str(d.get("rule", "")),
            concept=str(d.get("concept", "")),
            rows=tuple(tuple(str(v) for v in r) for r in d.get("rows", ())),
            source=source,
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """Every finding about one subject (``subject_id``: a puzzle id, an item id; empty where
    the caller holds the id). Valid when no check failed with severity ``error``."""

    findings: tuple[Finding, ...] = ()
    subject_id: str = ""

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.is_error)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.is_warning)

    @property
    def valid(self) -> bool:
        return not self.errors

    def to_item_json(self) -> dict[str, Any]:
        """``items.jsonl``'s ``verdict``: every check, passed ones too."""
        return {"valid": self.valid, "checks": [f.to_item_json() for f in self.findings]}

    @classmethod
    def from_item_json(cls, d: Mapping[str, Any], subject_id: str = "") -> Verdict:
        """An item's verdict as ``items.jsonl`` holds it (every check, passed ones too)."""
        checks = d.get("checks", [])
        if not isinstance(checks, list):
            raise ValueError("a verdict's checks must be a list")
        return cls(tuple(Finding.from_item_json(c) for c in checks), subject_id)

    def to_puzzle_json(self) -> dict[str, Any]:
        """A glyph split's verdict: the id, the errors as ``findings``, then the warnings."""
        return {
            "id": self.subject_id,
            "valid": self.valid,
            "findings": [f.to_puzzle_json() for f in self.errors],
            "warnings": [f.to_puzzle_json() for f in self.warnings],
        }


__all__ = [
    "ANNOTATIONS",
    "ERROR",
    "WARNING",
    "Finding",
    "Severity",
    "Verdict",
    "severity_of_source",
]
