"""Replace foil on a KiVA trial (issue 27): the extrapolation question's sibling change (or, in
a no-change trial, the change that would have been shown) replaced by another value the
trial's design could have drawn there on the same inputs; "no change" has no replacement."""

from __future__ import annotations

import pytest

from studio.core.errors import StudioError
from studio.families.kiva.foils import kiva_foils
from studio.families.kiva.generator import NO_CHANGE, design_choices
from studio.families.kiva.transforms import StimulusState, TransformSpec, apply
from tests.families.foils import check_candidates, check_refusals, stored_records

OBJECTS = ("l-block", "key", "toy-car")
KEPT = ("mode", "design", "domain", "no_change", "objects", "camera", "size", "states")


def ext(record: dict) -> dict:
    return next(q for q in record["questions"] if q["id"] == "extrapolate")


def choices_on(record: dict) -> dict:
    """The design's choices on the trial's inputs, by the shown change."""
    domain = record["domain"]
    space = design_choices(record["mode"], record["design"], [domain])[0][domain]
    train = StimulusState.from_json(record["states"]["train_before"])
    test = StimulusState.from_json(record["states"]["test_before"])
    return {c.spec: c for c in space if (c.train, c.test) == (train, test)}


@pytest.fixture(scope="module", params=["balanced", "published"])
def trials(request: pytest.FixtureRequest) -> list[dict]:
    options = {
        "size": 64,
        "mode": "kiva-adults",
        "design": request.param,
        "objects": OBJECTS,
        "no_change_share": 0.5,
    }
    return stored_records("kiva", options, 6, seed=5)


def test_a_foil_change_is_replaced_by_one_the_design_offers(trials: list[dict]) -> None:
    replaced = {"sibling": 0, "spec": 0}
    for record in trials:
        check_refusals("kiva", record)
        e = ext(record)
        offered = choices_on(record)
        spec = TransformSpec.parse(record["spec"])
        sibling = TransformSpec.parse(record["sibling"])
        test = StimulusState.from_json(record["states"]["test_before"])
        for answer in (k for k in range(3) if k != e["key"]):
            shown = e["option_ids"][answer]
            if shown == NO_CHANGE:
                with pytest.raises(StudioError, match="shows no change, which every KiVA trial"):
                    kiva_foils(record, answer, 1, 3)
                continue
            try:
                got = check_candidates("kiva", record, answer, n=3)
            except StudioError as err:  # a design with no other value there says so
                assert "draws no other" in str(err)
                continue
            for new in got:
                assert {k: new[k] for k in KEPT} == {k: record[k] for k in KEPT}
                value = TransformSpec.parse(ext(new)["option_ids"][answer])
                assert value.domain == record["domain"]
                assert ext(new)["option_states"][answer] == apply(value, test).to_json()
                if shown == record["sibling"]:
                    replaced["sibling"] += 1
                    # the shown change keeps its choice; the new sibling is one it offers
                    assert (new["spec"], new["sibling"]) == (record["spec"], value.id)
                    assert value in offered[spec].siblings
                else:
                    # a no-change trial: the would-be-shown change, paired with the sibling
                    replaced["spec"] += 1
                    assert record["no_change"]
                    assert (new["spec"], new["sibling"]) == (value.id, record["sibling"])
                    assert sibling in offered[value].siblings
                    how = next(q for q in new["questions"] if q["id"] == "how")
                    assert value.id in how["option_ids"] and how["option_ids"][-1] == "doesnt-apply"
                    assert how["option_ids"][how["key"]] == "doesnt-apply"
                    assert len(set(how["option_ids"])) == 4
                if record["design"] == "balanced":
                    # the pair can be drawn either way round (the design's swappable pairs)
                    a, b = TransformSpec.parse(new["spec"]), TransformSpec.parse(new["sibling"])
                    assert b in offered[a].siblings and a in offered[b].siblings
    assert replaced["sibling"] and replaced["spec"]


def test_the_fits_follow_the_new_option() -> None:
    """Re-computed from the record as generation computes them: unchanged for the old value."""
    from studio.families.kiva.foils import _with_value
    from studio.families.kiva.generator import _camera_from, _record_objects
    from studio.families.kiva.transforms import StateRenderer

    [record] = stored_records("kiva", {"size": 64, "objects": OBJECTS}, 1, seed=9)
    objects = _record_objects(record)
    camera = _camera_from(record.get("camera"))
    draw = {p: StateRenderer(objects[p], None, camera, 64) for p in ("train", "test")}
    k = ext(record)["option_ids"].index(record["sibling"])
    same = _with_value(record, k, "sibling", TransformSpec.parse(record["sibling"]), draw)
    assert same["fits"] == record["fits"]


def test_children_s_size_and_reflection_trials_have_no_other_sibling() -> None:
    records = stored_records("kiva", {"size": 64, "objects": OBJECTS}, 10, seed=3)
    narrow = [r for r in records if r["domain"] in ("size", "reflection") and not r["no_change"]]
    assert narrow
    for record in narrow:
        k = ext(record)["option_ids"].index(record["sibling"])
        with pytest.raises(
            StudioError, match=f"balanced design of kiva draws no other {record['domain']}"
        ):
            kiva_foils(record, k, 1, 3)
