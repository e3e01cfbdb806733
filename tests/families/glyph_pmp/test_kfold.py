"""UA's evaluation design (issue 24; UA §5, Table 6): problem types disjoint between train and
test over k folds. ``extrapolation tuple-folds`` deals the rule–concept pairs into ``folds``
groups by the seed alone; fold k tests group k and trains on the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.annotations import read_annotation_csv
from studio.core.errors import StudioError
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.analogy import AnalogyGenerator
from studio.families.glyph_pmp.split import fold_group
from studio.generate.params import SplitParams
from studio.splits import generate_from

K = 4


def kfold(**kw: object) -> SplitParams:
    """UA's k-fold design over K folds, hold-out none, sets of two answers or more."""
    base: dict[str, object] = {
        "seed": 3,
        "sampling": "balanced",
        "holdout": "none",
        "min_answers": 2,
        "folds": K,
        "extrapolation": "tuple-folds",
    }
    return SplitParams(**{**base, **kw})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def ua(ua_csv: Path, ua_schema: Schema) -> TagIndex:
    rows = read_annotation_csv(ua_csv, ua_schema)
    return TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)


def test_fold_groups_partition_and_spread_what_comes_first() -> None:
    items = [f"p{i}" for i in range(23)]
    groups = [fold_group(items, 7, K, k) for k in range(K)]
    assert sorted(x for g in groups for x in g) == sorted(items)  # a partition
    assert max(map(len, groups)) - min(map(len, groups)) <= 1
    # the first eight (a caller's buildable pairs) go two to each fold
    assert all(len([x for x in g if items.index(x) < 8]) == 2 for g in groups)
    assert groups != [fold_group(items, 8, K, k) for k in range(K)]  # the seed decides
    assert fold_group(items, 7, K, 2) == groups[2]  # and only the seed


def test_each_fold_tests_its_own_problem_types(ua: TagIndex, ua_schema: Schema) -> None:
    params = kfold(n=400)
    results = generate_from(ua, ua_schema, params, workers=1)
    tested = [set(r.tuples["test"]) for r in results]
    for r, test in zip(results, tested, strict=True):
        assert not test & set(r.tuples["train"])  # disjoint problem types in each fold
        made = {(p.split, f"{p.rule}/{p.concept}/noshift") for p in r.puzzles}
        assert {t for part, t in made if part == "test"} <= test
        assert not {t for part, t in made if part == "train"} & test
    for i in range(K):
        for j in range(i + 1, K):
            assert not tested[i] & tested[j]
    assert set().union(*tested) == set(results[0].tuples["train"]) | tested[0]


def test_tuple_folds_need_folds_and_changes_fold_by_concept(
    ua: TagIndex, ua_schema: Schema
) -> None:
    with pytest.raises(StudioError, match="tuple-folds needs folds of 2 or more"):
        SplitParams(extrapolation="tuple-folds", folds=1)
    params = kfold(n=60, layout="analogy")
    concepts = []
    for k in range(K):  # the set-up alone says which changes each fold tests
        r = AnalogyGenerator(params, ua, ua_schema, k).result
        concepts.append({t.split("/")[1] for t in r.tuples["test"]})
        assert not {t.split("/")[1] for t in r.tuples["train"]} & concepts[-1]
    for i in range(K):
        for j in range(i + 1, K):
            assert not concepts[i] & concepts[j]
    assert all(concepts)


def test_each_fold_tests_a_fair_share_of_what_the_annotations_can_build(
    ua: TagIndex, ua_schema: Schema
) -> None:
    """Review of issue 24: with hold-out none each instantiation was also split between the
    sides, so a fold's test pairs lost the train side's instantiations (22 test tuples over
    four folds instead of 57), and "buildable first" dealt nothing."""
    params = kfold(n=1200)
    results = generate_from(ua, ua_schema, params, workers=1)
    made = [{(p.rule, p.concept) for p in r.puzzles if p.split == "test"} for r in results]
    assert all(len(m) >= 9 for m in made), [len(m) for m in made]
    assert max(map(len, made)) - min(map(len, made)) <= 4


def test_more_folds_than_pairs_are_refused_up_front(ua: TagIndex, ua_schema: Schema) -> None:
    params = SplitParams(
        n=30, seed=1, holdout="none", folds=3, extrapolation="tuple-folds",
        concepts=("closure",), rules=("constant", "dist3"),
    )  # fmt: skip
    with pytest.raises(StudioError, match="tuple-folds with 3 folds needs at least 3 rule–concept"):
        generate_from(ua, ua_schema, params, workers=1)
