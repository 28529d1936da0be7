"""Cursor: state.vscdb databases, cursor-agent store.db and transcripts, built here, plus the corpus."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.cursor import CHAT_DATA, CursorAdapter, tag_time
from threadloom.core.cli import main
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.cursor import (
    CHILD,
    COMPOSER,
    GONE,
    INLINE_A,
    INLINE_B,
    LEGACY,
    WORKSPACE,
    bubble,
    dumps,
    inline_era_workspace,
    install,
    make_db,
    transcript_lines,
    user_dir,
)
from tests.support import CORPUS, ingest


def session(conn: sqlite3.Connection, sid: str) -> dict:
    cur = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (sid,))
    row = cur.fetchone()
    assert row is not None, sid
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def shown(conn: sqlite3.Connection, sid: str) -> list[tuple]:
    return conn.execute(
        "SELECT role, content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
    ).fetchall()


def rows_are_stored_exactly(conn: sqlite3.Connection, source: sqlite3.Connection) -> None:
    """Every chat row read: its key as one record, its value's exact bytes right after it."""
    fid = conn.execute(
        "SELECT id FROM source_files WHERE path LIKE '%.vscdb' ORDER BY path LIKE '%globalStorage%' DESC"
    ).fetchone()[0]
    stored = [
        bytes(r[0])
        for r in conn.execute("SELECT raw FROM entries WHERE source_file_id = ? ORDER BY byte_offset", (fid,))
    ]
    keys = {raw: i for i, raw in enumerate(stored) if raw.startswith((b"composerData:", b"bubbleId:"))}
    assert keys
    for key, value in source.execute(
        "SELECT key, value FROM cursorDiskKV WHERE key LIKE 'composerData:%' OR key LIKE 'bubbleId:%'"
    ):
        i = keys[key.encode()]
        if value is None:
            continue
        raw = value if isinstance(value, bytes) else value.encode()
        joined = b""
        for part in stored[i + 1 :]:
            joined += part
            if len(joined) >= len(raw):
                break
        assert joined == raw, key


def test_global_database_composers_bubbles_tools_tokens(conn, tmp_path):
    user, source = install(tmp_path)
    ingest(conn, user)
    s = session(conn, COMPOSER)
    assert (
        s["source"],
        s["title"],
        s["project_path"],
        s["model"],
        s["turn_count"],
        s["tool_call_count"],
    ) == ("cursor", "Fix the checkout", "/home/dev/shop app", "claude-4.5-sonnet", 2, 1)
    assert [c for _, c in shown(conn, COMPOSER)] == [
        "fix the checkout total",
        "Looking at cart.py",
        None,
        "Fixed.",
        "and add a test",
        "an unreferenced bubble",
    ]
    assert conn.execute("SELECT thinking FROM entries WHERE uuid = ?", (f"{COMPOSER}:a1",)).fetchone() == (
        "the rounding is off",
    )
    call = conn.execute(
        "SELECT id, tool_name, status, params_json, result_json FROM agent_tool_calls"
    ).fetchone()
    assert (
        call[:3] == ("toolu_1", "run_terminal_cmd", "completed")
        and "pytest -q" in call[3]
        and "3 passed" in call[4]
    )
    assert (s["input_tokens"], s["output_tokens"]) == (1200, 80)
    child = session(conn, CHILD)
    assert (child["kind"], child["is_subagent"], child["parent_session_id"], child["agent_type"]) == (
        "subagent",
        1,
        COMPOSER,
        "explore",
    )
    legacy = session(conn, LEGACY)
    assert (legacy["title"], legacy["turn_count"]) == ("Inline era", 1)
    assert [c for _, c in shown(conn, LEGACY)] == ["old style question", "old style answer"]
    # the bubble of a deleted composer is kept but belongs to no session; other key families are not read
    assert conn.execute(
        "SELECT session_id, subtype FROM entries WHERE content = 'from a deleted composer'"
    ).fetchone() == (None, "no-composer")
    assert conn.execute("SELECT count(*) FROM agent_sessions WHERE id = ?", (GONE,)).fetchone() == (0,)
    assert conn.execute(
        "SELECT count(*) FROM entries WHERE CAST(raw AS TEXT) LIKE 'checkpointId:%'"
    ).fetchone() == (0,)
    rows_are_stored_exactly(conn, source)
    source.close()
    from threadloom.core.ingest.ledger import rebuild_derived

    query = "SELECT id, turn_count, message_count, input_tokens, parent_session_id, project_path FROM agent_sessions ORDER BY id"
    before = conn.execute(query).fetchall()
    rebuild_derived(conn)  # replayed from the stored records alone, it converges
    assert conn.execute(query).fetchall() == before


def test_database_is_read_from_its_wal_without_being_touched(conn, tmp_path):
    user, source = install(tmp_path, wal=True)  # the writer stays open: its rows are only in the WAL
    folder = user / "globalStorage"
    assert (folder / "state.vscdb-wal").stat().st_size > 0
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    ingest(conn, user)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert session(conn, COMPOSER)["turn_count"] == 2
    # a change that so far lives only in the WAL is seen on the next run
    source.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", bubble("u3", 1, "one more thing"))
    source.execute(
        "UPDATE cursorDiskKV SET value = ? WHERE key = ?",
        (
            dumps(
                {
                    "_v": 10,
                    "composerId": COMPOSER,
                    "name": "Fix the checkout",
                    "createdAt": 1760000000000,
                    "fullConversationHeadersOnly": [
                        {"bubbleId": b} for b in ("u1", "a1", "t1", "srv-9", "nul", "u2", "u3")
                    ],
                    "subComposerIds": [CHILD],
                }
            ),
            f"composerData:{COMPOSER}",
        ),
    )
    source.commit()
    ingest(conn, user)
    s = session(conn, COMPOSER)
    assert (s["turn_count"], s["input_tokens"]) == (3, 1200)
    assert shown(conn, COMPOSER)[-2:] == [("user", "one more thing"), ("assistant", "an unreferenced bubble")]
    source.close()


