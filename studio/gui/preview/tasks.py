"""Preview page 4: one item of any stimulus family's generator (plugins' included), with its
vet verdict; the controls are built from the family's options schema."""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.gui.options_form import OptionsForm
from studio.gui.preview.common import (
    FittedImage,
    RenderService,
    _checks_tree,
    _Requester,
    fill_checks,
    pil_to_pixmap,
)

LETTERS = "ABCDEFGHIJ"


def key_text(family: str, record: Mapping[str, Any]) -> str:
    """The item's key as its sheet labels the answers ("Key: B (candidate-1)"), read where the
    baselines read it (the family's ``baseline_layout``): the preview did not say which answer
    was right (issue 28). Empty where the family does not say."""
    from studio.plugins import family as family_of

    try:
        layout = family_of(family).load("baseline_layout")(record)
        key = int(layout["key"])
        answers = list(layout["answers"])
    except Exception:  # a plugin without a layout, or a record it cannot read
        return ""
    letter = LETTERS[key] if 0 <= key < len(LETTERS) else str(key)
    name = answers[key] if 0 <= key < len(answers) else "?"
    return f"Key: {letter} ({name})"


def questions_html(record: Mapping[str, Any]) -> str:
    """The item's questions (KiVA's what, how and which after-picture), each option listed
    and the right one marked, as a person answering would read them."""
    out = []
    for q in record.get("questions") or ():
        if not isinstance(q, Mapping) or not q.get("options"):
            continue
        key = q.get("key")
        labels = list(q.get("option_labels") or ())  # the after-pictures' changes, in words
        options = []
        for i, text in enumerate(q["options"]):
            label = labels[i] if i < len(labels) else None
            shown = html.escape(
                str(text) + (f" {label}" if label and label not in str(text) else "")
            )
            options.append(f"<b>{shown} ✓</b>" if i == key else shown)
        title = html.escape(str(q.get("id", "question")))
        prompt = html.escape(str(q.get("prompt", "")))
        out.append(f"<p><b>{title}</b>: {prompt}<br>{' · '.join(options)}</p>")
    return "".join(out)


def task_job(family: str, options: dict[str, Any], seed: int) -> tuple[Any, dict[str, int], float]:
    from studio.stimuli.split import make_generator

    t0 = time.perf_counter()
    generator = make_generator(family, options)
    item = next(iter(generator.items(1, seed)))
    return item, dict(getattr(generator, "rejections", {})), time.perf_counter() - t0


class TaskPreview(QWidget):
    """One item of a task generator, as it would be written, with its vet verdict. The
    family's controls are built from its options schema (those marked ``preview``)."""

    def __init__(self, service: RenderService) -> None:
        super().__init__(objectName="taskPreview")
        from studio.plugins import families

        self.families = {f.id: f for f in families("stimulus")}
        self.family = QComboBox(objectName="taskFamily")
        self.family.addItems(list(self.families))
        self.forms: dict[str, OptionsForm] = {}
        self.form_stack = QStackedWidget(objectName="taskOptions")
        for fid, fam in self.families.items():
            form = OptionsForm(fam, preview_only=True)
            form.layout_.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
            form.changed.connect(lambda: self.requester.request())
            self.forms[fid] = form
            self.form_stack.addWidget(form)
        self.seed = QSpinBox(objectName="taskSeed", minimum=0, maximum=2**31 - 1, value=1)
        self.next_button = QPushButton("Next seed", objectName="taskNext")
        self.next_button.clicked.connect(lambda: self.seed.setValue(self.seed.value() + 1))
        self.status = QLabel(objectName="taskStatus")
        self.questions = QLabel(objectName="taskQuestions")
        self.questions.setWordWrap(True)
        self.questions.setMaximumWidth(340)
        self.sheet = FittedImage("taskSheet")
        self.checks = _checks_tree("taskChecks")
        bar = QHBoxLayout()
        for w in (QLabel("Family"), self.family, QLabel("Seed"), self.seed, self.next_button):
            bar.addWidget(w)
        bar.addStretch(1)
        side = QVBoxLayout()
        self.form_stack.setMaximumWidth(340)
        self.status.setWordWrap(True)
        self.status.setMaximumWidth(340)
        side.addWidget(self.form_stack)
        side.addWidget(self.status)
        side.addWidget(self.questions)
        side.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(bar)
        body = QHBoxLayout()
        body.addWidget(self.sheet, 3)
        body.addLayout(side, 1)
        lay.addLayout(body, 3)
        lay.addWidget(self.checks, 2)
        self.requester = _Requester(self, service, self._job, self._show, self._error)
        self.family.currentIndexChanged.connect(self._family_changed)
        self.seed.valueChanged.connect(lambda _v: self.requester.request())
        self.last_item: Any = None
        self._family_changed()

    @property
    def form(self) -> OptionsForm:
        return self.forms[self.family.currentText()]

    def _family_changed(self) -> None:
        if self.forms:
            self.form_stack.setCurrentWidget(self.form)
        if self.isVisible():  # a hidden page generates nothing; showEvent catches up
            self.requester.request()

    def showEvent(self, e: object) -> None:
        super().showEvent(e)  # type: ignore[arg-type]
        shown = self.last_item
        if shown is None or shown.family != self.family.currentText():
            self.requester.request()

    def options(self) -> dict[str, Any]:
        """The shown options, with the family's preview values for the hidden ones."""
        fam = self.families[self.family.currentText()]
        hidden = {k: v for k, v in fam.preview.items() if k not in self.form.names()}
        return {**hidden, **{k: v for k, v in self.form.values().items() if v is not None}}

    def _job(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        self.status.setText("Generating…")
        return task_job, (self.family.currentText(), self.options(), self.seed.value())

    def _show(self, result: tuple[Any, dict[str, int], float]) -> None:
        item, rejections, seconds = result
        self.last_item = item
        self.sheet.set_image(pil_to_pixmap(item.sheet))
        rej = ", ".join(f"{k} {v}" for k, v in sorted(rejections.items())) or "none"
        verdict = "valid" if item.verdict.valid else "INVALID"
        key = key_text(item.family, item.record)
        self.status.setText(
            f"{item.id}: {verdict} · {seconds:.2f} s · rejected on the way: {rej}"
            + (f"\n{key}" if key else "")
        )
        self.questions.setText(questions_html(item.record))
        fill_checks(self.checks, item.verdict)

    def _error(self, message: str) -> None:
        self.status.setText(message)
        self.questions.clear()
        self.checks.clear()
