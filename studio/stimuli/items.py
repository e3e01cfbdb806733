"""The record every non-glyph task generator yields.

A generator (KiVA trials, polycube rotation, shape composition, cube nets) yields
:class:`StimulusItem` objects; :mod:`studio.stimuli.split` writes them to a split folder in one
format for all families. ``record`` is the symbolic description (everything needed to re-render
and re-check the item, JSON-able, with sorted keys when written); ``images`` are the separate
images by name, ``sheet`` the single stitched image people see; ``verdict`` is its vet verdict
(:class:`~studio.core.verdict.Verdict`: every check that ran, with its measure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from studio.core.errors import StudioError
from studio.core.verdict import Verdict

#: The largest picture side a stored item may ask to be drawn at (the families' options stop
#: at 1,024; a split's pictures at 4,096 — ``studio.stimuli.split.MAX_PICTURE_PIXELS``)
MAX_SIZE = 4096
#: What a damaged record makes a family's reader raise (a key of the wrong type, a list where
#: a number was, a value out of range)
RECORD_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError)


@dataclass
class StimulusItem:
    """One generated trial or task item of a non-glyph family."""

    id: str
    family: str
    record: dict[str, Any]
    images: Mapping[str, Image.Image]
    sheet: Image.Image
    verdict: Verdict = field(default_factory=Verdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            **self.record,
            "images": sorted(self.images),
            "verdict": self.verdict.to_item_json(),
        }


@dataclass(frozen=True)
class StimulusPuzzle:
    """A stimulus item as a puzzle set holds it on the board (issue 27: curate every family):
    its record as ``items.jsonl`` has it (``StimulusItem.to_json()``), with what a list shows
    read through the family's own ``baseline_layout`` — the rule and concept it tests, its
    layout and key — and its part as the split. No pictures: the family re-draws them from the
    record (``Family.render_record``)."""

    id: str
    family: str
    layout: str
    rule: str
    concept: str
    split: str
    key: int
    answers: tuple[str, ...]
    record: Mapping[str, Any]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> StimulusPuzzle:
        """Read through the family's definition; a StudioError names the item and what is
        wrong (an unknown family, a record its family cannot lay out)."""
        from studio.plugins import family

        rid = str(record.get("id", "?"))
        names = record.get("images", [])
        if not plain_name(record.get("id")) or not (
            isinstance(names, list) and all(plain_name(n) for n in names)
        ):
            # an id and picture names become file names on export and in the board's cache
            raise StudioError(f"item {rid[:80]!r}: its id and images must be plain names")
        fid = record.get("family")
        if not is_stimulus_record(record):
            raise StudioError(f"item {rid}: {str(fid)[:80]!r} is no stimulus family")
        fam = family(fid)
        if fam.kind != "stimulus" or fam.baseline_layout is None:
            raise StudioError(f"item {rid}: family {fid} has no layout to curate it by")
        try:
            lay = dict(fam.load("baseline_layout")(record))
            key, answers = int(lay["key"]), tuple(str(a) for a in lay["answers"])
        except RECORD_ERRORS as e:
            raise StudioError(f"item {rid}: its record does not read as a {fid} item ({e})") from e
        if not 0 <= key < len(answers):
            raise StudioError(f"item {rid}: its key {key} is not one of its {len(answers)} options")
        part = record.get("part")
        if part not in ("train", "val", "test"):
            raise StudioError(f"item {rid}: part {str(part)[:40]!r} is not train, val or test")
        size = record.get("size")
        if size is not None and not (
            isinstance(size, int) and not isinstance(size, bool) and 8 <= size <= MAX_SIZE
        ):
            # drawn from the record: a size no generator makes would take any memory there is
            raise StudioError(f"item {rid}: size {str(size)[:40]} is not 8 to {MAX_SIZE} pixels")
        return cls(
            id=rid,
            family=fid,
            layout=str(lay.get("layout", "")),
            rule=str(lay.get("rule", "")),
            concept=str(lay.get("concept", "")),
            split=str(record.get("part", "")),
            key=key,
            answers=answers,
            record=record,
        )

    def to_json(self) -> dict[str, Any]:
        return dict(self.record)

    @property
    def foils(self) -> list[int]:
        """The answers that are not the key, as a glyph puzzle's ``foils``."""
        return [i for i in range(len(self.answers)) if i != self.key]

    def answer_record(self, index: int) -> dict[str, Any]:
        """What the record says of answer ``index``, as the families lay answers out: a
        candidate picture (``candidate-k``) is the record's ``candidates[k]``; a question's
        pictured option (``option-k``) is that question's option id, label and state. Empty
        where the record holds no such part (a plugin's own layout)."""
        name = self.answers[index]
        prefix, _, number = name.rpartition("-")
        if not number.isdigit():
            return {}
        k = int(number)
        cands = self.record.get("candidates")
        if prefix == "candidate" and isinstance(cands, list) and k < len(cands):
            return dict(cands[k])
        for q in self.record.get("questions") or ():
            if isinstance(q, Mapping) and name in (q.get("images") or ()):
                return {
                    field: q[f"{field}s"][k]
                    for field in ("option_id", "option_label", "option_state")
                    if isinstance(q.get(f"{field}s"), list) and k < len(q[f"{field}s"])
                }
        return {}

    def answer_words(self, index: int) -> str:
        """Answer ``index`` in a few words: a pictured option's label (KiVA: the change), a
        candidate's kind (``mirror``, ``swap``, ``replaced`` …; a plain rotation of the
        question: ``rotation``), else its picture's name."""
        part = self.answer_record(index)
        words = part.get("option_label") or part.get("kind")
        if not words and part.get("same") is True:
            words = "rotation"
        return str(words or self.answers[index])

    def all_keys(self) -> list[Any]:
        """No glyphs: the image features of glyphs do not apply."""
        return []

    def verdict(self) -> Verdict:
        """The checks generation (or the last re-vetting) recorded, passed ones too."""
        try:
            return Verdict.from_item_json(self.record.get("verdict") or {}, self.id)
        except RECORD_ERRORS as e:
            raise StudioError(f"item {self.id}: its recorded verdict is damaged ({e})") from e


def plain_name(name: object) -> bool:
    """A plain file name: no folder part, not ``.`` or ``..``, no NUL (as a split's reader
    asks of them: :func:`studio.stimuli.split.read_stimulus_split`)."""
    return (
        isinstance(name, str) and name not in ("", ".", "..") and not set(name) & {"/", "\\", "\0"}
    )


def is_stimulus_record(record: Mapping[str, Any]) -> bool:
    """Whether a stored puzzle record is a stimulus item (its family is a stimulus family)
    rather than a glyph puzzle. A family this studio does not have (a plugin not installed
    here) is a StudioError naming it: neither reading would be right."""
    from studio.plugins import family, registry

    fid = record.get("family")
    if not isinstance(fid, str):
        return False
    if fid not in registry("families"):
        raise StudioError(
            f"puzzle {str(record.get('id', '?'))[:80]!r} is of family {fid[:80]!r}, which this "
            "studio does not have (a plugin not installed here?)"
        )
    return family(fid).kind == "stimulus"
