"""File ▸ Open lab database…: where a lab's shared project lives on a PostgreSQL server, who
signs in, and how the password is found.

The password typed here goes only to the connection (in memory). When "Remember password in
the system keyring" is ticked (possible only where :func:`studio.store.secrets.keyring_available`
is true) it is also kept in the OS keyring under ``user@host:port/db``, so the recent-projects
menu reopens the database without asking; otherwise libpq's own sources apply next time
(``~/.pgpass``, ``PGPASSFILE``, a service file, ``PGPASSWORD``). Nothing of it is ever written
to the studio's settings, titles or logs: they get :func:`~studio.store.dbfile.safe_location`.

Testing the connection and opening the project run in a worker thread (a server that does not
answer must not freeze the window); the result comes back on the GUI thread.
"""

from __future__ import annotations

import getpass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)
from sqlalchemy import URL, make_url, text
from sqlalchemy.exc import SQLAlchemyError

from studio.core.errors import StudioError
from studio.gui.jobs import ThreadJob
from studio.store import secrets
from studio.store.dbfile import is_database_url, open_engine, safe_location
from studio.store.project import Project

__all__ = ["OpenLabDialog", "connection_summary"]

DEFAULT_PORT = secrets.DEFAULT_PORT
#: libpq gives up on a server that does not answer after this many seconds
CONNECT_TIMEOUT_S = 8
_OK_STYLE = "color: #1b5e20;"
_ERROR_STYLE = "color: #b00020;"


def _first_line(error: BaseException) -> str:
    text_ = str(error).strip().splitlines()
    return text_[0] if text_ else type(error).__name__


def connection_summary(location: str, shown: str | None = None) -> str:
    """Connect to ``location`` (read-only), and say in one sentence who signed in and what the
    database holds; raises StudioError with the reason when it cannot be reached or is not a
    studio project. Runs on a worker thread."""
    from studio.store import lab
    from studio.store.filecheck import check_database

    safe = shown or safe_location(location)
    engine = open_engine(location)
    try:
        with engine.connect() as conn:
            user = str(conn.execute(text("SELECT session_user")).scalar_one())
            db = str(conn.execute(text("SELECT current_database()")).scalar_one())
            found = check_database(conn, safe)
            try:
                role = lab.role_of(conn, user)
            except SQLAlchemyError:  # an older format has no people yet
                conn.rollback()
                role = None
    except SQLAlchemyError as e:
        raise StudioError(f"{safe}: {_first_line(e)}") from None
    except StudioError as e:  # named with the connect_timeout the test added: name it plainly
        raise StudioError(str(e).replace(safe_location(location), safe)) from None
    finally:
        engine.dispose()
    who = f"{user} ({role})" if role else f"{user} (not a member of this lab: read-only at most)"
    return (
        f"Connected to the lab database {db!r} as {who}: an Analogy Studio project, "
        f"format {found.format_version}."
    )


