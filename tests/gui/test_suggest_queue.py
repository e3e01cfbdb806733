"""The suggestion queue in the tagger (issue 30), driven like a user: Ctrl+Shift+G opens it on
the tree's concept, a number key tags the glyph shown (in the project and the grid), 0 and skip
write nothing and are not dealt again, the model's guess is hidden until the answer, Ctrl+Z
undoes an accepted tag (and the glyph is dealt again), Esc gives the grid back; with no stored
encoder, T queues its training as an ``encoder`` job that a real worker process runs (the
window's job queue, listed in the Baselines tab; progress, Cancel cancels it and Esc leaves it
training, a failure is said),
then the space is built from the stored encoder; F ranks on the image features.

Glyphs are rendered from set-up's Symbola only (the suite's hermetic font folder,
tests/fontenv.py); each test has its own render cache, so no stored encoder leaks between
tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton

from studio.app import Studio
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.gui.main_window import MainWindow
from studio.gui.suggest_panel import SuggestionPanel
from studio.store.jobs import JobRecord
from studio.store.project import Project

pytestmark = pytest.mark.gui

CIRCLED = [GlyphKey(cp, "symbola") for cp in range(0x2460, 0x2474)]  # ① .. ⑳
LETTERS = [GlyphKey(cp, "symbola") for cp in range(0x41, 0x5B)]  # A .. Z
ARROWS = [GlyphKey(cp, "symbola") for cp in range(0x2190, 0x219A)]  # ← .. ↙
TAGGED = {CIRCLED[0]: "circle", CIRCLED[1]: "circle", LETTERS[0]: "line"}
WAIT_MS = 20000
JOB_WAIT_MS = 90_000  # a worker process starts, imports torch and trains: two busy cores
CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> FontCatalog:
    cat = FontCatalog.scan(cache_dir=tmp_path_factory.mktemp("fonts"))
    if cat.get("symbola") is None:
        pytest.skip("Symbola is not installed (Debian package fonts-symbola)")
    return cat


@pytest.fixture
def window(
    tmp_path: Path, ua_schema: Schema, catalog: FontCatalog, show_main_window
) -> Iterator[MainWindow]:
    """Circled digits, letters and arrows of Symbola, rendered; ①② closure = circle, A = line;
    the window on the closure concept."""
    studio = Studio(
        Project.create(tmp_path / "p.studio", ua_schema),
        catalog=catalog,
        cache=RenderCache(tmp_path / "renders"),
        author="ann",
    )
    studio.add_glyphs(CIRCLED + LETTERS + ARROWS)
    for key, value in TAGGED.items():
        studio.project.add_tags([key], "closure", value, "setup")
    for _ in studio.render_all(workers=1):
        pass
    w = show_main_window(studio)
    w.tree.select("closure", "circle")
    yield w
    w.tagger.shutdown()
    studio.close()


def panel_of(window: MainWindow) -> SuggestionPanel:
    return window.tagger.suggestions


def open_queue(qtbot, window: MainWindow, train_key: Qt.Key = Qt.Key.Key_F) -> SuggestionPanel:
    """Ctrl+Shift+G, then F (features only) or T (train the encoder); wait for a glyph."""
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    assert window.tagger.suggesting() and panel.isVisible() and panel.hasFocus()
    assert panel.train_button.isVisible() and "No glyph encoder" in panel.message.text()
    qtbot.keyClick(panel, train_key)
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=WAIT_MS)
    return panel


def shown(panel: SuggestionPanel) -> GlyphKey:
    s = panel.queue.current() if panel.queue is not None else None
    assert s is not None
    return s.key


def closure_tags(window: MainWindow) -> set[tuple[GlyphKey, str]]:
    return {(t.key, t.value) for t in window.studio.project.all_tags() if t.concept == "closure"}


def visible_texts(panel: SuggestionPanel) -> str:
    widgets = panel.findChildren(QLabel) + panel.findChildren(QPushButton)
    return "\n".join(w.text() for w in widgets if w.isVisibleTo(panel))


def test_a_number_key_tags_the_glyph_shown_and_the_guess_waits_for_the_answer(
    qtbot, window: MainWindow
) -> None:
    panel = open_queue(qtbot, window)
    key = shown(panel)
    assert key not in TAGGED  # untagged glyphs only
    # the model's guess is nowhere before the answer: no "guessed", no pre-chosen value
    assert "guess" not in visible_texts(panel).lower()
    assert not any(b.isDefault() or b.isChecked() or b.hasFocus() for b in panel.value_buttons)
    assert not {b.styleSheet() for b in panel.value_buttons} - {panel.value_buttons[0].styleSheet()}
    values = window.studio.schema.concept("closure").values
    assert [b.text() for b in panel.value_buttons[:2]] == [
        f"1  {values[0].display}",
        f"2  {values[1].display}",
    ]
    guess = panel.queue.current().value  # type: ignore[union-attr]
    before = closure_tags(window)

    qtbot.keyClick(panel, Qt.Key.Key_2)  # the second value: "line"

    assert closure_tags(window) == before | {(key, values[1].id)}
    (tag,) = [t for t in window.studio.project.tags_of(key) if t.concept == "closure"]
    assert tag.source == "suggestion" and tag.author == "ann"  # its provenance, stored
    assert all(t.source == "hand" for t in window.studio.project.all_tags() if t.key in TAGGED)
    assert ("closure", values[1].id) in window.model.tags[key]  # the grid shows it
    assert window.studio.undo_stack.undo_label.startswith("Tag 1 glyph closure")
    # then the guess is told, of the glyph just answered, and the next glyph is another
    shown_guess = window.studio.schema.concept("closure").value(guess).display
    assert f"the model guessed {shown_guess}" in panel.feedback.text()
    assert str(key) in panel.feedback.text()
    assert shown(panel) != key
    assert panel.queue.answers[-1].kind == "accepted"  # type: ignore[union-attr]
    assert "1 answered, 1 tagged" in panel.counts.text()


def test_none_and_skip_write_nothing_and_are_not_dealt_again(qtbot, window: MainWindow) -> None:
    panel = open_queue(qtbot, window)
    before = closure_tags(window)
    answered = []
    for key in (Qt.Key.Key_0, Qt.Key.Key_S, Qt.Key.Key_Space, Qt.Key.Key_0):
        answered.append(shown(panel))
        qtbot.keyClick(panel, key)
        assert "the model guessed" in panel.feedback.text()
    assert closure_tags(window) == before
    assert not window.studio.undo_stack.can_undo
    q = panel.queue
    assert q is not None
    assert [a.kind for a in q.answers] == ["none", "skipped", "skipped", "none"]
    rejected, skipped = panel.memory.of("closure")
    assert rejected == {answered[0], answered[3]} and skipped == {answered[1], answered[2]}
    # the next ranking (asked for after a few answers) leaves them out, and feeds "none" as
    # negatives; the queue opened again on the concept does not deal them either
    qtbot.waitUntil(lambda: panel._rank_job is None, timeout=WAIT_MS)
    assert not set(answered) & {s.key for s in q.pending} and shown(panel) not in answered
    request = q.request()
    assert request.rejected == frozenset(rejected) and set(answered) <= request.exclude
    qtbot.keyClick(panel, Qt.Key.Key_Escape)
    window.tree.select("closure", "line")
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=WAIT_MS)
    assert shown(panel) not in answered


def test_ctrl_z_undoes_an_accepted_tag_and_deals_the_glyph_again(qtbot, window: MainWindow) -> None:
    panel = open_queue(qtbot, window)
    key = shown(panel)
    before = closure_tags(window)
    qtbot.keyClick(panel, Qt.Key.Key_1)
    assert (key, "circle") in closure_tags(window)
    qtbot.keyClick(panel, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert closure_tags(window) == before
    assert ("closure", "circle") not in window.model.tags.get(key, set())
    assert shown(panel) == key  # dealt again, to answer anew
    assert "shown again" in panel.feedback.text()
    assert not any(a.kind == "accepted" for a in panel.queue.answers)  # type: ignore[union-attr]


def test_esc_gives_the_grid_its_keys_back(qtbot, window: MainWindow) -> None:
    panel = open_queue(qtbot, window)
    # while the queue is open the grid's tag keys wait (a number is the queue's answer)
    assert not window.actions["tag.value_1"].isEnabled()
    assert not window.actions["tag.next_glyph"].isEnabled()
    assert window.actions["tag.suggest"].isEnabled()
    qtbot.keyClick(panel, Qt.Key.Key_Escape)
    assert not window.tagger.suggesting() and window.grid.hasFocus()
    assert window.actions["tag.value_1"].isEnabled()
    assert closure_tags(window) == {(k, v) for k, v in TAGGED.items()}


def no_training_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoder never trains in the studio's own process (the worker's job does)."""
    from studio.suggest import space

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the encoder trained in the studio's process")

    monkeypatch.setattr(space, "train_and_store", refuse)


