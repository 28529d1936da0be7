"""`ingest --rebuild` never destroys: the new database is built beside the old one and put in its
place only once complete; the old one is kept under a name no other rebuild takes; the folders it
remembered are read again."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from threadloom.core import cli
from threadloom.core.cli import main
from threadloom.core.store import db

from tests.builders.claude import Transcript, tool_use
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


# ---------------------------------------------------------------------- what only the archive holds


def sessions_on_disk(root: Path, count: int) -> list[Path]:
    """`count` sessions of twelve records of about 3 KB (each its own pages), one file each: a
    record in the middle of each says whose it is (`WHOSE{i}`), in no other record."""
    paths = []
    for i in range(count):
        sid = f"dddddddd-1111-4222-8333-{i:012d}"
        t = Transcript(
            tmp := root / "projects" / f"-srv-p{i % 2}" / f"{sid}.jsonl", sid, cwd=f"/srv/p{i % 2}"
        )
        for k in range(6):
            t.user(f"step {k} of session {i}: " + (f"WHOSE{i} " if k == 3 else "") + "lorem ipsum " * 250)
            t.assistant(f"done {k}", tools=[tool_use(f"t{k}", "Bash", command="make " + "x" * 2500)])
        t.write()
        paths.append(tmp)
    return paths


def stored(path: Path) -> dict[str, object]:
    """What the archive at `path` holds and made of it: the records with their places, the sessions
    (but the time each was last written), turns, calls, usage, versions and sync state."""
    conn = sqlite3.connect(path)
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(agent_sessions)") if r[1] != "updated_at"]
        tables = {
            "entries": "SELECT id, source_file_id, session_id, seq, turn_id, dup_of, raw FROM entries",
            "sessions": f"SELECT {', '.join(columns)} FROM agent_sessions",
            "turns": "SELECT * FROM agent_turns",
            "calls": "SELECT * FROM agent_tool_calls",
            "usage": "SELECT * FROM agent_usage",
            "versions": "SELECT * FROM source_versions",
            "pulled": "SELECT * FROM sync_pulled",
            "sync": "SELECT * FROM ledger_meta WHERE key LIKE 'sync:%' AND key != 'sync:archive'",
        }
        return {name: sorted(map(repr, conn.execute(sql))) for name, sql in tables.items()}
    finally:
        conn.close()


def records_of(path: Path) -> dict[str, set[bytes]]:
    conn = sqlite3.connect(path)
    try:
        out: dict[str, set[bytes]] = {}
        for sid, raw in conn.execute("SELECT session_id, raw FROM entries WHERE session_id IS NOT NULL"):
            out.setdefault(sid, set()).add(bytes(raw))
        return out
    finally:
        conn.close()


def test_a_rebuild_keeps_what_only_the_archive_holds(tmp_path, capsys):
    """Claude Code deletes its logs after 30 days: the archive then holds them alone. A rebuild
    read the agents' files only, and left every such session (and every version an agent's rewrite
    superseded) behind in the old database, moved aside where nothing shows it."""
    kept, rewritten, deleted = sessions_on_disk(tmp_path, 3)
    database = tmp_path / "t.db"
    ingest = ["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]
    assert main(ingest) == 0
    lines = rewritten.read_bytes().splitlines(keepends=True)
    rewritten.write_bytes(b"".join(lines[:3] + [lines[3].replace(b"make", b"MAKE")] + lines[4:]))
    assert main(ingest) == 0  # the first text is kept as a version
    deleted.unlink()
    assert main(ingest) == 0
    conn = sqlite3.connect(database)
    pulled = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(kept),)).fetchone()[0]
    with conn:  # the sync state describes the records: carried with them
        conn.execute(
            "INSERT INTO sync_pulled (hub, hub_source_id, source_file_id, machine, who, generation, items, "
            "end_offset, digest, redacted) VALUES ('hub', 7, ?, 'laptop', NULL, 1, 12, 100, 'd', 0)",
            (pulled,),
        )
        conn.execute("INSERT INTO ledger_meta (key, value) VALUES ('sync:url', 'postgresql:///hub')")
        conn.execute("INSERT INTO ledger_meta (key, value) VALUES ('sync:cursor:h1', '42')")
    conn.close()
    before = stored(database)
    assert len(before["versions"]) == 1 and len(before["pulled"]) == 1 and len(before["sync"]) == 2
    capsys.readouterr()

    assert main(["ingest", "--db", str(database), "--rebuild", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sessions_total"] == 3
    assert out["carried"] == {
        "files": 4,  # the three logs and the version
        "records": 12 * 3 + 1,  # a version keeps the records the rewrite took back
        "gone_from_disk": 1,
        "read_again": 0,  # their records whole: nothing to read again
        "damaged": False,
        "unreadable_rows": 0,
        "pulled_again": 0,
        "notes": [],
    }
    assert stored(database) == before  # the same records, sessions, turns, calls and usage
    [old] = backups(tmp_path)
    assert stored(old) == before

    capsys.readouterr()  # said so, when not --json
    assert main(["ingest", "--db", str(database), "--rebuild"]) == 0
    assert "carried 4 stored files (37 records) from the old database, 1 file no agent keeps any more" in (
        capsys.readouterr().err
    )
    assert stored(database) == before


def test_a_damaged_database_gives_what_it_can_read_and_the_disk_the_rest(tmp_path, capsys):
    """The rebuild the damage message names: the records carried as far as the old database lets
    them be read, checked against their digests; a file still on disk whose records are not whole
    read again from there. The sync's settings are carried, not its positions (its state is not)."""
    paths = sessions_on_disk(tmp_path, 4)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]) == 0
    original = records_of(database)
    sids = sorted(original)
    for path in paths[:3]:
        path.unlink()
    conn = sqlite3.connect(database)
    with conn:
        conn.execute("INSERT INTO ledger_meta (key, value) VALUES ('sync:machine', 'beta')")
        conn.execute("INSERT INTO ledger_meta (key, value) VALUES ('sync:cursor:h1', '42')")
    pages = {r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'entries'")}
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(database.read_bytes())
    size = db.PAGE_SIZE
    hit = [p for p in pages if b"WHOSE0 " in data[(p - 1) * size : p * size]]
    assert hit  # a page of session 0's records turned to noise
    for page in hit:
        data[(page - 1) * size : page * size] = random.Random(page).randbytes(size)
    database.write_bytes(bytes(data))
    capsys.readouterr()

    assert main(["ingest", "--db", str(database), "--rebuild", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    carried = out["carried"]
    assert carried["damaged"] and carried["unreadable_rows"] >= 1 and carried["gone_from_disk"] == 3
    now = records_of(database)
    assert now[sids[3]] == original[sids[3]]  # read from its file
    assert now[sids[1]] == original[sids[1]] and now[sids[2]] == original[sids[2]]  # carried whole
    assert now.get(sids[0], set()) < original[sids[0]]  # what could be read of it, nothing else
    assert b"WHOSE0" not in b"".join(now.get(sids[0], set()))
    conn = sqlite3.connect(database)
    assert conn.execute(
        "SELECT key, value FROM ledger_meta WHERE key LIKE 'sync:%' AND key != 'sync:archive'"
    ).fetchall() == [("sync:machine", "beta")]
    conn.close()

    capsys.readouterr()
    database.unlink()
    [old] = backups(tmp_path)
    shutil.copyfile(old, database)
    assert main(["ingest", "--db", str(database), "--rebuild"]) == 0
    assert "the old database is damaged" in capsys.readouterr().err


def test_a_record_changed_where_sqlite_cannot_see_it_is_not_carried_over_its_file(tmp_path, capsys):
    """Bytes overwritten inside a page pass SQLite's own check: each record's stored digest tells
    them, and its file, still on disk, is read from there rather than the archive's changed copy."""
    paths = sessions_on_disk(tmp_path, 2)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]) == 0
    original = records_of(database)
    paths[0].unlink()
    conn = sqlite3.connect(database)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = database.read_bytes()
    assert data.count(b"WHOSE1 ") >= 1
    database.write_bytes(data.replace(b"WHOSE1 ", b"WHOZE1 "))
    assert sqlite3.connect(database).execute("PRAGMA quick_check").fetchone() == ("ok",)
    capsys.readouterr()

    assert main(["ingest", "--db", str(database), "--rebuild", "--json"]) == 0
    carried = json.loads(capsys.readouterr().out)["carried"]
    assert carried["damaged"] and carried["gone_from_disk"] == 1
    assert records_of(database) == original  # the gone one carried, the changed one read from its file


def test_a_rebuild_mends_an_archive_that_lacks_records_of_a_file_still_on_disk(tmp_path, capsys):
    """The files still on disk are read again whole and compared with what is stored: a rebuild
    is what the damage message names to mend an archive, and carried rows must not stop it."""
    sessions_on_disk(tmp_path, 2)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]) == 0
    original = records_of(database)
    conn = sqlite3.connect(database)
    with conn:
        lost = conn.execute(
            "DELETE FROM entries WHERE id IN (SELECT id FROM entries ORDER BY id LIMIT 5 OFFSET 14)"
        )
        assert lost.rowcount == 5
    conn.close()
    assert main(["ingest", "--db", str(database), "--rebuild", "-q"]) == 0
    assert records_of(database) == original
    conn = sqlite3.connect(database)  # mended, not rewritten: no version of the file was made
    assert conn.execute("SELECT count(*) FROM source_files WHERE kind = 'version'").fetchone() == (0,)
    conn.close()