def test_workspace_database_legacy_chat_tabs_and_composer_folders(conn, tmp_path, capsys):
    user = user_dir(tmp_path)
    old = "1234abcd"
    ws = user / "workspaceStorage" / old
    chat = {
        "tabs": [
            {
                "tabId": "tab-1",
                "chatTitle": "Explain the parser",
                "lastSendTime": 1700000000000,
                "bubbles": [
                    {"type": "user", "id": "b1", "text": "what does parse() do?"},
                    {"type": "ai", "id": "b2", "text": "It tokenizes.", "modelType": "gpt-4"},
                ],
            },
            {"bubbles": [{"type": "user", "text": "second tab"}], "tabId": "tab-2"},
        ]
    }
    make_db(
        ws / "state.vscdb",
        items=[
            ("workbench.panel.aichat.view.aichat.chatdata", dumps(chat)),
            ("composer.composerData", dumps({"allComposers": [{"type": "head", "composerId": COMPOSER}]})),
            ("aiService.prompts", dumps([{"text": "what does parse() do?", "commandType": 4}])),
        ],
    ).close()
    (ws / "workspace.json").write_text(dumps({"folder": "file:///srv/parser"}))
    make_db(
        user / "globalStorage" / "state.vscdb",
        kv=[
            (
                f"composerData:{COMPOSER}",
                dumps(
                    {
                        "composerId": COMPOSER,
                        "name": "No workspace id",
                        "fullConversationHeadersOnly": [{"bubbleId": "u1"}],
                    }
                ),
            ),
            bubble("u1", 1, "hello"),
        ],
    ).close()
    ingest(conn, user)
    tab = session(conn, "cursor-chat:tab-1")
    assert (tab["title"], tab["project_path"], tab["turn_count"], tab["model"]) == (
        "Explain the parser",
        "/srv/parser",
        1,
        "gpt-4",
    )
    assert shown(conn, f"cursor-chat:{old}#2") == [("user", "second tab")]  # its id comes after its bubbles
    # `show` takes that id whole, though 'SESSION#2' is also how it is asked for a session's message #2
    conn.commit()
    assert main(["show", f"cursor-chat:{old}#2", "--db", str(tmp_path / "ledger.db")]) == 0
    assert "second tab" in capsys.readouterr().out
    seq = conn.execute(
        "SELECT min(seq) FROM entries WHERE session_id = ?", (f"cursor-chat:{old}#2",)
    ).fetchone()[0]
    assert (
        main(["show", f"cursor-chat:{old}#2#{seq}", "--db", str(tmp_path / "ledger.db")]) == 0
    )  # its message
    assert "second tab" in capsys.readouterr().out
    assert (
        session(conn, COMPOSER)["project_path"] == "/srv/parser"
    )  # found through the workspace's composer list
    assert {r[0] for r in conn.execute("SELECT agent FROM source_files")} == {"cursor"}


def item_rows_are_stored_exactly(conn: sqlite3.Connection, path: Path, keys: tuple[str, ...]) -> None:
    """A workspace database read gives back each row read, its key then its value, byte for byte."""
    from threadloom.core.read.archive import file_bytes

    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    found = dict(source.execute("SELECT key, value FROM ItemTable"))
    source.close()
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    expected = b"".join(k.encode() + found[k].encode() for k in keys)
    assert file_bytes(conn, fid) == (expected, True)


def test_workspace_composers_of_the_inline_era(conn, tmp_path):
    """A late-2024 workspace keeps its composers' messages inline in `composer.composerData`: each
    composer is a session (its name, creation time, messages in order), not hidden behind the
    prompt history, and the value is stored in records that give it back exactly."""
    path = inline_era_workspace(tmp_path)
    ingest(conn, user_dir(tmp_path))
    a, b = session(conn, INLINE_A), session(conn, INLINE_B)
    assert (a["source"], a["title"], a["created_at"], a["project_path"], a["turn_count"]) == (
        "cursor",
        "create settings page",
        1731815068736,
        "/home/dev/shop app",
        2,
    )
    assert shown(conn, INLINE_A) == [
        ("user", "create a settings page"),
        ("assistant", "I'll create settings.page.ts"),
        ("user", "add an API key field"),
    ]
    # its fields written after its messages are still its own
    assert (b["title"], b["created_at"]) == ("rename route", 1731900000000)
    assert shown(conn, INLINE_B) == [("user", "rename the route"), ("assistant", "Renamed.")]
    sessions = {r[0] for r in conn.execute("SELECT id FROM agent_sessions")}
    assert sessions == {INLINE_A, INLINE_B}  # the prompts are those chats again; a head alone is none
    item_rows_are_stored_exactly(conn, path, ("composer.composerData", "aiService.prompts"))


