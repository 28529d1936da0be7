"""Hostile input found by a sweep over every agent format: one odd file or row never stops an
ingest, never costs the other files their records, and is never blamed on threadloom's database.

Each test plants what a sweep of mutated logs turned up, next to a good source, and checks that
the run finishes cleanly with everything stored.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from pathlib import Path

from conftest import Transcript

from core import cli


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def ingest_cli(db: Path, *sources: Path) -> tuple[int, str, str]:
    args = [a for s in sources for a in ("--source", str(s))]
    return run_cli("ingest", "--db", str(db), "--only", "-q", *args)


def statuses(db: Path) -> dict[str, tuple[str, str | None]]:
    conn = sqlite3.connect(db)
    try:
        return {Path(p).name: (s, e) for p, s, e in conn.execute("SELECT path, status, error FROM source_files")}
    finally:
        conn.close()


def good_claude_session(root: Path) -> Path:
    t = Transcript(root / "projects" / "-srv-app" / "aaaaaaaa-1111-4222-8333-000000000001.jsonl",
                   "aaaaaaaa-1111-4222-8333-000000000001", cwd="/srv/app")
    t.user("a good prompt")
    t.assistant("a good reply")
    t.write()
    return t.path


# ---------------------------------------------------------------------- discovery


def test_a_first_line_whose_type_is_an_object_does_not_stop_discovery(tmp_path):
    """Claude's and Codex's sniffers looked the `type` up in a set: an object there raised
    TypeError out of discovery and the whole ingest stopped with a traceback."""
    root = tmp_path / "logs"
    good = good_claude_session(root)
    odd = root / "exports"
    odd.mkdir()
    (odd / "notes.jsonl").write_text(json.dumps({"type": {"a": 1}, "uuid": "u", "message": {}}) + "\n")
    (odd / "other.jsonl").write_text(json.dumps({"type": ["session_meta"], "payload": {}}) + "\n")
    code, out, err = ingest_cli(tmp_path / "t.db", root)
    assert code == 0, err
    assert statuses(tmp_path / "t.db")[good.name] == ("ok", None)


# ---------------------------------------------------------------------- other programs' databases


def test_database_text_that_is_not_utf8_and_blob_keys_are_read(tmp_path):
    """SQLite never checks that TEXT is UTF-8. A Cursor, OpenCode or Amazon Q row holding such
    bytes stopped the whole ingest, which then called threadloom's own database damaged and told
    the user to rebuild it (which read the same row and failed again); an Amazon Q key stored as a
    BLOB left the database in error."""
    from test_adapter_amazon_q import pairs, state
    from test_adapter_cursor import install
    from test_adapter_opencode import make_db

    user, cursor = install(tmp_path / "cursor")
    cursor.execute("INSERT INTO cursorDiskKV VALUES ('bubbleId:8c1f0e2a-1111-4222-8333-444455556666:bad', "
                   "CAST(? AS TEXT))", (b'{"type":2,"bubbleId":"bad","text":"caf\xe9 \xff"}',))
    cursor.commit()
    cursor.close()
    opencode = tmp_path / "oc" / "opencode.db"
    opencode.parent.mkdir()
    source = make_db(opencode)
    source.execute("UPDATE part SET session_id = CAST(? AS TEXT) WHERE rowid = 1", (b"ses_\xff\xfe",))
    source.commit()
    source.close()
    q = tmp_path / "q" / "data.sqlite3"
    q.parent.mkdir()
    source = sqlite3.connect(q)
    source.execute("CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)")
    source.execute("INSERT INTO conversations VALUES (?, ?)", (b"/home/dev/\xff", json.dumps(state(pairs()))))
    source.execute("INSERT INTO conversations VALUES (?, CAST(? AS TEXT))", ("/home/dev/other", b"\xc3"))
    source.commit()
    source.close()

    db = tmp_path / "t.db"
    code, out, err = ingest_cli(db, user, opencode, q)
    assert code == 0 and "damaged" not in err and "error" not in err, err
    assert set(statuses(db).values()) == {("ok", None)}
    conn = sqlite3.connect(db)
    stored = b"".join(bytes(r[0]) for r in conn.execute(
        "SELECT raw FROM entries JOIN source_files f ON f.id = source_file_id WHERE f.path LIKE '%state.vscdb'"))
    assert 'caf\xe9 \xff'.encode("latin-1") in stored  # the row's own bytes, not replaced
    assert conn.execute("SELECT count(*) FROM agent_sessions WHERE source = 'amazon-q'").fetchone()[0] >= 1
    code, out, err = run_cli("verify", "--db", str(db))
    assert code == 0, out + err


def test_a_source_database_of_another_layout_is_its_own_error_not_threadloom_s(tmp_path):
    """A `data.sqlite3` or `opencode.db` whose tables lack the columns read raised SQLite's
    OperationalError out of the run: nothing else was read, and the message blamed threadloom's
    database ("could not be used ... may be damaged: rebuild it")."""
    for name, tables in (("data.sqlite3", "CREATE TABLE conversations (k TEXT, v TEXT)"),
                         ("opencode.db", "CREATE TABLE session (x); CREATE TABLE message (y); CREATE TABLE part (z)")):
        source = sqlite3.connect(tmp_path / name)
        source.executescript(tables)
        source.close()
    root = tmp_path / "logs"
    good = good_claude_session(root)
    db = tmp_path / "t.db"
    code, out, err = ingest_cli(db, tmp_path / "data.sqlite3", tmp_path / "opencode.db", root)
    assert code == 0 and "damaged" not in err and "could not be used" not in err, err
    found = statuses(db)
    assert found[good.name] == ("ok", None)
    assert found["data.sqlite3"][0] == found["opencode.db"][0] == "error"
    assert "its database cannot be read (no such column" in found["data.sqlite3"][1]


# ---------------------------------------------------------------------- one odd value, one record


def unreadable(conn: sqlite3.Connection) -> list[str]:
    """The records an adapter failed on (kept raw, their meaning lost)."""
    return [r[0] for r in conn.execute("SELECT parse_error FROM entries WHERE parse_error LIKE '%reading it failed%'")]


def test_claude_records_with_an_odd_block_type_or_a_side_chain_off_another_session_are_read(tmp_path):
    """A content block whose `type` is a number, an object or a list raised AttributeError, and a
    side-chain line whose parent sits in another session (the sessionId changed mid-file) raised
    IndexError: the whole record was kept raw only, its text and tool calls not shown."""
    from conftest import tool_use

    sid = "aaaaaaaa-1111-4222-8333-000000000002"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("first prompt")
    for n, odd in enumerate((3.5, {"a": 1}, ["text"], True)):
        t.assistant(f"reply {n}", tools=[tool_use(f"t{n}", "Bash", command="ls"), {"type": odd, "text": "x"}])
    parent = t.add({"type": "user", "sessionId": "bbbbbbbb-1111-4222-8333-000000000003",
                    "message": {"role": "user", "content": "asked in another session"}})
    t.add({"type": "user", "isSidechain": True, "message": {"role": "user", "content": "a side chain"}}, parent=parent)
    t.write()
    conn = sqlite3.connect(tmp_path / "t.db")
    code, out, err = ingest_cli(tmp_path / "t.db", tmp_path / "projects")
    assert code == 0, err
    assert unreadable(conn) == []
    shown = {r[0] for r in conn.execute("SELECT content FROM entries WHERE seq IS NOT NULL")}
    assert {"reply 0", "reply 1", "reply 2", "reply 3", "a side chain"} <= shown
    assert conn.execute("SELECT count(*) FROM agent_tool_calls").fetchone()[0] == 4


def test_a_codex_snapshot_item_nested_deep_or_with_a_huge_number_is_read(tmp_path):
    """The TypeScript-era snapshot keys each item by its JSON, written with orjson: an item nested
    deeper than orjson writes (254 levels) or holding an integer beyond 64 bits raised, and the
    item was kept raw only."""
    from test_adapter_codex import snapshot

    deep: object = "bottom"
    for _ in range(300):
        deep = {"a": deep}
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "deep one"}], "x": deep},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "big one"}],
              "n": 2**80}]
    snapshot(tmp_path / "codex", "deep", items)
    conn = sqlite3.connect(tmp_path / "t.db")
    code, out, err = ingest_cli(tmp_path / "t.db", tmp_path / "codex")
    assert code == 0, err
    assert unreadable(conn) == []
    shown = {r[0] for r in conn.execute("SELECT content FROM entries WHERE seq IS NOT NULL")}
    assert {"deep one", "big one"} <= shown
