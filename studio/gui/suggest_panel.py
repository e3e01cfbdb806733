"""The suggestion queue of the Annotate tab (issue 30): Tag ▸ Suggest… deals the untagged
glyphs most likely to carry the values a concept lacks, one at a time and large, each answered
with one key.

- **Keys**: the value's number accepts the tag (1–9, the schema tree's numbering), 0 says "none
  of these", S or Space skips, Esc closes; ] and [ step the concept, V the value aimed at. Ctrl+Z
  (Edit ▸ Undo) undoes an accepted tag, and the glyph is dealt again.
- **No bias**: nothing is pre-chosen or highlighted; the model's guess is shown only after the
  answer, as feedback on the glyph just answered.
- **Never a tag until accepted**: an accepted answer goes through the Annotate page's write
  (``write_tag``: the lab's gate, the annotator's name, :func:`studio.suggest.queue.accept`, one
  undoable command). "None of these" and skipped glyphs are not dealt again this session;
  "none" glyphs are the ranking's negatives.
- **The encoder trains in the worker**: T queues an ``encoder`` job on the project's job queue
  through the window's :class:`~studio.gui.job_controller.JobController` (the Baselines tab's,
  so the job is listed there too; the same job as ``analogy-studio jobs encoder``), in a worker
  process: a crash or an out-of-memory ends the job, never the studio. The panel follows it
  (its share done, its message, a time left once a training batch has finished; the Cancel
  button cancels it, Esc leaves the panel and the job trains on); when it is done the space
  is built from the stored encoder; failed or cancelled, it says so
  and offers T and F again. An encoder job already queued or running (the CLI's, one left
  from before) is followed rather than a second one queued. There is no in-process fallback:
  without background jobs the panel says so, and F still ranks on the image features.
- **Off the GUI thread**: the glyph space (the stored encoder's embeddings and the image
  features, or the features alone) and every ranking run as
  :class:`~studio.gui.jobs.ThreadJob`; the tags are read here, on the GUI thread, and the
  ranking works on that snapshot. It ranks again after each accepted tag (the model refit on
  it), every few answers, and when few glyphs wait.

The queue's state is :class:`studio.suggest.queue.SuggestionQueue` (Qt-free); this is its view.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.app import Studio
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.progress import time_left_text
from studio.glyphs.unicode import block, char_name
from studio.gui.glyph_grid import to_qimage
from studio.gui.job_controller import JOB_ERRORS, JobController
from studio.gui.jobs import ThreadJob
from studio.gui.schema_tree import MAX_VALUE_KEY
from studio.suggest.job import ENCODER_JOB_KIND, ENCODER_JOB_TITLE, encoder_job_params
from studio.suggest.queue import (
    Answer,
    QueueMemory,
    QueueRequest,
    SuggestionQueue,
    dealt_from,
)

if TYPE_CHECKING:
    from studio.store.jobs import JobRecord
    from studio.suggest import SuggestionList

#: the side of the glyph shown, in pixels
GLYPH_SIDE = 300
#: how long the feedback on the glyph just answered stays, in milliseconds
FEEDBACK_MS = 4000
#: the keys the queue answers to (window shortcuts on them wait while it has the keyboard)
_DIGITS = {getattr(Qt.Key, f"Key_{n}"): n for n in range(10)}
_QUEUE_KEYS = {
    *_DIGITS,
    Qt.Key.Key_S,
    Qt.Key.Key_Space,
    Qt.Key.Key_Escape,
    Qt.Key.Key_BracketRight,
    Qt.Key.Key_BracketLeft,
    Qt.Key.Key_V,
    Qt.Key.Key_T,
    Qt.Key.Key_F,
}


class SpaceJob(ThreadJob):
    """Build the project's glyph space (``request``: ``studio``, ``encoder`` as
    :func:`studio.suggest.space.glyph_space` takes it: the panel asks for ``"stored"`` or
    ``"none"``, never a training, which is the worker's). ``progressed(stage, done, total)``
    arrives on the GUI thread; :meth:`cancel` stops it between glyph batches (the job then
    ends ``cancelled``)."""

    progressed = Signal(str, int, int)

    def _work(self) -> Any:
        from studio.suggest.space import glyph_space

        def progress(stage: str, done: int, total: int) -> None:
            if self._stop.is_set():
                raise StudioError("cancelled")
            self.progressed.emit(stage, done, total)

        return glyph_space(
            self.request["studio"],
            encoder=self.request["encoder"],
            progress=progress,
            should_stop=self._stop.is_set,
        )


class RankJob(ThreadJob):
    """One ranking (``request``: ``space``, ``annotations`` read on the GUI thread,
    ``schema``, ``queue_request``): ``succeeded((generation, SuggestionList))``."""

    def _work(self) -> Any:
        from studio.suggest import suggestions_from

        req: QueueRequest = self.request["queue_request"]
        found = suggestions_from(
            self.request["space"],
            self.request["annotations"],
            self.request["schema"],
            req.concept,
            req.value,
            req.n,
            exclude=req.exclude,
            rejected=req.rejected,
            only=req.only,
        )
        return req.generation, found


def _trains_the_default(params: Any) -> bool:
    """Whether an encoder job's parameters train the encoder the panel reads: the default
    epochs and seed, on this project (no other ``project`` named)."""
    from studio.suggest.encoder import EncoderParams

    if not isinstance(params, dict) or params.get("project"):
        return False
    try:
        return EncoderParams.from_json(params) == EncoderParams()
    except StudioError:
        return False


def encoder_is_stored(studio: Studio) -> bool:
    """Whether a fresh encoder is stored for the project's fonts (no training needed)."""
    from studio.suggest.encoder import EncoderParams
    from studio.suggest.space import encoder_path, encoder_version

    try:
        return encoder_path(
            studio, encoder_version(studio.font_manifest(), EncoderParams())
        ).exists()
    except StudioError:
        return False


