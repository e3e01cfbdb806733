"""The answers-only shortcut probes (issue 11): a planted tag-level leak is caught by probe-tags
with a flag whose reason names the feature; keys at random are not flagged; probe-image catches
the planted "key = most ink" bias without annotations; both run in `analogy-studio baseline`.

Real data: the vetted glyph split generated from the UA annotations (tests/baselines/conftest.py)
with its keys rewritten, as plant_most_ink_key does. No timing assertions."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from studio.baselines import DEFAULT_MODELS, MODEL_GROUPS
from studio.baselines.data import PuzzleArrays, load_source, read_split_annotations
from studio.baselines.probes import answer_features, fit_answers_only_probe
from studio.baselines.run import expand_models, run_baselines
from studio.cli import build_parser, main
from studio.core.puzzle import read_jsonl
from studio.plugins import registry


def common_value_keys(data: PuzzleArrays, split: Path) -> np.ndarray:
    """Per puzzle, the answer whose value of the puzzle's concept has the most glyphs in the
    split's annotations: rewriting the keys so makes every foil a lower-count value ("foils
    drawn from low-count values", the leak UA's pool shows)."""
    tags = read_split_annotations(split / "annotations.csv")
    glyphs = Counter((c, v) for cs in tags.values() for c, vs in cs.items() for v in vs)
    assert data.answer_attributes is not None
    keys = []
    for i in range(data.n):
        concept = str(data.labels["concept"][i])
        counts = [
            max((glyphs[(concept, v)] for v in a.get(concept, ())), default=-1)
            for a in data.answer_attributes[i]
        ]
        keys.append(int(np.argmax(counts)))
    return np.array(keys, dtype=np.int64)


def test_split_answers_carry_their_annotation_tags(glyph_split: Path) -> None:
    data = load_source(glyph_split)
    tags = read_split_annotations(glyph_split / "annotations.csv")
    puzzles = list(read_jsonl(glyph_split / "puzzles.jsonl"))
    assert data.answer_attributes is not None and len(data.answer_attributes) == data.n
    for p, attrs in zip(puzzles[:50], data.answer_attributes[:50], strict=True):
        assert attrs == [dict(tags.get(k, {})) for k in p.answers]
        # the puzzle's concept is on every answer (the generator draws answers by it)
        assert all(p.concept in a for a in attrs)
    some = data.subset([3, 1])
    assert some.answer_attributes == [data.answer_attributes[3], data.answer_attributes[1]]


def test_sharing_leak_is_found_and_named() -> None:
    """Constructed: the key's value of concept q is never shared, foils share theirs in pairs;
    every value sits on keys and foils alike, so only the between-answer features find it."""
    rng = np.random.default_rng(7)
    n, a = 600, 4
    attrs, keys = [], rng.integers(0, a, n)
    for i in range(n):
        v = rng.permutation(6)
        answers = [{"q": frozenset({f"v{v[0]}"})} for _ in range(a)]
        answers[keys[i]] = {"q": frozenset({f"v{v[1]}"})}
        for j in range(a):
            answers[j]["noise"] = frozenset({f"n{rng.integers(0, 5)}"})
        attrs.append(answers)
    parts = np.array(["train"] * 400 + ["test"] * 200, dtype=object)
    found = fit_answers_only_probe(attrs, keys, parts, seed=0)
    test = parts == "test"
    assert (found.choices[test] == keys[test]).mean() > 0.95
    assert (found.choices[~test] == keys[~test]).mean() > 0.95  # cross-fitted halves
    assert "no other answer shares the key's value of q" in found.reasons[-1]
    top = next(iter(found.weights))
    assert top.startswith("q shared by")
    blind = fit_answers_only_probe(attrs, keys, parts, seed=0, sharing=False)
    # values alone say nothing: the key's probability stays at chance, never confident (its
    # argmax may still land on the odd answer, since any tie-free weights single it out)
    key_prob = blind.probs[np.flatnonzero(test), keys[test]]
    assert key_prob.mean() < 0.3 and (blind.probs.max(axis=1) >= 0.625).mean() < 0.01
    assert all(f[0] == "v" for fs in answer_features(attrs[0], sharing=False) for f in fs)


