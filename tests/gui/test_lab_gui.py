"""A lab's shared project in the window, driven like a user: File ▸ Open lab database…, the
Lab tab (agreement, the disagreement queue), hiding others' tags, another client's tag arriving
live, and an annotator's rights. On the session's throwaway PostgreSQL server (tests.pgserver;
skipped where PostgreSQL is not installed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from studio.app import Studio
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.gui.lab_dialog import OpenLabDialog
from studio.gui.main_window import MainWindow
from studio.gui.settings import StudioSettings
from studio.store.project import Project
from tests.gui.windows import show_window
from tests.pgserver import PgServer

pytestmark = pytest.mark.gui
#: a busy machine (CI runs the suite on every core) connects and opens slowly: the tests
#: wait, they time nothing
WAIT_MS = 60_000

KEYS = [GlyphKey(cp, "symbola") for cp in range(0x25A0, 0x25B0)]
CIRCLE, SQUARE = GlyphKey(0x25A0, "symbola"), GlyphKey(0x25A1, "symbola")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> FontCatalog:
    found = FontCatalog.scan(cache_dir=tmp_path_factory.mktemp("fontcache"))
    if found.get("symbola") is None:
        pytest.skip("Symbola is not installed (Debian package fonts-symbola)")
    return found


@pytest.fixture(scope="module")
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> RenderCache:
    return RenderCache(tmp_path_factory.mktemp("renders"))


def as_user(url: str, name: str) -> str:
    return url.replace("//postgres@", f"//{name}@")


@pytest.fixture
def lab_url(
    pg_server: PgServer, ua_schema: Schema, catalog: FontCatalog, render_cache: RenderCache
) -> Iterator[str]:
    """A lab database with 16 glyphs, annotators ann and bea (every glyph given to both) and
    the curator cy; the superuser postgres is its admin."""
    url = pg_server.fresh_database("gui")
    project = Project.create(url, ua_schema)
    with Studio(project, catalog=catalog, cache=render_cache, author="setup") as studio:
        studio.add_glyphs(KEYS)
        project.add_person("ann", "annotator", full_name="Ann A.")
        project.add_person("bea", "annotator")
        project.add_person("cy", "curator")
        project.assign(KEYS, ["ann", "bea"], overlap=1.0, per_overlap_glyph=2, seed=1)
    yield url
    pg_server.drop_database(url.rsplit("/", 1)[1])


_open: list[Studio] = []


@pytest.fixture(autouse=True)
def _close_studios() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def open_window(qtbot, location: str | Path, catalog, render_cache) -> MainWindow:
    studio = Studio(Project.open(location), catalog=catalog, cache=render_cache, author="me")
    _open.append(studio)
    return show_window(qtbot, studio)


def tag_as(url: str, name: str, keys: list[GlyphKey], concept: str, value: str) -> None:
    with Project.open(as_user(url, name)) as other:
        other.add_tags(keys, concept, value, name)


def grab(widget, path: Path) -> None:
    QApplication.processEvents()
    widget.grab().save(str(path))


# ---- File ▸ Open lab database… ----------------------------------------------------------------


def test_the_dialog_opens_a_lab_database_and_recent_reopens_it(
    qtbot, tmp_path: Path, lab_url: str, pg_server: PgServer, ua_schema, catalog, render_cache
) -> None:
    file_project = tmp_path / "mine.studio"
    Project.create(file_project, ua_schema).close()
    window = open_window(qtbot, file_project, catalog, render_cache)
    assert not window.lab_label.isVisible()
    qtbot.keyClick(
        window,
        Qt.Key.Key_O,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    dlg = window.lab_dialog
    assert isinstance(dlg, OpenLabDialog) and dlg.isVisible()
    # no keyring here: the option says why it is off, and nothing was written to settings
    if not dlg.remember.isEnabled():
        assert "~/.pgpass" in dlg.remember.toolTip()
    dlg.host.clear()
    qtbot.keyClicks(dlg.host, pg_server.host)
    dlg.port.setValue(pg_server.port)
    qtbot.keyClicks(dlg.database, lab_url.rsplit("/", 1)[1])
    dlg.user.clear()
    qtbot.keyClicks(dlg.user, "ann")
    qtbot.keyClicks(dlg.password, "not-needed-on-trust")
    qtbot.mouseClick(dlg.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Connected" in dlg.message.text(), timeout=WAIT_MS)
    assert "as ann (annotator)" in dlg.message.text()
    grab(dlg, tmp_path / "dialog.png")
    # the test's answer is shown before its worker has finished: Open is enabled again then
    # (a click on it while it is off does nothing, as for a user; CI's busy cores showed it)
    qtbot.waitUntil(dlg.open_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(dlg.open_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.studio.project.is_database, timeout=WAIT_MS)
    project = window.studio.project
    assert project.user == "ann" and window.studio.author == "ann"
    assert "signed in as ann (annotator)" in window.windowTitle()
    assert lab_url.rsplit("/", 1)[1] in window.windowTitle()
    assert (
        window.lab_label.isVisible() and "signed in as ann (annotator)" in window.lab_label.text()
    )
    # the recent list holds the URL without the password; nothing anywhere holds the password
    recent = window.settings.recent_projects()
    assert (
        recent[0]
        == f"postgresql://ann@{pg_server.host}:{pg_server.port}/" + lab_url.rsplit("/", 1)[1]
    )
    settings_text = Path(window.settings.file_name).read_text()
    assert "not-needed-on-trust" not in settings_text
    assert "not-needed-on-trust" not in window.windowTitle()
    # back to the file, then the recent entry reopens the database without retyping
    window.open_project(str(file_project))
    assert not window.studio.project.is_database and not window.lab_label.isVisible()
    window.fill_recent_menu()
    entry = next(a for a in window.recent_menu.actions() if a.data() == recent[0])
    assert entry.isEnabled()
    entry.trigger()
    assert window.studio.project.is_database and window.studio.project.user == "ann"


def test_an_unreachable_server_is_said_plainly_in_the_dialog(qtbot, pg_server: PgServer) -> None:
    dlg = OpenLabDialog(None, f"postgresql://ann@127.0.0.1:{pg_server.port + 1}/nowhere")
    qtbot.addWidget(dlg)
    dlg.show()
    qtbot.mouseClick(dlg.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dlg.busy(), timeout=15000)
    text = dlg.message.text()
    assert "cannot be reached" in text and "nowhere" in text, text
    assert "Traceback" not in text


# ---- the Lab tab -------------------------------------------------------------------------------


def test_agreement_is_computed_and_a_curator_settles_a_disagreement(
    qtbot, tmp_path: Path, lab_url: str, catalog, render_cache
) -> None:
    # ann and bea agree on six glyphs and disagree on two
    tag_as(lab_url, "ann", KEYS[:8], "closure", "circle")
    tag_as(lab_url, "bea", KEYS[:6], "closure", "circle")
    tag_as(lab_url, "bea", KEYS[6:8], "closure", "square")
    for name in ("ann", "bea"):
        with Project.open(as_user(lab_url, name)) as p:
            p.mark_done(KEYS[:8], name)
    window = open_window(qtbot, as_user(lab_url, "cy"), catalog, render_cache)
    qtbot.keyClick(window, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
    lab = window.lab
    assert window.tabs.currentWidget() is lab
    assert "signed in as <b>cy (curator)</b>" in lab.header.text()
    people = [lab.people_table.item(r, 0).text() for r in range(lab.people_table.rowCount())]
    assert {"ann", "bea", "cy  (you)"} <= set(people)
    assert not lab.people_box.isEnabled() and "admin" in lab.people_box.toolTip()
    # Agreement: Compute runs in the background; closure's alpha shows with its interval
    lab.tabs.setCurrentIndex(2)
    qtbot.mouseClick(lab.compute_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.report is not None and not lab.computing(), timeout=30000)
    concepts = {
        lab.concept_table.item(r, 0).text(): lab.concept_table.item(r, 1).text()
        for r in range(lab.concept_table.rowCount())
    }
    alpha = lab.report.concept("closure").alpha
    assert alpha.value is not None and alpha.value < 1.0
    assert concepts["closure"].startswith(f"{alpha.value:.2f} [")
    assert concepts["aspect"].startswith("— (")  # degenerate: said with its reason
    assert lab.pair_table.item(0, 0).text() == "ann · bea"
    assert lab.agreement_summary.text().startswith("All tags: ")
    # the assisted work apart (issue 30): nobody here tagged from a suggestion
    all_ratings = lab.report.ratings
    lab.source_combo.setCurrentIndex(lab.source_combo.findData("suggestion"))
    qtbot.mouseClick(lab.compute_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not lab.computing() and lab.report.ratings == 0, timeout=30000)
    assert lab.agreement_summary.text().startswith("Accepted from suggestions: 0 tags")
    lab.source_combo.setCurrentIndex(lab.source_combo.findData("hand"))
    qtbot.mouseClick(lab.compute_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: not lab.computing() and lab.report.ratings == all_ratings, timeout=30000
    )
    for i in range(lab.tabs.count()):
        lab.tabs.setCurrentIndex(i)
        grab(window, tmp_path / f"lab-{i}.png")
    # Disagreements: two glyphs; the first one's values side by side, both pre-ticked
    lab.tabs.setCurrentIndex(3)
    assert lab.queue_table.rowCount() == 2
    key, d = lab.current_disagreement()
    assert key in KEYS[6:8] and d.concepts == ("closure",)
    assert sorted(lab.settle_choice()) == [("closure", "circle"), ("closure", "square")]
    lab.set_settle_choice("closure", "square", False)
    qtbot.keyClicks(lab.note, "a filled square reads as a circle here? no: circle")
    lab.queue_table.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert lab.queue_table.rowCount() == 1
    assert key not in [lab.queue_table.item(0, 0).data(Qt.ItemDataRole.UserRole)]
    consensus = {(t.concept, t.value) for t in window.studio.project.tags_of(key)}
    assert consensus == {("closure", "circle")}
    assert window.studio.project.adjudications()[key][0] == "cy"
    lab.tabs.setCurrentIndex(4)
    assert lab.audit_table.rowCount() > 0


def test_an_annotator_sees_the_queue_read_only_and_cannot_approve(
    qtbot, lab_url: str, catalog, render_cache
) -> None:
    tag_as(lab_url, "ann", KEYS[:1], "closure", "circle")
    tag_as(lab_url, "bea", KEYS[:1], "closure", "square")
    window = open_window(qtbot, as_user(lab_url, "ann"), catalog, render_cache)
    approve = window.actions["puzzle.approve"]
    window.show_board()
    window.board._update_actions()  # the board enables its keys for a current puzzle…
    approve.setEnabled(True)  # …and even then the role keeps Approve off
    assert not approve.isEnabled()
    assert "only a curator or an admin" in approve.toolTip() and "ann is an annotator" in (
        approve.toolTip()
    )
    assert not window.actions["edit.schema"].isEnabled()
    window.show_lab()
    lab = window.lab
    lab.tabs.setCurrentIndex(3)
    assert lab.queue_table.rowCount() == 1
    assert not lab.settle_button.isEnabled()
    assert "read-only" in lab.settle_button.toolTip()
    assert not lab.assign_box.isEnabled()
    # the assignment shows ann's own glyphs
    assert lab.my_glyphs.count() == len(KEYS)


def test_a_write_the_server_refuses_is_a_message_not_a_traceback(
    qtbot, lab_url: str, catalog, render_cache
) -> None:
    window = open_window(qtbot, as_user(lab_url, "ann"), catalog, render_cache)
    shown: list[tuple[str, str]] = []
    window.show_error = lambda title, e: shown.append((title, str(e)))  # type: ignore[method-assign]
    # bypass the GUI's gate: the server itself refuses an annotator's adjudication
    window.lab._role = "curator"
    tag_as(lab_url, "ann", KEYS[:1], "closure", "circle")
    tag_as(lab_url, "bea", KEYS[:1], "closure", "square")
    window.lab.refresh()
    window.lab._role = "curator"
    window.lab._fill_queue()
    window.lab.settle()
    assert shown and shown[0][0] == "Not settled"
    assert "annotator" in shown[0][1] or "refused" in shown[0][1]


# ---- tagging with others -----------------------------------------------------------------------


def test_hide_others_toggles_what_the_inspector_shows(
    qtbot, lab_url: str, catalog, render_cache
) -> None:
    tag_as(lab_url, "bea", [CIRCLE], "closure", "square")
    window = open_window(qtbot, as_user(lab_url, "ann"), catalog, render_cache)
    window.show_annotator()
    window.go_to_glyph(CIRCLE)
    window.tree.select("closure", "circle")
    window.grid.selectionModel().select(
        window.grid.currentIndex(), window.grid.selectionModel().SelectionFlag.ClearAndSelect
    )
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)  # ann tags it: as the login
    mine = window.studio.project.own_tags_of(CIRCLE)
    assert ("ann", "closure", "circle") in {(t.annotator, t.concept, t.value) for t in mine}
    assert window.inspector.others_shown() == ["bea: closure=square"]
    hide = window.actions["view.hide_others"]
    assert not hide.isChecked()
    qtbot.keyClick(
        window,
        Qt.Key.Key_H,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert hide.isChecked() and window.settings.hide_others()
    assert window.inspector.others_shown() == []
    rows = {
        window.inspector.tags.item(r, 2).text() for r in range(window.inspector.tags.rowCount())
    }
    assert rows == {"ann"}
    assert "hidden" in window.inspector.others_title.text()
    hide.trigger()
    assert window.inspector.others_shown() == ["bea: closure=square"]
    assert StudioSettings().hide_others() is False


def test_another_clients_tag_appears_in_the_open_window(
    qtbot, lab_url: str, catalog, render_cache
) -> None:
    window = open_window(qtbot, as_user(lab_url, "ann"), catalog, render_cache)
    assert window.live.wait_listening(10)
    window.go_to_glyph(SQUARE)
    assert window.inspector.others_shown() == ["none yet"]
    tag_as(lab_url, "bea", [SQUARE], "closure", "square")
    qtbot.waitUntil(
        lambda: window.inspector.others_shown() == ["bea: closure=square"], timeout=5000
    )
    # bea is the only one to have tagged it: the consensus (the grid) has her tag too
    qtbot.waitUntil(
        lambda: ("closure", "square") in window.model.tags.get(SQUARE, set()), timeout=5000
    )
    window.close()
    assert not window.live.listening


def test_an_annotator_works_through_her_assignment(
    qtbot, lab_url: str, catalog, render_cache
) -> None:
    """Only my assignment (Ctrl+Shift+M) shows the glyphs given to the login; Ctrl+D marks
    the selected ones done (again: not done), which the agreement reads as "none" given."""
    with Project.open(lab_url) as admin:  # a few more glyphs, given to nobody
        admin.add_glyphs(
            [(GlyphKey(0x2700 + i, "symbola"), None, "pending", None) for i in range(4)]
        )
    window = open_window(qtbot, as_user(lab_url, "ann"), catalog, render_cache)
    window.show_annotator()
    window.hide_missing.setChecked(False)
    everything = window.model.rowCount()
    mine = {k for k, _ in window.studio.project.assigned("ann")}
    assert mine and everything > len(mine)
    qtbot.keyClick(
        window,
        Qt.Key.Key_M,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert window.actions["view.my_assignment"].isChecked()
    button = window.tagger.mine_button
    assert button.isVisible() and button.isChecked()  # said on screen
    shown = {window.model.record(r).key for r in range(window.model.rowCount())}
    assert shown == mine
    window.grid.selectAll()
    heard: list[list[GlyphKey]] = []  # the mark goes through the studio: every view hears it
    window.studio.events.tags_changed.connect(heard.append)
    qtbot.keyClick(window.grid, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert all(done is not None for _, done in window.studio.project.assigned("ann"))
    assert "marked done" in window.statusBar().currentMessage()
    assert heard and set(heard[-1]) == mine
    _, annotated = window.studio.project.ratings()
    assert {a for _, a in annotated} >= {"ann"}  # done marks count as annotated
    qtbot.keyClick(window.grid, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert all(done is None for _, done in window.studio.project.assigned("ann"))
    window.actions["view.my_assignment"].trigger()
    assert window.model.rowCount() == everything
