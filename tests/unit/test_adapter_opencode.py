"""OpenCode: the JSON storage tree (both layouts) and opencode.db, built here, plus the corpus."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes
from threadloom.core.read.calls import tool_summary
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.opencode import (
    CHILD,
    SID,
    conversation,
    make_db,
    message,
    session_obj,
    text,
    tool,
    write_json,
    write_storage,
)
from tests.support import CORPUS, ingest

OLD = "ses_44234b4aeffe6EUGUjiyzSIEZV"


def session(conn: sqlite3.Connection, sid: str) -> dict:
    cur = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (sid,))
    row = cur.fetchone()
    assert row is not None, sid
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def shown(conn: sqlite3.Connection, sid: str) -> list[tuple]:
    return conn.execute(
        "SELECT role, content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
    ).fetchall()


def check_conversation(conn: sqlite3.Connection) -> None:
    s = session(conn, SID)
    assert (
        s["source"],
        s["title"],
        s["project_path"],
        s["model"],
        s["turn_count"],
        s["tool_call_count"],
    ) == ("opencode", "Fix the cart", "/home/dev/shop", "claude-sonnet-4-5", 2, 2)
    assert [x for x in shown(conn, SID) if x[1]] == [
        ("user", "fix the cart total"),
        ("assistant", "The rounding is wrong."),
        ("user", "now add a test"),
        ("assistant", "Added."),
    ]
    # message.tokens, as OpenCode counts them: reasoning is output, the cache kept apart
    assert (s["input_tokens"], s["output_tokens"], s["cache_read_tokens"], s["cache_creation_tokens"]) == (
        200,
        50,
        1800,
        100,
    )
    turns = conn.execute(
        "SELECT token_count FROM agent_turns WHERE session_id = ? ORDER BY sequence", (SID,)
    ).fetchall()
    assert turns == [(1075,), (1075,)]
    calls = dict(conn.execute("SELECT tool_name, status FROM agent_tool_calls"))
    assert calls == {"bash": "failed", "task": "completed"}
    child = session(conn, CHILD)
    assert (child["kind"], child["parent_session_id"], child["tool_call_id"]) == (
        "subagent",
        SID,
        "call_prt_06",
    )


def test_storage_tree_sessions_turns_tools_tokens(conn, tmp_path):
    storage = tmp_path / "share" / "opencode" / "storage"
    write_storage(storage)
    ingest(conn, storage)
    check_conversation(conn)
    for path in storage.rglob("*.json"):
        fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
        assert file_bytes(conn, fid) == (path.read_bytes(), True), path
    # a message file rewritten (OpenCode updates it as the reply finishes): read again, not doubled
    m = message(
        "msg_04",
        "assistant",
        parentID="msg_03",
        tokens={"input": 300, "output": 30, "reasoning": 0, "cache": {"read": 0, "write": 0}},
    )
    write_json(storage / "message" / SID / "msg_04.json", m)
    ingest(conn, storage)
    s = session(conn, SID)
    assert (s["input_tokens"], s["output_tokens"], s["turn_count"]) == (400, 55, 2)


def test_old_storage_layout(conn, tmp_path):
    storage = tmp_path / "opencode" / "storage"
    messages, parts = conversation()
    write_json(storage / "session" / "info" / f"{SID}.json", session_obj())
    for m in messages:
        write_json(storage / "session" / "message" / SID / f"{m['id']}.json", m)
        for p in parts[m["id"]]:
            p = {k: v for k, v in p.items() if k != "sessionID"}  # the old parts did not name their session
            write_json(storage / "session" / "part" / SID / m["id"] / f"{p['id']}.json", p)
    ingest(conn, storage)
    s = session(conn, SID)
    assert (s["turn_count"], s["input_tokens"]) == (2, 200)
    assert shown(conn, SID)[0] == ("user", "fix the cart total")


def test_opencode_db(conn, tmp_path):
    data = tmp_path / "share" / "opencode"
    data.mkdir(parents=True)
    source = make_db(data / "opencode.db", wal=True)
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    ingest(conn, data)
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before  # never written to
    check_conversation(conn)
    assert {r[0] for r in conn.execute("SELECT agent FROM source_files")} == {"opencode-db"}
    stored = {bytes(r[0]) for r in conn.execute("SELECT raw FROM entries")}
    for table in ("message", "part"):
        for (value,) in source.execute(f"SELECT data FROM {table}"):
            assert value.encode() in stored, value  # every row's exact JSON
    source.close()


def test_explicit_and_default_roots(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert ADAPTERS["opencode"].default_roots() == [tmp_path / "xdg" / "opencode" / "storage"]
    assert ADAPTERS["opencode-db"].default_roots() == [tmp_path / "xdg" / "opencode" / "opencode.db"]
    path = write_json(tmp_path / "loose" / "message" / SID / "msg_01.json", message("msg_01", "user"))
    assert ADAPTERS["opencode"].claims(path, explicit=True)
    assert not ADAPTERS["gemini"].claims(path, explicit=True)


def write_old_project_layout(data: Path, project: str = "global") -> Path:
    """The first releases' layout, as a 2026 home-folder backup still holds it:
    `<data>/project/<name>/storage/session/{info,message,part}` (session files without a
    directory or project id, parts without their session)."""
    storage = data / "project" / project / "storage"
    old = {"id": OLD, "version": "0.5.28", "title": "How are you", "time": {"created": 1768415775570}}
    write_json(storage / "session" / "info" / f"{OLD}.json", old)
    write_json(
        storage / "session" / "message" / OLD / "msg_91.json",
        {"id": "msg_91", "role": "user", "sessionID": OLD, "time": {"created": 1768415775583}},
    )
    write_json(
        storage / "session" / "part" / OLD / "msg_91" / "prt_91.json",
        {"id": "prt_91", "type": "text", "text": "How are you", "messageID": "msg_91"},
    )
    (storage / "migration").write_text("1")
    return storage


def test_channel_database_and_project_storage_by_default(conn, tmp_path, monkeypatch):
    """2026 releases write `opencode-<channel>.db`; the first ones kept sessions in
    `project/<name>/storage`: both are among the default roots and read from there."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    data = tmp_path / "xdg" / "opencode"
    data.mkdir(parents=True)
    make_db(data / "opencode-stable.db").close()
    old = write_old_project_layout(data)
    (data / "opencode-stable.db-shm").write_bytes(b"\0" * 16)  # a side file, never a database
    assert ADAPTERS["opencode-db"].default_roots() == [data / "opencode-stable.db"]
    assert ADAPTERS["opencode"].default_roots() == [data / "storage", old]
    roots = ADAPTERS["opencode"].default_roots() + ADAPTERS["opencode-db"].default_roots()
    run_ingest(conn, [r for r in roots if r.exists()], include_defaults=False, remember=False)
    check_conversation(conn)
    assert shown(conn, OLD)[0] == ("user", "How are you")
    agents = {Path(p).name: a for p, a in conn.execute("SELECT path, agent FROM source_files")}
    assert agents["opencode-stable.db"] == "opencode-db"
    assert agents[f"{OLD}.json"] == "opencode"