def test_chat_tabs_keep_their_own_time_written_after_their_messages(conn, tmp_path):
    """The chat panel writes a tab's `lastSendTime` after its bubbles: each tab has its own time,
    not the one of the tab before it (the first had none, the last's was lost)."""
    ws = user_dir(tmp_path) / "workspaceStorage" / WORKSPACE

    def tab(tab_id: str, question: str, sent: int) -> dict:
        return {
            "tabId": tab_id,
            "chatTitle": f"Tab {tab_id}",
            "bubbles": [{"type": "user", "id": f"{tab_id}-u", "text": question}],
            "lastSendTime": sent,
            "tabState": "chat",
        }

    chat = {
        "tabs": [
            tab("a", "qa", 1731818231743),
            {"tabId": "empty", "bubbles": [], "lastSendTime": 1731800000000},
            tab("b", "qb", 1731814419726),
            tab("c", "qc", 1731783988261),
        ],
        "selectedTabId": "a",
        "chatDataVersion": 1,
    }
    make_db(ws / "state.vscdb", items=[(CHAT_DATA, json.dumps(chat))]).close()
    ingest(conn, user_dir(tmp_path))
    times = conn.execute(
        "SELECT id, created_at, ended_at FROM agent_sessions WHERE turn_count > 0 ORDER BY id"
    )
    assert times.fetchall() == [
        ("cursor-chat:a", 1731818231743, 1731818231743),
        ("cursor-chat:b", 1731814419726, 1731814419726),
        ("cursor-chat:c", 1731783988261, 1731783988261),
    ]
    assert [shown(conn, f"cursor-chat:{t}") for t in "abc"] == [[("user", f"q{t}")] for t in "abc"]
    item_rows_are_stored_exactly(conn, ws / "state.vscdb", (CHAT_DATA,))


def test_a_bubble_is_timed_by_its_wall_clock_times_only(conn, tmp_path):
    """Cursor 1.x writes a bubble's `timingInfo.clientStartTime` as ms since the window opened
    (8830804.6): that put the answer in April 1970 and the session's duration below zero. The
    bubble's time is its first wall-clock time; a bubble with none is timed by its composer."""
    composer = {
        "_v": 9,
        "composerId": COMPOSER,
        "name": "Hello and greetings",
        "createdAt": 1757793253359,
        "fullConversationHeadersOnly": [{"bubbleId": "u1", "type": 1}, {"bubbleId": "a1", "type": 2}],
    }
    timing = {
        "clientStartTime": 8830804.600000001,
        "clientRpcSendTime": 1757793969852,
        "clientSettleTime": 1757793971776,
        "clientEndTime": 1757793971776,
    }
    make_db(
        user_dir(tmp_path) / "globalStorage" / "state.vscdb",
        kv=[
            (f"composerData:{COMPOSER}", dumps(composer)),
            bubble("u1", 1, "hello", timingInfo={"clientStartTime": 8830000.5}),
            bubble("a1", 2, "Hello! How can I help?", timingInfo=timing),
        ],
    ).close()
    ingest(conn, user_dir(tmp_path))
    times = conn.execute(
        "SELECT content, timestamp FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq",
        (COMPOSER,),
    )
    assert times.fetchall() == [("hello", None), ("Hello! How can I help?", 1757793969852)]
    s = session(conn, COMPOSER)
    assert (s["created_at"], s["ended_at"]) == (1757793253359, 1757793969852)


def test_a_cursor_1_read_file_call_names_its_file_target_file(conn, tmp_path):
    """Cursor 1.x's read_file names its file `targetFile`: the call's line showed its raw JSON."""
    from threadloom.core.read.calls import tool_summary

    tool = {
        "name": "read_file",
        "toolCallId": "toolu_r",
        "rawArgs": dumps({"targetFile": "src/app.ts", "shouldReadEntireFile": True}),
        "status": "completed",
    }
    composer = {"composerId": COMPOSER, "fullConversationHeadersOnly": [{"bubbleId": "r1"}]}
    make_db(
        user_dir(tmp_path) / "globalStorage" / "state.vscdb",
        kv=[(f"composerData:{COMPOSER}", dumps(composer)), bubble("r1", 2, "", toolFormerData=tool)],
    ).close()
    ingest(conn, user_dir(tmp_path))
    assert [tool_summary(c) for m in messages(conn, COMPOSER) for c in m.tool_calls] == ["src/app.ts"]


def test_a_workspace_json_is_kept_as_a_side_file_not_said_unread(conn, tmp_path):
    """The `workspace.json` beside a workspace database names its project: it was listed as a
    file no reader takes ("not a session document"); it is kept whole as the database's side file."""
    from threadloom.core.ingest.pipeline import unclaimed
    from threadloom.core.read.archive import file_bytes, is_database

    path = inline_era_workspace(tmp_path)
    side = path.parent / "workspace.json"
    conn.execute("INSERT INTO source_roots (path) VALUES (?)", (str(user_dir(tmp_path)),))
    ingest(conn, user_dir(tmp_path))
    kinds = dict(conn.execute("SELECT path, kind FROM source_files"))
    assert kinds == {str(side): "side", str(path): "database"}
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(side),)).fetchone()[0]
    assert file_bytes(conn, fid) == (side.read_bytes(), True) and not is_database(conn, fid)
    assert unclaimed(conn) == []
    assert session(conn, INLINE_A)["project_path"] == "/home/dev/shop app"


