"""`ingest --rebuild` never destroys: the new database is built beside the old one and put in its
place only once complete; the old one is kept under a name no other rebuild takes; the folders it
remembered are read again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from threadloom.core import cli
from threadloom.core.cli import main

from tests.support import SID, make_archive


@pytest.fixture(autouse=True)
def no_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default locations hold nothing: only the --source folders count."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))


def sessions(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT id FROM agent_sessions ORDER BY id")]
    finally:
        conn.close()


def backups(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith(".bak"))


def test_rebuilds_in_the_same_second_keep_every_old_database(tmp_path, capsys):
    projects = make_archive(tmp_path)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(projects), "-q"]) == 0
    said = []
    for _ in range(3):
        capsys.readouterr()
        # no --source: the folder the database remembers is read again
        assert main(["ingest", "--db", str(database), "--rebuild", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        said.append(out["previous_database"])
        assert out["sessions_total"] == 1 and sessions(database) == [SID]
    kept = backups(tmp_path)
    assert len(kept) == 3 and sorted(said) == [str(p) for p in kept]
    for old in kept:
        assert sessions(old) == [SID]  # each a whole database
    leftovers = [p.name for p in tmp_path.iterdir() if "rebuilding" in p.name or p.name.endswith(".lock.bak")]
    assert leftovers == []


def test_an_interrupted_rebuild_leaves_the_old_database_as_it_was(tmp_path, monkeypatch, capsys):
    projects = make_archive(tmp_path)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(projects), "-q"]) == 0
    before = database.read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    from threadloom.core.cli import ingest as ingest_command

    monkeypatch.setattr("threadloom.core.ingest.pipeline.run_ingest", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ingest_command.cmd_ingest(
            cli.build_parser().parse_args(["ingest", "--db", str(database), "--rebuild", "-q"])
        )
    assert database.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t.db")) in (
        ["t.db", "t.db.lock"],
        ["t.db"],
    )


def test_rebuild_says_where_the_old_database_went(tmp_path, capsys):
    projects = make_archive(tmp_path)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(projects), "-q"]) == 0
    capsys.readouterr()
    assert main(["ingest", "--db", str(database), "--rebuild", "-q"]) == 0
    [kept] = backups(tmp_path)
    assert f"previous database kept as {kept}" in capsys.readouterr().err
