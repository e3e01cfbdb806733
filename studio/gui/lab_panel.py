"""The Lab tab: who works on the project, who tags what, how far they agree, what a curator
has to settle, and who changed what. Every project has one (a file is a lab of one: its user
may do everything, and the agreement needs two people's tags to say anything).

Reads go straight to the project (small queries, on the GUI thread); the agreement's bootstrap
runs in a worker thread with a busy indicator. The rights shown mirror the server's: an
annotator sees the curator's controls disabled, with a tooltip that says why, and a write the
server refuses anyway is shown as a message (:func:`refusal`), never as a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.app import Studio
from studio.core.agreement import AgreementReport, Disagreement, Estimate
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.gui.jobs import ThreadJob
from studio.store.lab import AuditEntry, Person, plain_field
from studio.store.project import Project

__all__ = ["ROLE_RANK", "LabPanel", "estimate_text", "refusal"]

#: the studio's roles, least rights first (as the server ranks them)
ROLE_RANK = {"none": 0, "annotator": 1, "curator": 2, "admin": 3}
_MUTED = QColor("#666666")
_DISAGREE = QColor("#fff3cd")


def refusal(error: BaseException) -> str | None:
    """What to tell a person whose write failed: a StudioError's own sentence, or the server's
    refusal in words (:func:`studio.store.lab.database_refusal`, as the command line says it);
    None for anything else (a bug, which the error hook reports as one)."""
    if isinstance(error, StudioError):
        return str(error)
    from studio.store.lab import database_refusal

    said = database_refusal(error)
    return said[:1].upper() + said[1:] if said else None


def estimate_text(e: Estimate, digits: int = 2) -> str:
    """``0.71 [0.55, 0.84]``; ``—`` for an undefined statistic (its reason is the tooltip)."""
    if e.value is None:
        return "—"
    out = f"{e.value:.{digits}f}"
    if e.low is not None and e.high is not None:
        out += f" [{e.low:.{digits}f}, {e.high:.{digits}f}]"
    return out


def _table(columns: Sequence[str], name: str) -> QTableWidget:
    t = QTableWidget(0, len(columns), objectName=name)
    t.setHorizontalHeaderLabels(list(columns))
    t.verticalHeader().setVisible(False)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    t.setAlternatingRowColors(True)
    header = t.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setStretchLastSection(True)
    return t


def _item(text: str, tip: str = "", data: Any = None) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    if tip:
        it.setToolTip(tip)
    if data is not None:
        it.setData(Qt.ItemDataRole.UserRole, data)
    return it


def _fill(table: QTableWidget, rows: Sequence[Sequence[QTableWidgetItem | str]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            table.setItem(r, c, cell if isinstance(cell, QTableWidgetItem) else _item(cell))


def _when(at: str | None) -> str:
    return (at or "")[:19].replace("T", " ")


@dataclass(frozen=True)
class _Snapshot:
    """What the People, Assignments, Disagreements and Audit tabs show, read in one go."""

    role: str
    user: str
    people: list[Person]
    assigned: dict[str, list[tuple[GlyphKey, str | None]]]
    mine: list[tuple[GlyphKey, str | None]]
    queue: list[tuple[GlyphKey, Disagreement]]
    audit: list[AuditEntry]


class LabPanel(QWidget):
    """People, Assignments, Agreement, Disagreements and Audit of the open project.

    ``go_to_glyph(key)`` asks the window to show a glyph in the annotator; ``error(title,
    exception)`` reports a refused or failed action. Its writes go through the studio
    (:meth:`Studio.settle` & co.), whose events refresh every view; other clients' changes
    arrive as :attr:`StudioEvents.changed_elsewhere`."""

    go_to_glyph = Signal(object)
    error = Signal(str, object)

    def __init__(self, studio: Studio, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("labPanel")
        self.studio = studio
        self._role = "admin"
        self._user = ""
        self._agreement_job: ThreadJob | None = None
        self._reader: ThreadJob | None = None  # the live refresh's job, while it reads
        self._read_again = False
        self._agreement_stale = False
        self._queue: list[tuple[GlyphKey, Disagreement]] = []
        self._loaded = False
        self.report: AgreementReport | None = None
        studio.events.changed_elsewhere.connect(self._on_changed_elsewhere)

        self.header = QLabel(objectName="labHeader")
        self.header.setWordWrap(True)
        self.tabs = QTabWidget(objectName="labTabs")
        self.tabs.addTab(self._people_tab(), "People")
        self.tabs.addTab(self._assignments_tab(), "Assignments")
        self.tabs.addTab(self._agreement_tab(), "Agreement")
        self.tabs.addTab(self._disagreements_tab(), "Disagreements")
        self.tabs.addTab(self._audit_tab(), "Audit")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.header)
        lay.addWidget(self.tabs, 1)

    # ---- construction ---------------------------------------------------------------------------
    def _people_tab(self) -> QWidget:
        self.people_table = _table(("Name", "Role", "Full name", "Since"), "labPeople")
        self.person_name = QLineEdit(objectName="labPersonName", placeholderText="login, e.g. bea")
        self.person_role = QComboBox(objectName="labPersonRole")
        self.person_role.addItems(["annotator", "curator", "admin"])
        self.person_full = QLineEdit(objectName="labPersonFull", placeholderText="optional")
        self.person_password = QLineEdit(objectName="labPersonPassword")
        self.person_password.setEchoMode(QLineEdit.EchoMode.Password)
        self.person_password.setPlaceholderText(
            "their first password (optional: else ~/.pgpass, a certificate…)"
        )
        self.add_person_button = QPushButton("Add person", objectName="labAddPerson")
        self.add_person_button.clicked.connect(self.add_person)
        form = QFormLayout()
        form.addRow("Login", self.person_name)
        form.addRow("Role", self.person_role)
        form.addRow("Full name", self.person_full)
        form.addRow("Password", self.person_password)
        form.addRow("", self.add_person_button)
        self.people_box = QGroupBox("Add a person or change a role (admin)")
        self.people_box.setLayout(form)
        w = QWidget()
        lay = QHBoxLayout(w)
        lay.addWidget(self.people_table, 3)
        lay.addWidget(self.people_box, 2, alignment=Qt.AlignmentFlag.AlignTop)
        return w

    def _assignments_tab(self) -> QWidget:
        self.assign_people = QListWidget(objectName="labAssignPeople")
        self.assign_people.setMaximumHeight(140)
        self.overlap = QDoubleSpinBox(objectName="labOverlap", decimals=2, singleStep=0.05)
        self.overlap.setRange(0.0, 1.0)
        self.overlap.setValue(0.2)
        self.overlap.setToolTip("The share of glyphs tagged by several people: agreement is "
                                "measured there")  # fmt: skip
        self.per_glyph = QSpinBox(objectName="labPerGlyph")
        self.per_glyph.setRange(2, 20)
        self.per_glyph.setValue(2)
        self.seed = QSpinBox(objectName="labSeed")
        self.seed.setRange(0, 2**31 - 1)
        self.assign_button = QPushButton("Assign every glyph", objectName="labAssign")
        self.assign_button.clicked.connect(self.assign)
        form = QFormLayout()
        form.addRow("Annotators", self.assign_people)
        form.addRow("Overlap share", self.overlap)
        form.addRow("People per overlap glyph", self.per_glyph)
        form.addRow("Seed", self.seed)
        form.addRow("", self.assign_button)
        self.assign_box = QGroupBox("New assignment (curator)")
        self.assign_box.setLayout(form)

        self.load_table = _table(("Person", "Assigned", "Done"), "labLoads")
        self.my_label = QLabel("<b>My glyphs</b>")
        self.my_glyphs = QListWidget(objectName="labMyGlyphs")
        self.my_glyphs.setToolTip("Tick a glyph when you are done with it; double-click to "
                                  "show it in the annotator")  # fmt: skip
        self.my_glyphs.itemChanged.connect(self._done_toggled)
        self.my_glyphs.itemDoubleClicked.connect(
            lambda it: self.go_to_glyph.emit(it.data(Qt.ItemDataRole.UserRole))
        )
        right = QVBoxLayout()
        right.addWidget(QLabel("<b>Per person</b>"))
        right.addWidget(self.load_table, 1)
        right.addWidget(self.my_label)
        right.addWidget(self.my_glyphs, 2)
        w = QWidget()
        lay = QHBoxLayout(w)
        lay.addWidget(self.assign_box, 2, alignment=Qt.AlignmentFlag.AlignTop)
        lay.addLayout(right, 3)
        return w

    def _agreement_tab(self) -> QWidget:
        self.compute_button = QPushButton("Compute agreement", objectName="labCompute")
        self.compute_button.clicked.connect(self.compute_agreement)
        self.n_boot = QSpinBox(objectName="labBoot")
        self.n_boot.setRange(0, 100_000)
        self.n_boot.setValue(1000)
        self.n_boot.setToolTip("Bootstrap replicates over glyphs for the 95 % intervals")
        # issue 30: agreement over the unassisted and the assisted work apart
        self.source_combo = QComboBox(objectName="labSource")
        for text, source in (
            ("All tags", None),
            ("Tagged by hand", "hand"),
            ("Accepted from suggestions", "suggestion"),
        ):
            self.source_combo.addItem(text, source)
        self.source_combo.setToolTip(
            "Agreement over every tag, or over the glyphs each person tagged by hand, or over "
            "those they tagged from the suggestion queue (a glyph counts as assisted when any of "
            "its tags by that person came from a suggestion)"
        )
        self.busy = QProgressBar(objectName="labBusy", maximumWidth=160)
        self.busy.setRange(0, 0)
        self.busy.setVisible(False)
        self.agreement_summary = QLabel(objectName="labAgreementSummary")
        self.agreement_summary.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.compute_button)
        top.addWidget(self.source_combo)
        top.addWidget(QLabel("Bootstrap replicates"))
        top.addWidget(self.n_boot)
        top.addWidget(self.busy)
        top.addStretch(1)
        self.concept_table = _table(
            ("Concept", "Krippendorff's α [95 % interval]", "Percent agreement", "Glyphs"),
            "labConceptAgreement",
        )
        self.pair_table = _table(
            ("Pair", "Cohen's κ [95 % interval]", "Percent agreement", "Glyphs in common"),
            "labPairAgreement",
        )
        w = QWidget()
        lay = QVBoxLayout(w)
        lay.addLayout(top)
        lay.addWidget(self.agreement_summary)
        lay.addWidget(QLabel("<b>Per concept</b> (nominal α of each glyph's value set)"))
        lay.addWidget(self.concept_table, 3)
        lay.addWidget(QLabel("<b>Per annotator pair</b> (κ over every present/absent decision)"))
        lay.addWidget(self.pair_table, 2)
        return w

    def _disagreements_tab(self) -> QWidget:
        self.queue_table = _table(("Glyph", "Concepts", "Annotators"), "labQueue")
        self.queue_table.itemSelectionChanged.connect(self._show_disagreement)
        self.queue_table.itemDoubleClicked.connect(
            lambda it: self.go_to_glyph.emit(
                self.queue_table.item(it.row(), 0).data(Qt.ItemDataRole.UserRole)
            )
        )
        self.queue_label = QLabel(objectName="labQueueCount")
        self.detail_label = QLabel("Select a glyph of the queue", objectName="labDetailLabel")
        self.detail_label.setWordWrap(True)
        self.detail = _table(("Concept", "Value", "Settle as"), "labDetail")
        self.detail.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.note = QLineEdit(objectName="labNote", placeholderText="a note for the record")
        self.settle_button = QPushButton("Settle", objectName="labSettle")
        self.settle_button.clicked.connect(self.settle)
        bottom = QHBoxLayout()
        bottom.addWidget(self.note, 1)
        bottom.addWidget(self.settle_button)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.queue_label)
        ll.addWidget(self.queue_table, 1)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.detail_label)
        rl.addWidget(self.detail, 1)
        rl.addLayout(bottom)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([420, 640])
        return split

    def _audit_tab(self) -> QWidget:
        self.audit_table = _table(("When", "Who", "What", "Table", "Detail"), "labAudit")
        self.audit_label = QLabel(objectName="labAuditNote")
        self.audit_label.setWordWrap(True)
        w = QWidget()
        lay = QVBoxLayout(w)
        lay.addWidget(self.audit_label)
        lay.addWidget(self.audit_table, 1)
        return w

    # ---- who is working -------------------------------------------------------------------------
    @property
    def user(self) -> str:
        """The login on a lab database, else the annotator name of the settings."""
        return self.studio.project.user or self.studio.author

    @property
    def role(self) -> str:
        return self._role

    def may(self, needed: str) -> bool:
        return ROLE_RANK.get(self._role, 0) >= ROLE_RANK[needed]

    def _why_not(self, needed: str) -> str:
        return f"Only a {needed} or an admin may do this; {self.user} is {self._role_words()}"

    def _role_words(self) -> str:
        if self._role == "none":
            return "not a member of this lab"
        return f"an {self._role}" if self._role[0] in "aeiou" else f"a {self._role}"

    # ---- loading ---------------------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:
        if not self._loaded:
            self.refresh()
        super().showEvent(event)

    def project_switched(self) -> None:
        self._loaded = False
        self.report = None
        self._agreement_stale = False
        self.concept_table.setRowCount(0)
        self.pair_table.setRowCount(0)
        self.agreement_summary.setText("")
        self.note.clear()
        if self.isVisible():
            self.refresh()

    def _read(self, user: str, project: Project) -> _Snapshot:
        """Everything the tabs show but the agreement, read from ``project``: no widget is
        touched, so a live refresh runs it on a worker thread."""
        people = project.people()
        return _Snapshot(
            role=project.role(),
            user=user,
            people=people,
            assigned={p.name: project.assigned(p.name) for p in people},
            mine=project.assigned(user) if user else [],
            queue=project.disagreement_queue(),
            audit=project.audit(200),
        )

    def refresh(self) -> None:
        """Read people, assignments, the queue and the audit trail again (after this
        person's own edit, a switch of project); the agreement is recomputed only on request."""
        self._loaded = True
        try:
            snapshot = self._read(self.user, self.studio.project)
        except Exception as e:
            self._unreadable(e)
            return
        self._show(snapshot)

    def _unreadable(self, error: BaseException) -> None:
        self.header.setText(f"<span style='color:#b00020'>The lab cannot be read: {error}</span>")

    def _refresh_in_background(self) -> None:
        """A live refresh: another client's commits arrive many times a second while people
        tag, and the queue is computed over everyone's tags, so the reads run on a worker
        thread (one at a time; a change arriving meanwhile reads once more afterwards)."""
        if self._reader is not None:
            self._read_again = True
            return
        self._loaded = True
        project = self.studio.project
        self._reader = ThreadJob.call(
            self._read,
            self.user,
            project,
            # a read of the project the window has since left is dropped
            succeeded=lambda snapshot: (
                self._show(snapshot) if project is self.studio.project else None
            ),
            errored=self._unreadable,
            ended=self._read_finished,
            parent=self,
        )

    def _read_finished(self) -> None:
        self._reader = None
        if self._read_again and self.isVisible():
            self._read_again = False
            self._refresh_in_background()

    def _show(self, snapshot: object) -> None:
        assert isinstance(snapshot, _Snapshot)
        project = self.studio.project
        self._role, self._user = snapshot.role, snapshot.user
        people = snapshot.people
        if project.is_database:
            self.header.setText(
                f"Lab database <b>{project.location}</b> · signed in as "
                f"<b>{self._user} ({self._role})</b>"
            )
        else:
            self.header.setText(
                f"Project file <b>{project.location}</b>: a lab of one — you "
                f"(<b>{self._user}</b>) may do everything. A lab database shares it "
                "(File ▸ Open lab database…)."
            )
        self._fill_people(people)
        self._fill_assignments(
            [p.name for p in people],
            {p.name for p in people if p.role == "annotator"},
            snapshot.assigned,
            snapshot.mine,
        )
        self._fill_queue(snapshot.queue)
        self._fill_audit(snapshot.audit)
        self._apply_rights()
        if self.report is not None and self._agreement_stale:
            self.agreement_summary.setText(
                self._summary_text(self.report) + "  <i>Tags changed since: compute again.</i>"
            )

    def _on_changed_elsewhere(self, tables: frozenset[str]) -> None:
        lab_tables = {"tags", "annotator_tags", "adjudications", "assignment_items", "people"}
        if "*" in tables or tables & (lab_tables | {"assignments"}):
            self.changed_elsewhere()

    def changed_elsewhere(self) -> None:
        """Another client changed tags or assignments: refresh what is cheap to read."""
        self._agreement_stale = self.report is not None
        if self.isVisible():
            self._refresh_in_background()
        else:
            self._loaded = False

    def _apply_rights(self) -> None:
        curator, admin = self.may("curator"), self.may("admin")
        self.people_box.setEnabled(admin)
        self.people_box.setToolTip("" if admin else self._why_not("admin"))
        self.assign_box.setEnabled(curator)
        self.assign_box.setToolTip("" if curator else self._why_not("curator"))
        self.settle_button.setEnabled(curator and bool(self._queue))
        self.settle_button.setToolTip(
            "Make the ticked values this glyph's tags, recorded as settled by you (Ctrl+Return)"
            if curator
            else self._why_not("curator") + ": annotators see the queue read-only"
        )
        self.note.setEnabled(curator)
        self.detail.setEnabled(True)

    # ---- people ----------------------------------------------------------------------------------
    def _fill_people(self, people: Sequence[Any]) -> None:
        rows = []
        for p in people:
            name = _item(p.name + ("  (you)" if p.name == self._user else ""), data=p.name)
            rows.append([name, p.role, p.full_name, _when(p.created_at)[:10]])
        _fill(self.people_table, rows)

    def add_person(self) -> None:
        name = self.person_name.text().strip()
        if not name:
            self.error.emit("Person not added", StudioError("Enter the person's login name"))
            return
        password = self.person_password.text() or None
        role = self.person_role.currentText()
        try:
            self.studio.add_person(
                name, role, full_name=self.person_full.text().strip(), password=password
            )
        except Exception as e:
            self._report("Person not added", e)
            return
        finally:
            self.person_password.clear()
        self.person_name.clear()
        self.person_full.clear()
        self.refresh()
        self._status(f"{name} is now {'an' if role[0] in 'aeiou' else 'a'} {role}")

    # ---- assignments -----------------------------------------------------------------------------
    def _fill_assignments(
        self,
        names: Sequence[str],
        annotators: set[str],
        assigned: dict[str, list[tuple[GlyphKey, str | None]]],
        mine: list[tuple[GlyphKey, str | None]],
    ) -> None:
        checked = {
            self.assign_people.item(i).text()
            for i in range(self.assign_people.count())
            if self.assign_people.item(i).checkState() == Qt.CheckState.Checked
        }
        first = self.assign_people.count() == 0
        self.assign_people.clear()
        for n in names:
            it = QListWidgetItem(n)
            it.setFlags(it.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            on = n in annotators if first else n in checked
            it.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
            self.assign_people.addItem(it)
        loads = []
        for n in names:
            given = assigned.get(n, [])
            done = sum(1 for _k, d in given if d)
            if given:
                loads.append([n, f"{len(given):,}", f"{done:,}"])
        _fill(self.load_table, loads)
        self.my_glyphs.blockSignals(True)
        self.my_glyphs.clear()
        for key, done in mine:
            it = QListWidgetItem(f"{key.char}  {key}" + (f"  — done {_when(done)}" if done else ""))
            it.setData(Qt.ItemDataRole.UserRole, key)
            it.setFlags(it.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            it.setCheckState(Qt.CheckState.Checked if done else Qt.CheckState.Unchecked)
            self.my_glyphs.addItem(it)
        self.my_glyphs.blockSignals(False)
        n_done = sum(1 for _k, d in mine if d)
        self.my_label.setText(
            f"<b>My glyphs</b> ({self._user}): {n_done:,} of {len(mine):,} done"
            if mine
            else f"<b>My glyphs</b> ({self._user}): none assigned"
        )

    def checked_annotators(self) -> list[str]:
        return [
            self.assign_people.item(i).text()
            for i in range(self.assign_people.count())
            if self.assign_people.item(i).checkState() == Qt.CheckState.Checked
        ]

    def assign(self) -> None:
        people = self.checked_annotators()
        try:
            summary = self.studio.assign(
                people,
                overlap=self.overlap.value(),
                per_overlap_glyph=self.per_glyph.value(),
                seed=self.seed.value(),
            )
        except Exception as e:
            self._report("Not assigned", e)
            return
        self.refresh()
        per = ", ".join(f"{n} {c}" for n, c in sorted(summary.per_person.items()))
        self._status(f"Assigned: {per}; {summary.overlap} glyphs to several people")

    def _done_toggled(self, item: QListWidgetItem) -> None:
        key = item.data(Qt.ItemDataRole.UserRole)
        done = item.checkState() == Qt.CheckState.Checked
        try:
            self.studio.mark_done([key], done=done)
        except Exception as e:
            self._report("Not marked", e)
        self.refresh()

    # ---- agreement -------------------------------------------------------------------------------
    def computing(self) -> bool:
        return self._agreement_job is not None

    def compute_agreement(self) -> None:
        """Compute the agreement report in a worker thread; the tables fill when it is done."""
        if self._agreement_job is not None:
            return
        project = self.studio.project
        n_boot = self.n_boot.value()
        source = self.source_combo.currentData()
        self._agreement_job = ThreadJob.call(
            lambda: project.agreement(n_boot=n_boot, seed=0, source=source),
            succeeded=self._show_agreement,
            errored=lambda e: self._report("Agreement not computed", e),
            ended=self._agreement_finished,
            parent=self,
        )
        self.compute_button.setEnabled(False)
        self.busy.setVisible(True)
        self.agreement_summary.setText(
            f"Computing ({self.source_combo.currentText().lower()}), with {n_boot:,} bootstrap "
            "replicates…"
        )

    def _agreement_finished(self) -> None:
        self._agreement_job = None
        self.compute_button.setEnabled(True)
        self.busy.setVisible(False)

    @staticmethod
    def _summary_text(r: AgreementReport) -> str:
        people = ", ".join(r.annotators) or "nobody"
        text = (
            f"{r.ratings:,} tags by {len(r.annotators)} people ({people}) on {r.glyphs:,} "
            f"glyphs; {r.pairable_glyphs:,} glyphs were annotated by two or more people."
        )
        if r.ignored_ratings:
            text += f" {r.ignored_ratings:,} tags outside the schema were left out."
        return text

    def _show_agreement(self, report: object) -> None:
        assert isinstance(report, AgreementReport)
        self.report = report
        self._agreement_stale = False
        which = self.source_combo.currentText()
        self.agreement_summary.setText(f"{which}: {self._summary_text(report)}")
        rows = []
        # concepts with a defined alpha first (schema order), then the degenerate ones
        for c in sorted(report.concepts, key=lambda c: c.alpha.value is None):
            alpha = _item(estimate_text(c.alpha), c.alpha.reason, c.alpha.value)
            if c.alpha.value is None:
                alpha.setText(f"— ({c.alpha.reason})")
                alpha.setForeground(_MUTED)
            percent = _item(
                "—" if c.percent.value is None else f"{100 * c.percent.value:.0f} %",
                c.percent.reason,
            )
            values = "; ".join(
                f"{v.value}: {estimate_text(v.alpha)}"
                for v in c.values
                if v.alpha.value is not None
            )
            rows.append([_item(c.concept, values), alpha, percent, f"{c.glyphs:,}"])
        _fill(self.concept_table, rows)
        pair_rows = []
        for p in report.pairs:
            kappa = _item(estimate_text(p.kappa), p.kappa.reason, p.kappa.value)
            if p.kappa.value is None:
                kappa.setText(f"— ({p.kappa.reason})")
                kappa.setForeground(_MUTED)
            per_concept = "; ".join(
                f"{k.concept}: {'—' if k.kappa is None else f'{k.kappa:.2f}'}" for k in p.concepts
            )
            pair_rows.append(
                [
                    _item(f"{p.first} · {p.second}", per_concept),
                    kappa,
                    f"{100 * p.percent:.1f} %",
                    f"{p.glyphs:,}",
                ]
            )
        _fill(self.pair_table, pair_rows)

    # ---- disagreements ---------------------------------------------------------------------------
    def _fill_queue(self, queue: list[tuple[GlyphKey, Disagreement]] | None = None) -> None:
        """The queue as read (None: read it now)."""
        current = self.current_disagreement()
        self._queue = self.studio.project.disagreement_queue() if queue is None else queue
        rows = []
        for key, d in self._queue:
            rows.append(
                [
                    _item(f"{key.char}  {key}", str(key), key),
                    ", ".join(d.concepts),
                    ", ".join(d.annotators),
                ]
            )
        self.queue_table.blockSignals(True)
        _fill(self.queue_table, rows)
        self.queue_table.blockSignals(False)
        self.queue_label.setText(
            f"<b>{len(self._queue):,} glyphs</b> on which annotators disagree, not settled yet"
        )
        keys = [k for k, _d in self._queue]
        if current is not None and current[0] in keys:
            self.queue_table.selectRow(keys.index(current[0]))
        elif keys:
            self.queue_table.selectRow(0)
        self._show_disagreement()

    def current_disagreement(self) -> tuple[GlyphKey, Disagreement] | None:
        row = self.queue_table.currentRow()
        rows = self.queue_table.selectionModel().selectedRows()
        if rows:
            row = rows[0].row()
        if 0 <= row < len(self._queue):
            return self._queue[row]
        return None

    def _show_disagreement(self) -> None:
        found = self.current_disagreement()
        if found is None:
            self.detail.setRowCount(0)
            self.detail.setColumnCount(3)
            self.detail_label.setText(
                "Nothing to settle." if not self._queue else "Select a glyph of the queue"
            )
            self.settle_button.setEnabled(False)
            return
        key, d = found
        schema = self.studio.schema
        names = list(d.annotators)
        self.detail.setColumnCount(2 + len(names) + 1)
        self.detail.setHorizontalHeaderLabels(["Concept", "Value", *names, "Settle as"])
        rows: list[tuple[str, str]] = []
        for concept in d.concepts:
            c = schema.concept(concept)
            rows.extend((concept, v) for v in c.value_ids)
        curator = self.may("curator")
        self.detail.setRowCount(len(rows))
        for r, (concept, value) in enumerate(rows):
            c = schema.concept(concept)
            self.detail.setItem(r, 0, _item(c.display))
            self.detail.setItem(r, 1, _item(c.value(value).display))
            given = False
            for j, name in enumerate(names):
                said = value in d.values(name, concept)
                given = given or said
                cell = _item("✓" if said else "", f"{name}: {concept} = {value}" if said else "")
                cell.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                self.detail.setItem(r, 2 + j, cell)
            box = QTableWidgetItem("")
            box.setData(Qt.ItemDataRole.UserRole, (concept, value))
            flags = Qt.ItemFlag.ItemIsUserCheckable
            if curator:
                flags |= Qt.ItemFlag.ItemIsEnabled
            box.setFlags(flags)
            box.setCheckState(Qt.CheckState.Checked if given else Qt.CheckState.Unchecked)
            self.detail.setItem(r, 2 + len(names), box)
            if given:
                for col in range(2 + len(names)):
                    self.detail.item(r, col).setBackground(_DISAGREE)
        self.detail.resizeColumnsToContents()
        self.detail_label.setText(
            f"<b>{key.char}  {key}</b>: {', '.join(names)} disagree on "
            f"{', '.join(d.concepts)}. Values ticked under “Settle as” become its tags"
            + ("." if curator else " once a curator settles it (read-only for you).")
        )
        self.settle_button.setEnabled(curator)

    def settle_choice(self) -> list[tuple[str, str]]:
        """The (concept, value) pairs ticked under "Settle as"."""
        col = self.detail.columnCount() - 1
        out = []
        for r in range(self.detail.rowCount()):
            box = self.detail.item(r, col)
            if box is not None and box.checkState() == Qt.CheckState.Checked:
                out.append(box.data(Qt.ItemDataRole.UserRole))
        return out

    def set_settle_choice(self, concept: str, value: str, on: bool) -> None:
        col = self.detail.columnCount() - 1
        for r in range(self.detail.rowCount()):
            box = self.detail.item(r, col)
            if box is not None and box.data(Qt.ItemDataRole.UserRole) == (concept, value):
                box.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def action_handlers(self) -> dict[str, Callable[[], object]]:
        """What the Lab tab's own actions do, by id (issue 27: each page registers its
        actions)."""
        return {"lab.settle": self.settle}

    def settle(self) -> None:
        """Settle the selected glyph: the ticked values of the disputed concepts, with the
        values everyone agreed on for its other concepts, become its consensus."""
        found = self.current_disagreement()
        if found is None:
            self._status("No glyph of the disagreement queue is selected")
            return
        if not self.may("curator"):
            self._report("Not settled", StudioError(self._why_not("curator")))
            return
        key, d = found
        disputed = set(d.concepts)
        project = self.studio.project
        own = [t for t in project.own_tags_of(key) if t.annotator in d.annotators]
        by_person: dict[str, set[tuple[str, str]]] = {a: set() for a in d.annotators}
        for t in own:
            if t.concept not in disputed:
                by_person[t.annotator].add((t.concept, t.value))
        agreed = set.intersection(*by_person.values()) if by_person else set()
        tags = sorted(agreed | set(self.settle_choice()))
        try:
            self.studio.settle(key, tags, self.note.text().strip())
        except Exception as e:
            self._report("Not settled", e)
            return
        self.note.clear()
        self.refresh()
        shown = ", ".join(f"{c}={v}" for c, v in tags) or "no tags"
        self._status(f"Settled {key}: {shown}")

    # ---- audit -----------------------------------------------------------------------------------
    def _fill_audit(self, entries: Sequence[AuditEntry]) -> None:
        project = self.studio.project
        rows = []
        for e in entries:
            detail = plain_field(", ".join(f"{k}={v}" for k, v in e.detail.items()))
            rows.append(
                [
                    _when(e.at),
                    plain_field(e.who),
                    plain_field(e.action),
                    plain_field(e.target),
                    _item(detail[:120], detail[:2000]),
                ]
            )
        _fill(self.audit_table, rows)
        if project.is_database:
            self.audit_label.setText(
                f"The newest {len(entries)} changes, as the server recorded them (append-only)."
            )
        else:
            self.audit_label.setText(
                "A project file keeps no audit trail of its one user: its puzzle decisions are "
                "in the puzzle events; a lab database records who changed what."
            )

    # ---- messages --------------------------------------------------------------------------------
    def _report(self, title: str, error: BaseException) -> None:
        message = refusal(error)
        if message is None:
            raise error
        self.error.emit(title, StudioError(message))

    def _status(self, text: str) -> None:
        bar: Callable[[], Any] | None = getattr(self.window(), "statusBar", None)
        if callable(bar):
            bar().showMessage(text, 8000)