@pytest.mark.parametrize("level", ["home", ".local", ".local/share", ".local/share/opencode"])
def test_a_source_folder_at_any_level_above_the_data(conn, tmp_path, level):
    """`--source ~` (or `.local`, `.local/share`) finds OpenCode's database and storage: no folder is
    skipped for its name alone (`share` is a storage tree's own index only inside `storage/`)."""
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    write_storage(data / "storage")
    write_json(data / "storage" / "share" / f"{SID}.json", {"id": SID, "url": "https://x"})
    write_json(data / "storage" / "project" / "a1b2c3.json", {"id": "a1b2c3", "worktree": "/home/dev"})
    write_old_project_layout(data, "older")
    (data / "snapshot" / "a1b2c3" / "objects").mkdir(parents=True)
    (data / "snapshot" / "a1b2c3" / "objects" / "message.json").write_text('{"id": "x", "type": "blob"}')
    make_db(data / "opencode-beta.db").close()
    ingest(conn, home if level == "home" else home / level)
    check_conversation(conn)
    files = {
        Path(p).relative_to(data).parts[0]: a for p, a in conn.execute("SELECT path, agent FROM source_files")
    }
    assert files == {"storage": "opencode", "project": "opencode", "opencode-beta.db": "opencode-db"}
    assert shown(conn, OLD)[-1] == ("user", "How are you")


# ---------------------------------------------------------------------- corpus

OPENCODE = CORPUS / "opencode"