def test_cursor_agent_store_db(conn, tmp_path):
    chat = tmp_path / ".cursor" / "chats" / "46d408964d3ec2a21d9a23d01b13d82c" / "agent-1"
    chat.mkdir(parents=True)
    store = sqlite3.connect(chat / "store.db")
    store.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    store.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    meta = {
        "agentId": "agent-1",
        "name": "List files",
        "mode": "default",
        "createdAt": 1775522590321,
        "lastUsedModel": "claude-4-sonnet",
        "latestRootBlobId": "ff",
    }
    store.execute("INSERT INTO meta VALUES ('0', ?)", (dumps(meta).encode().hex(),))
    store.executemany(
        "INSERT INTO blobs VALUES (?, ?)",
        [
            (
                "aa",
                dumps(
                    {"role": "user", "content": [{"type": "text", "text": "<user_query>\nls\n</user_query>"}]}
                ).encode(),
            ),
            (
                "bb",
                dumps({"role": "assistant", "content": [{"type": "text", "text": "Two files."}]}).encode(),
            ),
            ("ff", b"\x0a\x02\xaa\xbb"),  # a tree node, not JSON: kept as it is
        ],
    )
    store.commit()
    store.close()
    (chat / "meta.json").write_text(dumps({"schemaVersion": 1, "cwd": "/home/dev/tools"}))
    ingest(conn, tmp_path / ".cursor")
    s = session(conn, "agent-1")
    assert (s["title"], s["project_path"], s["model"], s["turn_count"]) == (
        "List files",
        "/home/dev/tools",
        "claude-4-sonnet",
        1,
    )
    assert shown(conn, "agent-1") == [("user", "ls"), ("assistant", "Two files.")]
    assert b"\x0a\x02\xaa\xbb" in {bytes(r[0]) for r in conn.execute("SELECT raw FROM entries")}


def test_cursor_agent_store_db_tool_calls_results_and_reasoning(conn, tmp_path):
    """A chat store's message blobs use the AI SDK's blocks: `tool-call` (`toolCallId`, `toolName`,
    `args`), a `tool` message of `tool-result` blocks (`toolCallId`, `result`, Cursor's own
    `providerOptions`), and `reasoning`: calls joined to their results, reasoning as thinking."""
    chat = tmp_path / ".cursor" / "chats" / "46d408964d3ec2a21d9a23d01b13d82c" / "agent-2"
    chat.mkdir(parents=True)
    store = sqlite3.connect(chat / "store.db")
    store.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    store.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    meta = {"agentId": "agent-2", "name": "Fix tests", "createdAt": 1775522590321, "latestRootBlobId": "ff"}
    store.execute("INSERT INTO meta VALUES ('0', ?)", (dumps(meta).encode().hex(),))
    call = {
        "type": "tool-call",
        "toolCallId": "toolu_01",
        "toolName": "Shell",
        "args": {"command": "pytest -q"},
    }
    read = {"type": "tool-call", "toolCallId": "toolu_02", "toolName": "Read", "input": {"path": "a.py"}}
    blobs = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": [{"type": "text", "text": "<user_query>\nfix the tests\n</user_query>"}]},
        {
            "role": "assistant",
            "id": "m1",
            "content": [
                {"type": "reasoning", "text": "Run the suite first.", "providerOptions": {"cursor": {}}},
                {"type": "text", "text": "Running the tests."},
                call,
                read,
            ],
        },
        {
            "role": "tool",
            "id": "m2",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "toolu_01",
                    "toolName": "Shell",
                    "result": "1 failed",
                    "isError": True,
                    "providerOptions": {"cursor": {"highLevelToolCallResult": {"exitCode": 1}}},
                },
                {
                    "type": "tool-result",
                    "toolCallId": "toolu_02",
                    "toolName": "Read",
                    "output": {"type": "text", "value": "def total(): ..."},
                },
            ],
        },
        {"role": "assistant", "id": "m3", "content": [{"type": "text", "text": "Fixed the total."}]},
    ]
    store.executemany(
        "INSERT INTO blobs VALUES (?, ?)", [(f"b{i}", dumps(b).encode()) for i, b in enumerate(blobs)]
    )
    store.commit()
    store.close()
    ingest(conn, tmp_path / ".cursor")
    calls = conn.execute(
        "SELECT id, tool_name, status, params_json, result_json FROM agent_tool_calls "
        "WHERE session_id = 'agent-2' ORDER BY id"
    ).fetchall()
    assert [(c[0], c[1], c[2]) for c in calls] == [
        ("toolu_01", "Shell", "failed"),
        ("toolu_02", "Read", "completed"),
    ]
    assert json.loads(calls[0][3]) == {"command": "pytest -q"} and json.loads(calls[0][4]) == "1 failed"
    assert json.loads(calls[1][3]) == {"path": "a.py"} and json.loads(calls[1][4]) == "def total(): ..."
    rows = conn.execute(
        "SELECT role, content, thinking FROM entries WHERE session_id = 'agent-2' AND seq IS NOT NULL ORDER BY seq"
    ).fetchall()
    assert ("assistant", "Running the tests.", "Run the suite first.") in rows
    assert all("Run the suite first." not in (content or "") for _, content, _ in rows)
    s = session(conn, "agent-2")
    assert (s["turn_count"], s["tool_call_count"]) == (1, 2)


def test_cursor_agent_transcripts_append_and_subagents(conn, tmp_path):
    home = tmp_path / ".cursor"
    sid = "0a1b2c3d-0000-4000-8000-000000000001"
    folder = home / "projects" / "home-dev-shop" / "agent-transcripts" / sid
    folder.mkdir(parents=True)
    path = folder / f"{sid}.jsonl"
    lines = transcript_lines()
    path.write_text("".join(json.dumps(x) + "\n" for x in lines[:2]))
    meta = home / "chats" / "0f0f" / sid / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(dumps({"schemaVersion": 1, "cwd": "/home/dev/shop"}))
    (folder / "subagents").mkdir()
    (folder / "subagents" / "child-1.jsonl").write_text(
        json.dumps({"role": "user", "message": {"content": [{"type": "text", "text": "look"}]}}) + "\n"
    )
    assert not ADAPTERS["claude-code"].claims(path)
    ingest(conn, home / "projects")
    with open(path, "a") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines[2:]))
    ingest(conn, home / "projects")
    s = session(conn, sid)
    assert (s["source"], s["project_path"], s["turn_count"], s["title"]) == (
        "cursor",
        "/home/dev/shop",
        1,
        "run the tests",
    )
    assert conn.execute("SELECT status, result_json FROM agent_tool_calls").fetchone() == (
        "completed",
        '"3 passed"',
    )
    assert ("system", "Provider Error: upstream timeout") in shown(conn, sid)
    child = session(conn, "child-1")
    assert (child["kind"], child["parent_session_id"]) == ("subagent", sid)
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    from threadloom.core.read.archive import file_bytes

    assert file_bytes(conn, fid) == (path.read_bytes(), True)


