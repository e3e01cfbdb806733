"""Another foil for a KiVA trial's extrapolation question, drawn from the values its design
could have drawn there (the family's ``foil_candidates``: the curator's Replace foil, issue 27).

The three options are the shown change applied to the test input, a *sibling* change of the
same domain and "no change". Which of them can be replaced:

- the **sibling** (a foil in every trial): by another value of the domain that the design
  offers as a sibling of the shown change on the same inputs (:func:`design_choices`: in the
  balanced design only values that could as well have been the shown change, so the pair stays
  swappable; in the published one every narrowed sibling);
- in a **no-change trial**, the change that would have been shown (a foil there): by another
  value whose choice on the same inputs has the sibling among its own siblings (the pair the
  design could have drawn); the "how" question keeps its values, the new one in the old one's
  place;
- **"no change"** is in every trial: it has no replacement (StudioError).

The key, the other options, the objects and the inputs stay; the fits (one per object over the
pictures shown together) follow the new option, so every option of the test object is still
drawn at one scale. Each candidate is vetted by :func:`vet_trial_record`, its pictures
re-rendered. In KiVA (children's) mode a size or reflection trial has a single sibling: no
replacement.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.core.errors import StudioError
from studio.core.verdict import Verdict
from studio.families.kiva.generator import (
    DOESNT_APPLY,
    FAMILY,
    NO_CHANGE,
    _camera_from,
    _record_objects,
    design_choices,
    vet_trial_record,
)
from studio.families.kiva.transforms import StateRenderer, StimulusState, TransformSpec, apply
from studio.stimuli.foils import check_foil, foil_rng, keep_vetted

if TYPE_CHECKING:
    from studio.render3d.scene import Renderer

#: Checks of the record itself that re-vetting adds to generation's picture checks; the
#: record's ``measures`` keep generation's shape (the pictures' checks only).
RECORD_CHECKS = frozenset({"questions", "states"})


def kiva_foils(
    record: Mapping[str, Any],
    answer_index: int,
    seed: int,
    n: int,
    renderer: Renderer | None = None,
) -> list[dict[str, Any]]:
    """Up to ``n`` records of the trial with extrapolation option ``answer_index`` (a foil)
    showing another change its design could have drawn there (module docstring), each vetted
    (:func:`vet_trial_record`, with ``renderer`` or this thread's). Deterministic for
    ``seed``. StudioError when the option has no replacement by design, saying why."""
    ext = _extrapolate(record)
    ids = [str(i) for i in ext["option_ids"][:3]]
    check_foil(record, answer_index, int(ext["key"]), len(ext.get("images") or ids))
    rid = record.get("id", "the trial")
    shown = ids[answer_index]
    if shown == NO_CHANGE:
        raise StudioError(
            f"answer {answer_index + 1} of {rid} shows no change, which every KiVA trial offers "
            "beside its two changes: it has no replacement (regenerate the trial instead)"
        )
    spec = TransformSpec.parse(record["spec"])
    sibling = TransformSpec.parse(record["sibling"])
    role = "sibling" if shown == sibling.id else "spec"
    values = _values(record, role, spec, sibling)
    if not values:
        mode, design = record.get("mode", "kiva"), record.get("design", "published")
        replaced = (sibling if role == "sibling" else spec).label
        raise StudioError(
            f"answer {answer_index + 1} of {rid} ({replaced}) has no replacement: the {design} "
            f"design of {mode} draws no other {spec.domain} change there on this trial's inputs"
        )
    rng = foil_rng(seed, answer_index, FAMILY)
    drafts = _drafts(record, answer_index, role, values, rng)
    return keep_vetted(drafts, set(ids), lambda r: vet_trial_record(r, renderer), n, _measures)


def _extrapolate(record: Mapping[str, Any]) -> Mapping[str, Any]:
    ext = next((q for q in record.get("questions", ()) if q.get("id") == "extrapolate"), None)
    if ext is None:
        raise StudioError(f"item {record.get('id', '?')} has no extrapolate question")
    return ext  # type: ignore[no-any-return]


def _values(
    record: Mapping[str, Any], role: str, spec: TransformSpec, sibling: TransformSpec
) -> list[TransformSpec]:
    """The changes the design could have drawn in the foil's place, on the trial's inputs."""
    domain = str(record["domain"])
    choices = design_choices(str(record["mode"]), str(record.get("design", "published")), [domain])[
        0
    ][domain]
    train = StimulusState.from_json(record["states"]["train_before"])
    test = StimulusState.from_json(record["states"]["test_before"])
    here = [c for c in choices if (c.train, c.test) == (train, test)]
    if role == "sibling":
        base = next((c for c in here if c.spec == spec), None)
        return [] if base is None else [v for v in base.siblings if v != sibling]
    return [c.spec for c in here if c.spec not in (spec, sibling) and sibling in c.siblings]


def _drafts(
    record: Mapping[str, Any],
    k: int,
    role: str,
    values: Sequence[TransformSpec],
    rng: np.random.Generator,
) -> Iterator[tuple[str, dict[str, Any]]]:
    objects = _record_objects(record)
    camera = _camera_from(record.get("camera"))
    size = int(record["size"])
    draw = {part: StateRenderer(objects[part], None, camera, size) for part in ("train", "test")}
    for j in rng.permutation(len(values)).tolist():
        yield values[j].id, _with_value(record, k, role, values[j], draw)


def _with_value(
    record: Mapping[str, Any],
    k: int,
    role: str,
    value: TransformSpec,
    draw: Mapping[str, StateRenderer],
) -> dict[str, Any]:
    """The trial with extrapolation option ``k`` (the sibling, or the would-be-shown change of
    a no-change trial) showing ``value``; the fits re-computed."""
    out = copy.deepcopy(dict(record))
    states = {name: StimulusState.from_json(v) for name, v in out["states"].items()}
    test = states["test_before"]
    ext = _extrapolate(out)
    old = TransformSpec.parse(ext["option_ids"][k])
    ext["option_ids"][k] = value.id
    ext["option_labels"][k] = value.label
    ext["option_states"][k] = apply(value, test).to_json()
    if role == "sibling":
        out["sibling"] = value.id
    else:
        out["spec"], out["spec_label"] = value.id, value.label
        how = next(q for q in out["questions"] if q["id"] == "how")
        _swap_option(how, old, value)
    spec = TransformSpec.parse(out["spec"])
    sibling = TransformSpec.parse(out["sibling"])
    train = states["train_before"]
    out["fits"] = {
        "train": round(draw["train"].fit([train, apply(spec, train)]), 9),
        "test": round(draw["test"].fit([test, apply(spec, test), apply(sibling, test), test]), 9),
    }
    return out


def _swap_option(question: dict[str, Any], old: TransformSpec, new: TransformSpec) -> None:
    """``new`` in ``old``'s place among a question's options; where ``new`` was already
    offered, ``old`` takes its place (the values stay distinct, "doesn't apply" last)."""
    ids, labels = question["option_ids"], question["options"]
    at = ids.index(old.id)
    if new.id in ids and new.id != DOESNT_APPLY:
        there = ids.index(new.id)
        ids[there], labels[there] = old.id, old.label
    ids[at], labels[at] = new.id, new.label


def _measures(record: dict[str, Any], verdict: Verdict) -> None:
    """The record's measures from its new vetting, as generation writes them."""
    record["measures"] = {
        c.check: None if c.measure is None else round(float(c.measure), 6)
        for c in verdict.findings
        if c.check not in RECORD_CHECKS
    }


__all__ = ["kiva_foils"]
