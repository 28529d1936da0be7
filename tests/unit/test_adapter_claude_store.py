"""Claude Code's legacy `__store.db`: a store written here with the shipped schema and later columns."""

from __future__ import annotations

from threadloom.core.adapters import ADAPTERS

from tests.builders.claude import Transcript
from tests.builders.claude_store import SID, make_store, messages
from tests.support import ingest


def test_store_sessions_turns_tools_tokens_and_exact_rows(conn, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    source = make_store(tmp_path / "claude" / "__store.db")
    assert ADAPTERS["claude-store"].default_roots() == [tmp_path / "claude" / "__store.db"]
    ingest(conn, tmp_path / "claude")
    cur = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (SID,))
    s = dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))
    assert (s["source"], s["project_path"], s["cli_version"], s["turn_count"], s["tool_call_count"]) == (
        "claude-code",
        "/srv/app",
        "0.2.93",
        2,
        1,
    )
    assert (s["title"], s["title_source"]) == ("Listing the app files", "summary")
    assert (s["input_tokens"], s["output_tokens"], s["cache_creation_tokens"]) == (20, 10, 200)
    assert s["created_at"] == 1743500000000 and s["ended_at"] == 1743500005000  # seconds and ms both read
    assert conn.execute("SELECT status, result_json FROM agent_tool_calls").fetchone() == (
        "completed",
        '"a.py\\nb.py"',
    )
    stored = {bytes(r[0]) for r in conn.execute("SELECT raw FROM entries")}
    for table, column in (
        ("user_messages", "message"),
        ("assistant_messages", "message"),
        ("user_messages", "tool_use_result"),
    ):
        for (value,) in source.execute(f"SELECT {column} FROM {table} WHERE {column} IS NOT NULL"):
            assert value.encode() in stored  # every row's exact JSON
    source.close()


def test_session_also_in_jsonl_is_not_counted_twice(conn, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    make_store(tmp_path / "claude" / "__store.db").close()
    t = Transcript(tmp_path / "claude" / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    for uuid, parent, mtype, _ts, message, result, _ in messages():
        record = {"type": mtype, "uuid": uuid, "parentUuid": parent, "message": message, "version": "0.2.93"}
        if result is not None:
            record["toolUseResult"] = result
        t.add(record, parent=parent)
    t.write()
    ingest(conn, tmp_path / "claude" / "projects", tmp_path / "claude")
    assert conn.execute("SELECT count(*) FROM source_files").fetchone() == (2,)
    row = conn.execute(
        "SELECT turn_count, message_count, input_tokens, tool_call_count FROM agent_sessions"
    ).fetchone()
    assert row == (2, 5, 20, 1)
