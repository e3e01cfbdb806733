"""The CLI's one error path, through a real subprocess: a problem with what a person gave
is one line ``analogy-studio: error: …`` and exit 2; a bug is one line saying so and where
its traceback was saved, exit 1; ``--debug`` adds the traceback."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from studio.cli import EXIT_BUG, EXIT_USER_ERROR
from tests.pgserver import PgServer


def studio(*args: str, env_dir: Path, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m studio ARGS`` (or ``python -c CODE ARGS``) with its own XDG folders."""
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "studio", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=own_env(env_dir), timeout=120)


def own_env(env_dir: Path) -> dict[str, str]:
    """The environment with the studio's folders (settings, caches, crash logs) in ``env_dir``."""
    return {
        **os.environ,
        "XDG_CACHE_HOME": str(env_dir / "cache"),
        "XDG_DATA_HOME": str(env_dir / "data"),
        "XDG_CONFIG_HOME": str(env_dir / "config"),
        "XDG_STATE_HOME": str(env_dir / "state"),
        "ANALOGY_STUDIO_SETTINGS": str(env_dir / "settings.ini"),
        "ANALOGY_STUDIO_LOG_DIR": str(env_dir / "log"),
        "QT_QPA_PLATFORM": "offscreen",
    }


@pytest.fixture
def deep_schema(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text("[" * 5000 + "]" * 5000)
    return path


def test_a_bad_input_is_one_line_and_exit_2(deep_schema: Path, tmp_path: Path) -> None:
    r = studio("init", str(tmp_path / "p.studio"), "--schema", str(deep_schema), env_dir=tmp_path)
    assert r.returncode == EXIT_USER_ERROR
    assert r.stderr.splitlines() == [
        f"analogy-studio: error: {deep_schema}: at $: nested more than 64 levels deep "
        "(line 1, column 65)"
    ]
    assert not (tmp_path / "p.studio").exists()


def test_debug_shows_the_traceback_too(deep_schema: Path, tmp_path: Path) -> None:
    # a global flag, accepted after the subcommand as well
    r = studio(
        "init", str(tmp_path / "p.studio"), "--schema", str(deep_schema), "--debug",
        env_dir=tmp_path,
    )  # fmt: skip
    assert r.returncode == EXIT_USER_ERROR
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert "studio.core.errors.SchemaError" in r.stderr
    assert r.stderr.splitlines()[-1].startswith("analogy-studio: error: ")


def test_an_os_error_naming_a_file_is_a_user_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    r = studio("init", str(blocker / "p.studio"), env_dir=tmp_path)
    assert r.returncode == EXIT_USER_ERROR
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"analogy-studio: error: {blocker}")


# a bug planted in a real command: the real main, parser and crash log around it
BUG = """
import sys
import studio.cli as cli
def cmd_init(args):
    return 1 // 0
cli.cmd_init = cmd_init
raise SystemExit(cli.main(sys.argv[1:]))
"""


def test_a_bug_is_one_line_exit_1_and_a_saved_traceback(tmp_path: Path) -> None:
    r = studio("init", str(tmp_path / "p.studio"), env_dir=tmp_path, code=BUG)
    assert r.returncode == EXIT_BUG
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith(
        "analogy-studio: internal error (a bug in Analogy Studio, please report it): "
        "ZeroDivisionError: integer division or modulo by zero; traceback saved to "
    )
    log = Path(lines[0].rsplit("traceback saved to ", 1)[1])
    assert log.parent == tmp_path / "log"
    text = log.read_text()
    assert "argv: ['init'" in text and "ZeroDivisionError" in text and "Traceback" in text


def test_a_bug_with_debug_prints_its_traceback(tmp_path: Path) -> None:
    r = studio("--debug", "init", str(tmp_path / "p.studio"), env_dir=tmp_path, code=BUG)
    assert r.returncode == EXIT_BUG
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert "in cmd_init" in r.stderr and "ZeroDivisionError" in r.stderr
    assert r.stderr.splitlines()[-1].startswith("analogy-studio: internal error (a bug")