@pytest.mark.corpus
@pytest.mark.skipif(not OPENCODE.is_dir(), reason="../shared/corpus/opencode is not present")
def test_corpus_opencode(tmp_path):
    conn = db.connect(tmp_path / "corpus.db")
    roots = sorted(OPENCODE.rglob("storage_*"))
    assert len(roots) == 2
    report = run_ingest(conn, roots, include_defaults=False)
    assert not report.errors, report.errors
    files = sorted(p for root in roots for p in root.rglob("*.json"))
    assert report.files_read == len(files) == 27
    for path in files:
        fid, agent = conn.execute(
            "SELECT id, agent FROM source_files WHERE path = ?", (str(path.resolve()),)
        ).fetchone()
        assert agent == "opencode"
        assert file_bytes(conn, fid) == (path.read_bytes(), True), path
        assert conn.execute(
            "SELECT count(*) FROM entries WHERE source_file_id = ? AND entry_type != 'json-gap'", (fid,)
        ).fetchone() == (1,)
    rows = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT id, turn_count, tool_call_count, input_tokens, output_tokens, project_path FROM agent_sessions"
        )
    }
    assert rows == {
        "s_stage0_drift": (1, 1, 0, 0, "/tmp/drift"),
        "s_stage0_large": (2, 1, 120, 16, "/tmp/large"),
        "s_stage0_small": (1, 1, 0, 0, "/tmp/repo"),
    }
    assert conn.execute(
        "SELECT count(*) FROM entries WHERE session_id IS NULL AND entry_type != 'json-gap'"
    ).fetchone() == (0,)
    conn.close()


def test_byte_order_marks_before_the_storage_files(conn, tmp_path):
    storage = tmp_path / "share" / "opencode" / "storage"
    write_storage(storage)
    for path in storage.rglob("*.json"):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    ingest(conn, storage)
    check_conversation(conn)
    for path in storage.rglob("*.json"):
        fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
        assert file_bytes(conn, fid) == (path.read_bytes(), True), path


def test_a_part_whose_message_file_is_gone(conn, tmp_path):
    """OpenCode may remove a message file before its parts: the part is still read (its session from
    its own fields), and the file is not reported as failed."""
    storage = tmp_path / "share" / "opencode" / "storage"
    write_json(storage / "session" / "a1b2c3" / f"{SID}.json", session_obj())
    write_json(storage / "part" / "msg_77" / "prt_77.json", text("prt_77", "msg_77", "an orphaned part"))
    report = run_ingest(conn, [storage], include_defaults=False)
    assert not report.errors, report.errors
    assert conn.execute(
        "SELECT session_id FROM entries WHERE uuid LIKE '%prt_77%' OR content = 'an orphaned part'"
    ).fetchone() == (SID,)


def prompts_and_gists(conn: sqlite3.Connection) -> tuple[list[tuple], list[str]]:
    """The user prompts with their times, and the one-line gists of the tool calls."""
    shown = messages(conn, SID)
    prompts = [(m.content, m.timestamp) for m in shown if m.role == "user" and m.content]
    return prompts, [tool_summary(c) for m in shown for c in m.tool_calls]


WRITE = ("write", {"filePath": "/home/dev/shop/test_cart.py", "content": "def test(): ...\n"}, "Wrote file")


def test_a_prompt_has_its_message_s_time_and_a_file_tool_its_path(conn, tmp_path):
    """A user's text part has no time of its own (its message has): the prompt was shown with
    none. OpenCode's file tools name their file in `filePath`: the call was shown as raw JSON."""
    storage = tmp_path / "share" / "opencode" / "storage"
    write_storage(storage)
    write_json(storage / "part" / "msg_04" / "prt_11.json", tool("prt_11", "msg_04", *WRITE))
    ingest(conn, storage)
    data = tmp_path / "data"
    data.mkdir()
    source = make_db(data / "opencode.db")
    part = {
        k: v for k, v in tool("prt_11", "msg_04", *WRITE).items() if k not in ("id", "sessionID", "messageID")
    }
    source.execute("INSERT INTO part VALUES ('prt_11', 'msg_04', ?, 0, 0, ?)", (SID, json.dumps(part)))
    source.commit()
    source.close()
    other = db.connect(tmp_path / "other.db")
    try:
        ingest(other, data)
        for ledger in (conn, other):
            prompts, gists = prompts_and_gists(ledger)
            assert prompts == [("fix the cart total", 1760000001000), ("now add a test", 1760000003000)]
            assert gists[-1] == "/home/dev/shop/test_cart.py"
    finally:
        other.close()


