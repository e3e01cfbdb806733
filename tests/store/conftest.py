"""The store's tests run against both databases: ``project_location`` is a new SQLite file's
path or a new PostgreSQL database's URL (on the session's throwaway server of
:mod:`tests.pgserver`; skipped where PostgreSQL is not installed, failed under CI).

A test about the file itself (damage, locks, WAL, backups) asks for SQLite only with
``@pytest.mark.parametrize("project_location", ["sqlite"], indirect=True)``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def project_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a new project may be created: a file path, or the URL of an empty database."""
    if request.param == "sqlite":
        yield str(tmp_path / "p.studio")
        return
    server = request.getfixturevalue("pg_server")
    url = server.fresh_database()
    yield url
    server.drop_database(url.rsplit("/", 1)[1])