def test_cursor_agent_3_prompts_carry_their_local_time(conn, tmp_path):
    """cursor-agent 3.x writes `<timestamp>…</timestamp>` before `<user_query>`: the prompt is the
    query, and the tag its time (the transcript's only one)."""
    sid = "0a1b2c3d-0000-4000-8000-000000000002"
    folder = tmp_path / ".cursor" / "projects" / "x-p" / "agent-transcripts" / sid
    folder.mkdir(parents=True)
    text = "<timestamp>Friday, Sep 4, 2026, 2:21 AM (UTC+8)</timestamp>\n<user_query>\ncheck the sleep\n</user_query>"
    lines = [
        {"role": "user", "message": {"content": [{"type": "text", "text": text}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "Looking."}]}},
        {"type": "turn_ended", "status": "success"},
    ]
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ingest(conn, tmp_path / ".cursor")
    s = session(conn, sid)
    assert (s["title"], s["created_at"]) == ("check the sleep", 1788459660000)  # 2026-09-03 18:21 UTC
    assert tag_time("Monday, December 1, 2025, 11:05 PM (UTC-3:30)") == 1764642900000
    assert tag_time("yesterday") is None


@pytest.mark.parametrize(
    ("slug", "read", "folder"),
    [
        (
            "c-Users-dev-Documents-IDAHO-VAULT",
            r"C:\Users\dev\Documents\IDAHO-VAULT\agent.sh",
            r"C:\Users\dev\Documents\IDAHO-VAULT",
        ),
        # a folder named by punctuation alone (`!`) adds nothing to a slug: not the project itself
        (
            "c-Users-dev-Documents-IDAHO-VAULT",
            r"C:\Users\dev\Documents\IDAHO-VAULT\!\README 1.md",
            r"C:\Users\dev\Documents\IDAHO-VAULT",
        ),
        ("home-dev-my-app", "/home/dev/my-app/_/notes.md", "/home/dev/my-app"),
        ("home-dev-my-app", "/home/dev/my-app/src/app.py", "/home/dev/my-app"),
        ("home-dev-other", "/home/dev/my-app/src/app.py", None),  # no path in its folder: none guessed
    ],
)
def test_a_cursor_transcript_without_its_chat_s_meta(conn, tmp_path, slug, read, folder):
    """A cursor-agent transcript whose `chats/*/meta.json` is not beside it (Cursor's own agent, a
    backup) had no project at all, and a branch diff Cursor sent as a line of its own (@Branch) was
    counted a prompt, a turn of hundreds of lines (as a real 2026 transcript holds them). The
    project is the folder its slug names, once a call names a path in it; the diff is context."""
    sid = "35a82dfe-d4ab-4238-8135-000000000002"
    where = tmp_path / ".cursor" / "projects" / slug / "agent-transcripts" / sid
    where.mkdir(parents=True)
    diff = "<git_diff_from_branch_to_main>\ndiff --git a/x.md b/x.md\n</git_diff_from_branch_to_main>"
    lines = [
        {
            "role": "user",
            "message": {"content": [{"type": "text", "text": "<user_query>\nfix it\n</user_query>"}]},
        },
        {"role": "user", "message": {"content": [{"type": "text", "text": diff}]}},
        {
            "role": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "name": "ReadFile", "input": {"path": read}},
                ]
            },
        },
        {
            "role": "user",
            "message": {"content": [{"type": "text", "text": "<user_query>\nthanks\n</user_query>"}]},
        },
    ]
    (where / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ingest(conn, tmp_path / ".cursor")
    s = session(conn, sid)
    assert (s["turn_count"], s["project_path"]) == (2, folder)
    shown = [(m.role, m.content) for m in messages(conn, sid) if m.content]
    assert ("user", diff) in shown  # kept and shown, as what it is


def test_claims_and_roots(tmp_path, monkeypatch):
    adapter = CursorAdapter()
    vscode = tmp_path / ".config" / "Code" / "User" / "globalStorage" / "state.vscdb"
    make_db(vscode).close()
    plain = sqlite3.connect(vscode)
    plain.execute("DROP TABLE cursorDiskKV")  # VS Code's own database has only ItemTable
    plain.commit()
    plain.close()
    assert not adapter.claims(vscode)  # VS Code's own state database is not Cursor's
    assert adapter.claims(vscode, explicit=True)  # named on the command line, its tables decide
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    assert adapter.default_roots() == [
        tmp_path / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb"
    ]
    assert adapter.stat_paths(vscode) == [Path(str(vscode) + "-wal")]


# ---------------------------------------------------------------------- corpus

CURSOR = CORPUS / "cursor"


@pytest.mark.corpus
@pytest.mark.skipif(not CURSOR.is_dir(), reason="../shared/corpus/cursor is not present")
def test_corpus_cursor(tmp_path):
    conn = db.connect(tmp_path / "corpus.db")
    files = sorted(
        p for p in CURSOR.rglob("*") if p.suffix in (".vscdb", ".db", ".jsonl") and p.stat().st_size
    )
    assert len(files) >= 15
    report = run_ingest(conn, files, include_defaults=False)
    assert not report.errors, report.errors
    agents = dict(conn.execute("SELECT path, agent FROM source_files"))
    for path in files:
        assert agents[str(path.resolve())] in ("cursor", "cursor-agent"), path
        if path.suffix == ".jsonl":  # line formats: every line stored, byte for byte
            from threadloom.core.read.archive import file_bytes

            fid = conn.execute(
                "SELECT id FROM source_files WHERE path = ?", (str(path.resolve()),)
            ).fetchone()[0]
            assert file_bytes(conn, fid) == (path.read_bytes(), True), path
    vscdb = next(p for p in files if p.suffix == ".vscdb")
    source = sqlite3.connect(f"file:{vscdb}?mode=ro&immutable=1", uri=True)
    rows_are_stored_exactly(conn, source)
    source.close()
    composer = session(conn, "00000000-0016-4016-8016-000000000016")
    assert (composer["turn_count"], composer["tool_call_count"], composer["project_path"]) == (
        2,
        2,
        "/fixture/v016/project",
    )
    assert [c for _, c in shown(conn, "00000000-0016-4016-8016-000000000016")][:3] == [
        "Synthetic question alpha.",
        "Composer owns the synthetic collision identity.",
        "Synthetic answer beta.\n```ts\nconst fixtureValue = 16;\n```",
    ]
    store = session(conn, "a1b2c3d4-e5f6-7890-abcd-ef1234567890")
    assert (store["title"], store["model"]) == ("Test Session", "claude-4-sonnet")
    turns = dict(conn.execute("SELECT id, turn_count FROM agent_sessions"))
    assert (turns["test-session"], turns["large"], turns["small"]) == (2, 3, 2)
    assert turns["aaaaaaaa-0000-0000-0000-000000000001"] == 1
    assert (
        session(conn, "aaaaaaaa-0000-0000-0000-000000000001")["project_path"]
        == "/mnt/d/1_yuyu_proj/cursor-history"
    )
    conn.close()


STORE_ROOT = CURSOR / "S2thend__cursor-history" / "tests" / "fixtures" / "store-root"


@pytest.mark.corpus
@pytest.mark.skipif(not STORE_ROOT.is_dir(), reason="../shared/corpus/cursor's store-root is not present")
def test_corpus_cursor_agent_chat_is_dated_after_its_chat_folder_is_gone(conn, tmp_path):
    """A real cursor-agent home (its transcript, its chat's meta.json): the meta.json is kept, and a
    rebuild after cursor-agent deleted the chat's folder gives the date and folder a fresh read gave."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    home = tmp_path / ".cursor"
    shutil.copytree(STORE_ROOT, home)
    sid = "aaaaaaaa-0000-0000-0000-000000000001"
    ingest(conn, home / "projects")
    fresh = session(conn, sid)
    assert (fresh["created_at"], fresh["project_path"]) == (
        1783737832293,
        "/mnt/d/1_yuyu_proj/cursor-history",
    )
    shutil.rmtree(home / "chats")
    rebuild_derived(conn)
    rebuilt = session(conn, sid)
    assert (rebuilt["created_at"], rebuilt["project_path"]) == (fresh["created_at"], fresh["project_path"])


def test_a_workspace_that_only_kept_its_prompts(conn, tmp_path):
    """A workspace database copied without the global one (or from before composers were kept
    there) holds only its prompt history: that is a session, its prompts timed by the generations."""
    ws = user_dir(tmp_path) / "workspaceStorage" / WORKSPACE
    prompts = [
        {"text": "add a dark mode", "commandType": 4},
        {"text": "rename foo to bar", "commandType": 2},
        {"text": "add a dark mode", "commandType": 4},
    ]
    generations = [
        {
            "unixMs": 1762046253035,
            "generationUUID": "g1",
            "type": "composer",
            "textDescription": "add a dark mode",
        },
        {
            "unixMs": 1762046300000,
            "generationUUID": "g2",
            "type": "cmdk",
            "textDescription": "rename foo to bar",
        },
        {
            "unixMs": 1762046400000,
            "generationUUID": "g3",
            "type": "composer",
            "textDescription": "add a dark mode",
        },
        {"unixMs": 1762046500000, "generationUUID": "g4", "type": "cmdk"},
    ]
    make_db(
        ws / "state.vscdb",
        items=[("aiService.prompts", dumps(prompts)), ("aiService.generations", dumps(generations))],
    ).close()
    (ws / "workspace.json").write_text(dumps({"folder": "file:///home/dev/shop%20app"}))
    ingest(conn, user_dir(tmp_path))
    sid = f"cursor-prompts:{WORKSPACE}"
    s = session(conn, sid)
    assert (s["source"], s["project_path"], s["turn_count"], s["title"]) == (
        "cursor",
        "/home/dev/shop app",
        3,
        "add a dark mode",
    )
    assert (s["created_at"], s["ended_at"]) == (1762046253035, 1762046500000)
    assert shown(conn, sid) == [("user", p["text"]) for p in prompts]
    times = conn.execute(
        "SELECT timestamp FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
    )
    assert [t for (t,) in times] == [1762046253035, 1762046300000, 1762046400000]
    # beside a global database that holds the chats, the prompts are that history again: no session
    install(tmp_path / "full")
    full_ws = user_dir(tmp_path / "full") / "workspaceStorage" / WORKSPACE
    make_db(full_ws / "state.vscdb", items=[("aiService.prompts", dumps(prompts))]).close()
    ingest(conn, user_dir(tmp_path / "full"))
    assert (
        conn.execute("SELECT count(*) FROM agent_sessions WHERE id LIKE 'cursor-prompts:%'").fetchone()[0]
        == 1
    )


def test_a_cursor_agent_transcript_resumes_and_forks_with_agent_s_own_command(
    conn, tmp_path, fake_agents, sandbox
):
    """Its session is shown as Cursor's, whose IDE chats have no command: resume refused it ("only
    from Cursor's own chat history") and fork pointed at that refusal. The reader of its file,
    cursor-agent, resumes it."""
    from threadloom.core.actions.fork import plan_fork, resume_plan

    from tests.support import run_printed

    sid = "0a1b2c3d-0000-4000-8000-000000000003"
    folder = tmp_path / ".cursor" / "projects" / "home-dev-shop" / "agent-transcripts" / sid
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in transcript_lines()))
    ingest(conn, tmp_path / ".cursor" / "projects")
    assert session(conn, sid)["source"] == "cursor"
    plan = resume_plan(conn, sid)
    assert plan.command.endswith(f"agent --resume {sid}")
    (fake_agents / "agent").write_text((fake_agents / "claude").read_text())
    (fake_agents / "agent").chmod(0o755)
    assert run_printed(plan.command.rsplit(" && ", 1)[-1], fake_agents, sandbox) == [
        ["agent", str(sandbox), "--resume", sid]
    ]
    last = conn.execute(
        "SELECT max(id) FROM entries WHERE session_id = ? AND seq IS NOT NULL", (sid,)
    ).fetchone()[0]
    fork = plan_fork(conn, str(last))
    assert fork.command == plan.command and any("resumes the whole session" in n for n in fork.notes)


def agent_chat(
    home: Path, sid: str, *, meta_json: dict | None = None, store_meta: dict | None = None
) -> Path:
    """cursor-agent's chat folder `chats/<md5(cwd)>/<id>/`: a `meta.json`, a `store.db` (its `meta`
    row only when given), or both."""
    chat = home / "chats" / "6a4ed208d874bc31c17fb549de8edded" / sid
    chat.mkdir(parents=True)
    if meta_json is not None:
        (chat / "meta.json").write_text(dumps(meta_json))
    store = sqlite3.connect(chat / "store.db")
    store.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    store.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    if store_meta is not None:
        store.execute("INSERT INTO meta VALUES ('0', ?)", (dumps(store_meta).encode().hex(),))
    prompt = {"role": "user", "content": [{"type": "text", "text": "<user_query>\nls\n</user_query>"}]}
    store.execute("INSERT INTO blobs VALUES ('aa', ?)", (dumps(prompt).encode(),))
    store.commit()
    store.close()
    return chat


def test_a_cursor_agent_chat_is_dated_by_what_its_chat_store_holds(conn, tmp_path):
    """A cursor-agent transcript holds no time (but a 3.x prompt's): its chats showed no date, even
    where `meta.json` says when the chat was started (`createdAtMs`), or, with no meta.json, its
    chat store's meta row does (`createdAt`). A chat store with no meta row was no session at all
    (its blobs kept, of none): it is its folder's chat, dated and placed by the meta.json beside it."""
    home = tmp_path / ".cursor"
    dated, stored, bare = (f"0a1b2c3d-0000-4000-8000-00000000001{n}" for n in range(3))
    for sid in (dated, stored):
        folder = home / "projects" / "home-dev-shop" / "agent-transcripts" / sid
        folder.mkdir(parents=True)
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in transcript_lines()))
    # the chat store is read on its own, where it is given: here the transcripts alone are
    agent_chat(
        home, dated, meta_json={"schemaVersion": 1, "createdAtMs": 1783737832293, "cwd": "/home/dev/shop"}
    )
    agent_chat(home, stored, store_meta={"agentId": stored, "name": "x", "createdAt": 1775522590321})
    ingest(conn, home / "projects")
    assert [
        (session(conn, sid)["created_at"], session(conn, sid)["project_path"]) for sid in (dated, stored)
    ] == [
        (1783737832293, "/home/dev/shop"),
        (1775522590321, None),
    ]
    agent_chat(home, bare, meta_json={"schemaVersion": 1, "createdAtMs": 1783737900000, "cwd": "/srv/tools"})
    ingest(conn, home / "chats")
    s = session(conn, bare)
    assert (s["source"], s["created_at"], s["project_path"], s["title"]) == (
        "cursor",
        1783737900000,
        "/srv/tools",
        "ls",
    )