def test_the_cost_opencode_recorded_is_the_session_s(conn, tmp_path):
    """Each assistant message records what OpenCode charged (`cost`): it was priced again here
    instead, some 12% higher on a real session of 2026."""
    storage = tmp_path / "share" / "opencode" / "storage"
    write_storage(storage)
    ingest(conn, storage)
    data = tmp_path / "data"
    data.mkdir()
    make_db(data / "opencode.db").close()
    other = db.connect(tmp_path / "other.db")
    try:
        ingest(other, data)
        for ledger in (conn, other):
            cost = ledger.execute("SELECT cost_usd FROM agent_sessions WHERE id = ?", (SID,)).fetchone()[0]
            assert cost == pytest.approx(0.02)  # two replies of $0.01 each
    finally:
        other.close()


def timed(mid: str, role: str, created: int) -> dict:
    """A message of id `mid` created at `created` (ms)."""
    return {**message("msg_01", role), "id": mid, "time": {"created": created}}


def out_of_name_order(storage: Path) -> None:
    """A session whose message files' names do not sort as the messages were written: the first
    prompt's is `msg_Z1`, its reply's `msg_A2`; two messages of one time (by name, then); and a
    message file named otherwise than its message, its parts in the folder named by the message's id."""
    at = 1760000000000
    write_json(storage / "session" / "a1b2c3" / f"{SID}.json", session_obj())
    said = [
        ("msg_Z1", "msg_Z1", "user", at + 1000, "fix the cart total"),
        ("msg_A2", "msg_A2", "assistant", at + 2000, "The rounding is wrong."),
        ("msg_M3", "msg_M3", "user", at + 3000, "now add a test"),
        ("msg_B4", "msg_B4", "assistant", at + 4000, "Added."),
        ("msg_D5", "msg_D5", "user", at + 5000, "and the docs"),
        ("msg_C5", "msg_C5", "assistant", at + 5000, "Same time, by name first."),
        ("msg_0006", "m_user_6", "user", at + 6000, "thanks"),
    ]
    for name, mid, role, created, body in said:
        write_json(storage / "message" / SID / f"{name}.json", timed(mid, role, created))
        write_json(storage / "part" / mid / f"prt_{mid}.json", text(f"prt_{mid}", mid, body))


def test_messages_are_shown_in_the_order_they_were_written(conn, tmp_path):
    """Found in the corpus: a session's messages were numbered in the order of their files' names,
    and parts filed under the message's id (not its file's name) came after every message: the
    replies before the prompts. Each file is still stored as it is."""
    from threadloom.core.ingest.ledger import rebuild_derived

    storage = tmp_path / "opencode" / "storage"
    out_of_name_order(storage)
    ingest(conn, storage)
    expected = [
        ("user", "fix the cart total"),
        ("assistant", "The rounding is wrong."),
        ("user", "now add a test"),
        ("assistant", "Added."),
        ("assistant", "Same time, by name first."),
        ("user", "and the docs"),
        ("user", "thanks"),
    ]
    assert [x for x in shown(conn, SID) if x[1]] == expected
    for path in storage.rglob("*.json"):
        fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
        assert file_bytes(conn, fid) == (path.read_bytes(), True), path
    # replayed from the stored records, the session reads the same
    rebuild_derived(conn)
    assert [x for x in shown(conn, SID) if x[1]] == expected
    # a message written later, its name sorting first, lands last in a later ingest
    later = timed("msg_00", "assistant", 1760000009000)
    write_json(storage / "message" / SID / "msg_00.json", later)
    write_json(storage / "part" / "msg_00" / "prt_99.json", text("prt_99", "msg_00", "You're welcome."))
    ingest(conn, storage)
    assert [x for x in shown(conn, SID) if x[1]] == [*expected, ("assistant", "You're welcome.")]


