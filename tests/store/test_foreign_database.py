"""threadloom's databases only: every command refuses a SQLite file that is not threadloom's (another
app's, an agent's own) in one line and leaves it byte for byte as it was; threadloom's own carry
their mark (PRAGMA application_id), the ones written before the mark get it on their next write."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.cli import main
from threadloom.core.store import db

from tests.support import make_archive

COMMANDS = [
    ["sessions"],
    ["sessions", "--json"],
    ["stats"],
    ["show", "abc"],
    ["search", "anything"],
    ["signals"],
    ["verify"],
    ["sources"],
    ["export", "abc"],
    ["restore", "abc", "--to", "{tmp}/out"],
    ["index"],
    ["ingest", "--only"],
    ["ingest", "--rebuild", "--only"],
]


def foreign(path: Path, *, app_id: int = 0, version: int = 7) -> bytes:
    """Another application's database (a VS Code state.vscdb shape), in rollback-journal mode."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("INSERT INTO ItemTable VALUES ('composer.composerData', '{}')")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.commit()
    conn.close()
    os.chmod(path, 0o644)
    return path.read_bytes()


@pytest.mark.parametrize("app_id", [0, 0x0F0F0F0F])
def test_every_command_refuses_another_application_s_database_and_leaves_it_as_it_was(
    tmp_path, capsys, monkeypatch, app_id
):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / ".claude"))
    path = tmp_path / "state.vscdb"
    before = foreign(path, app_id=app_id)
    for command in COMMANDS:
        args = [a.replace("{tmp}", str(tmp_path)) for a in command]
        code = main([*args, "--db", str(path)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code != 0, command
        assert len(err) == 1 and "is not a threadloom database" in err[0], (command, err)
        assert path.read_bytes() == before, command
        assert oct(path.stat().st_mode & 0o777) == "0o644", command
        assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists(), command
    assert not list(tmp_path.glob("state.vscdb.*.bak"))


def test_a_text_file_given_as_the_database_is_refused_and_left_as_it_was(tmp_path, capsys, monkeypatch):
    """A note given as --db was called damaged, and the fix it named (`ingest --rebuild`) moved the
    note aside and wrote a database under its name."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / ".claude"))
    path = tmp_path / "notes.md"
    path.write_text("# My notes\n\nsome text here, caf\u00e9\n")
    before = path.read_bytes()
    for command in COMMANDS:
        args = [a.replace("{tmp}", str(tmp_path)) for a in command]
        code = main([*args, "--db", str(path)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code != 0, command
        assert len(err) == 1 and "is not a threadloom database (a text file: '# My notes" in err[0], (
            command,
            err,
        )
        assert "--rebuild" not in err[0] and path.read_bytes() == before, command
    assert not list(tmp_path.glob("notes.md.*.bak"))


def test_threadloom_s_databases_carry_the_mark_and_older_ones_get_it(tmp_path):
    path = tmp_path / "t.db"
    conn = db.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == db.APPLICATION_ID
    conn.execute("PRAGMA application_id = 0")  # as a threadloom from before the mark wrote it
    conn.close()
    reader = db.open_for_reading(path)  # read as it is
    assert reader.execute("PRAGMA application_id").fetchone()[0] == 0
    reader.close()
    conn = db.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == db.APPLICATION_ID
    conn.close()
    make_archive(tmp_path)
    assert main(["ingest", "--db", str(path), "--only", "--source", str(tmp_path / "projects"), "-q"]) == 0