def encoder_jobs(window: MainWindow) -> list[JobRecord]:
    """The project's encoder jobs, as the Baselines tab lists them."""
    return [j for j in window.dashboard.model.jobs if j.kind == "encoder"]


def test_with_no_stored_encoder_t_trains_one_in_the_worker_with_progress(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_training_here(monkeypatch)
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    assert (
        "No glyph encoder" in panel.message.text() and "background worker" in panel.message.text()
    )
    seen: list[str] = []
    window.dashboard.controller.jobs_read.connect(lambda _jobs: seen.append(panel.message.text()))

    qtbot.keyClick(panel, Qt.Key.Key_T)

    # a job on the project's queue, in the Baselines tab's list too; the panel follows it
    job_id = panel.encoder_job
    assert job_id is not None and [j.id for j in encoder_jobs(window)] == [job_id]
    assert window.dashboard.model.row_of(job_id) is not None
    assert panel.cancel_button.isVisible() and not panel.train_button.isVisible()
    assert f"(job {job_id})" in panel.message.text()
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=JOB_WAIT_MS)

    [job] = encoder_jobs(window)
    assert job.status == "done" and job.result is not None and job.result["trained"] is True
    assert job.pid is not None and job.pid != os.getpid()  # a worker process trained it
    assert job.params["cache"] == str(window.studio.cache.root)  # stored where the window looks
    assert window.dashboard.queue is not None
    log = [entry.line for entry in window.dashboard.queue.logs(job_id)]
    assert any("trained in" in line and str(window.studio.cache.root) in line for line in log)
    assert panel.encoder_job is None
    assert panel.space.source == "encoder+features"
    assert panel.space.encoder_version == job.result["version"]  # built from the stored one
    assert "learned encoder" in panel.counts.text()
    assert any(f"Training the glyph encoder in the background (job {job_id})" in t for t in seen)
    # stored: the next session of this project needs no training, nor asks
    panel.reset()
    panel.open_for("closure")
    assert not panel.train_button.isVisible() and panel.encoder_job is None
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=WAIT_MS)
    assert len(encoder_jobs(window)) == 1  # no second job