def test_a_zero_row_import_exits_2_and_leaves_the_project_as_it_was(tmp_path: Path) -> None:
    project = tmp_path / "p.studio"
    assert studio("-q", "init", str(project), env_dir=tmp_path).returncode == 0
    before = hashlib.sha256(project.read_bytes()).hexdigest()
    empty = tmp_path / "empty.csv"
    empty.write_text("concept,value,codepoint,font\n")
    r = studio("import-annotations", str(project), str(empty), env_dir=tmp_path)
    assert r.returncode == EXIT_USER_ERROR
    assert r.stderr == f"analogy-studio: error: {empty}: holds no tags; nothing was imported\n"
    assert hashlib.sha256(project.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("command", [["info"], ["needs"]])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, command: list[str]) -> None:
    """Issue 25: ``analogy-studio … | head`` — the reader gone before the output is written
    (or flushed at exit) ends with SIGPIPE's status and no traceback or "internal error"."""
    project = tmp_path / "p.studio"
    assert studio("-q", "init", str(project), env_dir=tmp_path).returncode == 0
    read, write = os.pipe()
    os.close(read)  # nobody will read: every write gets EPIPE
    env = own_env(tmp_path)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "studio", *command, str(project)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert "Exception ignored" not in done.stderr and "BrokenPipe" not in done.stderr


def test_an_argument_that_is_not_utf8_is_named_and_exits_2(tmp_path: Path) -> None:
    """Issue 25: bytes that are not UTF-8 (a Latin-1 terminal, say) in --full-name, --note or
    a path once reached the database encoder as an internal error."""
    project = tmp_path / "p.studio"
    assert studio("-q", "init", str(project), env_dir=tmp_path).returncode == 0
    bad = os.fsdecode(b"Jos\xe9")  # as Python hands it over: a lone surrogate
    cmd = [sys.executable, "-m", "studio", "lab", "add-person", str(project), "jose"]
    done = subprocess.run(
        [*cmd, "--role", "annotator", "--full-name", bad],
        capture_output=True,
        env=own_env(tmp_path),
        timeout=120,
    )
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == EXIT_USER_ERROR, err
    assert "the value of --full-name is not valid UTF-8: Jos\\udce9" in err
    assert "internal error" not in err


def test_a_crafted_tag_cannot_send_the_folder_export_outside_its_output(tmp_path: Path) -> None:
    """Issue 25: a project file whose tags were written around the studio (a concept
    ``../../../escape_rel``) — the UA-folder export refuses it, exit 2, and writes nothing."""
    import sqlite3

    project = tmp_path / "p.studio"
    assert studio("-q", "init", str(project), env_dir=tmp_path).returncode == 0
    assert studio("-q", "tag", str(project), "closure=circle", "U+25CB@symbola",
                  env_dir=tmp_path).returncode == 0  # fmt: skip
    with sqlite3.connect(project) as db:
        db.execute(
            "INSERT INTO tags (glyph_id, concept, value) SELECT id, '../../../escape_rel', 'x'"
            " FROM glyphs LIMIT 1"
        )
    out = tmp_path / "a" / "b" / "out"
    done = studio("export-annotations", str(project), str(out), env_dir=tmp_path)
    assert done.returncode == EXIT_USER_ERROR, done.stderr
    assert "cannot name a folder of UA's layout" in done.stderr
    assert "../../../escape_rel=x" in done.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "escape_rel-x").exists()


def test_a_right_the_lab_server_refuses_is_one_line_and_exit_2(
    pg_server: PgServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25, point 8: an annotator's import on a lab database was an internal error
    (exit 1, a crash log) where the server had only said no. Now one line, exit 2."""
    from studio.cli import main

    url = pg_server.fresh_database("clirefuse")
    assert main(["-q", "init", url]) == 0
    assert main(["lab", "add-person", url, "ann", "--role", "annotator"]) == 0
    csv = tmp_path / "a.csv"
    csv.write_text("concept,value,codepoint,font\nclosure,circle,25CB,symbola\n")
    capsys.readouterr()
    code = main(["import-annotations", url.replace("//postgres@", "//ann@"), str(csv)])
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR, err
    assert err.startswith("analogy-studio: error: the lab database refused this: your role")
    assert "internal error" not in err and len(err.strip().splitlines()) == 1