def test_a_rewrite_after_a_damaged_rebuild_is_kept_as_the_next_version(tmp_path, capsys):
    """A damaged database's versions are carried with their links, a version whose records all
    live on in its file too (it has none of its own): the next rewrite of the file is its second
    version (numbered from the links, it had taken the first one's name again)."""
    [path] = sessions_on_disk(tmp_path, 1)
    database = tmp_path / "t.db"
    ingest = ["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]
    assert main(ingest) == 0
    lines = path.read_bytes().splitlines(keepends=True)  # a line put in the middle: a first version
    summary = b'{"type":"summary","summary":"halfway","leafUuid":"none"}\n'
    path.write_bytes(b"".join(lines[:5] + [summary] + lines[5:]))  # whose records all live on
    assert main(ingest) == 0
    conn = sqlite3.connect(database)
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'ix_episodes_started'").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(database.read_bytes())  # an index page's header spoilt: SQLite's check finds it
    data[(page - 1) * db.PAGE_SIZE] = 0x77
    database.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["ingest", "--db", str(database), "--rebuild", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["carried"]["damaged"]
    path.write_bytes(path.read_bytes().replace(b"done 5", b"DONE 5"))
    assert main(ingest) == 0
    conn = sqlite3.connect(database)
    versions = conn.execute("SELECT count(*) FROM source_versions").fetchone()[0]
    errors = conn.execute("SELECT count(*) FROM source_files WHERE status = 'error'").fetchone()[0]
    conn.close()
    assert (versions, errors) == (2, 0)


def test_a_first_load_that_died_is_not_carried_and_its_marker_goes_with_it(tmp_path, capsys):
    """A first load writes without a journal: one that died leaves a database nothing vouches for,
    which the next open starts afresh. A rebuild carries none of it, and leaves no marker beside
    the new database (which would have started it afresh in turn, losing what was carried)."""
    sessions_on_disk(tmp_path, 2)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]) == 0
    marker = Path(f"{database}{db.FIRST_LOAD_SUFFIX}")
    marker.write_text("999999")
    capsys.readouterr()
    assert main(["ingest", "--db", str(database), "--rebuild"]) == 0
    assert "nothing carried from the old database: it holds a first load that died" in capsys.readouterr().err
    assert not marker.exists()
    capsys.readouterr()
    assert main(["ingest", "--db", str(database), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["files_read"] == 0 and out["sessions_total"] == 2  # not started afresh


SUMMARY = b'{"type":"summary","summary":"halfway","leafUuid":"none"}\n'


def spoil_records(database: Path, where: str, *args: object) -> None:
    """The records `where` says read back other than their digests: a page damaged where SQLite's
    own check does not look."""
    conn = sqlite3.connect(database)
    with conn:
        conn.execute(f"UPDATE entries SET raw = CAST('x' || raw AS BLOB) WHERE {where}", args)
    conn.close()


def put_a_line_in_the_middle(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5] + [SUMMARY] + lines[5:]))


