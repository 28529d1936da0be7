"""A rewrite never deletes what the archive holds.

A session file edited in place, truncated, emptied, replaced by a link, put back under its old
mtime (`touch -r`), or a JSON chat its agent rewrites with fewer messages: the archive shows the
new version, keeps every record of the old one (marked superseded, in no session), says so in
`verify`, and `restore --as-of` writes the file as it was."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from threadloom.core.actions.restore import restore_session
from threadloom.core.cli import main
from threadloom.core.read.archive import file_bytes, verify, versions
from threadloom.core.store import db

from tests.builders import gemini as gemini_files
from tests.builders.gemini import chats, meta, reply, user
from tests.builders.versions import SID, later, session_file
from tests.support import ingest

gemini = gemini_files.gemini  # the fixture: a Gemini CLI home


def cli_ingest(database: Path, projects: Path) -> int:
    return main(["ingest", "--db", str(database), "--source", str(projects), "--only", "-q"])


def stored_total(conn) -> int:
    return conn.execute("SELECT count(*) FROM entries").fetchone()[0]


def raws(conn) -> set[bytes]:
    return {bytes(r[0]) for r in conn.execute("SELECT raw FROM entries")}


def shown(conn, sid: str = SID) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
        )
    ]


def file_id(conn, path: Path) -> int:
    return conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]


def next_ms() -> int:
    """The clock's next millisecond (versions are stamped in ms: a moment named between two
    ingests must fall strictly between their stamps)."""
    now = int(time.time() * 1000)
    while int(time.time() * 1000) == now:
        pass
    return now + 1


REWRITES = {
    "edited in place": lambda data: data.replace(b"answer 1", b"ANSWER 1"),
    "truncated": lambda data: b"".join(data.splitlines(keepends=True)[:3]),
    "emptied": lambda data: b"",
    "a line taken out": lambda data: b"".join(
        line for n, line in enumerate(data.splitlines(keepends=True)) if n != 2
    ),
}


@pytest.mark.parametrize("rewrite", sorted(REWRITES))
def test_a_rewrite_keeps_every_stored_record_and_restores_the_old_file(conn, tmp_path, rewrite):
    path = session_file(tmp_path)
    original = path.read_bytes()
    ingest(conn, tmp_path / "projects")
    before, kept = stored_total(conn), raws(conn)
    started = int(time.time() * 1000)
    path.write_bytes(REWRITES[rewrite](original))
    later(path)
    ingest(conn, tmp_path / "projects")
    assert raws(conn) >= kept  # every stored byte is still there
    new = path.read_bytes()
    assert file_bytes(conn, file_id(conn, path))[0] == new  # the current version is the file now
    assert len(shown(conn)) == len(new.splitlines())
    assert stored_total(conn) == before + (1 if rewrite == "edited in place" else 0)  # nothing twice
    [version] = versions(conn, file_id(conn, path))
    assert version.superseded_at >= started and version.records == 8
    assert version.removed == 8 - sum(line in original.splitlines() for line in new.splitlines())
    report = verify(conn)
    assert report.ok and report.files_rewritten == 1 and report.records_superseded == version.removed
    # as it was before the rewrite, byte for byte
    [old] = restore_session(conn, SID, tmp_path / "then", as_of=started - 1)
    assert old.complete and Path(old.written_to).read_bytes() == original
    [now] = restore_session(conn, SID, tmp_path / "now", as_of=int(time.time() * 1000))
    assert Path(now.written_to).read_bytes() == new


def test_each_rewrite_is_a_version_and_ingesting_again_changes_nothing(conn, tmp_path):
    path = session_file(tmp_path)
    first = path.read_bytes()
    ingest(conn, tmp_path / "projects")
    stamps = []
    for n in range(3):
        stamps.append(next_ms())
        path.write_bytes(path.read_bytes().replace(f"question {n}".encode(), f"QUESTION {n}".encode()))
        later(path)
        ingest(conn, tmp_path / "projects")
        next_ms()
    total = stored_total(conn)
    assert total == 8 + 3
    again = ingest(conn, tmp_path / "projects")
    assert again.files_read == 0 and stored_total(conn) == total
    assert len(versions(conn, file_id(conn, path))) == 3
    [old] = restore_session(conn, SID, tmp_path / "first", as_of=stamps[0] - 1)
    assert Path(old.written_to).read_bytes() == first
    [middle] = restore_session(conn, SID, tmp_path / "middle", as_of=stamps[1] - 1)
    assert b"QUESTION 0" in Path(middle.written_to).read_bytes()
    assert b"QUESTION 1" not in Path(middle.written_to).read_bytes()


def test_a_rewrite_under_the_same_size_and_mtime_is_read(conn, tmp_path):
    """`touch -r`: the size and mtime of before; the ctime (and a replaced file's inode) tell."""
    path = session_file(tmp_path)
    ingest(conn, tmp_path / "projects")
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"answer 2", b"ANSWER 2"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    report = ingest(conn, tmp_path / "projects")
    assert report.files_read == 1
    assert "ANSWER 2" in shown(conn) and "answer 2" not in shown(conn)
    # the same bytes under a new ctime (a chmod): looked at, nothing stored again
    os.chmod(path, 0o640)
    total = stored_total(conn)
    ingest(conn, tmp_path / "projects")
    assert stored_total(conn) == total and not versions(conn, file_id(conn, path))[1:]


def test_as_of_a_moment_before_an_append_leaves_the_append_out(conn, tmp_path, capsys):
    """A file that only grew has no version: `restore --as-of` and `show --as-of` of a moment
    before the append wrote and showed it with the records added after (the README promises each
    file as it was then, byte for byte)."""
    path = session_file(tmp_path)
    original = path.read_bytes()
    ingest(conn, tmp_path / "projects")
    between = next_ms()
    lines = original.splitlines(keepends=True)
    appended = [
        line.replace(b"question 0", b"question 9").replace(b"answer 0", b"answer 9") for line in lines[:2]
    ]
    with path.open("ab") as out:  # two more records: no rewrite, the file grows
        out.writelines(line.replace(b'"uuid": "', b'"uuid": "n-') for line in appended)
    next_ms()
    ingest(conn, tmp_path / "projects")
    assert versions(conn, file_id(conn, path)) == []
    [then] = restore_session(conn, SID, tmp_path / "then", as_of=between)
    assert Path(then.written_to).read_bytes() == original
    [now] = restore_session(conn, SID, tmp_path / "now", as_of=int(time.time() * 1000))
    assert Path(now.written_to).read_bytes() == path.read_bytes() != original
    # before the archive first read it: the earliest it holds, not nothing
    [first] = restore_session(conn, SID, tmp_path / "first", as_of=between - 3_600_000)
    assert Path(first.written_to).read_bytes() == original
    # a record appended since and damaged in the archive is no damage of what an as-of before it writes
    last, raw = conn.execute(
        "SELECT id, raw FROM entries WHERE source_file_id = ? ORDER BY id DESC LIMIT 1",
        (file_id(conn, path),),
    ).fetchone()
    conn.execute("UPDATE entries SET raw = ? WHERE id = ?", (bytes(raw).replace(b"answer", b"ANSWER"), last))
    [then] = restore_session(conn, SID, tmp_path / "then-again", as_of=between)
    [now] = restore_session(conn, SID, tmp_path / "now-again", as_of=int(time.time() * 1000))
    assert (then.damaged, now.damaged) == (0, 1)
    conn.commit()
    database = tmp_path / "ledger.db"
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(between / 1000))
    assert main(["show", SID[:8], "--db", str(database), "--as-of", when]) == 0
    shown_then = capsys.readouterr().out
    assert "question 0" in shown_then and "question 9" not in shown_then