@pytest.mark.corpus
@pytest.mark.skipif(not OPENCODE.is_dir(), reason="../shared/corpus/opencode is not present")
def test_corpus_sessions_read_in_order(tmp_path):
    """The corpus's sessions name their message files msg_0001… and file their parts under the
    messages' ids: each prompt is shown before its reply."""
    conn = db.connect(tmp_path / "corpus.db")
    run_ingest(conn, sorted(OPENCODE.rglob("storage_v2")), include_defaults=False)
    assert [x for x in shown(conn, "s_stage0_small") if x[1]] == [
        ("user", "Hello"),
        ("assistant", "Found 2 files."),
    ]
    roles = [r for r, content in shown(conn, "s_stage0_large") if content]
    assert roles[0] == "user" and roles.index("user", 1) > roles.index("assistant")
    conn.close()


def ingest_in_name_order(conn: sqlite3.Connection, storage: Path) -> None:
    """`storage` stored as releases before the time order stored it, one file at a time: the
    sessions, then each message file by name followed by the parts in the folder of its file's
    name, then the other parts (the corpus's, filed under the messages' ids: after every message)."""
    files = sorted(storage.rglob("*.json"))
    order = [p for p in files if p.parent.parent.name == "session"]
    parts = [p for p in files if "part" in p.relative_to(storage).parts[:1]]
    for path in files:
        if path.parent.parent.name == "message":
            order += [path, *(p for p in parts if p.parent.name == path.stem)]
    order += [p for p in parts if p not in order]
    assert sorted(order) == files
    for path in order:
        ingest(conn, path)


def derived(conn: sqlite3.Connection, sid: str) -> tuple[list[dict], list[tuple], tuple]:
    """A session as it is shown (its messages, their turns and calls) and its turns, without the
    records' ids (which say the order the files were stored in)."""
    shown_messages = []
    for m in messages(conn, sid):
        row = dataclasses.asdict(m)
        del row["entry_id"]
        for call in row["tool_calls"]:
            del call["entry_id"], call["result_entry_id"]
        shown_messages.append(row)
    turns = conn.execute(
        "SELECT id, parent_turn_id, query_message_ids, response_message_id, timestamp, sequence, "
        "tool_call_count, child_count, last_entry_uuid FROM agent_turns WHERE session_id = ? ORDER BY sequence",
        (sid,),
    ).fetchall()
    totals = conn.execute(
        "SELECT message_count, turn_count, tool_call_count, first_prompt, created_at, ended_at "
        "FROM agent_sessions WHERE id = ?",
        (sid,),
    ).fetchone()
    return shown_messages, turns, totals


def fresh(tmp_path: Path, name: str, *sources: Path) -> sqlite3.Connection:
    conn = db.connect(tmp_path / f"{name}.db")
    ingest(conn, *sources)
    return conn


@pytest.mark.parametrize("whole", [True, False], ids=["archive", "session"])
def test_an_archive_stored_in_name_order_is_replayed_in_time_order(tmp_path, whole):
    """An archive stored before the time order kept each session's files in name order: replayed
    (a schema upgrade replays every record; a rewritten file its sessions'), it reads as a fresh
    ingest of the same files does today, each prompt before its reply."""
    from threadloom.core.ingest.ledger import rebuild_derived

    storage = tmp_path / "opencode" / "storage"
    out_of_name_order(storage)
    old = db.connect(tmp_path / "old.db")
    ingest_in_name_order(old, storage)
    new = fresh(tmp_path, "new", storage)
    assert derived(old, SID) != derived(new, SID)  # the reply to msg_Z1 came first
    rebuild_derived(old, None if whole else {SID})
    assert derived(old, SID) == derived(new, SID)
    assert [x for x in shown(old, SID) if x[1]][:2] == [
        ("user", "fix the cart total"),
        ("assistant", "The rounding is wrong."),
    ]
    # the order is read from the archive: the files gone from the disk, it holds
    shutil.rmtree(storage)
    rebuild_derived(old, None if whole else {SID})
    assert [c for _, c in shown(old, SID) if c] == [c for _, c in shown(new, SID) if c]
    old.close()
    new.close()


