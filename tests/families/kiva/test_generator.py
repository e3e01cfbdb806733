"""KiVA trial builder: seeded determinism, the no-change share, both modes, shuffled options with
the right keys, vetting from the record alone, the sheet, and the registries."""

from __future__ import annotations

import copy
import json
from collections import Counter

import numpy as np
import pytest

from studio.core.errors import StudioError
from studio.families.kiva.generator import (
    DOESNT_APPLY,
    NO_CHANGE,
    KivaGenerator,
    domain_choices,
    render_trial_sheet,
    vet_trial_record,
)
from studio.families.kiva.transforms import (
    DOMAINS,
    StateRenderer,
    StimulusState,
    TransformSpec,
    specs,
)
from studio.plugins import registry
from studio.render3d import Camera
from studio.render3d.objects import library_object
from studio.stimuli.items import StimulusItem

SIZE = 64
OBJECTS = ("l-block", "key", "toy-car", "chair")


def records(items: list[StimulusItem]) -> list[str]:
    return [json.dumps(it.to_json(), sort_keys=True) for it in items]


@pytest.fixture(scope="module")
def kiva_items() -> list[StimulusItem]:
    gen = KivaGenerator(size=SIZE, objects=OBJECTS, no_change_share=0.25)
    return list(gen.items(8, seed=11))


@pytest.fixture(scope="module")
def adults_items() -> list[StimulusItem]:
    gen = KivaGenerator("kiva-adults", size=SIZE, objects=OBJECTS, no_change_share=0.0)
    return list(gen.items(6, seed=5))


def test_ids_images_and_determinism(kiva_items: list[StimulusItem]) -> None:
    assert [it.id for it in kiva_items] == [f"kiva-11-{i:05d}" for i in range(8)]
    for it in kiva_items:
        assert it.family == "kiva" and it.verdict.valid
        assert set(it.images) == {
            "train-before",
            "train-after",
            "test-before",
            "option-0",
            "option-1",
            "option-2",
        }
        assert all(im.size == (SIZE, SIZE) for im in it.images.values())
    again = list(KivaGenerator(size=SIZE, objects=OBJECTS, no_change_share=0.25).items(8, 11))
    assert records(again) == records(kiva_items)
    for a, b in zip(again, kiva_items, strict=True):
        assert np.array_equal(np.asarray(a.sheet), np.asarray(b.sheet))
    # trial i does not depend on how many were asked for
    first = next(iter(KivaGenerator(size=SIZE, objects=OBJECTS, no_change_share=0.25).items(3, 11)))
    assert first.record == kiva_items[0].record
    other_seed = list(KivaGenerator(size=SIZE, objects=OBJECTS).items(3, seed=12))
    assert records(other_seed) != records(kiva_items[:3])


def test_the_no_change_share_is_exact() -> None:
    # the published design keeps KiVA's 10 %; the balanced default makes "no change" the key
    # one time in three, as often as each change (issue 11)
    gen = KivaGenerator(size=SIZE, objects=OBJECTS, design="published")
    balanced = KivaGenerator(size=SIZE, objects=OBJECTS)
    for count in (1, 10, 37, 200):
        schedule, flags = gen.plan(count, seed=3)
        assert sum(flags) == round(0.1 * count) and len(schedule) == count
        assert sum(balanced.plan(count, seed=3)[1]) == round(count / 3)
        per_domain = Counter(schedule)
        assert max(per_domain.values()) - min(per_domain.values()) <= 1  # balanced domains
    assert gen.plan(50, 3) == gen.plan(50, 3) and gen.plan(50, 3) != gen.plan(50, 4)
    assert sum(KivaGenerator(size=SIZE, objects=OBJECTS, no_change_share=0.5).plan(9, 1)[1]) == 4


