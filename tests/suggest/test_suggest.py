"""Suggestions (issue 30, the core): the encoder is deterministic for a seed, a suggestion is
never a tag, one tagged glyph brings its nearest neighbours, a planted look-alike set comes
first, and the CLI's errors exit 2. Glyphs are rendered from set-up's Symbola only (the
suite's hermetic font folder, tests/fontenv.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from studio.app import Studio
from studio.cli import EXIT_USER_ERROR, main
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.store.project import Project
from studio.suggest import suggest
from studio.suggest.encoder import (
    EncoderParams,
    embed_images,
    load_training_state,
    save_training_state,
    train_encoder,
)
from studio.suggest.rank import rank_candidates
from studio.suggest.space import (
    GlyphSpace,
    encoder_version,
    load_encoder,
    project_images,
    space_from_images,
)

CIRCLED = [GlyphKey(cp, "symbola") for cp in range(0x2460, 0x2474)]  # ① .. ⑳
LETTERS = [GlyphKey(cp, "symbola") for cp in range(0x41, 0x5B)]  # A .. Z
ARROWS = [GlyphKey(cp, "symbola") for cp in range(0x2190, 0x219A)]  # ← .. ↙
GLYPHS = CIRCLED + LETTERS + ARROWS
TINY = EncoderParams(seed=3, epochs=2, batch=32, threads=1)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> FontCatalog:
    cat = FontCatalog.scan(cache_dir=tmp_path_factory.mktemp("fonts"))
    if cat.get("symbola") is None:
        pytest.skip("fonts-symbola is not installed")
    return cat


def make_studio(path: Path, schema: Schema, catalog: FontCatalog, cache: Path) -> Studio:
    studio = Studio(
        Project.create(path, schema), catalog=catalog, cache=RenderCache(cache), author="ann"
    )
    studio.add_glyphs(GLYPHS)
    for _ in studio.render_all(workers=1):
        pass
    return studio


@pytest.fixture
def studio(tmp_path: Path, ua_schema: Schema, catalog: FontCatalog) -> Iterator[Studio]:
    s = make_studio(tmp_path / "p.studio", ua_schema, catalog, tmp_path / "renders")
    yield s
    s.close()


@pytest.fixture(scope="module")
def images(
    tmp_path_factory: pytest.TempPathFactory, ua_schema: Schema, catalog: FontCatalog
) -> dict[GlyphKey, np.ndarray]:
    base = tmp_path_factory.mktemp("imgs")
    with make_studio(base / "p.studio", ua_schema, catalog, base / "renders") as s:
        return project_images(s)


@pytest.fixture(scope="module")
def space(images: dict[GlyphKey, np.ndarray]) -> GlyphSpace:
    keys = sorted(images)
    stack = np.stack([images[k] for k in keys])
    trained = train_encoder(stack, TINY)
    emb = embed_images(stack, TINY, trained.weights)
    return space_from_images(images, dict(zip(keys, emb, strict=True)))


def test_the_encoder_is_deterministic_for_a_seed(images: dict[GlyphKey, np.ndarray]) -> None:
    stack = np.stack([images[k] for k in sorted(images)][:40])
    a = train_encoder(stack, TINY)
    b = train_encoder(stack, TINY)
    assert a.weights.keys() == b.weights.keys()
    for name in a.weights:
        assert np.array_equal(a.weights[name], b.weights[name]), name
    assert a.losses == b.losses
    assert np.array_equal(
        embed_images(stack, TINY, a.weights), embed_images(stack, TINY, b.weights)
    )
    other = train_encoder(stack, EncoderParams(seed=4, epochs=2, batch=32, threads=1))
    assert any(not np.array_equal(a.weights[n], other.weights[n]) for n in a.weights)


def test_an_interrupted_training_resumes_to_the_same_weights(
    images: dict[GlyphKey, np.ndarray], tmp_path: Path
) -> None:
    """Stopped after its first epoch and resumed from the state it left (through the file a
    job keeps it in), the encoder ends as an uninterrupted run does, bit for bit."""
    stack = np.stack([images[k] for k in sorted(images)][:48])
    params = EncoderParams(seed=5, epochs=3, batch=16, threads=1)
    whole = train_encoder(stack, params)
    states: list[dict[str, object]] = []
    with pytest.raises(StudioError, match="cancelled"):
        train_encoder(stack, params, on_epoch=states.append, should_stop=lambda: bool(states))
    assert [st["epoch"] for st in states] == [1]
    save_training_state(states[-1], tmp_path / "state.pt")
    state = load_training_state(tmp_path / "state.pt")
    assert state is not None
    resumed = train_encoder(stack, params, resume=state)
    assert resumed.resumed_from == 1 and whole.resumed_from == 0
    for name in whole.weights:
        assert np.array_equal(whole.weights[name], resumed.weights[name]), name
    assert resumed.losses == whole.losses
    # a state of other glyphs is not resumed: that training starts afresh
    other = train_encoder(stack[::-1].copy(), params, resume=state)
    assert other.resumed_from == 0
    # the state handed over is a copy: kept in memory while the training goes on (two more
    # batches here), it still resumes to the same weights
    kept: list[dict[str, object]] = []
    batches: list[int] = []
    with pytest.raises(StudioError, match="cancelled"):
        train_encoder(
            stack,
            params,
            on_epoch=kept.append,
            progress=lambda d, t: batches.append(d),
            should_stop=lambda: bool(kept) and len(batches) >= 5,
        )
    again = train_encoder(stack, params, resume=kept[-1])
    for name in whole.weights:
        assert np.array_equal(whole.weights[name], again.weights[name]), name
    # a state that reads but does not fit starts afresh (as an uninterrupted run)
    broken = {**state, "gen": state["net"]}
    afresh = train_encoder(stack, params, resume=broken)
    assert afresh.resumed_from == 0
    for name in whole.weights:
        assert np.array_equal(whole.weights[name], afresh.weights[name]), name
    assert load_training_state(tmp_path / "missing.pt") is None
    (tmp_path / "bad.pt").write_bytes(b"not a state")
    assert load_training_state(tmp_path / "bad.pt") is None


def test_progress_counts_batches(images: dict[GlyphKey, np.ndarray]) -> None:
    stack = np.stack([images[k] for k in sorted(images)][:40])
    seen: list[tuple[int, int]] = []
    train_encoder(
        stack,
        EncoderParams(epochs=2, batch=16, threads=1),
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen == [(i, 4) for i in range(1, 5)]  # 40 // 16 = 2 batches an epoch


def test_one_tagged_glyph_brings_its_nearest_neighbours(space: GlyphSpace) -> None:
    one = CIRCLED[0]
    tags = TagIndex.from_tags([(one, "closure", "circle")])
    found = rank_candidates(space, tags, "closure", ["circle"], 5, diversity=0.0)
    v = space.vectors
    sims = v @ v[space.index[one]]
    nearest = [space.keys[i] for i in np.argsort(-sims, kind="stable") if space.keys[i] != one]
    assert [s.key for s in found] == nearest[:5]
    assert all(s.value == "circle" for s in found)
    # with the diversity on, the first is still the nearest, and all are look-alikes here
    diverse = rank_candidates(space, tags, "closure", ["circle"], 5)
    assert diverse[0].key == nearest[0]
    assert sum(s.key in CIRCLED for s in diverse) >= 4


def test_a_planted_look_alike_set_comes_first(space: GlyphSpace) -> None:
    tags = TagIndex.from_tags(
        [(k, "closure", "circle") for k in CIRCLED[:3]]
        + [(k, "closure", "line") for k in ARROWS[:3]]
    )
    found = rank_candidates(space, tags, "closure", ["circle"], 10)
    assert sum(s.key in CIRCLED for s in found) >= 9, [str(s.key) for s in found]
    assert not {s.key for s in found} & set(CIRCLED[:3] + ARROWS[:3])  # tagged: not suggested


def test_suggestions_never_write_a_tag(studio: Studio) -> None:
    studio.tag(CIRCLED[:2], "closure", "circle")
    studio.tag([LETTERS[0]], "closure", "triangle")
    before = studio.project.all_tags()
    undo = studio.undo_stack.count() if hasattr(studio.undo_stack, "count") else None
    found = suggest(studio, "closure", n=8)
    assert len(found.suggestions) == 8
    assert found.space == "encoder+features"
    again = suggest(studio, "closure", "circle", n=8, encoder="stored")
    assert again.values == ["circle"]
    assert studio.project.all_tags() == before
    if undo is not None:
        assert studio.undo_stack.count() == undo


def test_the_stored_encoder_follows_the_fonts(studio: Studio) -> None:
    assert load_encoder(studio) is None
    studio.tag([CIRCLED[0]], "closure", "circle")
    suggest(studio, "closure", "circle", n=3)  # trains and stores it
    stored = load_encoder(studio)
    assert stored is not None and set(stored.keys) == set(project_images(studio))
    fonts = studio.font_manifest()
    changed = {f: "0" * 64 for f in fonts}
    assert encoder_version(changed, EncoderParams()) != stored.version


def test_a_concept_without_tags_is_told(studio: Studio) -> None:
    from studio.core.errors import StudioError

    with pytest.raises(StudioError, match="no glyph is tagged closure=circle"):
        suggest(studio, "closure", "circle", encoder="none")


@pytest.fixture
def project_file(tmp_path: Path, ua_schema: Schema, catalog: FontCatalog) -> str:
    path = tmp_path / "cli.studio"
    with make_studio(path, ua_schema, catalog, tmp_path / "renders") as s:
        s.tag(CIRCLED[:3], "closure", "circle")
    return str(path)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--concept", "colour"], "no concept 'colour'"),
        (["--concept", "closure", "--value", "oval"], "no value 'oval'"),
        (["--concept", "closure", "--n", "0"], "--n must be at least 1"),
        (["--concept", "closure", "--value", "square"], "no glyph is tagged closure=square"),
        (["--concept", "closure", "--stored-only"], "no encoder for its current fonts"),
    ],
)
def test_cli_errors_exit_2(
    project_file: str, args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["-q", "suggest", project_file, *args])
    _, err = capsys.readouterr()
    assert code == EXIT_USER_ERROR and words in err


def test_cli_lists_suggestions_as_json(
    project_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    assert main(["-q", "suggest", project_file, "--concept", "closure", "--n", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["values"] == ["circle"] and len(out["suggestions"]) == 5
    assert sum(GlyphKey.parse(s["key"]) in CIRCLED for s in out["suggestions"]) >= 3
    code = main(["-q", "suggest", project_file, "--concept", "closure", "--features-only"])
    assert code == 0 and "space: features" in capsys.readouterr().out
    with Project.open(project_file) as p:
        assert len(p.all_tags()) == 3  # still only the hand tags


def test_the_encoder_job_kind_trains_and_stores(project_file: str) -> None:
    from studio.worker.context import LocalContext
    from studio.worker.kinds import resolve_kind

    run = resolve_kind("encoder")
    ctx = LocalContext({"project": project_file, "epochs": 1})
    result = run(ctx)
    assert result["trained"] is True and result["glyphs"] == len(GLYPHS)
    assert ctx.last_progress[0] == 1.0
    again = run(LocalContext({"project": project_file, "epochs": 1}))
    assert again["trained"] is False and again["version"] == result["version"]


def test_an_interrupted_encoder_job_goes_on_from_its_last_epoch(
    project_file: str, tmp_path: Path
) -> None:
    from studio.suggest.job import RESUME_FILE
    from studio.worker.context import JobCancelled, LocalContext
    from studio.worker.kinds import resolve_kind

    run = resolve_kind("encoder")
    params = {"project": project_file, "epochs": 3, "force": True}
    cache = {**params, "cache": str(tmp_path / "renders")}
    job = tmp_path / "job"
    first: LocalContext = LocalContext(
        cache, work_dir=job, should_stop=lambda: "resume" in first.checkpoint()
    )
    with pytest.raises(JobCancelled):
        run(first)
    assert first.checkpoint() == {"resume": {"epoch": 1}}
    assert (job / RESUME_FILE).is_file()
    logs: list[str] = []
    second = LocalContext(
        cache, work_dir=job, checkpoint=first.checkpoint(), log=lambda line, lvl: logs.append(line)
    )
    result = run(second)
    assert result["resumed_from_epoch"] == 1
    assert "the encoder's training went on from epoch 1 of an earlier attempt" in logs
    assert not (job / RESUME_FILE).exists()
    # the same weights as a job that was never stopped (its own render cache)
    whole = run(LocalContext({**params, "cache": str(tmp_path / "other")}, work_dir=tmp_path / "w"))
    assert whole["resumed_from_epoch"] == 0 and whole["version"] == result["version"]
    stored = []
    for folder in ("renders", "other"):
        with Studio(Project.open(project_file), cache=RenderCache(tmp_path / folder)) as studio:
            enc = load_encoder(studio, EncoderParams(epochs=3))
            assert enc is not None
            stored.append(enc.weights)
    for name in stored[0]:
        assert np.array_equal(stored[0][name], stored[1][name]), name
    # a state that is gone: the next attempt starts afresh and says so
    (job / RESUME_FILE).unlink(missing_ok=True)
    logs.clear()
    again = LocalContext(
        cache,
        work_dir=job,
        checkpoint={"resume": {"epoch": 2}},
        log=lambda line, lvl: logs.append(line),
    )
    assert run(again)["resumed_from_epoch"] == 0
    assert any("missing or unreadable: it starts afresh" in line for line in logs)


def test_the_encoder_job_stores_in_the_render_cache_it_is_given(
    project_file: str, tmp_path: Path
) -> None:
    """The window's studio may read another render cache than the user's (``--cache``, a
    test's): the job it queues names it, and the encoder is stored where the window looks."""
    from studio.suggest.space import encoder_path
    from studio.worker.context import LocalContext
    from studio.worker.kinds import resolve_kind

    cache = tmp_path / "renders"
    result = resolve_kind("encoder")(
        LocalContext({"project": project_file, "epochs": 1, "cache": str(cache)})
    )
    assert result["trained"] is True
    with Studio(Project.open(project_file), cache=RenderCache(cache)) as studio:
        assert encoder_path(studio, result["version"]).is_file()
        assert load_encoder(studio, EncoderParams(epochs=1)) is not None


def test_cli_jobs_encoder_trains_in_a_worker_process(
    project_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`jobs encoder` queues the job the suggestion queue's T queues, and runs it in a worker
    process (as `jobs baseline` does); run again, it finds the encoder stored."""
    from studio.store.jobs import JobQueue

    code = main(["jobs", "encoder", project_file, "--epochs", "1", "--seed", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "queued job" in err
    with JobQueue(project_file) as queue:
        [job] = queue.jobs()
    assert job.kind == "encoder" and job.status == "done" and job.params["epochs"] == 1
    assert job.pid is not None and job.pid != __import__("os").getpid()  # another process
    version = job.result["version"]
    assert f"job {job.id} done: encoder {version} (trained, {len(GLYPHS)} glyphs)" in out
    code = main(["-q", "jobs", "encoder", project_file, "--epochs", "1", "--seed", "2"])
    assert code == 0 and "(already stored," in capsys.readouterr().out


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"epochs": 0}, "'epochs' must be above 0"),
        ({"epochs": -2}, "'epochs' must be above 0"),
        ({"epochs": "x"}, "'epochs' must be a whole number"),
        ({"seed": 1.5}, "'seed' must be a whole number"),
        ({"seed": -1}, "'seed' must be 0 or more"),
        ({"epochs": True}, "'epochs' must be a whole number"),
        ({"lr": "fast"}, "'lr' must be a number"),
    ],
)
def test_an_encoder_job_with_bad_settings_is_refused_by_name(
    project_file: str, params: dict[str, object], words: str
) -> None:
    """A job queued by hand or by another lab member: a clear error naming the field, never
    an encoder trained on nothing, nor torch's own error."""
    from studio.worker.context import LocalContext
    from studio.worker.kinds import resolve_kind

    with pytest.raises(StudioError, match=words):
        resolve_kind("encoder")(LocalContext({"project": project_file, **params}))


def test_cli_jobs_encoder_refuses_a_bad_epoch_count(
    project_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["-q", "jobs", "encoder", project_file, "--epochs", "0"])
    assert code == EXIT_USER_ERROR and "'epochs' must be above 0" in capsys.readouterr().err
    from studio.store.jobs import JobQueue

    with JobQueue(project_file) as queue:
        assert queue.jobs() == []  # nothing queued


def test_a_lab_job_cannot_make_a_worker_write_in_another_folder(tmp_path: Path) -> None:
    """On a lab database any member queues jobs that colleagues' workers run: a ``cache``
    folder in the job would make their worker write (and read) where the member says."""
    from studio.worker.context import LocalContext
    from studio.worker.kinds import resolve_kind

    ctx = LocalContext({"cache": str(tmp_path / "elsewhere")})
    ctx.location = "postgresql://member@lab.example/studio"
    with pytest.raises(StudioError, match="cannot name a render cache"):
        resolve_kind("encoder")(ctx)
    assert not (tmp_path / "elsewhere").exists()
    # nor open another project than the lab's own (a file on the colleague's machine)
    ctx = LocalContext({"project": str(tmp_path / "theirs.studio")})
    ctx.location = "postgresql://member@lab.example/studio"
    with pytest.raises(StudioError, match="that database's glyphs only"):
        resolve_kind("encoder")(ctx)
    assert not (tmp_path / "theirs.studio").exists()


def test_a_queue_deals_from_an_assignment_alone(space: GlyphSpace) -> None:
    """On a lab database the queue deals from the annotator's assignment (issue 30: two
    annotators are not shown the same glyph unless the assignment gave it to both): the
    ranking keeps to the glyphs given, and without them ranks every glyph."""
    one = CIRCLED[0]
    tags = TagIndex.from_tags([(one, "closure", "circle")])
    everyone = rank_candidates(space, tags, "closure", ["circle"], 5, diversity=0.0)
    mine = frozenset(space.keys[i] for i in range(0, len(space.keys), 3)) - {one}
    dealt = rank_candidates(space, tags, "closure", ["circle"], 5, diversity=0.0, only=mine)
    assert dealt and all(s.key in mine for s in dealt)
    assert [s.key for s in everyone] != [s.key for s in dealt]
