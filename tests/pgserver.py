"""A throwaway PostgreSQL server for the tests (issue 17): ``pg_server`` and ``pg_database``.

``pg_server`` (session scope) runs ``initdb`` in a fresh temporary folder, starts the server on a
free port of 127.0.0.1 with its Unix socket in that folder, and stops it (``pg_ctl stop -m fast``)
and removes the folder when the session ends, also after failing tests. Under pytest-xdist each
worker is its own session, so each worker that asks for the fixture starts its own server (a
second or two); workers never share one, so no worker can stop a server another still uses.

PostgreSQL refuses to run as root, and these machines run the tests as root: then every server
command goes through ``runuser -u postgres --`` (Debian's package creates that user) on a folder
that user owns. Run as any other user, the commands run as that user. The server's superuser is
always called ``postgres`` (``initdb -U postgres``), with trust authentication on localhost only.

When PostgreSQL (or psycopg) is not installed the fixtures skip with the reason; under ``CI=true``
they fail instead, because CI runs ``scripts/setup.sh``, which installs it.

Registered for every test by ``pytest_plugins`` in ``tests/conftest.py``.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest

SERVER_USER = "postgres"
SUPERUSER = "postgres"
START_TIMEOUT_S = 60
# settings for a disposable server: durability is not needed, speed and quiet logs are
SERVER_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
    "-c max_connections=200 -c log_min_messages=warning"
)

#: a lab server's settings: durability on (PostgreSQL's defaults)
DURABLE_OPTIONS = "-c max_connections=200 -c log_min_messages=warning"


class PostgresUnavailable(Exception):
    """PostgreSQL cannot be started here; the message says why."""


def find_bindir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``.

    ``$PG_BINDIR`` when set (and then only it); otherwise, in order, ``pg_config --bindir``,
    the newest ``/usr/lib/postgresql/*/bin`` (Debian), then ``initdb`` on the PATH.
    """
    if os.environ.get("PG_BINDIR"):
        chosen = Path(os.environ["PG_BINDIR"])
        if all((chosen / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return chosen
        raise PostgresUnavailable(
            f"$PG_BINDIR is {chosen}, which does not hold initdb, pg_ctl and postgres"
        )
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=30
            )
            candidates.append(Path(out.stdout.strip()))
    debian = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in Path(p).parent.name.split(".")],
        reverse=True,
    )
    candidates.extend(Path(p) for p in debian)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for bindir in candidates:
        if all((bindir / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return bindir
    raise PostgresUnavailable(
        "PostgreSQL's server programs (initdb, pg_ctl, postgres) were not found "
        "(looked at $PG_BINDIR, `pg_config --bindir`, /usr/lib/postgresql/*/bin and the PATH); "
        "install Debian's `postgresql` package (scripts/setup.sh does)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running throwaway server. ``url(db)`` gives a SQLAlchemy URL for psycopg 3."""

    bindir: Path
    root: Path
    port: int
    host: str = "127.0.0.1"
    user: str = SUPERUSER
    #: server settings: the fast, non-durable ones of a test server unless ``durable``
    options: str = SERVER_OPTIONS
    _as_server_user: list[str] = field(default_factory=list)
    _names: Iterator[int] = field(default_factory=itertools.count)

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root

    @property
    def logfile(self) -> Path:
        return self.root / "server.log"

    def url(self, dbname: str = "postgres") -> str:
        """``postgresql+psycopg://postgres@127.0.0.1:PORT/dbname`` (TCP, trust auth)."""
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{dbname}"

    def conninfo(self, dbname: str = "postgres") -> str:
        """The same place as a libpq connection string, for psycopg used directly."""
        return f"host={self.host} port={self.port} user={self.user} dbname={dbname}"

    def create_database(self, name: str) -> str:
        """Creates the database ``name`` (an error if it exists); returns its ``url``."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.conninfo(), autocommit=True) as con:
            con.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drops ``name``, closing other sessions still connected to it."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.conninfo(), autocommit=True) as con:
            con.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def fresh_database(self, prefix: str = "test") -> str:
        """Creates a database with a name not used before in this session; returns its URL."""
        return self.create_database(f"{prefix}_{os.getpid()}_{next(self._names)}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    # -- lifecycle -------------------------------------------------------------------------

    def _run(
        self, *args: str, timeout: float = START_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as_server_user, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def initdb(self) -> None:
        done = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.datadir),
            "-U",
            self.user,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        if done.returncode != 0:
            raise PostgresUnavailable(f"initdb failed in {self.datadir}:\n{done.stderr.strip()}")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.socket_dir} -c listen_addresses={self.host} "
        done = self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.datadir),
            "-o",
            options + self.options,
            "-l",
            str(self.logfile),
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "start",
        )
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"pg_ctl start failed on port {self.port}:\n{done.stderr.strip()}\n"
                f"server log:\n{self.log_tail()}"
            )

    def stop(self) -> None:
        """Fast shutdown (rolls back open transactions, disconnects clients); waits for it."""
        if (self.datadir / "postmaster.pid").exists():
            self._run(
                str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "stop"
            )

    def restart(self, mode: str = "immediate") -> None:
        """Stop (``immediate``: as a crash would, no shutdown checkpoint; or ``fast``) and
        start again on the same port: connected clients lose their sessions."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w", "stop")
        self.start()


def _server_user_prefix(root: Path) -> list[str]:
    """``runuser -u postgres --`` when running as root (and ``root`` handed to that user)."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        raise PostgresUnavailable("running as root, and `runuser` (util-linux) is not installed")
    try:
        account = pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise PostgresUnavailable(
            f"running as root, and there is no `{SERVER_USER}` user to run the server as "
            "(Debian's postgresql package creates it)"
        ) from None
    os.chown(root, account.pw_uid, account.pw_gid)
    prefix = [runuser, "-u", SERVER_USER, "--"]
    check = subprocess.run([*prefix, "test", "-w", str(root)], capture_output=True, timeout=30)
    if check.returncode != 0:
        raise PostgresUnavailable(
            f"the `{SERVER_USER}` user cannot write to {root} (a parent folder is private?); "
            "point TMPDIR at a folder every user can reach, such as /tmp"
        )
    return prefix


@contextlib.contextmanager
def running_server(*, durable: bool = False) -> Iterator[PgServer]:
    """Starts a throwaway server; stops it and removes its folder on the way out. ``durable``:
    PostgreSQL's own defaults (fsync, synchronous commit), as a lab's server runs — for
    benchmarks of latency and of what survives a crash."""
    import psycopg  # noqa: F401  (the client must be there too; fail here, not in a test)

    bindir = find_bindir()
    root = Path(tempfile.mkdtemp(prefix="studio-pg-"))
    server: PgServer | None = None
    try:
        prefix = _server_user_prefix(root)
        server = PgServer(
            bindir=bindir,
            root=root,
            port=_free_port(),
            options=DURABLE_OPTIONS if durable else SERVER_OPTIONS,
            _as_server_user=prefix,
        )
        server.initdb()
        # the port was free a moment ago; another process may take it before the server binds
        for attempt in range(3):
            try:
                server.start()
                break
            except PostgresUnavailable:
                if attempt == 2:
                    raise
                server.port = _free_port()
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _unavailable(reason: str) -> NoReturn:
    """Skips the test, or fails it under CI, where set-up installs PostgreSQL."""
    message = f"PostgreSQL test server unavailable: {reason}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (CI=true: scripts/setup.sh must install it)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A PostgreSQL server of this test session (per xdist worker); see the module docstring."""
    cm = running_server()
    problem = None
    try:
        server = cm.__enter__()
    except ImportError as exc:
        problem = f"the psycopg client is not installed ({exc})"
    except PostgresUnavailable as exc:
        problem = str(exc)
    if problem is not None:
        _unavailable(problem)
    try:
        yield server
    finally:
        cm.__exit__(None, None, None)


@pytest.fixture
def pg_database(pg_server: PgServer) -> Iterator[str]:
    """The URL of a new, empty database on ``pg_server``, dropped after the test."""
    url = pg_server.fresh_database()
    yield url
    pg_server.drop_database(url.rsplit("/", 1)[1])