def test_a_file_replaced_by_a_link_keeps_the_original(conn, tmp_path):
    path = session_file(tmp_path)
    original = path.read_bytes()
    ingest(conn, tmp_path / "projects")
    other = tmp_path / "elsewhere.jsonl"
    other.write_bytes(b"".join(original.splitlines(keepends=True)[:2]))
    path.unlink()
    path.symlink_to(other)
    ingest(conn, tmp_path / "projects")
    assert original.splitlines(keepends=False)[5] in {r.rstrip(b"\n") for r in raws(conn)}
    [old] = restore_session(conn, SID, tmp_path / "then", as_of=int(time.time() * 1000) - 60_000)
    assert Path(old.written_to).read_bytes() == original


def test_a_json_chat_rewritten_with_fewer_messages_keeps_the_old_ones(conn, gemini):
    from tests.builders.gemini import SID as GEMINI_SID

    folder = chats(gemini)
    folder.mkdir(parents=True)
    path = folder / "session-2026-04-29T21-39-5f0e2a8c.json"
    messages = [user("u1", "first question"), reply("r1", "first answer"), user("u2", "second question")]
    path.write_text(json.dumps({**meta(), "messages": messages}))
    ingest(conn, gemini / "tmp")
    original = path.read_bytes()
    kept = raws(conn)
    started = int(time.time() * 1000)
    path.write_text(json.dumps({**meta(), "messages": messages[:1]}))  # a rewind: two messages gone
    later(path)
    ingest(conn, gemini / "tmp")
    assert raws(conn) >= kept
    assert shown(conn, GEMINI_SID) == ["first question"]
    restored = restore_session(conn, GEMINI_SID, gemini / "then", as_of=started - 1)
    [old] = [f for f in restored if f.source_path == str(path)]  # (and the project's .project_root)
    assert Path(old.written_to).read_bytes() == original


