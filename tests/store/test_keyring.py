"""A lab database's password comes from the OS keyring and is never written by the studio.

The server is real and checks the password (a SCRAM rule for one login, added to the test
server's pg_hba.conf); the keyring is the real ``keyring`` package with an in-memory backend
in place of the desktop's secret store (none runs on a headless machine).
"""

from __future__ import annotations

from collections.abc import Iterator

import keyring
import pytest
from keyring.backend import KeyringBackend

from studio.core.errors import ProjectError
from studio.core.schema import bundled_schema_path, load_schema
from studio.store import secrets
from studio.store.project import Project
from tests.pgserver import PgServer

LOGIN = "pwuser"
PASSWORD = "correct horse battery"


class MemoryKeyring(KeyringBackend):
    """A keyring backend that keeps secrets in this process (priority > 0: usable)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    try:
        yield ring
    finally:
        keyring.set_keyring(before)


@pytest.fixture
def password_db(pg_server: PgServer) -> str:
    """A lab database with a login that must give its password (SCRAM)."""
    hba = pg_server.datadir / "pg_hba.conf"
    rule = f"host all {LOGIN} 127.0.0.1/32 scram-sha-256\n"
    if rule not in hba.read_text():
        hba.write_text(rule + hba.read_text())
        pg_server._run(str(pg_server.bindir / "pg_ctl"), "-D", str(pg_server.datadir), "reload")
    url = pg_server.fresh_database("pw")
    with Project.create(url, load_schema(bundled_schema_path())) as admin:
        admin.add_person(LOGIN, "annotator", password=PASSWORD)
    return url.replace("//postgres@", f"//{LOGIN}@")


def test_password_from_the_keyring(password_db: str, memory_keyring: MemoryKeyring) -> None:
    assert secrets.keyring_available()
    with pytest.raises(ProjectError, match="password") as refused:
        Project.open(password_db)  # nothing stored yet: the server says no, clearly
    assert LOGIN in str(refused.value)
    from sqlalchemy.engine import make_url

    url = make_url(password_db)
    username = secrets.keyring_username(url.username, url.host, url.port, url.database)
    assert secrets.set_password(username, PASSWORD)
    with Project.open(password_db) as project:
        assert project.user == LOGIN and project.role() == "annotator"
        assert PASSWORD not in project.location
    assert memory_keyring.store == {(secrets.SERVICE, username): PASSWORD}


def test_a_wrong_password_is_refused_without_showing_it(password_db: str) -> None:
    wrong = password_db.replace(f"//{LOGIN}@", f"//{LOGIN}:not-the-password@")
    with pytest.raises(ProjectError) as refused:
        Project.open(wrong)
    message = str(refused.value)
    assert "password" in message and "not-the-password" not in message
    right = password_db.replace(f"//{LOGIN}@", f"//{LOGIN}:{PASSWORD.replace(' ', '%20')}@")
    with Project.open(right) as project:
        assert project.user == LOGIN
        assert "correct" not in project.location