def test_an_encoder_job_already_queued_is_followed_not_queued_again(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One queued from the command line (`analogy-studio jobs encoder`), say."""
    no_training_here(monkeypatch)
    from studio.suggest.job import ENCODER_JOB_TITLE, encoder_job_params

    params = encoder_job_params(cache=window.studio.cache.root)
    job_id = window.dashboard.submit("encoder", params, ENCODER_JOB_TITLE)
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    assert panel.encoder_job == job_id and not panel.train_button.isVisible()
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=JOB_WAIT_MS)
    assert [j.id for j in encoder_jobs(window)] == [job_id]
    assert panel.space.source == "encoder+features"


def test_the_suggest_shortcut_is_in_the_tag_menu_and_clashes_with_no_other() -> None:
    from studio.gui.actions import ACTIONS, action_spec

    spec = action_spec("tag.suggest")
    assert spec.menu == "tag" and spec.shortcut == "Ctrl+Shift+G"
    others = [s.id for s in ACTIONS if s.id != spec.id and "Ctrl+Shift+G" in s.shortcuts]
    assert others == []
    assert action_spec("puzzle.generate").shortcut == "Ctrl+G"  # the board keeps its key


def test_with_no_concept_chosen_the_queue_asks_for_one_and_says_when_none_is_tagged(
    qtbot, window: MainWindow
) -> None:
    window.tree.setCurrentItem(window.tree.topLevelItem(0))  # a category: no concept
    assert window.tree.current() == (None, None)
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)  # Tag ▸ Suggest…
    panel = panel_of(window)
    assert "Choose a concept" in panel.message.text()
    concepts = [panel.concept_combo.itemData(i) for i in range(panel.concept_combo.count())]
    untagged = concepts[0]
    assert untagged != "closure"
    qtbot.keyClick(panel, Qt.Key.Key_BracketRight)  # the first concept: nothing tagged
    assert "No glyph is tagged" in panel.message.text()
    assert panel._space_job is None and not panel.train_button.isVisible()  # no work for it
    assert window.tree.current() == (untagged, None)  # the tree follows, no value chosen
    for _ in range(concepts.index("closure")):
        qtbot.keyClick(panel, Qt.Key.Key_BracketRight)
    assert panel.queue is not None and panel.queue.concept == "closure"
    assert panel.train_button.isVisible()
    qtbot.keyClick(panel, Qt.Key.Key_F)
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=WAIT_MS)
    # V aims at one value: "only circle", the first
    qtbot.keyClick(panel, Qt.Key.Key_V)
    assert panel.queue.value == "circle"
    qtbot.waitUntil(lambda: panel.queue.current() is not None, timeout=WAIT_MS)
    assert panel.queue.current().value == "circle"


def test_cancel_stops_the_encoders_job_and_the_choice_is_offered_again(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_training_here(monkeypatch)
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    qtbot.keyClick(panel, Qt.Key.Key_T)
    job_id = panel.encoder_job
    assert job_id is not None and panel.cancel_button.isVisible()
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)  # the queue stays open
    assert window.tagger.suggesting()
    qtbot.waitUntil(lambda: panel.encoder_job is None, timeout=JOB_WAIT_MS)
    qtbot.waitUntil(lambda: encoder_jobs(window)[0].status == "cancelled", timeout=JOB_WAIT_MS)
    assert panel.space is None and panel.train_button.isVisible()
    assert f"training was cancelled (job {job_id})" in panel.message.text()
    assert "No glyph encoder" in panel.message.text()
    assert closure_tags(window) == {(k, v) for k, v in TAGGED.items()}  # nothing lost
    qtbot.keyClick(panel, Qt.Key.Key_Escape)  # and now closes it
    assert not window.tagger.suggesting()


def test_esc_goes_back_to_the_grid_and_the_training_goes_on(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Esc never cancels a job (it may be another session's or the command line's): the
    panel closes, the worker trains on, and Ctrl+Shift+G then reads the stored encoder."""
    no_training_here(monkeypatch)
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    qtbot.keyClick(panel, Qt.Key.Key_T)
    job_id = panel.encoder_job
    assert job_id is not None
    qtbot.keyClick(panel, Qt.Key.Key_Escape)
    assert not window.tagger.suggesting() and panel.encoder_job is None
    assert f"goes on training in the background (job {job_id})" in (
        window.statusBar().currentMessage()
    )
    qtbot.waitUntil(lambda: encoder_jobs(window)[0].status == "done", timeout=JOB_WAIT_MS)
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=JOB_WAIT_MS)
    assert panel.space.source == "encoder+features" and len(encoder_jobs(window)) == 1