@pytest.mark.parametrize("read", ["transcript", "chat store"])
def test_a_cursor_agent_chat_s_meta_json_is_kept_for_a_rebuild(conn, tmp_path, read):
    """cursor-agent's chat folder (`chats/<md5(cwd)>/<id>/`) is where a chat's start time and folder
    are read from (`meta.json`), and cursor-agent deletes it with the chat: it was not archived, so a
    rebuild after that (a schema upgrade's, `ingest --rebuild`) gave the session no date and no
    folder. It is kept whole as a side file of the chat, read from the archive by the replay, and
    written back by a restore."""
    from threadloom.core.actions.restore import restore_session
    from threadloom.core.ingest.ledger import rebuild_derived
    from threadloom.core.read.archive import verify
    from threadloom.core.read.side_files import side_files

    from tests.support import stored_bytes

    home = tmp_path / ".cursor"
    sid = "0a1b2c3d-0000-4000-8000-000000000020"
    if read == "transcript":
        folder = home / "projects" / "home-dev-shop" / "agent-transcripts" / sid
        folder.mkdir(parents=True)
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in transcript_lines()))
    chat = agent_chat(
        home, sid, meta_json={"schemaVersion": 1, "createdAtMs": 1783737832293, "cwd": "/home/dev/shop"}
    )
    meta = (chat / "meta.json").read_bytes()
    ingest(conn, home / ("projects" if read == "transcript" else "chats"))
    read_then = session(conn, sid)
    assert (read_then["created_at"], read_then["project_path"]) == (1783737832293, "/home/dev/shop")
    assert stored_bytes(conn, chat / "meta.json") == meta
    assert [(Path(f.path).name, f.what) for f in side_files(conn, sid)] == [("meta.json", "chat-meta")]
    for name in ("meta.json", "store.db"):
        (chat / name).unlink()  # cursor-agent deleted the chat
    chat.rmdir()
    rebuild_derived(conn)
    rebuilt = session(conn, sid)
    assert (rebuilt["created_at"], rebuilt["project_path"], rebuilt["title"]) == (
        1783737832293,
        "/home/dev/shop",
        read_then["title"],
    )
    assert verify(conn).ok
    written = {Path(f.written_to).name: f for f in restore_session(conn, sid, tmp_path / "back")}
    assert Path(written["meta.json"].written_to).read_bytes() == meta
    assert written["meta.json"].complete