def test_verify_and_restore_as_of_on_the_command_line(tmp_path, capsys):
    path = session_file(tmp_path)
    original = path.read_bytes()
    database = tmp_path / "a.db"
    assert (
        main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "--only", "-q"]) == 0
    )
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 1))
    path.write_bytes(b"")
    later(path)
    assert (
        main(["ingest", "--db", str(database), "--source", str(tmp_path / "projects"), "--only", "-q"]) == 0
    )
    capsys.readouterr()
    assert main(["verify", "--db", str(database)]) == 0
    out = capsys.readouterr().out
    assert "1 file was rewritten" in out and "8 records no longer in the files" in out
    assert (
        main(["restore", SID, "--to", str(tmp_path / "then"), "--as-of", moment, "--db", str(database)]) == 0
    )
    restored = next((tmp_path / "then").rglob("*.jsonl"))
    assert restored.read_bytes() == original
    assert main(["restore", SID, "--to", str(tmp_path / "x"), "--as-of", "soon", "--db", str(database)]) == 2
    assert "--as-of: 'soon' is not a time" in capsys.readouterr().err


def test_a_database_from_before_versions_gets_them_on_its_next_open(tmp_path):
    """An archive written before versions were kept (no source_versions table, no ctime column) is
    read as it is, and given both on the next open for writing."""
    path = session_file(tmp_path)
    database = tmp_path / "old.db"
    conn = db.connect(database)
    ingest(conn, tmp_path / "projects")
    conn.execute("DROP TABLE source_versions")
    conn.execute("ALTER TABLE source_files DROP COLUMN ctime_ns")
    conn.close()
    reader = db.open_for_reading(database)
    assert verify(reader).ok and versions(reader, 1) == []
    reader.close()
    conn = db.connect(database)
    path.write_bytes(b"")
    later(path)
    ingest(conn, tmp_path / "projects")
    assert len(versions(conn, file_id(conn, path))) == 1
    conn.close()


def test_show_and_the_viewer_say_a_session_was_rewritten(tmp_path, capsys):
    path = session_file(tmp_path)
    database = tmp_path / "a.db"
    assert cli_ingest(database, tmp_path / "projects") == 0
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:5]))  # 3 records cut off
    later(path)
    assert cli_ingest(database, tmp_path / "projects") == 0
    capsys.readouterr()
    assert main(["show", SID, "--db", str(database)]) == 0
    out = capsys.readouterr().out
    assert "rewritten once" in out and "3 records no longer in its files are kept" in out
    assert f"threadloom restore {SID} --to DIR --as-of TIME" in out
    assert main(["show", SID, "--db", str(database), "--json"]) == 0
    [rewrite] = json.loads(capsys.readouterr().out)["rewrites"]
    assert rewrite["records"] == 8 and rewrite["removed"] == 3


def test_show_as_of_prints_the_session_as_it_was(tmp_path, capsys):
    path = session_file(tmp_path)
    database = tmp_path / "a.db"
    assert cli_ingest(database, tmp_path / "projects") == 0
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 1))
    path.write_bytes(path.read_bytes().replace(b"answer 1", b"ANSWER ONE"))
    later(path)
    assert cli_ingest(database, tmp_path / "projects") == 0
    capsys.readouterr()
    assert main(["show", SID, "--db", str(database), "--as-of", moment, "--as-written"]) == 0
    then = capsys.readouterr().out
    assert "answer 1" in then and "ANSWER ONE" not in then
    assert main(["show", SID, "--db", str(database), "--as-written"]) == 0
    now = capsys.readouterr().out
    assert "ANSWER ONE" in now and "answer 1\n" not in now
    # a session whose file was emptied since: only --as-of shows it
    path.write_bytes(b"")
    later(path)
    assert cli_ingest(database, tmp_path / "projects") == 0
    capsys.readouterr()
    assert main(["show", SID, "--db", str(database)]) == 1
    assert "add --as-of TIME" in capsys.readouterr().err
    assert main(["show", SID, "--db", str(database), "--as-of", moment, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [m["content"] for m in shown["messages"]][:4] == [
        "question 0",
        "answer 0",
        "question 1",
        "answer 1",
    ]


def test_show_as_of_a_session_read_from_two_copies(tmp_path, capsys):
    """A session read from its agent's folder and from a backup (a --source): `show --as-of` read
    both copies as the archive had (it stopped in a traceback: which copy to restore?)."""
    path = session_file(tmp_path)
    backup = tmp_path / "backup" / "projects" / "-srv-app" / path.name
    backup.parent.mkdir(parents=True)
    backup.write_bytes(path.read_bytes()[: path.read_bytes().index(b"\n") + 1])  # the backup is older: 1 line
    database = tmp_path / "a.db"
    assert cli_ingest(database, tmp_path / "projects") == 0
    assert cli_ingest(database, tmp_path / "backup" / "projects") == 0
    capsys.readouterr()
    assert main(["show", SID, "--db", str(database), "--as-of", "today", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [m["content"] for m in shown["messages"]] == [
        f"{w} {n}" for n in range(4) for w in ("question", "answer")
    ]
