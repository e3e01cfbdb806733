"""The baselines' speed-ups: each distinct frame encoded once per batch (the same embeddings and
gradients as encoding every copy), the frame bank, the CUDA-only options left off on the CPU,
and the per-rule fields of the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from studio.baselines.data import PuzzleArrays
from studio.baselines.nets import ResEncoder, _encode, encode_unique, init_relu_weights
from studio.baselines.run import run_baselines
from studio.baselines.trained import (
    BATCH,
    EVAL_BATCH,
    BlindBaseline,
    ContextBaseline,
    DeviceData,
    Member,
    PartialRow1,
    TorchBaseline,
)
from studio.core.errors import StudioError
from studio.worker.device import choose_device


def repeated_frames(n: int, seed: int, pool_size: int = 12) -> PuzzleArrays:
    """Two-row puzzles (3 + 2 context frames, 4 answers) drawn from a pool of ``pool_size``
    random frames, so frames repeat within and across puzzles; two rules in every part."""
    rng = np.random.default_rng(seed)
    pool = (rng.random((pool_size, 80, 80)) < 0.2).astype(np.uint8) * 255
    context = pool[rng.integers(0, pool_size, size=(n, 5))]
    answers = pool[rng.integers(0, pool_size, size=(n, 4))]
    parts = np.array(["train", "train", "val", "test"] * (n // 4), dtype=object)
    rules = np.array((["constant"] * 4 + ["progression"] * 4) * (n // 8), dtype=object)
    labels = {"rule": rules, "concept": rules.copy(), "family": np.array(["x"] * n, object)}
    labels["layout"] = np.array(["two-row"] * n, dtype=object)
    return PuzzleArrays(
        ids=[f"p{i:03d}" for i in range(n)],
        parts=parts,
        context_u8=context,
        answers_u8=answers,
        keys=rng.integers(0, 4, size=n),
        rows=(3, 2),
        labels=labels,
        questions=[() for _ in range(n)],
        layout="two-row",
        family="x",
    )


@pytest.fixture(scope="module")
def data() -> PuzzleArrays:
    return repeated_frames(64, seed=2)


def test_the_frame_bank_holds_each_distinct_frame_once_and_rebuilds_every_puzzle(
    data: PuzzleArrays,
) -> None:
    dd = DeviceData(data, "cpu")
    bank = dd.frame_bank().numpy()
    assert len(bank) == 12  # the pool, though the puzzles hold 64 * 9 frames
    assert len({f.tobytes() for f in bank}) == len(bank)
    assert np.array_equal(bank[dd.frame_ids("context").numpy()], data.context_u8)
    assert np.array_equal(bank[dd.frame_ids("answers").numpy()], data.answers_u8)


def test_encoding_distinct_frames_once_gives_the_same_embeddings_and_gradients() -> None:
    torch.manual_seed(0)
    encoder = init_relu_weights(ResEncoder())
    rng = np.random.default_rng(1)
    bank = torch.from_numpy((rng.random((7, 80, 80)) < 0.3).astype(np.uint8) * 255)
    ids = torch.from_numpy(rng.integers(0, 7, size=(5, 9)))
    weights = torch.randn(5, 9, 64)

    once = encode_unique(encoder, bank, ids)
    (once * weights).sum().backward()
    grads_once = [p.grad.clone() for p in encoder.parameters() if p.grad is not None]
    encoder.zero_grad()
    every = _encode(encoder, bank[ids].float() / 255.0)
    (every * weights).sum().backward()
    grads_every = [p.grad.clone() for p in encoder.parameters() if p.grad is not None]

    assert once.shape == every.shape == (5, 9, 64)
    torch.testing.assert_close(once, every, rtol=1e-4, atol=1e-5)
    assert len(grads_once) == len(grads_every) > 0
    for a, b in zip(grads_once, grads_every, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)


def test_the_context_model_scores_the_same_from_the_bank_as_from_the_frames(
    data: PuzzleArrays,
) -> None:
    dd = DeviceData(data, "cpu")
    model = ContextBaseline()
    model.fit(dd, data.part_indices("train"), [], seed=0, rng=np.random.default_rng(0), epochs=1)
    assert model.net is not None
    model.net.eval()
    idx = torch.arange(16)
    with torch.no_grad():
        banked = model.outputs(dd, idx)
        direct = model.net(dd.ink("context", idx), dd.ink("answers", idx))
    torch.testing.assert_close(banked, direct, rtol=1e-4, atol=1e-5)


def test_cuda_runs_float32_eager_unless_asked(data: PuzzleArrays) -> None:
    """On the H100 measured, bf16 autocast and torch.compile each made the job slower than
    float32 eager (docs/benchmarks.md, issue 26), so ``--device cuda`` asks for neither, and
    each is asked for on its own (compiling once needed the bf16 switch as well)."""
    plain = DeviceData(data, "cuda")  # nothing moves to the device until a fit asks
    assert not plain.mixed_precision and not plain.compiled and plain.eval_batch == EVAL_BATCH
    assert plain.speedups() == {
        "autocast": None, "compiled": None, "eval_batch": EVAL_BATCH, "ensemble": "vmap",
        "cuda_graphs": False,  # none replayed yet
    }  # fmt: skip
    assert plain.graphs and not DeviceData(data, "cuda", cuda_graphs=False).graphs
    assert not DeviceData(data, "cpu", ensemble="vmap").graphs  # a GPU's alone
    assert DeviceData(data, "cuda", compile=True).compiled
    # a compiled encoder runs member by member; the CPU runs them one by one
    assert DeviceData(data, "cuda", compile=True).ensemble == "loop"
    assert DeviceData(data, "cpu").ensemble == "loop"
    assert DeviceData(data, "cuda", cuda_speedups=True).eval_batch > EVAL_BATCH


def test_the_cli_defaults_to_float32(tmp_path: Path) -> None:
    from studio.cli import build_parser

    parser = build_parser()
    assert not parser.parse_args(["baseline", str(tmp_path)]).cuda_speedups
    assert parser.parse_args(["baseline", str(tmp_path), "--cuda-speedups"]).cuda_speedups
    assert not parser.parse_args(["baseline", str(tmp_path), "--no-cuda-speedups"]).cuda_speedups
    # the CUDA graphs are on unless turned off
    assert parser.parse_args(["baseline", str(tmp_path)]).cuda_graphs
    assert not parser.parse_args(["baseline", str(tmp_path), "--no-cuda-graphs"]).cuda_graphs
    with pytest.raises(SystemExit):
        parser.parse_args(["baseline", str(tmp_path), "--cuda-speedups", "--no-cuda-speedups"])


def test_cuda_speedups_are_ignored_on_the_cpu(data: PuzzleArrays) -> None:
    probs = []
    for speedups in (True, False):
        dd = DeviceData(data, "cpu", cuda_speedups=speedups)
        assert not dd.mixed_precision and not dd.compiled
        assert dd.eval_batch == EVAL_BATCH
        model = BlindBaseline()
        model.fit(
            dd, data.part_indices("train"), [], seed=0, rng=np.random.default_rng(0), epochs=2
        )
        assert model.net is not None
        assert model.encode_fn is model.net.encoder  # eager, not a compiled wrapper
        probs.append(model.predict(dd, np.arange(data.n)))
    assert np.array_equal(probs[0], probs[1])  # the CPU path is one and the same


def test_asking_for_cuda_without_a_gpu_is_refused_with_a_studio_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(StudioError, match="sees no GPU"):
        choose_device("cuda")
    with pytest.raises(StudioError, match="unknown device"):
        choose_device("tpu")
    assert choose_device("auto").kind == "cpu"


def test_the_report_gives_per_rule_accuracy_with_intervals(data: PuzzleArrays) -> None:
    report = run_baselines(data, ["blind"], seeds=[0, 1], epochs=1, device="cpu", cross_fit=False)
    by_rule = report["models"]["blind"]["groups"]["rule"]
    assert set(by_rule) == {"constant", "progression"}
    test = data.part_indices("test")
    assert sum(g["n"] for g in by_rule.values()) == len(test)
    for g in by_rule.values():
        lo, hi = g["ci95"]
        assert 0.0 <= lo <= g["accuracy"] <= hi <= 1.0
        assert g["chance"] == pytest.approx(0.25)
        assert 0.0 <= g["p_value"] <= 1.0


# ---- the CUDA path's structure, on the CPU (issue 26) ------------------------------------------
def test_the_compiled_bf16_path_trains_and_predicts_on_the_cpu(data: PuzzleArrays) -> None:
    """``force_speedups`` takes the path ``--device cuda`` takes (a compiled encoder under
    bfloat16 autocast); a compiled module has no truth value, which once crashed every job."""
    dd = DeviceData(data, "cpu", force_speedups=True, compile_backend="aot_eager")
    assert dd.mixed_precision and dd.compiled
    for model in (BlindBaseline(), ContextBaseline()):
        model.fit(
            dd,
            data.part_indices("train"),
            data.part_indices("val"),
            seed=0,
            rng=np.random.default_rng(0),
            epochs=2,
        )
        assert model.net is not None
        assert model.encode_fn is not None and model.encode_fn is not model.net.encoder
        assert isinstance(model.encode_fn, torch._dynamo.eval_frame.OptimizedModule)
        probs = model.predict(dd, np.arange(data.n))
        assert probs.shape == (data.n, 4)
        assert np.all(np.isfinite(probs))
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-4)


def test_a_whole_job_runs_the_compiled_path_and_reports_it(data: PuzzleArrays) -> None:
    report = run_baselines(
        data,
        ["blind", "context", "partial"],
        seeds=[0],
        epochs=1,
        device="cpu",
        force_speedups=True,
        compile_backend="aot_eager",
    )
    assert report["compute"]["autocast"] == "bfloat16"
    assert report["compute"]["compiled"] == "aot_eager"
    assert {"blind", "context", "partial-row1"} <= set(report["models"])
    eager = run_baselines(data, ["blind"], seeds=[0], epochs=1, device="cpu", compile=True)
    # the CPU path stays float32 and eager even when compiling is asked for
    assert eager["compute"]["autocast"] is None and eager["compute"]["compiled"] is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no GPU")
def test_device_cuda_end_to_end_with_the_speedups(data: PuzzleArrays) -> None:
    for compile in (False, True):
        report = run_baselines(
            data,
            ["blind", "context", "partial"],
            seeds=[0, 1],
            epochs=2,
            device="cuda",
            compile=compile,
        )
        assert report["device"].startswith("cuda:")
        assert report["compute"]["compiled"] == ("inductor" if compile else None)
        assert report["compute"]["gpu"] and report["compute"]["peak_gpu_memory_mib"] > 0
        # the seeds in one batched call unless compiled; how busy the GPU was
        assert report["compute"]["ensemble"] == ("loop" if compile else "vmap")
        assert report["compute"]["cuda_graphs"] is (not compile)
        assert "cuda_graph_failure" not in report["compute"]
        assert report["compute"]["gpu_utilisation"]["samples"] >= 1


# ---- seeds trained together (issue 26) ----------------------------------------------------
def _members(data: PuzzleArrays, seeds: list[int], epochs: int = 2) -> list[Member]:
    return [
        Member(s, np.random.default_rng([s, 0]), data.part_indices("train"), epochs) for s in seeds
    ]


def test_members_trained_together_are_the_networks_trained_alone(data: PuzzleArrays) -> None:
    """Stacked weights, one Adam and the summed loss train each member exactly as it would
    train alone (the CPU's loop path: the same arithmetic, bit for bit): weights, curves,
    early stopping and predictions."""
    dd = DeviceData(data, "cpu")
    val = data.part_indices("val")
    together = BlindBaseline().fit_members(dd, _members(data, [0, 1, 2], epochs=6), val)
    for s, (fit, model) in zip([0, 1, 2], together, strict=True):
        alone = BlindBaseline()
        fit_alone = alone.fit(
            dd, data.part_indices("train"), val, seed=s, rng=np.random.default_rng([s, 0]),
            epochs=6,
        )  # fmt: skip
        assert fit.curve == fit_alone.curve and fit.best_epoch == fit_alone.best_epoch
        assert model.net is not None and alone.net is not None
        for (name, a), b in zip(
            model.net.state_dict().items(), alone.net.state_dict().values(), strict=True
        ):
            assert torch.equal(a, b), name
        assert np.array_equal(
            model.predict(dd, np.arange(data.n)), alone.predict(dd, np.arange(data.n))
        )
    # different seeds made different networks
    first, second = (m.net.state_dict() for _, m in together[:2])  # type: ignore[union-attr]
    assert not all(torch.equal(first[k], second[k]) for k in first)


def test_members_with_their_own_puzzles_and_epochs(data: PuzzleArrays) -> None:
    """Cross-fitted halves: each member its own puzzles (of unequal size) and its own fixed
    epoch count; each is kept at its own last epoch."""
    dd = DeviceData(data, "cpu")
    train = data.part_indices("train")
    members = [
        Member(0, np.random.default_rng(1), train[:9], 1, fixed_epochs=True),
        Member(1, np.random.default_rng(2), train[9:], 3, fixed_epochs=True),
    ]
    fitted = ContextBaseline().fit_members(dd, members, data.part_indices("val"))
    assert [f.epochs for f, _ in fitted] == [1, 3]
    assert [f.puzzles for f, _ in fitted] == [9, 3 * (len(train) - 9)]
    assert all(c["val_acc"] is None for f, _ in fitted for c in f.curve)
    alone = ContextBaseline()
    alone.fit(dd, train[:9], [], seed=0, rng=np.random.default_rng(1), epochs=1, fixed_epochs=True)
    assert alone.net is not None and fitted[0][1].net is not None
    for a, b in zip(
        fitted[0][1].net.state_dict().values(), alone.net.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bank", ["small", "large"])
@pytest.mark.parametrize("model", [BlindBaseline, ContextBaseline, PartialRow1])
def test_the_batched_ensemble_trains_as_the_loop_does(
    data: PuzzleArrays, model: type[TorchBaseline], bank: str
) -> None:
    """The GPU's path (every member in one ``vmap`` call, padded batches weighed) on the
    CPU: the same networks as the loop, to float rounding. A small bank (fewer frames than
    a member's batch holds) is encoded whole at each step and gathered from; a large one
    has every frame of the batch encoded."""
    if bank == "large":  # more distinct frames than a batch of 64 puzzles has slots (576)
        data = repeated_frames(96, seed=2, pool_size=5000)
        assert not DeviceData(data, "cpu").whole_bank(BATCH * 9)
    val = data.part_indices("val")
    loop = model().fit_members(
        DeviceData(data, "cpu", ensemble="loop"), _members(data, [0, 3]), val
    )
    dd = DeviceData(data, "cpu", ensemble="vmap")
    vmap = model().fit_members(dd, _members(data, [0, 3]), val)
    assert ("bank_ink" in dd._tensors) is (bank == "small")  # the bank encoded whole
    for (fit_l, m_l), (fit_v, m_v) in zip(loop, vmap, strict=True):
        assert fit_l.epochs == fit_v.epochs
        # the first epoch agrees to rounding; after it, Adam's steps of ±lr on weights whose
        # gradients are near zero can go either way on a rounding difference (lr 1e-3)
        for k, (a, b) in enumerate(zip(fit_l.curve, fit_v.curve, strict=True)):
            assert a["loss"] == pytest.approx(b["loss"], abs=1e-4 if k == 0 else 5e-3)
            assert a["val_loss"] == pytest.approx(b["val_loss"], abs=1e-4 if k == 0 else 5e-3)
        assert m_l.net is not None and m_v.net is not None
        for a, b in zip(m_l.net.state_dict().values(), m_v.net.state_dict().values(), strict=True):
            torch.testing.assert_close(a, b, rtol=0.0, atol=2.5e-3)


def test_a_whole_job_runs_the_batched_ensemble_and_reports_it(data: PuzzleArrays) -> None:
    report = run_baselines(
        data, ["blind", "partial-row2"], seeds=[0, 1], epochs=1, device="cpu", ensemble="vmap"
    )
    assert report["compute"]["ensemble"] == "vmap"
    assert set(report["models"]) == {"blind", "partial-row2"}
    for entry in report["models"].values():
        assert [s["seed"] for s in entry["per_seed"]] == [0, 1]
    # every puzzle has a held-out prediction from each seed (main fit or a cross-fitted half)
    for p in report["predictions"]:
        assert all(c >= 0 for c in p["models"]["blind"]["choices"])


def test_without_a_gpu_the_utilisation_sampler_says_nothing() -> None:
    """No NVML and no ``nvidia-smi`` answering (this machine): no samples and no summary, and
    the sampler's thread ends at once rather than polling."""
    from studio.worker.device import GpuUtilisation

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with GpuUtilisation(interval=0.01) as watch:
        watch._thread.join(timeout=10)
        assert not watch._thread.is_alive()
    assert watch.summary() is None and watch.samples == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no GPU")
@pytest.mark.parametrize("model", [BlindBaseline, ContextBaseline])
def test_cuda_graph_steps_train_as_eager_steps(
    data: PuzzleArrays, model: type[TorchBaseline]
) -> None:
    """A captured step replayed trains the members as the eager batched step does: the
    warm-up steps of the capture moved no weight and left Adam at its first step."""
    val = data.part_indices("val")
    graphed_dd = DeviceData(data, "cuda")
    graphed = model().fit_members(graphed_dd, _members(data, [0, 3], epochs=3), val)
    assert graphed_dd.graph_runs > 0 and graphed_dd.graph_failure is None
    eager_dd = DeviceData(data, "cuda", cuda_graphs=False)
    eager = model().fit_members(eager_dd, _members(data, [0, 3], epochs=3), val)
    assert eager_dd.graph_runs == 0
    for (fit_g, m_g), (fit_e, m_e) in zip(graphed, eager, strict=True):
        assert fit_g.curve[0]["loss"] == pytest.approx(fit_e.curve[0]["loss"], abs=1e-4)
        assert fit_g.curve[0]["val_loss"] == pytest.approx(fit_e.curve[0]["val_loss"], abs=1e-4)
        assert fit_g.curve[0]["train_acc"] == pytest.approx(fit_e.curve[0]["train_acc"], abs=0.02)
        assert m_g.net is not None and m_e.net is not None
        for a, b in zip(m_g.net.state_dict().values(), m_e.net.state_dict().values(), strict=True):
            torch.testing.assert_close(a, b, rtol=0.0, atol=5e-3)


def test_torch_and_the_gpu_start_while_the_puzzles_load() -> None:
    """Where a GPU may be used, torch is imported (and a GPU's context started) on a thread
    while the split is read; ``--device cpu`` starts nothing."""
    from studio.baselines.run import warm_device

    assert warm_device("cpu") is None and warm_device(" CPU ") is None
    assert warm_device("auto", ["pixel-similarity", "probe-tags"]) is None  # nothing trains
    thread = warm_device("auto", ["pixel-similarity", "blind"])
    assert thread is not None
    thread.join(timeout=60)
    assert not thread.is_alive()


def test_nvidia_smi_is_asked_for_the_gpu_torch_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's ``cuda:1`` is the second GPU ``CUDA_VISIBLE_DEVICES`` names; nvidia-smi numbers
    every GPU of the machine (or takes a UUID)."""
    from studio.worker.device import _physical_gpu

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, GPU-8a1b")
    assert _physical_gpu(0) == "3" and _physical_gpu(1) == "GPU-8a1b"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _physical_gpu(1) == "1"


def test_models_with_batch_normalisation_or_their_own_loss_are_not_batched(
    data: PuzzleArrays,
) -> None:
    """Padded rows would join batch normalisation's statistics, and the batched step weighs
    cross-entropy: ResNet-18 and a model with its own loss run their members in turn."""
    from studio.baselines.trained import ResNet18Baseline, WReNBaseline

    dd = DeviceData(data, "cpu", ensemble="vmap")
    for model, batched in ((ResNet18Baseline, False), (WReNBaseline, True), (BlindBaseline, True)):
        m = model()
        assert m.batches(m.build(data)) is batched, model.__name__

    class OwnLoss(BlindBaseline):
        def loss(self, out: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
            return super().loss(out, keys) * 2.0

    assert not OwnLoss().batches(OwnLoss().build(data))
    fitted = ResNet18Baseline().fit_members(dd, _members(data, [0, 1], 1), data.part_indices("val"))
    assert len(fitted) == 2


def test_validation_runs_in_eval_mode_as_predict_does(data: PuzzleArrays) -> None:
    """The validation loss that early stopping reads is the loss of the network predict()
    uses: batch normalisation in eval mode, its running statistics untouched by validation."""
    from studio.baselines.trained import ResNet18Baseline

    dd = DeviceData(data, "cpu")
    ((fit, model),) = ResNet18Baseline().fit_members(
        dd, _members(data, [0], 1), data.part_indices("val")
    )
    _, val_loss = model.evaluate(dd, data.part_indices("val"))
    assert fit.curve[0]["val_loss"] == pytest.approx(val_loss, abs=1e-4)


def test_a_split_that_mixes_shapes_is_refused_by_name(glyph_split: Path, tmp_path: Path) -> None:
    import shutil

    from studio.baselines.data import load_source
    from studio.core.puzzle import read_jsonl, write_jsonl

    copy = tmp_path / "split"
    shutil.copytree(glyph_split, copy, ignore=shutil.ignore_patterns("sheets"))
    puzzles = list(read_jsonl(copy / "puzzles.jsonl"))
    from dataclasses import replace

    puzzles[3] = replace(puzzles[3], context=(puzzles[3].context[0], puzzles[3].context[1][:1]))
    (copy / "puzzles.jsonl").write_text(write_jsonl(puzzles))
    with pytest.raises(StudioError, match="mixes puzzle shapes"):
        load_source(copy)


def test_the_report_says_how_the_job_ran_in_words() -> None:
    """The Baselines tab's line under the summary: device and GPU, how the seeds trained,
    peak memory, how busy the GPU was."""
    from studio.baselines.present import compute_text

    report = {
        "device": "cuda:0 NVIDIA H200",
        "compute": {
            "device": "cuda:0", "trained": True, "ensemble": "vmap", "cuda_graphs": True,
            "autocast": None, "compiled": None, "peak_gpu_memory_mib": 1104.9,
            "gpu_utilisation": {"mean_percent": 40.7, "samples": 119, "source": "nvml"},
            "side_by_side": ["blind", "context", "partial-row1"],
        },
    }  # fmt: skip
    assert compute_text(report) == (
        "Ran on cuda:0 NVIDIA H200 · the seeds trained in one batched step replayed as CUDA "
        "graphs · 3 models side by side, taking turns on their own streams · peak GPU memory "
        "1,105 MiB · GPU busy 41 % of the time"
    )
    cpu = {"device": "cpu (2 threads)", "compute": {"trained": True, "ensemble": "loop"}}
    assert compute_text(cpu) == (
        "Ran on cpu (2 threads) · the seeds trained together, their forward passes in turn"
    )
    odd = {"compute": {"trained": True, "peak_gpu_memory_mib": True,
                       "gpu_utilisation": {"mean_percent": "a lot"}}}  # fmt: skip
    assert compute_text(odd) == "Ran on ?"  # an edited report's odd values left out
    failed = {
        "compute": {
            "device": "cuda:0", "trained": True, "ensemble": "vmap", "cuda_graphs": False,
            "cuda_graph_failure": "RuntimeError: x",
        }
    }  # fmt: skip
    assert "CUDA graphs off (RuntimeError: x)" in compute_text(failed)
    assert compute_text({"models": {}}) == ""


@pytest.mark.parametrize("model", [BlindBaseline, PartialRow1])
def test_fitted_members_predict_together_as_each_alone(
    data: PuzzleArrays, model: type[TorchBaseline]
) -> None:
    """The held-out predictions of a model's seeds come from one batched call on a GPU
    (``vmap``): each member's probabilities on its own puzzles are those of its own
    :meth:`predict`, to float rounding; the loop (the CPU) calls each predict as before."""
    val, test = data.part_indices("val"), data.part_indices("test")
    idxs = [test, val[::2], np.concatenate([val, test])]
    for ensemble in ("vmap", "loop"):
        dd = DeviceData(data, "cpu", ensemble=ensemble)
        fitted = [m for _, m in model().fit_members(dd, _members(data, [0, 3, 5], 1), val)]
        together = model().predict_members(dd, fitted, idxs)
        for m, idx, probs in zip(fitted, idxs, together, strict=True):
            assert probs.shape == (len(idx), data.n_answers)
            np.testing.assert_allclose(probs, m.predict(dd, idx), rtol=0, atol=1e-5)


def test_models_trained_side_by_side_get_what_they_get_alone(data: PuzzleArrays) -> None:
    """On a GPU the batched models train at once, taking turns step by step, each on a CUDA
    stream of its own; here the same scheduling on the CPU: every model's predictions are
    those of the models trained one after another (each network made with its own seed
    within one turn), and the progress the models report together only goes up."""
    models = ["blind", "context", "partial-row1", "pixel-similarity"]
    job = {"seeds": [0, 1], "epochs": 2, "device": "cpu", "ensemble": "vmap"}
    alone = run_baselines(data, models, side_by_side=False, **job)
    seen: list[float] = []
    messages: list[str] = []
    units: list[str] = []
    together = run_baselines(
        data,
        models,
        side_by_side=True,
        progress=lambda f, msg: (seen.append(f), messages.append(msg)),
        on_unit=lambda key, result: units.append(key),
        **job,
    )
    trained = [f"{m}/{s}" for m in models[:3] for s in (0, 1)]
    assert sorted(units) == sorted([*trained, "pixel-similarity/-"])
    assert together["compute"]["side_by_side"] == ["blind", "context", "partial-row1"]
    assert alone["compute"]["side_by_side"] == []
    assert seen == sorted(seen) and seen[-1] == 1.0
    # they did take turns: the blind model ticked again after the context model began
    first_context = next(k for k, m in enumerate(messages) if m.startswith("context"))
    assert any(m.startswith("blind") for m in messages[first_context:])
    for p, q in zip(alone["predictions"], together["predictions"], strict=True):
        for m in models:
            assert p["models"][m]["choices"] == q["models"][m]["choices"], m
            np.testing.assert_allclose(
                p["models"][m]["confidence"], q["models"][m]["confidence"], atol=1e-4
            )


def test_a_model_that_fails_beside_others_stops_them_and_says_why(
    data: PuzzleArrays, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One model's error ends the job with that error, and the models taking turns beside
    it stop rather than finish."""
    broke: list[int] = []
    after: list[int] = []  # the blind model's forward passes after the failure
    original = BlindBaseline.head

    def counted(self: TorchBaseline, net: torch.nn.Module, emb: torch.Tensor) -> torch.Tensor:
        if broke:
            after.append(1)
        return original(self, net, emb)

    def broken(self: TorchBaseline, *args: object, **kwargs: object) -> torch.Tensor:
        broke.append(1)
        raise RuntimeError("the context model broke")

    monkeypatch.setattr(BlindBaseline, "head", counted)
    monkeypatch.setattr(ContextBaseline, "head", broken)
    units: list[str] = []
    with pytest.raises(RuntimeError, match="the context model broke"):
        run_baselines(
            data, ["blind", "context"], seeds=[0], epochs=50, device="cpu", ensemble="vmap",
            side_by_side=True, on_unit=lambda key, result: units.append(key),
        )  # fmt: skip
    assert broke and units == [] and after == []


def _last_line_of(script: str) -> str:
    """The last line a Python script prints, run in a fresh process from the checkout (what
    a process has imported is the question)."""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_studios_adam_steps_as_torchs_adam() -> None:
    """:class:`Adam` is torch's Adam without its Optimizer class: the same weights after
    several steps, bit for bit, with a parameter that gets no gradient left alone."""
    from studio.baselines.trained import Adam

    torch.manual_seed(3)
    ours = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    opt_ours = Adam(ours, lr=3e-3, foreach=True)
    opt_theirs = torch.optim.Adam(theirs, lr=3e-3, foreach=True)
    for k in range(5):
        x = torch.randn(3)
        for params, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad(set_to_none=True)
            loss = (params[0] @ x).square().sum()
            if k % 2:
                loss = loss + params[1].sin().sum()  # the second gets a gradient every other step
            loss.backward()
            opt.step()
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)
    assert float(opt_ours.state[ours[1]]["step"]) == 2.0


def test_a_job_that_trains_never_imports_torch_dynamo() -> None:
    """torch's optimisers import ``torch._dynamo`` (6 s of a GPU job's start on the server
    measured); the studio's training does not need it, on either ensemble path."""
    script = (
        "import sys\n"
        "from studio.baselines.run import run_baselines, warm_device\n"
        "sys.path.insert(0, 'tests/baselines')\n"
        "import test_speedups as t\n"
        "d = t.repeated_frames(32, seed=2)\n"
        "warm_device('auto', ['blind']).join()\n"
        "for ens in ('loop', 'vmap'):\n"
        "    run_baselines(d, 'blind,context', seeds=2, epochs=1, device='cpu', ensemble=ens)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    assert _last_line_of(script) == "False"


def test_the_command_line_starts_torch_before_the_baselines_heavy_modules(
    glyph_split: Path, tmp_path: Path
) -> None:
    """``analogy-studio baseline`` starts the thread that imports torch (5.4 s on the GPU
    server measured) before it imports scipy's statistics and the baselines' runner, which
    then load beside it; the module that starts it imports none of them."""
    script = (
        "import sys\n"
        "import studio.baselines.start as start\n"
        "light = not {'torch', 'numpy', 'scipy'} & set(sys.modules)\n"
        "seen = {}\n"
        "original = start.warm_device\n"
        "def spy(*args, **kwargs):\n"
        "    seen['heavy'] = sorted({'scipy.stats', 'studio.baselines.run'} & set(sys.modules))\n"
        "    return original(*args, **kwargs)\n"
        "start.warm_device = spy\n"
        "from studio.cli import main\n"
        f"rc = main(['baseline', {str(glyph_split)!r}, '--models', 'blind', '--seeds', '1',\n"
        f"           '--epochs', '1', '--no-plots', '--json', {str(tmp_path / 'r.json')!r}])\n"
        "print(rc, light, seen)\n"
    )
    assert _last_line_of(script) == "0 True {'heavy': []}"


def test_a_training_free_job_never_starts_torch(data: PuzzleArrays) -> None:
    """A job of training-free models only says so (nothing trained) and imports no torch
    (on the GPU server measured, 5.4 s); run in a fresh process."""
    script = (
        "import sys\n"
        "sys.path.insert(0, 'tests/baselines')\n"
        "import test_speedups as t\n"
        "from studio.baselines.run import run_baselines\n"
        "before = 'torch' in sys.modules\n"
        "d = t.repeated_frames(32, seed=2)\n"
        "r = run_baselines(d, 'pixel-similarity,elimination', seeds=1, device='auto')\n"
        "c, started = r['compute'], 'torch' in sys.modules and not before\n"
        "print(c['device'], c['trained'], sorted(c['phases']), started)\n"
    )
    phases = "['load', 'report', 'total', 'trained', 'training_free']"
    assert _last_line_of(script) == f"cpu False {phases} False"


def test_progress_credits_each_model_as_it_ends(data: PuzzleArrays) -> None:
    """Each finished model adds its whole share (a training-free model ticks only at its
    start; a trained one may stop early), so the bar moves as models end rather than
    jumping at the report."""
    seen: list[tuple[float, str]] = []
    run_baselines(
        data,
        ["pixel-similarity", "feature-similarity", "elimination", "blind"],
        seeds=[0],
        epochs=2,
        device="cpu",
        cross_fit=False,
        progress=lambda f, msg: seen.append((f, msg)),
    )
    starts = {msg: f for f, msg in seen if msg in ("feature-similarity", "elimination")}
    # three training-free models of weight 0.1 and one trained of 1.0 (one seed): 1.3 in all
    assert starts["feature-similarity"] == pytest.approx(0.1 / 1.3)
    assert starts["elimination"] == pytest.approx(0.2 / 1.3)
    before_report = [f for f, msg in seen if msg != "report"][-1]
    assert before_report == pytest.approx(1.0)


def test_a_models_seconds_leave_out_the_other_models_turns(
    data: PuzzleArrays, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taking turns, a model's training seconds are its own steps' (the time it waited while
    the other models took theirs is left out), so its throughput is not the others'. The
    context model is made slow (0.6 s a forward pass); the blind model's seconds stay its
    own (within one such pass, for a busy machine's noise), where before they took in the
    context model's steps and validation (two passes at least)."""
    import time

    original = ContextBaseline.head

    def slow(self: TorchBaseline, net: torch.nn.Module, emb: torch.Tensor) -> torch.Tensor:
        time.sleep(0.6)
        return original(self, net, emb)

    monkeypatch.setattr(ContextBaseline, "head", slow)
    job = {"seeds": [0], "epochs": 2, "device": "cpu", "ensemble": "vmap", "cross_fit": False}
    alone = run_baselines(data, ["blind"], **job)
    together = run_baselines(data, ["blind", "context"], side_by_side=True, **job)
    a = alone["models"]["blind"]["per_seed"][0]["train_seconds"]
    t = together["models"]["blind"]["per_seed"][0]["train_seconds"]
    assert t < a + 0.6, (a, t)