class SuggestionPanel(QWidget):
    """The queue's view (module docstring). ``write_tag(key, concept, value)`` writes an
    accepted tag (None: refused, the answer is not recorded); ``show_message(text, ms)`` speaks
    in the window's status bar; ``jobs`` drives the project's background jobs (the window's
    :class:`~studio.gui.job_controller.JobController`; None: no encoder can be trained here).
    ``closed`` is emitted when Esc (or Close) leaves the queue. Signals and slots run on the
    GUI thread."""

    closed = Signal()
    #: the concept the queue deals for (the tree shows it, with no value chosen: no hint)
    concept_shown = Signal(str)

    def __init__(
        self,
        studio: Studio,
        write_tag: Callable[[GlyphKey, str, str], int | None],
        show_message: Callable[[str, int], None],
        jobs: JobController | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("suggestionQueue")
        self.studio = studio
        self._write_tag = write_tag
        self._show_message = show_message
        self.jobs = jobs
        if jobs is not None:
            jobs.jobs_read.connect(self._jobs_read)
        #: the encoder job followed (its id in the project's job queue), None when none is
        self.encoder_job: int | None = None
        #: (when, share done, message) when its training was first seen: the time left's rate
        self._training_seen: tuple[float, float, str] | None = None
        self.clock: Callable[[], float] = time.monotonic  # the time left's (tests set it)
        self.memory = QueueMemory()
        self.queue: SuggestionQueue | None = None
        self.space: Any = None  # the GlyphSpace built this session (reset with the project)
        self._space_job: SpaceJob | None = None
        self._rank_job: RankJob | None = None
        self._rank_again = False
        self._waiting_for_choice = False
        self._aim: Any = None  # the last ranking's SuggestionList (what it aimed at)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._build()

    # ---- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        self.title = QLabel(objectName="queueTitle")
        self.title.setStyleSheet("font-size: 15px; font-weight: bold;")
        self.concept_combo = QComboBox(objectName="queueConcept")
        self.value_combo = QComboBox(objectName="queueValue")
        for combo in (self.concept_combo, self.value_combo):
            combo.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay the queue's
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.concept_combo.setToolTip("The concept the queue deals for (] and [ step it)")
        self.value_combo.setToolTip(
            "Aim at one value, or at the values the Needs report lacks (V steps it)"
        )
        self.concept_combo.activated.connect(lambda _i: self._restart())
        self.value_combo.activated.connect(lambda _i: self._restart(keep_value=True))
        close = QPushButton("Close (Esc)", objectName="queueClose")
        close.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        close.clicked.connect(self.close_queue)
        head = QHBoxLayout()
        head.addWidget(self.title)
        head.addWidget(self.concept_combo)
        head.addWidget(self.value_combo)
        head.addStretch(1)
        head.addWidget(close)

        # the states: a message (with progress, or a choice) or a glyph to answer
        self.pages = QStackedWidget(objectName="queuePages")
        self.message = QLabel(objectName="queueMessage", wordWrap=True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setStyleSheet("font-size: 14px; padding: 12px;")
        self.progress = QProgressBar(objectName="queueProgress")
        self.progress.setVisible(False)
        self.cancel_button = QPushButton("Cancel", objectName="queueCancel")
        self.cancel_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.train_button = QPushButton("T  Train the encoder", objectName="queueTrain")
        self.features_button = QPushButton("F  Image features only", objectName="queueFeaturesOnly")
        for b in (self.train_button, self.features_button):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.train_button.clicked.connect(lambda: self.train_encoder())
        self.features_button.clicked.connect(lambda: self._build_space("none"))
        choice = QHBoxLayout()
        choice.addStretch(1)
        choice.addWidget(self.train_button)
        choice.addWidget(self.features_button)
        choice.addWidget(self.cancel_button)
        choice.addStretch(1)
        message_page = QWidget()
        mlay = QVBoxLayout(message_page)
        mlay.addStretch(1)
        mlay.addWidget(self.message)
        mlay.addWidget(self.progress)
        mlay.addLayout(choice)
        mlay.addStretch(2)

        card = QWidget()
        self.glyph = QLabel(objectName="queueGlyph")
        self.glyph.setFixedSize(GLYPH_SIDE + 16, GLYPH_SIDE + 16)
        self.glyph.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.glyph.setStyleSheet("background: white; border: 1px solid #bbb;")
        self.glyph_name = QLabel(objectName="queueGlyphName", wordWrap=True)
        self.glyph_name.setStyleSheet("font-size: 14px;")
        self.question = QLabel(objectName="queueQuestion", wordWrap=True)
        self.answers_box = QGridLayout()
        self.answers_box.setSpacing(4)
        self.value_buttons: list[QPushButton] = []
        self.none_button = QPushButton("0  none of these", objectName="queueNone")
        self.skip_button = QPushButton("S  skip", objectName="queueSkip")
        for b in (self.none_button, self.skip_button):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.none_button.clicked.connect(lambda: self.answer_none())
        self.skip_button.clicked.connect(lambda: self.skip())
        side = QVBoxLayout()
        side.addWidget(self.glyph_name)
        side.addWidget(self.question)
        side.addLayout(self.answers_box)
        others = QHBoxLayout()
        others.addWidget(self.none_button)
        others.addWidget(self.skip_button)
        others.addStretch(1)
        side.addLayout(others)
        side.addStretch(1)
        clay = QHBoxLayout(card)
        clay.addWidget(self.glyph, 0, Qt.AlignmentFlag.AlignTop)
        clay.addLayout(side, 1)
        self.pages.addWidget(message_page)
        self.pages.addWidget(card)
        self._card = card

        self.feedback = QLabel(objectName="queueFeedback", wordWrap=True)
        self.feedback.setStyleSheet("color: #333; font-size: 13px; padding: 4px;")
        self._feedback_timer = QTimer(self, singleShot=True, interval=FEEDBACK_MS)
        self._feedback_timer.timeout.connect(self.feedback.clear)
        self.counts = QLabel(objectName="queueCounts", wordWrap=True)
        self.counts.setStyleSheet("color: #666;")

        lay = QVBoxLayout(self)
        lay.addLayout(head)
        lay.addWidget(self.pages, 1)
        lay.addWidget(self.feedback)
        lay.addWidget(self.counts)

    # ---- opening and closing ----------------------------------------------------------------
    def open_for(self, concept: str | None, value: str | None = None) -> None:
        """Start (or go on with) the queue of ``concept`` (None: choose one here first)."""
        schema = self.studio.schema
        self.concept_combo.clear()
        for c in schema.concepts:
            if c.values:
                self.concept_combo.addItem(c.display, c.id)
        i = self.concept_combo.findData(concept) if concept is not None else -1
        self.setFocus()
        if i < 0:
            self.concept_combo.setCurrentIndex(-1)
            self.queue = None
            self.title.setText("Suggestions")
            self._say_page("Choose a concept above (] and [ step through them).")
            self.concept_combo.setFocus()
            return
        self.concept_combo.setCurrentIndex(i)
        same = self.queue is not None and self.queue.concept == concept
        if same and value is None:
            self._refresh()
            return
        self._fill_values(value)
        self._restart(keep_value=True)

    def reset(self) -> None:
        """Another project opened: nothing of the last one's queue stays (its encoder job is
        no longer followed; it is the last project's worker's to finish or interrupt)."""
        self._cancel_space()
        self.encoder_job = None
        self.memory = QueueMemory()
        self.queue = None
        self.space = None
        self.feedback.clear()

    def glyphs_changed(self) -> None:
        """The project's glyphs changed: the space is built again when next needed."""
        if self._space_job is None and self.encoder_job is None:
            self.space = None

    def close_queue(self) -> None:
        """Esc or Close: back to the grid. An encoder job followed goes on training in the
        background (it may be another session's, or the command line's): only the Cancel
        button cancels it; Ctrl+Shift+G comes back to it."""
        self._cancel_space()
        if self.encoder_job is not None:
            self._show_message(
                f"Suggestions: the glyph encoder goes on training in the background (job "
                f"{self.encoder_job}); Ctrl+Shift+G comes back to it",
                8000,
            )
            self.encoder_job = None
        self.closed.emit()

    def _cancel_space(self) -> None:
        if self._space_job is not None:
            self._space_job.cancel()
            self.message.setText("Cancelling…")

    def cancel(self) -> None:
        """The Cancel button: stop building the glyph space, or cancel the encoder job
        followed (the panel hears that it ended with the next read of the jobs)."""
        self._cancel_space()
        if self.encoder_job is not None and self.jobs is not None and self.jobs.running:
            try:
                self.jobs.cancel(self.encoder_job)
            except JOB_ERRORS as e:
                self._show_message(f"Suggestions: cannot cancel the encoder's training: {e}", 10000)
                return
            if self.encoder_job is not None:  # not ended by that read already
                self.message.setText("Cancelling the glyph encoder's training…")

    def busy(self) -> bool:
        return (
            self._space_job is not None
            or self._rank_job is not None
            or self.encoder_job is not None
        )

    def shutdown(self) -> None:
        """The window closes: the space's work is cancelled, and both jobs waited for (a
        cancelled build stops at its next batch, a ranking takes a fraction of a second); an
        encoder job is the worker's (the window's quit asks about running jobs)."""
        self._cancel_space()
        self.encoder_job = None
        for job in (self._space_job, self._rank_job):
            if job is not None:
                job.wait(5000)

    def _fill_values(self, value: str | None) -> None:
        concept = self.concept_combo.currentData()
        self.value_combo.clear()
        self.value_combo.addItem("values it needs", None)
        if concept is None:
            return
        for v in self.studio.schema.concept(concept).values:
            self.value_combo.addItem(f"only {v.display}", v.id)
        self.value_combo.setCurrentIndex(max(0, self.value_combo.findData(value)))

    def _restart(self, keep_value: bool = False) -> None:
        """A new queue for the concept and value chosen in the header."""
        concept = self.concept_combo.currentData()
        if concept is None:
            return
        if not keep_value or self.value_combo.count() == 0:
            self._fill_values(None)
        value = self.value_combo.currentData()
        self.queue = SuggestionQueue(
            concept, value, memory=self.memory, only=dealt_from(self.studio)
        )
        self._rank_again = False
        c = self.studio.schema.concept(concept)
        self.title.setText("Suggestions for")
        self._aim = None
        self._build_answers(concept)
        self.question.setText(
            f"Which value of <b>{c.display}</b> does this glyph show?<br>"
            "<span style='color:#666'>Its number tags it · 0: none of these, no tag · "
            "S: skip</span>"
        )
        self.concept_shown.emit(concept)
        self._refresh()

    def _build_answers(self, concept: str) -> None:
        for b in self.value_buttons:
            self.answers_box.removeWidget(b)
            b.deleteLater()
        self.value_buttons = []
        for n, v in enumerate(self.studio.schema.concept(concept).values, start=1):
            text = f"{n}  {v.display}" if n <= MAX_VALUE_KEY else v.display
            b = QPushButton(text, objectName=f"queueValue_{n}")
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.setStyleSheet("text-align: left; padding: 4px 10px;")
            if v.description:
                b.setToolTip(v.description)
            b.clicked.connect(lambda _c=False, n=n: self.accept_nth(n))
            self.answers_box.addWidget(b, (n - 1) // 3, (n - 1) % 3)
            self.value_buttons.append(b)

    # ---- the glyph space, then the rankings ----------------------------------------------------
    def _refresh(self) -> None:
        """Show what the queue has: a glyph, or what it is waiting for."""
        if self.queue is None:
            return
        if (why := self._nothing_to_follow()) is not None:
            self._say_page(why)
            return
        if self.space is None:
            if self._space_job is None and self.encoder_job is None:
                if encoder_is_stored(self.studio):
                    self._build_space("stored")
                elif (running := self._active_encoder_job()) is not None:
                    self._follow_encoder_job(running)
                else:
                    self._offer_training()
            return
        self._show_current()
        self._maybe_rank()

    def _nothing_to_follow(self) -> str | None:
        """Why no suggestion can come (no glyph carries a value aimed at), before any work."""
        q = self.queue
        assert q is not None
        counts = self.studio.project.tag_counts()
        if any(n for (c, v), n in counts.items() if c == q.concept and q.value in (None, v)):
            return None
        c = self.studio.schema.concept(q.concept)
        what = c.display if q.value is None else f"{c.display} = {c.value(q.value).display}"
        return (
            f"No glyph is tagged <b>{what}</b> yet: tag one in the grid (Esc), and the "
            "suggestions follow its neighbours. ] and [ choose another concept, V a value."
        )

    def _offer_training(self, why: str = "") -> None:
        self._waiting_for_choice = True
        n = sum(1 for g in self.studio.project.glyphs() if g.status not in ("uncovered", "missing"))
        self._say_page(
            (f"{why}<br><br>" if why else "")
            + "No glyph encoder is stored for this project's fonts yet.<br><br>"
            f"<b>T</b>: train it on the {n:,} rendered glyphs in the background worker (a job, "
            "listed in the Baselines tab too: tens of seconds to minutes on the CPU, with its "
            "progress; Esc leaves it training), or<br>"
            "<b>F</b>: rank by the image features alone, at once (less apt at shapes).",
            choice=True,
        )

    # ---- the encoder job ----------------------------------------------------------------------
    def train_encoder(self) -> None:
        """T: queue the encoder's training on the project's job queue (or follow one already
        queued or running) and show its progress. Without background jobs, say so."""
        if self.queue is None or self._space_job is not None or self.encoder_job is not None:
            return
        self._waiting_for_choice = False
        if self.jobs is not None and self.jobs.running:
            # the list as it is now: the controller re-reads it all only while nothing runs,
            # and another session (or the command line) may have queued one meanwhile
            self.jobs.refresh(force=True)
        if (running := self._active_encoder_job()) is not None:
            self._follow_encoder_job(running)
            return
        if self.jobs is None or not self.jobs.running:
            self._offer_training(
                "The glyph encoder trains in the studio's background worker, and background "
                "jobs are not running for this project (the Baselines tab says why)."
            )
            return
        params = encoder_job_params(cache=self.studio.cache.root)
        try:
            job_id = self.jobs.submit(ENCODER_JOB_KIND, params, ENCODER_JOB_TITLE)
        except JOB_ERRORS as e:
            self._offer_training(f"Cannot queue the glyph encoder's training: {e}")
            return
        self._follow_encoder_job(job_id)

    def _active_encoder_job(self) -> int | None:
        """The oldest encoder job queued or running in the project (the last read) that
        trains the encoder this panel reads (the default settings, this project): a job
        with another epoch count or seed stores another version, which the panel would not
        find when it ends."""
        if self.jobs is None:
            return None
        active = [
            j.id
            for j in self.jobs.jobs
            if j.kind == ENCODER_JOB_KIND
            and j.status in ("queued", "running")
            and _trains_the_default(j.params)
        ]
        return min(active, default=None)

    def _follow_encoder_job(self, job_id: int) -> None:
        self.encoder_job = job_id
        self._training_seen = None
        self._waiting_for_choice = False
        self._say_page(
            f"Training the glyph encoder in the background (job {job_id})…", progress=True
        )
        self._show_message(f"Suggestions: training the glyph encoder (job {job_id})…", 5000)
        if self.jobs is not None:
            self._jobs_read(self.jobs.jobs)

    def _jobs_read(self, jobs: list[JobRecord]) -> None:
        """The controller read the jobs (GUI thread): the followed encoder job's progress, or
        its end."""
        if self.encoder_job is None:
            return
        job = next((j for j in jobs if j.id == self.encoder_job), None)
        if job is None:
            return  # not in this read (the next one lists it)
        if job.status == "done":
            self.encoder_job = None
            if self.queue is None:
                return
            if not encoder_is_stored(self.studio):
                # trained where this studio does not look: a lab worker on another machine
                # stores in its own render cache
                self._offer_training(
                    f"Job {job.id} trained a glyph encoder, but this studio does not find it "
                    "in its render cache: a worker on another machine stores in its own. "
                    "Ticking Baselines ▸ Run jobs on this computer too trains it here."
                )
                return
            self._show_message(f"Suggestions: the glyph encoder is trained (job {job.id})", 5000)
            self._build_space("stored")
        elif job.status in ("failed", "cancelled", "interrupted"):
            self.encoder_job = None
            self._encoder_job_ended(job)
        else:
            self._show_encoder_progress(job, jobs)

    def _show_encoder_progress(self, job: JobRecord, jobs: list[JobRecord]) -> None:
        head = f"Training the glyph encoder in the background (job {job.id})"
        if job.cancel_requested:
            self.message.setText(f"{head}: cancelling…")
            return
        if job.status == "queued":
            ahead = sum(1 for j in jobs if j.id < job.id and j.status in ("queued", "running"))
            host = self.jobs.host if self.jobs is not None else None
            if host is not None and host.max_running == 0:  # a lab's, left to its workers
                wait = (
                    "waiting for a lab worker (Baselines ▸ Run jobs on this computer too "
                    "runs it here)"
                )
            elif ahead:
                wait = f"waiting for {ahead} job{'s' if ahead != 1 else ''} before it"
            else:
                wait = "starting the worker"
            self.message.setText(f"{head}: {wait}…")
            self.progress.setRange(0, 0)
            return
        self.progress.setRange(0, 1000)
        self.progress.setValue(round(1000 * max(0.0, min(1.0, job.progress))))
        left = self._training_time_left(job)
        what = job.message.removeprefix("training: ") or "starting"
        if left:
            what += f" — {'' if left.startswith('under') else 'about '}{left} left"
        self.message.setText(f"{head}: {what}")

    def _training_time_left(self, job: JobRecord) -> str:
        """The time left at the rate since the training was first seen, once a batch has
        finished since then (rendering and torch's start-up are never in the rate); ""
        before."""
        if not job.message.startswith("training"):
            return ""
        now = self.clock()
        if self._training_seen is None:
            self._training_seen = (now, job.progress, job.message)
            return ""
        t0, f0, first = self._training_seen
        if job.message == first or job.progress <= f0 or job.progress >= 1.0:
            return ""
        return time_left_text((1.0 - job.progress) * (now - t0) / (job.progress - f0))

    def _encoder_job_ended(self, job: JobRecord) -> None:
        """A failed, cancelled or interrupted encoder job: said, and T and F offered again
        (nothing is lost: the tags and the answers stay; the job and its log are in the
        Baselines tab)."""
        if job.status == "cancelled":
            why = f"The glyph encoder's training was cancelled (job {job.id})."
        elif job.status == "interrupted":
            why = f"The glyph encoder's training was interrupted (job {job.id})."
        else:
            first = job.error.strip().splitlines()[0] if job.error.strip() else "no reason given"
            why = (
                f"The glyph encoder's training failed (job {job.id}): {html.escape(first)}<br>"
                "Its log is in the Baselines tab."
            )
        self._show_message(f"Suggestions: {why.split('<br>')[0]}", 10000)
        if self.queue is not None:
            self._offer_training(why)

    # ---- the glyph space ----------------------------------------------------------------------
    def _build_space(self, mode: str) -> None:
        if self._space_job is not None or self.queue is None:
            return
        self._waiting_for_choice = False
        job = SpaceJob({"studio": self.studio, "encoder": mode}, self)
        job.progressed.connect(self._space_progress)
        job.succeeded.connect(self._space_built)
        job.failed.connect(self._space_failed)
        job.cancelled.connect(self._space_cancelled)
        self._space_job = job
        what = (
            "Reading the glyphs' image features"
            if mode == "none"
            else "Reading the stored glyph encoder"
        )
        self._say_page(f"{what}…", progress=True)
        self._show_message(f"Suggestions: {what.lower()}…", 5000)
        job.start()

    def _space_progress(self, stage: str, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.message.setText(f"Reading the glyphs' images: {done:,} of {total:,}…")

    def _space_built(self, space: object) -> None:
        self._end_space_job()
        self.space = space
        self._show_message(f"Suggestions ranked on {self._space_words()}", 5000)
        self._refresh()

    def _space_cancelled(self) -> None:
        self._end_space_job()
        if self.queue is not None:
            self._offer_training()
        self._show_message("Suggestions: cancelled", 5000)

    def _space_failed(self, message: str) -> None:
        self._end_space_job()
        self._say_page(f"Cannot build the suggestions: {message}")
        self._show_message(f"Suggestions: {message}", 10000)

    def _end_space_job(self) -> None:
        self._space_job = None

    def _end_rank_job(self) -> None:
        self._rank_job = None

    def _space_words(self) -> str:
        source = getattr(self.space, "source", "")
        return (
            "the learned encoder and the image features"
            if "encoder" in source
            else ("the image features alone")
        )

    def _maybe_rank(self) -> None:
        """Rank again in the background when the queue wants it (one ranking at a time)."""
        from studio.suggest import project_tag_index

        q = self.queue
        if q is None or self.space is None or not q.wants_refill():
            return
        if self._rank_job is not None:
            self._rank_again = True
            return
        request = q.request()
        job = RankJob(
            {
                "space": self.space,
                "annotations": project_tag_index(self.studio.project),  # read here
                "schema": self.studio.schema,
                "queue_request": request,
            },
            self,
        )
        job.succeeded.connect(self._ranked)
        job.failed.connect(self._rank_failed)
        self._rank_job = job
        job.start()

    def _ranked(self, result: object) -> None:
        self._end_rank_job()
        generation, found = cast("tuple[int, SuggestionList]", result)
        q = self.queue
        if q is not None and q.fill(generation, found.suggestions):
            self._aim = found
            if self.pages.currentWidget() is not self._card or q.current() is None:
                self._show_current()
            self._update_counts()
        if self._rank_again:
            self._rank_again = False
            self._maybe_rank()

    def _rank_failed(self, message: str) -> None:
        self._end_rank_job()
        self._rank_again = False
        if self.queue is not None and self.queue.current() is None:
            self._say_page(message[:1].upper() + message[1:])
        self._show_message(f"Suggestions: {message}", 10000)

    # ---- what is shown ------------------------------------------------------------------------
    def _say_page(self, text: str, *, progress: bool = False, choice: bool = False) -> None:
        self.message.setText(text)
        self.progress.setVisible(progress)
        if progress:
            self.progress.setRange(0, 0)
        self.cancel_button.setVisible(progress)
        self.train_button.setVisible(choice)
        self.features_button.setVisible(choice)
        self.pages.setCurrentIndex(0)
        self._update_counts()

    def _show_current(self) -> None:
        q = self.queue
        if q is None:
            return
        s = q.current()
        if s is None:
            if self._rank_job is not None or q.wants_refill():
                self._say_page("Finding suggestions…")
            else:
                c = self.studio.schema.concept(q.concept)
                self._say_page(
                    f"No more suggestions for <b>{c.display}</b> this session: every glyph the "
                    "model would deal has been answered. Tag more by hand, choose another "
                    "concept (] and [), or Esc to close."
                )
            return
        g = self.studio.project.glyph(s.key)
        arr = None
        if g is not None:
            try:
                arr = self.studio.master(g)
            except (StudioError, OSError):
                arr = None
        if arr is None:
            self.glyph.clear()
            self.glyph.setText(chr(s.key.codepoint))
        else:
            self.glyph.setPixmap(
                QPixmap.fromImage(to_qimage(arr)).scaled(
                    GLYPH_SIDE,
                    GLYPH_SIDE,
                    Qt.AspectRatioMode.KeepAspectRatio,
                    Qt.TransformationMode.SmoothTransformation,
                )
            )
        cp = s.key.codepoint
        self.glyph_name.setText(
            f"<b>{chr(cp)}</b> &nbsp;{char_name(cp)}<br>"
            f"<span style='color:#666'>{s.key} · {block(cp)}</span>"
        )
        self.pages.setCurrentWidget(self._card)
        self._update_counts()

    def _update_counts(self) -> None:
        q = self.queue
        if q is None:
            self.counts.setText("")
            return
        aim = self._aim
        parts = [
            f"{len(q.answers)} answered, {q.accepted} tagged",
            f"{len(q.pending)} waiting",
        ]
        if aim is not None and aim.concept == q.concept:
            c = self.studio.schema.concept(q.concept)
            names = ", ".join(c.value(v).display for v in aim.values)
            why = {"needs": " (what the Needs report lacks)",
                   "tagged": " (every value tagged so far)"}.get(aim.why, "")  # fmt: skip
            parts.append(f"aiming at {names}{why}")
        if self.space is not None:
            parts.append(f"ranked on {self._space_words()}")
        self.counts.setText("  ·  ".join(parts))

    def _give_feedback(self, got: Answer) -> None:
        c = self.studio.schema.concept(got.suggestion.concept)
        guess = c.value(got.suggestion.value).display
        cp = got.suggestion.key.codepoint
        did = {
            "accepted": f"tagged {c.display} = "
            f"{c.value(got.value).display if got.value is not None else ''}",
            "none": "none of these",
            "skipped": "skipped",
        }[got.kind]
        mark = " ✓" if got.guessed_right else ""
        text = f"Last: {chr(cp)} {got.suggestion.key} — {did}; the model guessed {guess}{mark}"
        self.feedback.setText(text)
        self._feedback_timer.start()
        self._show_message(text, FEEDBACK_MS)

    # ---- answers ------------------------------------------------------------------------------
    def accept_nth(self, n: int) -> None:
        """Key ``n``: tag the glyph shown with the concept's n-th value."""
        q = self.queue
        if q is None or q.current() is None:
            return
        values = self.studio.schema.concept(q.concept).values
        if not 1 <= n <= len(values):
            self._show_message(
                f"{q.concept} has no value {n} (keys 1–{min(len(values), MAX_VALUE_KEY)})", 5000
            )
            return
        s = q.current()
        assert s is not None
        value = values[n - 1].id
        if self._write_tag(s.key, q.concept, value) is None:
            return  # refused (the lab's gate, no annotator name): not an answer
        self._answered(q.answer("accepted", value))

    def answer_none(self) -> None:
        q = self.queue
        if q is not None and q.current() is not None:
            self._answered(q.answer("none"))

    def skip(self) -> None:
        q = self.queue
        if q is not None and q.current() is not None:
            self._answered(q.answer("skipped"))

    def _answered(self, got: Answer) -> None:
        self._give_feedback(got)
        self._show_current()
        self._maybe_rank()

    def tags_changed(self, keys: list[GlyphKey]) -> None:
        """Tags changed (an undo, a lab colleague): a glyph accepted here that lost the tag
        is dealt again."""
        q = self.queue
        if q is None:
            return
        for key in keys:
            accepted = [a for a in q.answers if a.kind == "accepted" and a.suggestion.key == key]
            if not accepted:
                continue
            have = {(t.concept, t.value) for t in self.studio.project.tags_of(key)}
            if (q.concept, accepted[-1].value) not in have and q.take_back(key):
                self.feedback.setText(f"Undone: {chr(key.codepoint)} {key} is shown again")
                self._show_current()

    # ---- keys ---------------------------------------------------------------------------------
    def event(self, e: QEvent) -> bool:
        # the queue's plain keys are its own while it has the keyboard (the window's shortcuts
        # on the same keys wait), as a text field's are
        if e.type() == QEvent.Type.ShortcutOverride and isinstance(e, QKeyEvent):
            plain = e.modifiers() in (
                Qt.KeyboardModifier.NoModifier,
                Qt.KeyboardModifier.KeypadModifier,
                Qt.KeyboardModifier.ShiftModifier,
            )
            if plain and e.key() in _QUEUE_KEYS:
                e.accept()
                return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        key = e.key()
        if key == Qt.Key.Key_Escape:
            if self._space_job is not None:
                self.cancel()  # the space is built in the window: Esc stops it
            else:
                self.close_queue()  # an encoder job goes on in the background
        elif key in _DIGITS and self.pages.currentWidget() is self._card:
            n = _DIGITS[Qt.Key(key)]
            if n == 0:
                self.answer_none()
            else:
                self.accept_nth(n)
        elif key in (Qt.Key.Key_S, Qt.Key.Key_Space) and self.pages.currentWidget() is self._card:
            self.skip()
        elif key in (Qt.Key.Key_BracketRight, Qt.Key.Key_BracketLeft):
            self._step_combo(self.concept_combo, +1 if key == Qt.Key.Key_BracketRight else -1)
            self._restart()
        elif key == Qt.Key.Key_V and self.queue is not None:
            self._step_combo(self.value_combo, +1, wrap=True)
            self._restart(keep_value=True)
        elif key == Qt.Key.Key_T and self._waiting_for_choice:
            self.train_encoder()
        elif key == Qt.Key.Key_F and self._waiting_for_choice:
            self._build_space("none")
        else:
            super().keyPressEvent(e)

    @staticmethod
    def _step_combo(combo: QComboBox, delta: int, wrap: bool = False) -> None:
        n = combo.count()
        if n == 0:
            return
        i = combo.currentIndex() + delta
        combo.setCurrentIndex(i % n if wrap else max(0, min(n - 1, i)))