def test_a_message_stored_later_but_written_earlier_takes_its_place_in_a_replay(conn, tmp_path):
    """A message file that appears after the others were stored lands last as it is ingested (the
    archive numbers records as they land); the next replay puts it where it was written, as a fresh
    ingest of the folder does."""
    from threadloom.core.ingest.ledger import rebuild_derived

    storage = tmp_path / "opencode" / "storage"
    out_of_name_order(storage)
    ingest(conn, storage)
    late = timed("msg_Q3", "assistant", 1760000003500)  # between msg_M3 (3000) and msg_B4 (4000)
    write_json(storage / "message" / SID / "msg_Q3.json", late)
    write_json(storage / "part" / "msg_Q3" / "prt_98.json", text("prt_98", "msg_Q3", "Looking."))
    ingest(conn, storage)
    assert [x for x in shown(conn, SID) if x[1]][-1] == ("assistant", "Looking.")
    rebuild_derived(conn)
    said = [x for x in shown(conn, SID) if x[1]]
    assert said[2:5] == [("user", "now add a test"), ("assistant", "Looking."), ("assistant", "Added.")]
    new = fresh(tmp_path, "new", storage)
    assert derived(conn, SID) == derived(new, SID)
    new.close()


@pytest.mark.corpus
@pytest.mark.skipif(not OPENCODE.is_dir(), reason="../shared/corpus/opencode is not present")
def test_corpus_sessions_stored_in_name_order_read_in_order_after_an_upgrade(tmp_path):
    """The corpus's sessions as an archive stored before the time order holds them (each reply
    before its prompt): the upgrade's replay gives what a fresh ingest gives."""
    roots = sorted(OPENCODE.rglob("storage_v2"))
    path = tmp_path / "old.db"
    old = db.connect(path)
    for root in roots:
        ingest_in_name_order(old, root.resolve())
    assert [x for x in shown(old, "s_stage0_small") if x[1]][0][0] == "assistant"
    old.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    old.close()
    old = db.connect(path)
    assert db.rebuild_due(old)
    ingest(old, *roots)  # the upgrade's replay; nothing new to read
    assert not db.rebuild_due(old)
    new = fresh(tmp_path, "new", *roots)
    for sid in ("s_stage0_small", "s_stage0_large"):
        assert derived(old, sid) == derived(new, sid), sid
    assert [x for x in shown(old, "s_stage0_small") if x[1]] == [
        ("user", "Hello"),
        ("assistant", "Found 2 files."),
    ]
    old.close()
    new.close()


@pytest.mark.parametrize("store", ["storage", "db"])
def test_each_reply_names_its_own_model(conn, tmp_path, store):
    """A reply's parts are what is shown, and only its message names the model: a real 2026 session
    that switched from one model to another showed every reply with no model at all."""
    switched = message("msg_04", "assistant", parentID="msg_03", modelID="kimi-k2.6")
    if store == "storage":
        source = tmp_path / "share" / "opencode" / "storage"
        write_storage(source)
        write_json(source / "message" / SID / "msg_04.json", switched)
    else:
        source = tmp_path / "share" / "opencode"
        source.mkdir(parents=True)
        db_conn = make_db(source / "opencode.db")
        data = {k: v for k, v in switched.items() if k not in ("id", "sessionID")}
        db_conn.execute("UPDATE message SET data = ? WHERE id = 'msg_04'", (json.dumps(data),))
        db_conn.commit()
        db_conn.close()
    ingest(conn, source)
    replies = [(m.content, m.model) for m in messages(conn, SID) if m.role == "assistant" and m.content]
    assert replies == [("The rounding is wrong.", "claude-sonnet-4-5"), ("Added.", "kimi-k2.6")]


def test_a_rebuild_reads_a_part_s_message_as_the_archive_kept_it(conn, tmp_path, monkeypatch):
    """A part is its message's (whose role, time and model it is told by): a replay (a schema
    upgrade's, `ingest --rebuild`) read the message file from the disk, so once OpenCode deleted
    the session a rebuild (a new process's, having read nothing) left its parts no role: no
    prompt, no reply. It reads the message as the archive kept it."""
    from threadloom.core.adapters import ADAPTERS
    from threadloom.core.adapters.opencode import OpenCodeStorageAdapter
    from threadloom.core.ingest.ledger import rebuild_derived

    storage = tmp_path / "share" / "opencode" / "storage"
    write_storage(storage)
    ingest(conn, storage)
    check_conversation(conn)
    shutil.rmtree(storage)
    monkeypatch.setitem(ADAPTERS, "opencode", OpenCodeStorageAdapter())  # a new process's
    rebuild_derived(conn)
    check_conversation(conn)