def test_planted_leak_is_caught_and_explained(glyph_split: Path) -> None:
    data = load_source(glyph_split)
    planted = replace(data, keys=common_value_keys(data, glyph_split))
    report = run_baselines(planted, ["probe-tags"], seeds=1, device="cpu")
    entry = report["models"]["probe-tags"]
    overall = entry["overall"]
    assert overall["accuracy"] > 0.5 and overall["ci95"][0] > 0.35, overall
    assert overall["p_value"] < 1e-6
    assert entry["group"] == "probes" and entry["flags_shortcuts"] and entry["features"]
    flags = [f for f in report["flags"]["puzzles"] if f["model"] == "probe-tags"]
    assert len(flags) > data.n / 4
    concept_of = dict(zip(data.ids, data.labels["concept"], strict=True))
    # the reason names the leaking feature: a value of the puzzle's own concept on the key
    named = sum(f"the key carries {concept_of[f['id']]}=" in f["reason"] for f in flags)
    assert named > len(flags) / 2, [f["reason"] for f in flags[:5]]
    groups = [g for g in report["flags"]["groups"] if g["model"] == "probe-tags"]
    assert groups and all(g["reason"] for g in groups)
    preds = {p["id"]: p for p in report["predictions"]}
    assert all(preds[f["id"]]["models"]["probe-tags"]["why"] == f["reason"] for f in flags)
    # train puzzles are flagged from cross-fitted predictions, as the trained models do
    assert any(preds[f["id"]]["part"] == "train" for f in flags)


def test_keys_at_random_are_not_flagged(glyph_split: Path) -> None:
    data = load_source(glyph_split)
    keys = np.random.default_rng(11).integers(0, data.n_answers, data.n)
    report = run_baselines(replace(data, keys=keys), ["probes"], seeds=1, device="cpu")
    for model in ("probe-tags", "probe-image"):
        overall = report["models"][model]["overall"]
        assert overall["ci95"][0] < 0.25 + 0.03 and overall["accuracy"] < 0.35, (model, overall)
        assert overall["p_value"] > 0.01
        flags = [f for f in report["flags"]["puzzles"] if f["model"] == model]
        assert len(flags) <= data.n // 50, (model, len(flags))
    assert report["flags"]["groups"] == []


def test_probe_image_catches_the_most_ink_key(biased_split: Path) -> None:
    report = run_baselines(biased_split, ["probe-image"], seeds=1, device="cpu")
    overall = report["models"]["probe-image"]["overall"]
    assert overall["accuracy"] > 0.6 and overall["ci95"][0] > 0.45, overall
    flags = [f for f in report["flags"]["puzzles"] if f["model"] == "probe-image"]
    assert len(flags) > report["source"]["puzzles"] / 4
    # ink and size are what the key's pixels give away
    assert (
        sum("img-ink" in f["reason"] or "img-size" in f["reason"] for f in flags) > len(flags) / 2
    )
    top = list(report["models"]["probe-image"]["features"])[:3]
    assert any(f.startswith(("img-ink", "img-size")) for f in top), top


def test_probes_run_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert MODEL_GROUPS["probes"] == ("probe-tags", "probe-image", "probe-row1", "probe-row2")
    reg = registry("baselines")
    for model in MODEL_GROUPS["probes"]:
        meta = reg.meta(model)
        assert meta["group"] == "probes" and meta["flags_shortcuts"] and not meta["trained"]
    assert {"probe-tags", "probe-image"} <= set(expand_models(DEFAULT_MODELS))
    args = build_parser().parse_args(["baseline", "SPLIT"])
    assert {"probe-tags", "probe-image"} <= set(expand_models(args.models))