def test_no_change_trials(kiva_items: list[StimulusItem]) -> None:
    none = [it for it in kiva_items if it.record["no_change"]]
    assert len(none) == round(0.25 * 8)
    for it in none:
        r = it.record
        what, how, ext = r["questions"]
        assert r["states"]["train_after"] == r["states"]["train_before"]
        assert what["option_ids"][what["key"]] == NO_CHANGE
        assert how["option_ids"][how["key"]] == DOESNT_APPLY
        assert ext["option_ids"][ext["key"]] == NO_CHANGE
        # the change that would have been shown is still offered, as a distractor
        assert r["domain"] in what["option_ids"] and r["spec"] in ext["option_ids"]
        assert np.array_equal(
            np.asarray(it.images["train-before"]), np.asarray(it.images["train-after"])
        )


def _key_picture(it: StimulusItem) -> np.ndarray:
    r = it.record
    drawer = StateRenderer(
        library_object(r["objects"]["test"]["name"]), camera=Camera(**r["camera"]), size=SIZE
    )
    key = StimulusState.from_json(r["states"]["test_key"])
    return np.asarray(drawer.image(key, r["fits"]["test"]))


def test_shuffled_options_keep_the_right_keys(
    kiva_items: list[StimulusItem], adults_items: list[StimulusItem]
) -> None:
    positions: Counter[tuple[str, int]] = Counter()
    for it in kiva_items + adults_items:
        r = it.record
        what, how, ext = r["questions"]
        assert [q["id"] for q in r["questions"]] == ["what", "how", "extrapolate"]
        assert len(what["option_ids"]) == 5 and len(how["option_ids"]) == 4
        assert len(ext["option_ids"]) == 4 and len(ext["options"]) == 4
        for q in (what, how, ext):
            assert q["option_ids"][-1] == DOESNT_APPLY and len(set(q["option_ids"])) == len(
                q["option_ids"]
            )
            positions[(q["id"], q["key"])] += 1
        assert NO_CHANGE in what["option_ids"] and r["domain"] in what["option_ids"]
        assert all(x in (*DOMAINS, NO_CHANGE, DOESNT_APPLY) for x in what["option_ids"])
        assert all(TransformSpec.parse(x).domain == r["domain"] for x in how["option_ids"][:3])
        if not r["no_change"]:
            assert what["option_ids"][what["key"]] == r["domain"]
            assert how["option_ids"][how["key"]] == r["spec"]
            assert ext["option_ids"][ext["key"]] == r["spec"]
        # the key's image really is the key: re-drawn from its state, it is the same picture
        key_image = np.asarray(it.images[f"option-{ext['key']}"])
        assert np.array_equal(key_image, _key_picture(it))
        assert ext["option_states"][ext["key"]] == (
            r["states"]["test_before"] if r["no_change"] else r["states"]["test_key"]
        )
    # the keys are not always in one place
    for q in ("what", "how", "extrapolate"):
        assert len({k for (qq, k) in positions if qq == q}) >= 2


def test_modes_keep_or_change_the_test_input(
    kiva_items: list[StimulusItem], adults_items: list[StimulusItem]
) -> None:
    for it in kiva_items:
        s = it.record["states"]
        assert it.record["mode"] == "kiva" and s["test_before"] == s["train_before"]
        assert TransformSpec.parse(it.record["spec"]) in specs("kiva")
        assert it.record["objects"]["train"]["name"] != it.record["objects"]["test"]["name"]
    for it in adults_items:
        s = it.record["states"]
        assert it.record["mode"] == "kiva-adults" and s["test_before"] != s["train_before"]


def test_adults_number_trials_abstract_a_function() -> None:
    gen = KivaGenerator(
        "kiva-adults", size=SIZE, objects=OBJECTS, domains=["number"], no_change_share=0.0
    )
    for it in gen.items(3, seed=2):
        s, spec = it.record["states"], TransformSpec.parse(it.record["spec"])
        assert s["train_before"]["count"] != s["test_before"]["count"]
        assert spec.domain == "number" and it.verdict.valid