def test_a_workspace_s_folder_is_read_from_the_archive_by_a_rebuild(conn, tmp_path):
    """A workspace's `workspace.json` names the folder of its chats, and of the global database's
    composers its composer list names: a replay (a schema upgrade's, `ingest --rebuild`) read them
    from the disk, so once the workspace's folder was gone the chats came back with no folder. It
    reads them as the archive holds them; an archive that holds none still reads the disk's."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    user = user_dir(tmp_path)
    ws = user / "workspaceStorage" / "1234abcd"
    chat = {"tabs": [{"tabId": "tab-1", "chatTitle": "Explain", "bubbles": [{"type": "user", "text": "hi"}]}]}
    make_db(
        ws / "state.vscdb",
        items=[
            (CHAT_DATA, dumps(chat)),
            ("composer.composerData", dumps({"allComposers": [{"type": "head", "composerId": COMPOSER}]})),
        ],
    ).close()
    (ws / "workspace.json").write_text(dumps({"folder": "file:///srv/parser"}))
    make_db(
        user / "globalStorage" / "state.vscdb",
        kv=[
            (
                f"composerData:{COMPOSER}",
                dumps({"composerId": COMPOSER, "name": "No workspace id", "fullConversationHeadersOnly": []}),
            ),
        ],
    ).close()
    inline_era_workspace(tmp_path)
    ingest(conn, user)
    sids = ("cursor-chat:tab-1", COMPOSER, INLINE_A, INLINE_B)
    folders = {sid: session(conn, sid)["project_path"] for sid in sids}
    assert folders == {
        "cursor-chat:tab-1": "/srv/parser",
        COMPOSER: "/srv/parser",
        INLINE_A: "/home/dev/shop app",
        INLINE_B: "/home/dev/shop app",
    }
    older = db.connect(tmp_path / "older.db")
    try:
        ingest(older, user)
        older.execute(  # an archive from before workspace.json was kept: the disk's is read
            "DELETE FROM entries WHERE source_file_id IN (SELECT id FROM source_files WHERE kind = 'side')"
        )
        older.execute("DELETE FROM source_files WHERE kind = 'side'")
        rebuild_derived(older)
        assert {sid: session(older, sid)["project_path"] for sid in sids} == folders
    finally:
        older.close()
    shutil.rmtree(user / "workspaceStorage")
    rebuild_derived(conn)
    assert {sid: session(conn, sid)["project_path"] for sid in sids} == folders


def test_a_workspace_s_prompts_stay_no_session_once_the_global_database_is_gone(conn, tmp_path):
    """A workspace's prompt history is a session only where nothing else holds its chats: beside a
    global database holding composers it is none. A replay asked the disk's global database, so
    once it was gone (moved, or another machine's) the prompts became a session of their own."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    install(tmp_path)
    ws = user_dir(tmp_path) / "workspaceStorage" / WORKSPACE
    make_db(
        ws / "state.vscdb", items=[("aiService.prompts", dumps([{"text": "hi", "commandType": 4}]))]
    ).close()
    ingest(conn, user_dir(tmp_path))
    before = sorted(r[0] for r in conn.execute("SELECT id FROM agent_sessions"))
    assert not [sid for sid in before if sid.startswith("cursor-prompts:")]
    shutil.rmtree(user_dir(tmp_path) / "globalStorage")
    rebuild_derived(conn)
    assert sorted(r[0] for r in conn.execute("SELECT id FROM agent_sessions")) == before


def test_a_cursor_agent_chat_s_store_date_is_read_from_the_archive_by_a_rebuild(conn, tmp_path):
    """A transcript's chat with no meta.json is dated by its chat store's meta row: a replay read
    the store from the disk, so once cursor-agent deleted the chat the transcript's first message
    lost its time. It reads the store as the archive holds it."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    home = tmp_path / ".cursor"
    sid = "0a1b2c3d-0000-4000-8000-000000000011"
    folder = home / "projects" / "home-dev-shop" / "agent-transcripts" / sid
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in transcript_lines()))
    agent_chat(home, sid, store_meta={"agentId": sid, "name": "x", "createdAt": 1775522590321})
    ingest(conn, home / "projects", home / "chats")
    times = (
        "SELECT e.line_number, e.timestamp FROM entries e JOIN source_files f ON f.id = e.source_file_id "
        "WHERE f.path LIKE '%.jsonl' ORDER BY e.byte_offset"
    )
    read_then = conn.execute(times).fetchall()
    assert read_then[0] == (1, 1775522590321)
    shutil.rmtree(home / "chats")
    rebuild_derived(conn)
    assert conn.execute(times).fetchall() == read_then
    assert session(conn, sid)["created_at"] == 1775522590321
