"""Menus, actions and shortcuts declared as data, with stable ids (in the manner of napari's
app-model). ``ACTIONS`` is the one place that says which actions exist, in which menu, under
which keys; the window turns it into QActions with :func:`build_actions` and lays out its menu
bar with :func:`build_menus`; the shortcuts dialog reads the same table.

Shortcuts are written in Qt's portable text (``"Ctrl+Shift+Z"``, ``"Del"``, ``"]"``), not as
``QKeySequence.StandardKey`` names: the standard keys differ from platform to platform, and a
table that is the same everywhere is what lets a test prove that no two actions share a key.
On macOS Qt reads ``Ctrl`` as the Command key, as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMenuBar, QWidget

#: Menu ids in menu-bar order, with their titles (``&`` marks the mnemonic).
MENUS: tuple[tuple[str, str], ...] = (
    ("file", "&File"),
    ("edit", "&Edit"),
    ("tag", "&Tag"),
    ("puzzle", "&Puzzles"),
    ("lab", "&Lab"),
    ("view", "&View"),
    ("help", "&Help"),
)


@dataclass(frozen=True)
class ActionSpec:
    """One user action.

    ``id`` is stable (handlers, settings and tests refer to it); ``menu`` is one of the ids in
    :data:`MENUS`; ``shortcut`` is the main key sequence in portable text and ``alternates``
    are further sequences for the same action; actions of one menu that share a ``section`` are
    kept together and sections are separated by a line.
    """

    id: str
    text: str
    menu: str
    shortcut: str | None
    tip: str
    alternates: tuple[str, ...] = ()
    checkable: bool = False
    section: str = ""

    @property
    def shortcuts(self) -> tuple[str, ...]:
        """Every key sequence of the action, the main one first."""
        return ((self.shortcut,) if self.shortcut else ()) + self.alternates

    def key_sequences(self) -> list[QKeySequence]:
        return [QKeySequence(s) for s in self.shortcuts]

    def shortcut_text(
        self, fmt: QKeySequence.SequenceFormat = QKeySequence.SequenceFormat.NativeText
    ) -> str:
        """The shortcuts as a person reads them on this platform, e.g. ``"F1, Ctrl+/"``."""
        return ", ".join(k.toString(fmt) for k in self.key_sequences())

    @property
    def plain_text(self) -> str:
        """The text without mnemonic markers."""
        return self.text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


_TAG_VALUE_ACTIONS = tuple(
    ActionSpec(
        f"tag.value_{n}",
        f"Tag with value {n}",
        "tag",
        str(n),
        f"Select the {_ordinal(n)} value of the current concept and tag the selected glyphs "
        "with it",
        section="values",
    )
    for n in range(1, 10)
)

ACTIONS: tuple[ActionSpec, ...] = (
    # ---- File ----
    ActionSpec("file.new_project", "New project…", "file", "Ctrl+N",
               "Create a new, empty project", section="project"),
    ActionSpec("file.open_project", "Open project…", "file", "Ctrl+O",
               "Open an existing project", section="project"),
    ActionSpec("file.open_lab", "Open lab database…", "file", "Ctrl+Shift+O",
               "Open a lab's shared project on a PostgreSQL server: host, database, your login",
               section="project"),
    ActionSpec("file.save_copy", "Save a copy…", "file", "Ctrl+Shift+S",
               "Write a consistent copy of the project file; the open project stays open",
               section="project"),
    ActionSpec("file.import_annotations", "Import annotations…", "file", "Ctrl+I",
               "Import tags from a CSV file (concept,value,codepoint,font)", section="exchange"),
    ActionSpec("file.export_annotations", "Export annotations…", "file", "Ctrl+E",
               "Export every tag of the project to a CSV file", section="exchange"),
    ActionSpec("file.add_font", "Add font…", "file", "Ctrl+Shift+F",
               "Add a font file whose glyphs can be tagged", section="fonts"),
    ActionSpec("file.render_all", "Render all glyphs", "file", "Ctrl+R",
               "Render every glyph of the project's fonts in the background", section="fonts"),
    ActionSpec("file.preferences", "Preferences…", "file", "Ctrl+,",
               "Your annotator name, the folders dialogs start in, warning thresholds",
               section="preferences"),
    ActionSpec("file.quit", "Quit", "file", "Ctrl+Q", "Quit Analogy Studio", section="quit"),
    # ---- Edit ----
    ActionSpec("edit.undo", "Undo", "edit", "Ctrl+Z", "Undo the last edit", section="undo"),
    ActionSpec("edit.redo", "Redo", "edit", "Ctrl+Shift+Z", "Redo the last undone edit",
               section="undo"),
    ActionSpec("edit.select_all", "Select all glyphs", "edit", "Ctrl+A",
               "Select every glyph shown in the grid", section="select"),
    ActionSpec("edit.schema", "Edit schema…", "edit", "Ctrl+Shift+E",
               "Edit the concept schema: concepts, values and rules", section="schema"),
    # ---- Tag ----
    ActionSpec("tag.apply", "Tag selected glyphs", "tag", "Space",
               "Tag selected glyphs with the selected value", section="apply"),
    ActionSpec("tag.remove", "Remove tag from selected glyphs", "tag", "Backspace",
               "Remove the selected value's tag from the selected glyphs", alternates=("Del",),
               section="apply"),
    *_TAG_VALUE_ACTIONS,
    ActionSpec("tag.advance", "Advance after tagging", "tag", "Ctrl+Shift+U",
               "After a key tags one glyph, go to the next glyph not yet tagged for the "
               "concept: one key per tag instead of two", checkable=True, section="apply"),
    ActionSpec("tag.mark_done", "Mark selected glyphs done", "tag", "Ctrl+D",
               "Mark the selected glyphs of your assignment done (a glyph done without a tag of "
               "a concept says \"none\" for it); again: not done", section="apply"),
    ActionSpec("tag.suggest", "Suggest…", "tag", "Ctrl+Shift+G",
               "A queue of the untagged glyphs most likely to carry the values the concept "
               "lacks, one at a time: its number tags, 0 none of these, S skip, Esc closes",
               section="suggest"),
    ActionSpec("tag.next_concept", "Next concept", "tag", "Alt+Down",
               "Go to the next concept of the schema", alternates=("]",), section="navigate"),
    ActionSpec("tag.prev_concept", "Previous concept", "tag", "Alt+Up",
               "Go to the previous concept of the schema", alternates=("[",), section="navigate"),
    ActionSpec("tag.next_value", "Next value", "tag", "Ctrl+Down",
               "Select the next value of the current concept", section="navigate"),
    ActionSpec("tag.prev_value", "Previous value", "tag", "Ctrl+Up",
               "Select the previous value of the current concept", section="navigate"),
    ActionSpec("tag.next_untagged", "Next untagged glyph", "tag", "U",
               "Go to the next glyph shown that has no tag for the current concept",
               section="glyphs"),
    ActionSpec("tag.prev_untagged", "Previous untagged glyph", "tag", "Shift+U",
               "Go to the previous glyph shown that has no tag for the current concept",
               section="glyphs"),
    ActionSpec("tag.next_glyph", "Next glyph", "tag", "J",
               "Go to the next glyph shown in the grid", section="glyphs"),
    ActionSpec("tag.prev_glyph", "Previous glyph", "tag", "K",
               "Go to the previous glyph shown in the grid", section="glyphs"),
    # ---- Puzzles (the curator's board; the puzzle keys act while the board is shown) ----
    ActionSpec("puzzle.board", "Curator's board", "puzzle", "Ctrl+2",
               "Show the curator's board: generated puzzles, their findings and statistics",
               section="board"),
    ActionSpec("puzzle.generate", "Generate split…", "puzzle", "Ctrl+G",
               "Generate and vet a split in the background and add it as a new puzzle set",
               section="board"),
    ActionSpec("puzzle.export", "Export benchmark…", "puzzle", "Ctrl+Shift+B",
               "Publish a curated puzzle set: its approved puzzles, vetted again, as a split "
               "folder with a dataset card, Croissant metadata and a Parquet table",
               section="board"),
    ActionSpec("puzzle.pilot_export", "Pilot study…", "puzzle", "Ctrl+Alt+P",
               "Pilot a puzzle set with people: an experiment that runs from disk in a browser "
               "(instructions, practice, lists with attention checks) and its PsychoPy plan",
               section="board"),
    ActionSpec("puzzle.pilot_import", "Import pilot results…", "puzzle", "Ctrl+Shift+P",
               "Store a pilot study's results (its folder from `pilot export`, then the data "
               "files the participants' browsers saved) for the open set: the People column",
               section="board"),
    ActionSpec("puzzle.approve", "Approve puzzle", "puzzle", "A",
               "Approve the selected puzzles (with the comment typed, if any) and open the "
               "next one", section="decide"),
    ActionSpec("puzzle.reject", "Reject puzzle", "puzzle", "R",
               "Reject the selected puzzles (with the comment typed, if any) and open the "
               "next one", section="decide"),
    ActionSpec("puzzle.draft", "Return to draft", "puzzle", "D",
               "Undecide the selected puzzles: back to draft", section="decide"),
    ActionSpec("puzzle.comment", "Type a comment", "puzzle", "C",
               "Type in the comment field; the comment goes with the next decision (Enter or "
               "Escape: back to the list)", section="decide"),
    ActionSpec("puzzle.approve_clean", "Approve all shown without errors", "puzzle",
               "Ctrl+Shift+A",
               "Approve, as one undo step, the puzzles shown (or selected) that have no error "
               "or flag and are not decided yet; flagged ones are left to decide one by one",
               section="decide"),
    ActionSpec("puzzle.next_flagged", "Next flagged puzzle", "puzzle", "N",
               "Open the next puzzle of the list that is flagged", section="navigate"),
    ActionSpec("puzzle.prev_flagged", "Previous flagged puzzle", "puzzle", "Shift+N",
               "Open the previous puzzle of the list that is flagged", alternates=("P",),
               section="navigate"),
    ActionSpec("puzzle.replace_foil", "Replace foil…", "puzzle", "F",
               "Replace a foil of the selected puzzle by one of the valid glyphs proposed, or of "
               "an item by another its family draws",
               section="edit"),
    ActionSpec("puzzle.regenerate", "Regenerate puzzle", "puzzle", "G",
               "Replace the selected puzzle by a fresh one of the same rule and concept",
               section="edit"),
    # ---- Lab (a lab's shared project; a file is a lab of one) ----
    ActionSpec("lab.agreement", "Compute agreement", "lab", "Ctrl+Shift+K",
               "Compute Krippendorff's alpha per concept and Cohen's kappa per annotator pair, "
               "with bootstrap intervals, in the background", section="lab"),
    ActionSpec("lab.settle", "Settle disagreement", "lab", "Ctrl+Return",
               "Make the ticked values the selected queue glyph's tags, recorded as settled by "
               "you (curator)", section="lab"),
    # ---- View ----
    ActionSpec("view.annotator", "Annotator", "view", "Ctrl+1",
               "Show the annotator: schema, glyph grid and inspector", section="mode"),
    ActionSpec("view.preview", "Preview", "view", "Ctrl+3",
               "Show the preview: object transformations, shape builder, catalog, task "
               "generators", section="mode"),
    ActionSpec("view.baselines", "Baselines", "view", "Ctrl+4",
               "Show the baselines dashboard: background jobs, their progress, charts and the "
               "puzzles flagged as shortcut-prone", section="mode"),
    ActionSpec("view.lab", "Lab", "view", "Ctrl+5",
               "Show the lab: people, assignments, agreement, disagreements and the audit trail",
               section="mode"),
    ActionSpec("view.find", "Find glyphs…", "view", "Ctrl+F",
               "Search glyphs by name, code point or block", section="find"),
    ActionSpec("view.only_untagged", "Only untagged glyphs", "view", "Ctrl+U",
               "Show only glyphs not yet tagged for this concept", checkable=True,
               section="filter"),
    ActionSpec("view.my_assignment", "Only my assignment", "view", "Ctrl+Shift+M",
               "Show only the glyphs assigned to you (Lab ▸ Assignments)", checkable=True,
               section="filter"),
    ActionSpec("view.held_out", "Only held-out glyphs", "view", "Ctrl+Shift+T",
               "Show only the glyphs a split's hold-out keeps for val and test (a glyph's side "
               "is its own, whoever tags it): where the Needs column's held-out counts are "
               "filled", checkable=True, section="filter"),
    ActionSpec("view.hide_others", "Hide others' tags", "view", "Ctrl+Shift+H",
               "Show only your own tags in the inspector (and the grid), not the other "
               "annotators'", checkable=True, section="filter"),
    ActionSpec("view.inspector", "Inspector", "view", "Ctrl+Shift+I",
               "Show or hide the glyph inspector", checkable=True, section="panels"),
    # ---- Help ----
    ActionSpec("help.shortcuts", "Keyboard shortcuts", "help", "F1",
               "List every action and its keyboard shortcut", alternates=("Ctrl+/",)),
    ActionSpec("help.about", "About Analogy Studio", "help", None,
               "Version, licence and credits"),
)  # fmt: skip

_BY_ID: dict[str, ActionSpec] = {a.id: a for a in ACTIONS}


def name_value_actions(
    actions: Mapping[str, QAction], concept: str | None, labels: Iterable[str]
) -> None:
    """Name the ``tag.value_n`` actions after the current concept's values: ``labels`` are
    the texts of values 1, 2, … ("1  round"). A number the concept has no value for is hidden
    from the Tag menu (issue 28: "4 (no value 4 in aspect)" … "9" were listed as enabled
    items); its key still says why it does nothing, through the window's own shortcut for it
    (a hidden action's shortcut does not fire)."""
    texts = list(labels)
    for n in range(1, 10):
        action = actions.get(f"tag.value_{n}")
        if action is None:
            continue
        action.setVisible(n <= len(texts))
        if n <= len(texts):
            action.setText(texts[n - 1].replace("&", "&&"))
        elif concept is None:
            action.setText(f"{n}  (choose a concept)")
        else:
            action.setText(f"{n}  (no value {n} in {concept})".replace("&", "&&"))


def action_spec(action_id: str) -> ActionSpec:
    """The declared action with this id (KeyError for an unknown id)."""
    return _BY_ID[action_id]


def specs_in_menu(menu: str, specs: Iterable[ActionSpec] = ACTIONS) -> list[ActionSpec]:
    """The actions of one menu, in declaration order."""
    return [s for s in specs if s.menu == menu]


def menu_title(menu: str) -> str:
    """The menu's title without its mnemonic marker ("File")."""
    return dict(MENUS)[menu].replace("&", "")


def build_actions(
    parent: QWidget,
    handlers: Mapping[str, Callable[[], object]],
    specs: Iterable[ActionSpec] = ACTIONS,
) -> dict[str, QAction]:
    """Create one QAction per spec, owned by and added to ``parent``, keyed by id.

    Each action gets its shortcuts (window context, so they work wherever focus is inside the
    window, and text fields still receive the plain keys they type), status tip and tool tip.
    ``handlers[id]`` is called with no arguments when the action triggers (a checkable
    action's handler reads ``isChecked()``); an action without a handler is created disabled.
    """
    actions: dict[str, QAction] = {}
    for spec in specs:
        action = QAction(spec.text, parent)
        action.setObjectName(spec.id)
        action.setData(spec.id)
        action.setShortcuts(spec.key_sequences())
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.setStatusTip(spec.tip)
        keys = spec.shortcut_text()
        action.setToolTip(f"{spec.plain_text} ({keys})" if keys else spec.plain_text)
        action.setCheckable(spec.checkable)
        handler = handlers.get(spec.id)
        if handler is None:
            action.setEnabled(False)
        else:
            action.triggered.connect(lambda _checked=False, h=handler: h())
        parent.addAction(action)
        actions[spec.id] = action
    return actions


def build_menus(
    menubar: QMenuBar,
    actions: Mapping[str, QAction],
    specs: Iterable[ActionSpec] = ACTIONS,
) -> dict[str, QMenu]:
    """Add the File, Edit, Tag, Puzzles, Lab, View and Help menus to ``menubar`` and fill them with
    ``actions`` in declaration order (a separator between sections); returns menus by id."""
    spec_list = list(specs)
    menus: dict[str, QMenu] = {}
    for menu_id, title in MENUS:
        menu = menubar.addMenu(title)
        menu.setObjectName(f"menu.{menu_id}")
        section: str | None = None
        for spec in specs_in_menu(menu_id, spec_list):
            if spec.id not in actions:
                continue
            if section is not None and spec.section != section:
                menu.addSeparator()
            section = spec.section
            menu.addAction(actions[spec.id])
        menus[menu_id] = menu
    return menus
