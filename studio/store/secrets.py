"""Database passwords in the operating system's keyring, never in a studio file.

The studio stores no password anywhere: not in recent files, settings, titles or logs. When the
optional ``keyring`` package is installed and has a usable backend (the Secret Service on Linux
desktops, the macOS Keychain, Windows' Credential Locker), a lab database's password is kept
there under the service ``analogy-studio`` and the username ``user@host:port/dbname``.
Otherwise libpq finds it itself (``~/.pgpass``, ``PGPASSFILE``, a service file, ``PGPASSWORD``).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

SERVICE = "analogy-studio"
DEFAULT_PORT = 5432

log = logging.getLogger(__name__)


def keyring_username(user: str | None, host: str | None, port: int | None, db: str | None) -> str:
    """The keyring entry's username for a database: ``user@host:port/db`` (libpq's defaults
    filled in: port 5432, host ``localhost``)."""
    return f"{user or ''}@{host or 'localhost'}:{port or DEFAULT_PORT}/{db or ''}"


def _usable_keyring() -> Any | None:
    """The ``keyring`` module when it is installed and its backend can store secrets, else None
    (the "fail" and "null" backends, used where no keyring service runs, count as unusable)."""
    try:
        keyring = importlib.import_module("keyring")
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
        priority = float(getattr(backend, "priority", 0))
    except Exception:  # a broken backend (no D-Bus session, locked store) is no keyring
        return None
    if priority <= 0:
        return None
    return keyring


def keyring_available() -> bool:
    """Whether passwords can be kept in the OS keyring on this machine."""
    return _usable_keyring() is not None


def get_password(username: str) -> str | None:
    """The password stored for ``username`` (see :func:`keyring_username`), or None when there
    is none or no usable keyring (then libpq's own password sources apply)."""
    keyring = _usable_keyring()
    if keyring is None:
        return None
    try:
        value = keyring.get_password(SERVICE, username)
    except Exception as e:  # a locked or unreachable keyring: fall back to libpq's sources
        log.warning("the keyring could not be read (%s); using libpq's password sources", e)
        return None
    return str(value) if value is not None else None


def set_password(username: str, password: str) -> bool:
    """Stores ``password`` for ``username`` in the OS keyring; False when no keyring is usable
    (the caller then tells the person to use ~/.pgpass or a service file)."""
    keyring = _usable_keyring()
    if keyring is None:
        return False
    keyring.set_password(SERVICE, username, password)
    return True


def delete_password(username: str) -> None:
    """Forgets the stored password for ``username`` (nothing happens if there is none)."""
    keyring = _usable_keyring()
    if keyring is None:
        return
    try:
        keyring.delete_password(SERVICE, username)
    except Exception:  # keyring.errors.PasswordDeleteError: nothing stored
        return