def test_a_file_read_again_to_mend_it_and_also_rewritten_keeps_its_version(tmp_path, capsys):
    """A file whose records are not whole is read again to mend them, and that is no rewrite; but a
    file the agent also rewrote meanwhile (a line put in the middle: the records after it move) is
    one, and its version is kept as any ingest keeps it."""
    [path] = sessions_on_disk(tmp_path, 1)
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]) == 0
    conn = sqlite3.connect(database)
    with conn:  # the file's first two records lost
        conn.execute("DELETE FROM entries WHERE id IN (SELECT id FROM entries ORDER BY byte_offset LIMIT 2)")
    conn.close()
    put_a_line_in_the_middle(path)
    assert main(["ingest", "--db", str(database), "--rebuild", "-q"]) == 0
    conn = sqlite3.connect(database)
    assert conn.execute("SELECT count(*) FROM source_versions").fetchone() == (1,)
    conn.close()


def test_a_version_of_a_file_whose_records_could_not_be_read_keeps_its_link(tmp_path, capsys):
    """A damaged database's file gone from disk, none of whose records could be read, was left out
    while its version was carried: the version lost its link, and once the file came back and was
    rewritten the next version took its name again (the file then failed on every ingest)."""
    [path, _] = sessions_on_disk(tmp_path, 2)
    database = tmp_path / "t.db"
    ingest = ["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]
    assert main(ingest) == 0
    put_a_line_in_the_middle(path)  # a first version, whose records all live on in the file
    assert main(ingest) == 0
    original = records_of(database)
    saved = path.read_bytes()
    path.unlink()
    spoil_records(database, "source_file_id = (SELECT id FROM source_files WHERE path = ?)", str(path))
    capsys.readouterr()
    assert main(["ingest", "--db", str(database), "--rebuild", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["carried"]["damaged"]
    path.write_bytes(saved)  # the file comes back (a drive mounted again), then is rewritten
    assert main(ingest) == 0
    assert records_of(database) == original  # read whole: it was not taken for the file it had been
    path.write_bytes(saved.replace(b"done 5", b"DONE 5"))
    assert main(ingest) == 0
    conn = sqlite3.connect(database)
    unlinked = conn.execute(
        "SELECT count(*) FROM source_files WHERE kind = 'version' AND id NOT IN (SELECT version_file_id FROM source_versions)"
    ).fetchone()
    errors = conn.execute("SELECT count(*) FROM source_files WHERE status = 'error'").fetchone()
    conn.close()
    assert (unlinked, errors) == ((0,), (0,))


def test_a_file_that_repeats_a_line_mended_is_no_rewrite(tmp_path, capsys):
    """A file holding the same line twice, the archive's first copy lost: read again to mend it,
    the row taken back for that line was the later copy's, so the file looked rewritten (a version,
    and `restore --as-of` an incomplete file). Bytes are compared where they sit, not rows."""
    [path] = sessions_on_disk(tmp_path, 1)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([SUMMARY, *lines[:6], SUMMARY, *lines[6:]]))
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]) == 0
    original = records_of(database)
    conn = sqlite3.connect(database)
    with conn:
        conn.execute("DELETE FROM entries WHERE byte_offset = 0")
    conn.close()
    assert main(["ingest", "--db", str(database), "--rebuild", "-q"]) == 0
    conn = sqlite3.connect(database)
    assert conn.execute("SELECT count(*) FROM source_versions").fetchone() == (0,)
    conn.close()
    assert records_of(database) == original