def test_narrowing_before_sampling() -> None:
    pool = specs("kiva-adults")
    choices, _ = domain_choices("number", "kiva-adults", pool)
    # +1 and ×2 of one object draw the same picture: never offered from one object
    assert not any(c.spec.value in ("+1", "x2") and c.train.count == 1 for c in choices)
    assert any(c.spec.value == "x3" for c in choices)  # 2 → 6 shown, 1 → 3 asked
    _, rotation_why = domain_choices("rotation", "kiva-adults", pool)
    assert "rotation:180" in rotation_why and "reflection:both" in rotation_why["rotation:180"]
    kiva_choices, kiva_why = domain_choices("rotation", "kiva", specs("kiva"))
    assert not kiva_why and {c.spec.value for c in kiva_choices} == {"+90", "-90", "180"}
    gen = KivaGenerator("kiva-adults", size=SIZE, objects=OBJECTS)
    assert "rotation:180" in gen.narrowed and isinstance(gen.rejections, Counter)


def test_vetting_from_the_record_alone(kiva_items: list[StimulusItem]) -> None:
    it = kiva_items[1]
    record = json.loads(json.dumps(it.to_json()))
    verdict = vet_trial_record(record)
    assert verdict.valid
    got, made = verdict.findings[2:], it.verdict.findings
    assert [c.to_item_json() for c in got] == [c.to_item_json() for c in made]
    broken = copy.deepcopy(record)
    ext = broken["questions"][2]
    ext["key"] = (ext["key"] + 1) % 3
    bad = vet_trial_record(broken)
    assert not bad.valid and "questions" in {c.check for c in bad.errors}
    assert not record["no_change"]
    swapped = copy.deepcopy(record)
    swapped["states"]["test_key"] = swapped["states"]["test_before"]
    assert "states" in {c.check for c in vet_trial_record(swapped).errors}


def test_the_sheet_shows_the_trial(kiva_items: list[StimulusItem]) -> None:
    it = kiva_items[0]
    sheet = render_trial_sheet(it.record, it.images)
    assert sheet.mode == "RGB" and sheet.width > 6 * SIZE and sheet.height > 2 * SIZE
    assert np.array_equal(np.asarray(sheet), np.asarray(it.sheet))


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        KivaGenerator("kiva-kids")
    with pytest.raises(ValueError, match="two objects"):
        KivaGenerator(objects=["mug"])
    with pytest.raises(ValueError, match="domains"):
        KivaGenerator(domains=["smell"])
    with pytest.raises(ValueError, match="no_change_share"):
        KivaGenerator(no_change_share=1.5)
    with pytest.raises(StudioError, match="no object 'teapot'"):
        next(iter(KivaGenerator(size=SIZE, objects=["teapot", "mug"]).items(1, seed=1)))


def test_registered_like_a_plugin() -> None:
    assert registry("families").get("kiva").load("generator") is KivaGenerator
    transforms = registry("transforms")
    assert set(DOMAINS) <= set(transforms.ids())
    rotation = transforms.get("rotation")
    assert [s.value for s in rotation.specs("kiva")] == ["+90", "-90", "180"]
    checks = registry("vet_checks")
    from studio.families.kiva.ambiguity import vet_options, vet_transform

    assert checks.get("kiva-ambiguity") is vet_transform
    assert checks.get("kiva-options") is vet_options


def test_balanced_design_draws_either_change_of_a_pair() -> None:
    """Balanced (default): each offered sibling could itself be the shown change with the same
    inputs, and over trials the shown change and its sibling swap places about equally."""
    gen = KivaGenerator(size=SIZE, objects=OBJECTS)
    for choices in gen._choices.values():
        index = {(c.spec, c.train, c.test): c for c in choices}
        for c in choices:
            for b in c.siblings:
                assert c.spec in index[(b, c.train, c.test)].siblings
    records = list(gen.records(600, 2))
    assert all(r["design"] == "balanced" for r in records)
    pairs = Counter((r["spec"], r["sibling"]) for r in records if r["domain"] == "size")
    for (a, b), n in pairs.items():
        assert abs(n - pairs.get((b, a), 0)) <= 4 * (n + pairs.get((b, a), 0)) ** 0.5
    item = next(iter(gen.items(1, seed=3)))
    assert item.verdict.valid and item.record["design"] == "balanced"
    with pytest.raises(ValueError, match="design"):
        KivaGenerator(design="fair")