def test_a_job_with_other_settings_is_not_followed(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jobs encoder --epochs 1` stores another version than the panel reads: T queues the
    panel's own rather than waiting for one it would not find."""
    no_training_here(monkeypatch)
    from studio.suggest.job import ENCODER_JOB_TITLE, encoder_job_params

    other = encoder_job_params(cache=window.studio.cache.root, epochs=1)
    other_id = window.dashboard.submit("encoder", other, ENCODER_JOB_TITLE)
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    assert panel.encoder_job is None and panel.train_button.isVisible()
    qtbot.keyClick(panel, Qt.Key.Key_T)
    assert panel.encoder_job is not None and panel.encoder_job != other_id
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=JOB_WAIT_MS)
    assert panel.space.source == "encoder+features"


def test_t_sees_a_job_queued_elsewhere_while_another_job_runs(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a job runs the controller re-reads only the running ones, so an encoder job
    queued meanwhile by the command line is not in its list: T reads the list first and
    follows that job rather than queueing a second."""
    no_training_here(monkeypatch)
    from studio.store.jobs import JobQueue
    from studio.suggest.job import ENCODER_JOB_TITLE, encoder_job_params

    controller = window.dashboard.controller
    busy = controller.submit("diagnostic", {"action": "sleep", "seconds": 3, "steps": 30})
    qtbot.waitUntil(
        lambda: any(j.id == busy and j.status == "running" for j in controller.jobs),
        timeout=JOB_WAIT_MS,
    )
    with JobQueue(window.studio.project.path) as queue:  # as `analogy-studio jobs encoder`
        elsewhere = queue.submit(
            "encoder", encoder_job_params(cache=window.studio.cache.root), ENCODER_JOB_TITLE
        )
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    if panel.encoder_job is None:  # the opening read did not list it yet
        qtbot.keyClick(panel, Qt.Key.Key_T)
    assert panel.encoder_job == elsewhere
    assert [j.id for j in encoder_jobs(window)] in ([elsewhere], [])
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=JOB_WAIT_MS)
    with JobQueue(window.studio.project.path) as queue:
        assert [j.id for j in queue.jobs() if j.kind == "encoder"] == [elsewhere]


def test_a_failed_encoder_job_says_why_and_f_still_ranks(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.gui import suggest_panel

    gone = str(window.studio.project.path.parent / "gone.studio")
    monkeypatch.setattr(suggest_panel, "encoder_job_params", lambda **_: {"project": gone})
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    qtbot.keyClick(panel, Qt.Key.Key_T)
    job_id = panel.encoder_job
    qtbot.waitUntil(lambda: panel.encoder_job is None, timeout=JOB_WAIT_MS)
    [job] = encoder_jobs(window)
    assert job.id == job_id and job.status == "failed"
    text = panel.message.text()
    assert f"training failed (job {job_id})" in text and "gone.studio" in text
    assert "Baselines tab" in text and panel.train_button.isVisible()
    assert f"failed (job {job_id})" in window.statusBar().currentMessage()
    qtbot.keyClick(panel, Qt.Key.Key_F)  # the image features still rank
    qtbot.waitUntil(lambda: panel.pages.currentWidget() is panel._card, timeout=WAIT_MS)
    assert panel.space.source == "features"


def test_without_background_jobs_t_says_so_and_trains_nothing(
    qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_training_here(monkeypatch)
    window.dashboard.shutdown()  # as when the project's jobs cannot be opened
    qtbot.keyClick(window.grid, Qt.Key.Key_G, CTRL_SHIFT)
    panel = panel_of(window)
    qtbot.keyClick(panel, Qt.Key.Key_T)
    assert panel.encoder_job is None and panel._space_job is None
    assert "background jobs are not running" in panel.message.text()
    assert panel.train_button.isVisible() and panel.features_button.isVisible()


def test_the_time_left_comes_from_the_training_batches_alone(
    window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No estimate while the worker starts or renders, nor at the first training batch seen;
    then the rate since that batch (start-up never in it)."""
    from types import SimpleNamespace

    panel = panel_of(window)
    clock = [100.0]
    monkeypatch.setattr(panel, "clock", lambda: clock[0])

    def read(progress: float, message: str, status: str = "running") -> str:
        job = SimpleNamespace(
            id=4, status=status, progress=progress, message=message, cancel_requested=False
        )
        panel._show_encoder_progress(job, [job])  # type: ignore[arg-type]
        return panel.message.text()

    assert read(0.0, "", "queued").endswith("(job 4): starting the worker…")
    assert read(0.05, "rendering 50/100 glyphs").endswith(": rendering 50/100 glyphs")
    clock[0] = 130.0  # torch's start-up: 30 s, in no estimate
    assert read(0.1 + 0.9 * 1 / 10, "training: batch 1/10").endswith(": batch 1/10")
    clock[0] = 132.0  # one batch in 2 s: 8 left, 16 s
    assert read(0.1 + 0.9 * 2 / 10, "training: batch 2/10").endswith(
        ": batch 2/10 — about 16 s left"
    )
    assert panel.progress.value() == 280