class OpenLabDialog(QDialog):
    """Host, port, database, user and password (or a libpq service name). OK opens the project
    (in the background); on success :attr:`project` holds it and the dialog is accepted; on
    failure the reason is shown in the dialog, which stays open to correct it."""

    def __init__(self, parent: QWidget | None = None, location: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("openLabDialog")
        self.setWindowTitle("Open lab database")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.project: Project | None = None
        #: why a password to remember was not kept (the project opened all the same), or ""
        self.kept_password_problem = ""
        self._job: ThreadJob | None = None
        self._keyring = secrets.keyring_available()

        intro = QLabel(
            "A lab's shared project on a PostgreSQL server. Ask your lab's IT for the host, "
            "the database and your user name (docs/lab-server.md)."
        )
        intro.setWordWrap(True)

        self.host = QLineEdit("localhost", objectName="labHost")
        self.port = QSpinBox(objectName="labPort")
        self.port.setRange(1, 65535)
        self.port.setValue(DEFAULT_PORT)
        self.database = QLineEdit(objectName="labDatabase", placeholderText="e.g. lab_glyphs")
        self.user = QLineEdit(getpass.getuser(), objectName="labUser")
        self.password = QLineEdit(objectName="labPassword")
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setPlaceholderText("empty: the keyring, ~/.pgpass or PGPASSWORD")
        self.service = QLineEdit(objectName="labService")
        self.service.setPlaceholderText("a name in ~/.pg_service.conf (then the rest is optional)")
        self.service.setToolTip(
            "A libpq service name: host, port, database and user are read from the service "
            "file (~/.pg_service.conf or PGSERVICEFILE); a database or user filled in above "
            "overrides the service's"
        )
        self.remember = QCheckBox(
            "Remember password in the system keyring", objectName="labRemember"
        )
        if self._keyring:
            self.remember.setToolTip(
                "Keep the password in the operating system's keyring (never in the studio's "
                "settings), so the database reopens from File ▸ Open recent without asking"
            )
        else:
            self.remember.setEnabled(False)
            self.remember.setToolTip(
                "No usable system keyring on this machine (the keyring package or a keyring "
                "service is missing): put the password in ~/.pgpass or a service file instead"
            )

        form = QFormLayout()
        form.addRow("&Host", self.host)
        form.addRow("P&ort", self.port)
        form.addRow("&Database", self.database)
        form.addRow("&User", self.user)
        form.addRow("&Password", self.password)
        form.addRow("", self.remember)
        box = QGroupBox("Server")
        box.setLayout(form)
        service_form = QFormLayout()
        service_form.addRow("&Service", self.service)
        service_box = QGroupBox("Or a libpq service")
        service_box.setLayout(service_form)

        self.test_button = QPushButton("&Test connection", objectName="labTest")
        self.test_button.clicked.connect(self.test_connection)
        self.message = QLabel(objectName="labMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setMinimumHeight(48)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.message, 1)

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel
        )
        self.open_button = self.buttons.button(QDialogButtonBox.StandardButton.Open)
        self.open_button.setObjectName("labOpen")
        self.buttons.accepted.connect(self.open_database)
        self.buttons.rejected.connect(self.reject)

        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addWidget(box)
        lay.addWidget(service_box)
        lay.addLayout(test_row)
        lay.addWidget(self.buttons)
        for field in (self.host, self.database, self.user, self.service):
            field.textChanged.connect(self._update_buttons)
        self.service.textChanged.connect(self._service_changed)
        if location:
            self.set_location(location)
        self._update_buttons()
        self.resize(520, self.sizeHint().height())

    # ---- the location ---------------------------------------------------------------------------
    def set_location(self, location: str) -> None:
        """Fill the fields from a database URL (a recent project's; it has no password)."""
        if not is_database_url(location):
            return
        url = make_url(location)
        service = url.query.get("service")
        self.service.setText(str(service) if isinstance(service, str) else "")
        self.host.setText(url.host or ("" if service else "localhost"))
        self.port.setValue(url.port or DEFAULT_PORT)
        self.database.setText(url.database or "")
        self.user.setText(url.username or "")
        self.password.clear()

    def _url(self, *, with_password: bool) -> URL:
        service = self.service.text().strip()
        query = {"service": service} if service else {}
        password = self.password.text() if with_password and self.password.text() else None
        return URL.create(
            "postgresql",
            username=self.user.text().strip() or None,
            password=password,
            host=None if service else (self.host.text().strip() or None),
            port=None if service or self.port.value() == DEFAULT_PORT else self.port.value(),
            database=self.database.text().strip() or None,
            query=query,
        )

    def location(self) -> str:
        """The database as it may be shown and stored (recent projects): no password."""
        return safe_location(self._url(with_password=False).render_as_string(hide_password=False))

    def _connect_location(self, *, timeout: bool = False) -> str:
        """What the connection uses: with the typed password (never stored); ``timeout`` adds
        libpq's connect_timeout (the test; an open project's location keeps none)."""
        url = self._url(with_password=True)
        if timeout:
            url = url.update_query_dict({"connect_timeout": str(CONNECT_TIMEOUT_S)})
        return url.render_as_string(hide_password=False)

    def _problem(self) -> str | None:
        if self.service.text().strip():
            return None
        if not self.host.text().strip():
            return "Enter the server's host name"
        if not self.database.text().strip():
            return "Enter the database's name"
        return None

    def _update_buttons(self) -> None:
        busy = self._job is not None
        problem = self._problem()
        for button in (self.test_button, self.open_button):
            button.setEnabled(problem is None and not busy)
            button.setToolTip(problem or "")

    def _service_changed(self, text_: str) -> None:
        # a service names the server: the host and port fields then only override it
        named = bool(text_.strip())
        self.host.setEnabled(not named)
        self.port.setEnabled(not named)

    # ---- work in the background ------------------------------------------------------------
    def _say(self, message: str, *, ok: bool | None) -> None:
        self.message.setText(message)
        self.message.setStyleSheet("" if ok is None else (_OK_STYLE if ok else _ERROR_STYLE))

    def _run(self, what: str, work: Any, done: Any) -> None:
        if self._job is not None:
            return
        self._say(f"{what} {self.location()}…", ok=None)
        # an error is an answer here (shown in the dialog), not a bug to re-raise
        self._job = ThreadJob.call(
            work, succeeded=done, errored=self._failed, ended=self._finished, parent=self
        )
        self._update_buttons()

    def busy(self) -> bool:
        return self._job is not None

    def _finished(self) -> None:
        self._job = None
        self._update_buttons()

    def _failed(self, error: BaseException) -> None:
        if isinstance(error, StudioError):
            self._say(_first_line(error), ok=False)
        else:
            self._say(f"Cannot connect to {self.location()}: {_first_line(error)}", ok=False)

    def test_connection(self) -> None:
        """Connect, check that the database holds a studio project, say who signed in."""
        target, shown = self._connect_location(timeout=True), self.location()
        self._run("Connecting to", lambda: connection_summary(target, shown), self._tested)

    def _tested(self, summary: object) -> None:
        self._say(str(summary), ok=True)

    def open_database(self) -> None:
        """OK: open the project in the background; accept once it is open."""
        if self._problem() is not None:
            self._say(str(self._problem()), ok=False)
            return
        target = self._connect_location()
        self._run("Opening", lambda: Project.open(target), self._opened)

    def _opened(self, project: object) -> None:
        assert isinstance(project, Project)
        self.project = project
        if self.remember.isChecked() and self.password.text():
            url = self._url(with_password=False)
            username = secrets.keyring_username(url.username, url.host, url.port, url.database)
            try:
                secrets.set_password(username, self.password.text())
            except Exception as e:  # a locked keyring: the project is open all the same
                self.kept_password_problem = f"the password could not be kept in the keyring: {e}"
        self.password.clear()
        self.accept()

    def reject(self) -> None:
        if self._job is not None:  # a connection attempt under way ends by its timeout
            self._job.cancel()
        super().reject()