def test_an_agent_database_gone_with_a_row_unread_is_read_whole_when_it_comes_back(tmp_path, capsys):
    """A damaged archive's agent database (Crush's) gone from disk, one of its rows unreadable:
    carried, and when the drive came back it was taken for the database it had been (nothing read),
    the row missing for good."""
    import os

    from tests.builders.crush import crush_db

    crush_db(tmp_path / "src")
    database = tmp_path / "t.db"
    ingest = ["ingest", "--db", str(database), "--only", "--source", str(tmp_path / "src"), "-q"]
    assert main(ingest) == 0
    conn = sqlite3.connect(database)
    [(file_id, count)] = conn.execute(
        "SELECT source_file_id, count(*) FROM entries WHERE source_file_id = "
        "(SELECT id FROM source_files WHERE kind = 'database')"
    ).fetchall()
    second = conn.execute(
        "SELECT id FROM entries WHERE source_file_id = ? ORDER BY byte_offset LIMIT 1 OFFSET 1", (file_id,)
    ).fetchone()[0]
    conn.close()
    spoil_records(database, "id = ?", second)
    os.rename(tmp_path / "src", tmp_path / "away")  # the drive unmounted
    assert main(["ingest", "--db", str(database), "--rebuild", "-q"]) == 0
    os.rename(tmp_path / "away", tmp_path / "src")  # back, as it was
    assert main(ingest) == 0
    conn = sqlite3.connect(database)
    assert conn.execute("SELECT count(*) FROM entries WHERE source_file_id = ?", (file_id,)).fetchone() == (
        count,
    )
    conn.close()


def test_restore_of_a_session_none_of_whose_records_could_be_carried_writes_nothing(tmp_path, capsys):
    """A damaged rebuild could read none of a gone file's records: `restore --as-of`, as `restore`
    advises, wrote an empty file and said it restored it. It says why, and where they are."""
    [path, _] = sessions_on_disk(tmp_path, 2)
    database = tmp_path / "t.db"
    ingest = ["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "-q"]
    assert main(ingest) == 0
    put_a_line_in_the_middle(path)
    assert main(ingest) == 0
    path.unlink()
    spoil_records(database, "source_file_id = (SELECT id FROM source_files WHERE path = ?)", str(path))
    assert main(["ingest", "--db", str(database), "--rebuild", "-q"]) == 0
    capsys.readouterr()
    sid = path.stem
    code = main(["restore", "--db", str(database), sid, "--to", str(tmp_path / "back"), "--as-of", "today"])
    assert code == 1 and "none of the records" in capsys.readouterr().err
    assert not (tmp_path / "back").exists() or not any((tmp_path / "back").rglob("*.jsonl"))