def test_cli_baseline_prints_and_reports_the_probes(
    glyph_split: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    split = tmp_path / "split"
    shutil.copytree(glyph_split, split)
    assert main(["-q", "baseline", str(split), "--models", "probes", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "probe-tags" in out and "probe-image" in out
    assert "probe-tags weighs most:" in out
    report = json.loads((split / "baselines" / "report.json").read_text("utf-8"))
    probes = {"probe-tags", "probe-image", "probe-row1", "probe-row2"}
    assert set(report["models"]) == probes
    assert all("why" in p["models"]["probe-row1"] for p in report["predictions"])
    noted = json.loads((split / "report.json").read_text("utf-8"))["baselines"]
    assert set(noted["accuracy"]) == probes


def test_a_source_without_tags_skips_probe_tags(glyph_split: Path) -> None:
    data = replace(load_source(glyph_split), answer_attributes=None)
    report = run_baselines(data, ["probes"], seeds=1, device="cpu")
    assert set(report["models"]) == {"probe-image"}
    assert report["skipped"][0]["model"] == "probe-tags"
    assert "annotations" in report["skipped"][0]["reason"]


def test_stimulus_items_are_probed_over_their_symbolic_records(tmp_path: Path) -> None:
    from studio.stimuli.split import generate_stimulus_split

    out = tmp_path / "nets"
    generate_stimulus_split("cube-net", out, 60, seed=2, options={"size": 96})
    data = load_source(out)
    assert data.answer_attributes is not None
    assert len(data.answer_attributes[0]) == data.n_answers == 4
    report = run_baselines(data, ["probe-tags"], seeds=1, device="cpu")
    assert "probe-tags" in report["models"] and not report["skipped"]
    assert all(p["models"]["probe-tags"]["why"] for p in report["predictions"])


# ---- partial views (issue 24) -----------------------------------------------------------------
def dist3_like(n: int, seed: int, decoys: bool) -> tuple[list, list, np.ndarray, np.ndarray]:
    """Two-row puzzles over concept q: row 1 shows three distinct values, the incomplete row
    two of them, the key the third. Without ``decoys`` the foils take values the context never
    shows (the planted shortcut); with them two foils take row 2's values, as a design that
    builds decoys for the row-1 view would. Every glyph also carries a noise concept."""
    rng = np.random.default_rng(seed)
    attrs, rows1, rows2 = [], [], []
    keys = rng.integers(0, 4, n)

    def glyph(v: str) -> dict[str, frozenset[str]]:
        return {"q": frozenset({v}), "noise": frozenset({f"n{rng.integers(0, 4)}"})}

    for i in range(n):
        v = [f"v{x}" for x in rng.permutation(8)]
        row1 = v[:3]
        rows1.append([glyph(x) for x in row1])
        rows2.append([glyph(x) for x in row1[:2]])
        foils = [row1[0], row1[1], v[3]] if decoys else v[3:6]
        answers = [glyph(x) for x in foils]
        answers.insert(int(keys[i]), glyph(row1[2]))
        attrs.append(answers)
    parts = np.array(["train"] * (n * 2 // 3) + ["test"] * (n - n * 2 // 3), dtype=object)
    return attrs, [rows1, rows2], keys, parts


def test_a_row1_shortcut_is_found_by_the_row1_probe_and_not_by_the_answers() -> None:
    """The planted split: foils never come from the context, so "the answer whose value row 1
    shows" is the key. The answers alone say nothing; row 1 says everything."""
    attrs, (rows1, rows2), keys, parts = dist3_like(600, seed=3, decoys=False)
    test = parts == "test"

    def accuracy(rows: list | None) -> float:
        found = fit_answers_only_probe(attrs, keys, parts, seed=0, rows=rows)
        return float((found.choices[test] == keys[test]).mean())

    assert accuracy(None) < 0.35
    assert accuracy(rows1) > 0.95
    found = fit_answers_only_probe(attrs, keys, parts, seed=0, rows=rows1)
    assert "value of q seen in 1 glyph of the row" in next(iter(found.weights))
    assert "the key's value of q is seen in 1 glyph of the visible row" in found.reasons[-1]
    # decoys from the context: row 1 shows three answer values, row 2 two foils
    attrs, (rows1, rows2), keys, parts = dist3_like(600, seed=3, decoys=True)
    test = parts == "test"
    for rows, floor in ((rows1, 1 / 3), (rows2, 1 / 2)):
        found = fit_answers_only_probe(attrs, keys, parts, seed=0, rows=rows)
        acc = float((found.choices[test] == keys[test]).mean())
        assert acc < floor + 0.1, (floor, acc)


def test_the_partial_view_probes_run_on_a_glyph_split_and_see_one_row(glyph_split: Path) -> None:
    data = load_source(glyph_split)
    puzzles = list(read_jsonl(glyph_split / "puzzles.jsonl"))
    tags = read_split_annotations(glyph_split / "annotations.csv")
    assert data.context_attributes is not None
    for p, ctx in zip(puzzles[:20], data.context_attributes[:20], strict=True):
        assert ctx == [dict(tags.get(k, {})) for k in p.context_keys]
    assert data.subset([2]).context_attributes == [data.context_attributes[2]]
    report = run_baselines(data, ["probe-row1", "probe-row2"], seeds=1, device="cpu")
    for model in ("probe-row1", "probe-row2"):
        entry = report["models"][model]
        assert entry["group"] == "probes" and entry["flags_shortcuts"]
        assert any("of the row" in f for f in entry["features"])
    blind = replace(data, context_attributes=None)
    report = run_baselines(blind, ["probe-row1"], seeds=1, device="cpu")
    assert report["skipped"] == [
        {"model": "probe-row1", "reason": "the source carries no annotations of its context"}
    ]
