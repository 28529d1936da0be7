"""`threadloom sources --forget DIR`: a folder remembered from --source (a typo, say) is no longer
looked in, and nothing read from it leaves the archive."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import SID, home_env, make_archive, run


def test_a_remembered_source_folder_can_be_forgotten_keeping_what_was_read(tmp_path: Path) -> None:
    env = home_env(tmp_path)
    db = str(tmp_path / "t.db")
    logs = make_archive(tmp_path / "logs")
    typo = tmp_path / "nope"
    done = run(
        "ingest", "--db", db, "--only", "--source", str(logs), "--source", str(typo), "-q", env_extra=env
    )
    assert done.returncode == 0, done.stderr
    assert f"`threadloom sources --forget {typo}` stops that" in done.stderr
    listed = json.loads(run("sources", "--db", db, "--json", env_extra=env).stdout)["remembered_sources"]
    assert listed == sorted([str(logs.resolve()), str(typo)])
    assert (
        f"`threadloom sources --forget {typo}` if mistyped"
        in run("sources", "--db", db, env_extra=env).stdout
    )

    gone = run("sources", "--db", db, "--forget", str(typo), "--forget", str(logs), env_extra=env)
    assert gone.returncode == 0, gone.stderr
    assert f"forgotten: {typo} (not looked in again" in gone.stdout
    listed = json.loads(run("sources", "--db", db, "--json", env_extra=env).stdout)["remembered_sources"]
    assert listed == []
    again = run("ingest", "--db", db, env_extra=env)
    assert again.returncode == 0 and str(typo) not in again.stdout + again.stderr
    assert "`threadloom sources --forget DIR` stops looking in one given by mistake" in again.stdout
    # what was read from a forgotten folder stays, its files not taken for gone
    sessions = json.loads(run("sessions", "--db", db, "--json", env_extra=env).stdout)
    assert [s["id"] for s in sessions] == [SID]
    assert "disappeared" not in again.stdout

    # a folder not remembered, or no database at all: said, nothing made
    code = run("sources", "--db", db, "--forget", str(typo), env_extra=env)
    assert code.returncode == 1 and "is not a folder remembered from --source" in code.stderr
    none = tmp_path / "none" / "t.db"
    code = run("sources", "--db", str(none), "--forget", str(typo), env_extra=env)
    assert code.returncode == 1 and not none.parent.exists()


def test_a_source_folder_whose_name_is_not_utf_8_is_read_listed_and_forgotten(tmp_path: Path, capsys) -> None:
    """A folder named in bytes that are not UTF-8 (a drive from another system) given as --source:
    the ingest stopped on it at once, remembering it (a text no database column holds)."""
    import os

    from threadloom.core.cli import main

    weird = Path(os.fsdecode(bytes(tmp_path) + b"/we\xffird"))
    logs = make_archive(weird)
    db = str(tmp_path / "t.db")
    for _ in range(2):  # remembered, then read again from what was remembered: unchanged
        assert main(["ingest", "--db", db, "--only", "--source", str(logs), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["files_skipped"] == 1
    assert main(["sources", "--db", db, "--json"]) == 0
    shown = str(logs).replace("\udcff", "\\xff")
    assert json.loads(capsys.readouterr().out)["remembered_sources"] == [shown]
    assert main(["sources", "--db", db, "--forget", str(logs)]) == 0
    assert f"forgotten: {shown} (not looked in again" in capsys.readouterr().out
    assert main(["sources", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["remembered_sources"] == []
    assert main(["ingest", "--db", db, "--only", "--source", str(logs), "-q"]) == 0
    assert main(["sources", "--db", db, "--forget", shown]) == 0  # as `sources` shows it
    assert f"forgotten: {shown} (not looked in again" in capsys.readouterr().out


def test_a_remembered_loop_of_links_is_forgotten_as_sources_names_it(tmp_path: Path, capsys) -> None:
    """A --source that is a loop of symbolic links is remembered as given; forgetting it followed
    the links again and stopped on the loop with a traceback."""
    from threadloom.core.cli import main

    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    db = str(tmp_path / "t.db")
    main(["ingest", "--db", db, "--only", "--source", str(loop), "-q"])
    capsys.readouterr()
    assert main(["sources", "--db", db, "--forget", str(loop)]) == 0
    assert f"forgotten: {loop}" in capsys.readouterr().out
