"""Gemini CLI chat recordings, JSON and JSONL eras, written here, plus the corpus samples."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.gemini import GeminiAdapter
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes
from threadloom.core.store import db

from tests.builders import gemini as gemini_files
from tests.builders.gemini import PROJECT, SID, chats, jsonl_session, meta, reply, shell, user, write_jsonl
from tests.support import CORPUS, ingest

gemini = gemini_files.gemini  # the fixture: a Gemini CLI home


def session(conn: sqlite3.Connection, sid: str = SID) -> dict:
    cur = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (sid,))
    row = cur.fetchone()
    assert row is not None, sid
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def round_trips(conn: sqlite3.Connection, path: Path) -> bool:
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path.resolve()),)).fetchone()[0]
    data, contiguous = file_bytes(conn, fid)
    return contiguous and data == path.read_bytes()


def visible(conn: sqlite3.Connection, sid: str = SID) -> list[tuple]:
    return conn.execute(
        "SELECT role, content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
    ).fetchall()


def test_jsonl_upserts_tools_tokens_and_project(conn, gemini):
    path = write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", jsonl_session())
    ingest(conn, gemini / "tmp")
    s = session(conn)
    assert (s["source"], s["project_path"], s["model"], s["turn_count"], s["title"]) == (
        "gemini",
        PROJECT,
        "gemini-3-flash-preview",
        2,
        "list the files",
    )
    shown = visible(conn)
    assert [c for _, c in shown if c] == [
        "list the files",
        "Let me look.",
        "Two files.",
        "and the tests?",
        "None yet.",
        "Request cancelled.",
    ]
    calls = conn.execute("SELECT id, status, result_json, entry_id FROM agent_tool_calls").fetchall()
    assert len(calls) == 1 and calls[0][1] == "completed" and "a.py" in calls[0][2]
    assert conn.execute("SELECT seq FROM entries WHERE id = ?", (calls[0][3],)).fetchone()[0] is not None
    # cached tokens are part of `input`; thoughts are output
    assert (s["input_tokens"], s["cache_read_tokens"], s["output_tokens"]) == (567 + 100, 11502, 167 + 5)
    assert round_trips(conn, path)
    assert GeminiAdapter().default_roots() == [gemini / "tmp"]


def test_a_message_rewritten_with_its_calls_is_one_message(conn, gemini):
    """gemini-cli writes a message again, whole, each time its tool calls change: one message per id,
    its thoughts shown once and its calls on it, every line still stored."""
    lines = jsonl_session()
    path = chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl"
    write_jsonl(path, lines[:4])  # g1 as first written: text and thoughts, no calls yet
    ingest(conn, gemini)
    write_jsonl(path, lines)  # its rewrites (call added, call done, tokens) come in a later read
    ingest(conn, gemini)
    ids = {x["id"] for x in lines if "id" in x}
    shown = conn.execute(
        "SELECT id, thinking FROM entries WHERE session_id = ? AND seq IS NOT NULL", (SID,)
    ).fetchall()
    assert len(shown) == len(ids) == 6
    assert sum(1 for _, thinking in shown if thinking) == 3  # g1, g2, g3: once each
    first_g1 = conn.execute("SELECT id FROM entries WHERE uuid = ?", (f"{SID}:g1",)).fetchone()[0]
    assert conn.execute("SELECT entry_id, status FROM agent_tool_calls WHERE id = 't1'").fetchone() == (
        first_g1,
        "completed",
    )
    assert conn.execute("SELECT count(*) FROM entries WHERE session_id = ?", (SID,)).fetchone()[0] == len(
        lines
    )
    assert session(conn)["message_count"] == 6
    assert round_trips(conn, path)


def test_rewind_drops_messages_and_branches(conn, gemini):
    lines = [
        meta(),
        user("u1", "first"),
        reply("g1", "one"),
        user("u2", "second"),
        reply("g2", "two"),
        {"$rewindTo": "u2"},
        user("u3", "second, better"),
        reply("g3", "two, better"),
    ]
    write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    ingest(conn, gemini)
    assert session(conn)["branch_count"] == 1
    turns = conn.execute("SELECT id, parent_turn_id FROM agent_turns ORDER BY sequence").fetchall()
    assert [t[0] for t in turns] == [f"{SID}:u1", f"{SID}:u2", f"{SID}:u3"]
    assert turns[1][1] == turns[0][0] == turns[2][1]


def test_set_messages_checkpoint_and_summary_title(conn, gemini):
    lines = [
        meta(),
        user("u1", "long task"),
        reply("g1", "working"),
        {
            "$set": {
                "messages": [user("s1", "Summary of the earlier work: tests added"), reply("g1", "working")]
            }
        },
        {"$set": {"summary": "Add tests to the webshop"}},
        user("u2", "go on"),
        reply("g2", "done"),
    ]
    write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    ingest(conn, gemini)
    s = session(conn)
    assert (s["compaction_count"], s["title"], s["title_source"], s["turn_count"]) == (
        1,
        "Add tests to the webshop",
        "ai-title",
        2,
    )
    assert any("earlier work" in (c or "") for _, c in visible(conn))


def test_the_history_a_chat_starts_with_is_no_compaction(conn, gemini):
    """Gemini CLI (2026-06 on) opens a JSONL chat by setting its history to the session context:
    `$set.messages` that only adds is no compaction; one that drops messages is."""
    context = "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    lines = [
        meta(),
        {"$set": {"messages": [user("c1", context)], "lastUpdated": "2026-04-29T21:39:22.400Z"}},
        user("u1", "Reply with exactly the word: ok"),
        reply("g1", "ok"),
    ]
    write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    ingest(conn, gemini)
    s = session(conn)
    assert (s["compaction_count"], s["turn_count"], s["title"]) == (0, 1, "Reply with exactly the word: ok")
    # the context is Gemini's words to the model: kept (searchable, restorable), not a message
    assert [role for role, _ in visible(conn)] == ["user", "assistant"] and s["message_count"] == 2
    kept = conn.execute("SELECT is_meta, content FROM entries WHERE entry_type = 'set'").fetchall()
    assert kept == [(1, context)]


def test_a_chat_without_its_project_s_marker_takes_its_folder_from_the_session_context(conn, gemini):
    """A chats folder with no `.project_root` and no projects.json entry (copied from another home)
    still names its folder: the session context it starts with lists the workspace directories."""
    folder = gemini / "tmp" / "cwd-2" / "chats"
    context = (
        "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
        "My operating system is: darwin\nThe project's temporary directory is: /Users/ingo/.gemini/tmp/cwd-2\n"
        "- **Workspace Directories:**\n  - /Users/ingo/projects/irrlicht/cwd\n- **Directory Structure:**\n"
        "</session_context>"
    )
    lines = [
        meta(projectHash="0" * 64),
        {"$set": {"messages": [user("c1", context)], "lastUpdated": "2026-04-29T21:39:22.400Z"}},
        user("u1", "Reply with exactly the word: ok"),
        reply("g1", "ok"),
    ]
    write_jsonl(folder / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    ingest(conn, gemini)
    assert session(conn)["project_path"] == "/Users/ingo/projects/irrlicht/cwd"


def test_appended_lines_continue_the_session(conn, gemini, tmp_path):
    lines = jsonl_session()
    path = chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl"
    for cut in (4, 6, 10):
        write_jsonl(path, lines[:cut])
        ingest(conn, gemini)
    write_jsonl(path, lines)
    ingest(conn, gemini)
    fresh = db.connect(tmp_path / "fresh.db")
    ingest(fresh, gemini)
    for sql in (
        "SELECT turn_count, message_count, input_tokens, output_tokens, cache_read_tokens FROM agent_sessions",
        "SELECT id, parent_turn_id, token_count FROM agent_turns ORDER BY id",
        "SELECT id, status FROM agent_tool_calls",
        "SELECT message_id, input_tokens FROM agent_usage ORDER BY 1",
    ):
        assert conn.execute(sql).fetchall() == fresh.execute(sql).fetchall(), sql


def legacy_doc(messages: list[dict], **extra) -> dict:
    return {
        "sessionId": SID,
        "projectHash": hashlib.sha256(PROJECT.encode()).hexdigest(),
        "startTime": "2026-01-16T18:34:00.000Z",
        "lastUpdated": "2026-01-16T18:35:00.000Z",
        "messages": messages,
        **extra,
    }


def write_legacy(path: Path, doc: dict, indent: int | None = 2) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # JSON.stringify(…, null, 2): no final newline; or on one line, minified (another tool's copy)
    path.write_text(json.dumps(doc, indent=indent) if indent else json.dumps(doc, separators=(",", ":")))
    old = time.time() - 7200
    os.utime(path, (old, old))
    return path


def legacy_messages() -> list[dict]:
    return [
        user("u1", "list the files"),
        reply(
            "g1",
            "Here:",
            tools=[shell("t1", "ls", result="a.py", status="success")],
            tokens={"input": 500, "output": 20, "cached": 100, "total": 520},
        ),
        user("u2", "thanks"),
    ]


@pytest.mark.parametrize("indent", [2, None], ids=["indented", "one-line"])
def test_legacy_json_document_is_read_from_its_lines(conn, gemini, indent):
    """An indented chat is read from its lines; one written on one line (minified: its messages
    ran together into one record, untitled, with no tokens) is cut into its messages, read alike."""
    path = write_legacy(
        chats(gemini) / "session-2026-01-16T18-34-5f0e2a8c.json",
        legacy_doc(legacy_messages(), summary="Listing files"),
        indent,
    )
    ingest(conn, gemini)
    s = session(conn)
    assert (s["turn_count"], s["tool_call_count"], s["title"], s["project_path"]) == (
        2,
        1,
        "Listing files",
        PROJECT,
    )
    assert (s["input_tokens"], s["cache_read_tokens"], s["output_tokens"]) == (400, 100, 20)
    assert conn.execute("SELECT status FROM agent_tool_calls").fetchone()[0] == "completed"
    assert round_trips(conn, path)
    # rewritten whole on the next message: read again, nothing doubled
    write_legacy(
        path,
        legacy_doc([*legacy_messages(), reply("g2", "You're welcome.")], summary="Listing files"),
        indent,
    )
    ingest(conn, gemini)
    s = session(conn)
    assert (s["turn_count"], s["message_count"], s["input_tokens"]) == (2, 4, 400)
    assert [c for _, c in visible(conn) if c] == ["list the files", "Here:", "thanks", "You're welcome."]
    assert round_trips(conn, path)


def test_resumed_legacy_session_migrated_to_jsonl_is_not_doubled(conn, gemini):
    folder = chats(gemini)
    write_legacy(folder / "session-2026-01-16T18-34-5f0e2a8c.json", legacy_doc(legacy_messages()))
    migrated = [
        meta(),
        *legacy_messages(),
        {"$set": {"sessionId": SID}},
        user("u3", "one more"),
        reply("g3", "ok"),
    ]
    write_jsonl(folder / "session-2026-01-16T18-34-5f0e2a8c.jsonl", migrated)
    ingest(conn, gemini)
    s = session(conn)
    assert (s["turn_count"], s["tool_call_count"], s["input_tokens"]) == (3, 1, 400)
    assert [c for _, c in visible(conn) if c] == ["list the files", "Here:", "thanks", "one more", "ok"]


def test_subagent_session_and_hashed_project_dir(conn, gemini, tmp_path):
    digest = hashlib.sha256(b"/srv/api").hexdigest()
    (gemini / "projects.json").write_text(json.dumps({"projects": {"/srv/api": "api"}}))
    folder = gemini / "tmp" / digest / "chats"
    write_jsonl(
        folder / "session-2025-10-01T10-00-5f0e2a8c.jsonl", [meta(projectHash=digest), user("u1", "delegate")]
    )
    child = "9d8c7b6a-0000-4000-8000-000000000001"
    write_jsonl(
        folder / SID / f"{child}.jsonl",
        [
            {**meta(kind="subagent", projectHash=digest), "sessionId": child, "directories": ["/srv/api"]},
            user("c1", "look into the tests"),
            reply("c2", "they pass"),
        ],
    )
    ingest(conn, gemini)
    assert session(conn)["project_path"] == "/srv/api"
    c = session(conn, child)
    assert (c["kind"], c["is_subagent"], c["parent_session_id"], c["project_path"]) == (
        "subagent",
        1,
        SID,
        "/srv/api",
    )


def test_json_era_subagent_and_skill_extraction_chats(conn, gemini):
    """Gemini CLI 2026 backups keep subagent chats as JSON documents in `chats/<parent id>/` (marked
    `"kind": "subagent"`) and its background skill-extraction agent's chats in
    `chats/skill-extraction-<run>/`: both are read, the first linked to its parent session, the
    second a session of its own (no session of the user's started it)."""
    folder = chats(gemini)
    write_legacy(folder / "session-2026-01-16T18-34-5f0e2a8c.json", legacy_doc(legacy_messages()))
    child = "9d8c7b6a-0000-4000-8000-000000000002"
    sub = write_legacy(
        folder / SID / f"{child}.json",
        {
            **legacy_doc([user("c1", "find the failing test"), reply("c2", "test_cart fails")]),
            "sessionId": child,
            "kind": "subagent",
            "directories": [PROJECT],
        },
    )
    run = "skill-extraction-1a2b3c4d"
    skills = write_legacy(
        folder / run / "e0e0e0e0-0000-4000-8000-000000000003.json",
        {
            **legacy_doc(
                [user("s1", "Extract reusable skills from the provided sessions."), reply("s2", "none")]
            ),
            "sessionId": "e0e0e0e0-0000-4000-8000-000000000003",
            "kind": "subagent",
        },
    )
    (folder / SID / "notes.json").write_text('{"not": "a chat"}')  # another file there: left alone
    ingest(conn, gemini)
    agents = dict(conn.execute("SELECT path, agent FROM source_files"))
    assert agents[str(sub.resolve())] == agents[str(skills.resolve())] == "gemini"
    assert str((folder / SID / "notes.json").resolve()) not in agents
    c = session(conn, child)
    assert (c["kind"], c["is_subagent"], c["parent_session_id"], c["project_path"]) == (
        "subagent",
        1,
        SID,
        PROJECT,
    )
    assert [x for _, x in visible(conn, child)] == ["find the failing test", "test_cart fails"]
    s = session(conn, "e0e0e0e0-0000-4000-8000-000000000003")
    assert (s["is_subagent"], s["parent_session_id"], s["agent_type"], s["agent_id"]) == (
        0,
        None,
        "skill-extraction",
        run,
    )
    assert s["message_count"] == 2 and s["project_path"] == PROJECT
    assert round_trips(conn, sub) and round_trips(conn, skills)


def test_detection_of_gemini_files_by_content(tmp_path, conn):
    folder = tmp_path / "loose"
    write_jsonl(folder / "exported.jsonl", [meta(), user("u1", "hi")])
    assert not ADAPTERS["claude-code"].claims(folder / "exported.jsonl")
    run_ingest(conn, [folder], include_defaults=False)
    assert conn.execute("SELECT agent FROM source_files").fetchall() == [("gemini",)]


def test_a_qwen_code_chat_of_gemini_s_json_shape_is_qwen_code_s(tmp_path, conn, gemini):
    """Qwen Code, a fork of Gemini CLI, kept its chats of 2025 in Gemini's JSON shape (replies typed
    "qwen"): in its `.qwen` folder or copied elsewhere they are read as Qwen Code's, never as Gemini's,
    and Gemini's own JSON chat beside them is read as Gemini's, as before."""
    from tests.builders.qwen import JSON_SID, qwen_json_chat

    ours = write_legacy(
        chats(gemini) / "session-2026-01-16T18-34-5f0e2a8c.json", legacy_doc(legacy_messages())
    )
    theirs = qwen_json_chat(tmp_path, folder_named=False)
    copy = tmp_path / "backup" / theirs.name
    copy.parent.mkdir()
    copy.write_bytes(theirs.read_bytes())
    assert not any(GeminiAdapter().claims(path) for path in (theirs, copy))
    run_ingest(conn, [gemini, tmp_path / ".qwen", copy.parent], include_defaults=False)
    agents = dict(conn.execute("SELECT path, agent FROM source_files WHERE kind != 'side'").fetchall())
    assert agents == {str(ours): "gemini", str(theirs): "qwen-code", str(copy): "qwen-code"}
    assert (session(conn)["source"], session(conn, JSON_SID)["source"]) == ("gemini", "qwen-code")
    assert [c for _, c in visible(conn) if c] == ["list the files", "Here:", "thanks"]
    assert [c for _, c in visible(conn, JSON_SID) if c] == [
        "fix the cart total",
        "I will set it to zero.",
        "Done.",
    ]


def test_a_subagent_chat_outside_a_chats_folder_is_gemini_s(tmp_path, conn):
    """`<uuid>.jsonl` is a Claude Code name too: away from Claude's folders its first line decides."""
    child = "9d8c7b6a-0000-4000-8000-000000000001"
    path = write_jsonl(
        tmp_path / "copied" / f"{child}.jsonl",
        [
            {**meta(kind="subagent"), "sessionId": child},
            user("c1", "look into the tests"),
            reply("c2", "they pass"),
        ],
    )
    assert not ADAPTERS["claude-code"].claims(path)
    run_ingest(conn, [tmp_path / "copied"], include_defaults=False)
    assert conn.execute("SELECT agent FROM source_files").fetchall() == [("gemini",)]
    assert session(conn, child)["message_count"] == 2


# ---------------------------------------------------------------------- corpus

GEMINI = CORPUS / "gemini"


@pytest.mark.corpus
@pytest.mark.skipif(not GEMINI.is_dir(), reason="../shared/corpus/gemini is not present")
def test_corpus_gemini(tmp_path):
    conn = db.connect(tmp_path / "corpus.db")
    files = sorted(p for p in GEMINI.rglob("*") if p.suffix in (".json", ".jsonl"))
    assert len(files) >= 4
    report = run_ingest(conn, files, include_defaults=False)  # each file on its own: detected by content
    assert not report.errors, report.errors
    lines = 0
    for path in files:
        row = conn.execute(
            "SELECT id, agent FROM source_files WHERE path = ?", (str(path.resolve()),)
        ).fetchone()
        assert row is not None and row[1] == "gemini", path
        assert round_trips(conn, path), path
        data = path.read_bytes()
        stored = conn.execute("SELECT count(*) FROM entries WHERE source_file_id = ?", (row[0],)).fetchone()[
            0
        ]
        if path.suffix == ".jsonl":  # a record a line
            assert stored == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        else:  # a JSON-era chat: each message, and the bytes between them
            doc = json.loads(data)
            messages = sum(len(doc.get(key, [])) for key in ("messages", "history"))  # (an early shape's)
            assert stored == 2 * messages + 1 if messages else stored == 1
        lines += stored
    assert report.records_added == lines
    rows = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT id, turn_count, tool_call_count, input_tokens + cache_read_tokens, output_tokens FROM agent_sessions"
        )
    }
    assert len(rows) == len(files)
    assert rows["gemini_stage0_jsonl"] == (1, 1, 11855 + 12069, 81 + 147)
    assert rows["session-2026-01-16T18-34-3739ef95"] == (1, 0, 10, 5)
    assert rows["session-2025-12-16T23-47-b4f17607"][:2] == (2, 2)
    assert rows["schema_drift"][0] == 1
    conn.close()


def test_a_byte_order_mark_before_the_metadata_line(conn, gemini):
    """A file that starts with a UTF-8 BOM: its first line (the session's metadata) is read, and the
    stored bytes keep the mark."""
    path = write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", jsonl_session())
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    ingest(conn, gemini)
    assert (
        conn.execute("SELECT count(*) FROM entries WHERE known = 0 OR parse_error IS NOT NULL").fetchone()[0]
        == 0
    )
    first = "SELECT entry_type FROM entries WHERE entry_type != 'side-file' ORDER BY id LIMIT 1"  # (.project_root)
    assert conn.execute(first).fetchone()[0] == "metadata"
    assert session(conn)["turn_count"] == 2
    assert round_trips(conn, path)


def test_a_one_line_chat_caught_mid_write_waits_for_its_end(conn, gemini):
    """A chat written on one line is read whole: one cut short by its writer is left for the next
    run (its messages would be cut at a point no message ends), then read once it parses."""
    path = chats(gemini) / "session-2026-01-16T18-34-5f0e2a8c.json"
    whole = json.dumps(legacy_doc(legacy_messages(), summary="Listing files"), separators=(",", ":"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(whole[: len(whole) // 2])  # written now: its writer is at work
    ingest(conn, gemini)
    assert conn.execute("SELECT count(*) FROM entries WHERE entry_type != 'side-file'").fetchone()[0] == 0
    path.write_text(whole)
    ingest(conn, gemini)
    assert [c for _, c in visible(conn) if c] == ["list the files", "Here:", "thanks"]
    assert round_trips(conn, path)


def test_a_chat_rewritten_between_indented_and_one_line_reads_as_a_fresh_archive_reads_it(
    conn, gemini, tmp_path
):
    """Indented (Gemini CLI's own), then on one line (another tool's save), then indented again
    (Gemini CLI's next save): each time the archive holds what a fresh one does (a chat first read
    by its lines ran together into one message once rewritten on one line; switching how a file
    is read flip-flopped between machines), its earlier records kept as earlier versions."""
    path = write_legacy(
        chats(gemini) / "session-2026-01-16T18-34-5f0e2a8c.json", legacy_doc(legacy_messages()[:2]), 2
    )
    ingest(conn, gemini)
    for n, indent in enumerate((None, 2)):
        messages = [*legacy_messages(), *([reply("g2", "You're welcome.")] if n else [])]
        write_legacy(path, legacy_doc(messages, summary="Listing files"), indent)
        ingest(conn, gemini)
        fresh = db.connect(tmp_path / f"fresh{n}.db")
        try:
            ingest(fresh, gemini)
            now, then = session(conn), session(fresh)
            assert visible(conn) == visible(fresh)
            assert {**now, "updated_at": None} == {**then, "updated_at": None}
            kinds = "SELECT kind, count(*) FROM source_files WHERE kind != 'version' GROUP BY kind"
            assert conn.execute(kinds).fetchall() == fresh.execute(kinds).fetchall()
        finally:
            fresh.close()
        assert round_trips(conn, path)
    assert [c for _, c in visible(conn) if c] == ["list the files", "Here:", "thanks", "You're welcome."]


def test_a_one_line_chat_never_finished_shows_the_messages_it_holds(conn, gemini):
    """Left cut short for good (its writer gone), a one-line chat is kept whole all the same, and the
    messages it holds whole are read as its messages (they ran together into one prompt)."""
    path = chats(gemini) / "session-2026-01-16T18-34-5f0e2a8c.json"
    whole = json.dumps(legacy_doc(legacy_messages()), separators=(",", ":"))
    write_legacy(path, legacy_doc([]), None)  # old: no writer at work
    path.write_text(whole[: whole.index('"u2"') + 10])  # cut inside the last message
    old = time.time() - 7200
    os.utime(path, (old, old))
    ingest(conn, gemini)
    assert [c for _, c in visible(conn) if c] == ["list the files", "Here:"]
    assert round_trips(conn, path)


@pytest.mark.parametrize(
    "cut", ["}", "]}}", "]]}"], ids=["brace-only", "one-brace-too-many", "bracket-too-many"]
)
def test_a_chat_with_more_closing_brackets_than_opened_is_kept_whole(conn, gemini, cut):
    """A JSON-era chat that does not parse for a bracket closed once too often (an edit or a copy
    gone wrong, its writer long gone) was read as an unfinished chat, whose reader popped a bracket
    nothing had opened: IndexError, the file in error and none of its bytes stored."""
    path = chats(gemini) / "session-2026-01-16T18-34-5f0e2a8c.json"
    whole = json.dumps(legacy_doc(legacy_messages()), separators=(",", ":"))
    write_legacy(path, legacy_doc([]), None)
    path.write_text(cut if cut == "}" else whole[:-2] + cut)
    old = time.time() - 7200
    os.utime(path, (old, old))
    ingest(conn, gemini)
    assert round_trips(conn, path)
    if cut != "}":
        assert "list the files" in [c for _, c in visible(conn) if c]


def test_a_subagent_chat_is_titled_by_its_response(conn, gemini):
    """A subagent's `summary` is its final output, the JSON `{"response": "…"}` cut short: real 2026
    subagent and skill-extraction chats were listed as '{ "response": "Extracted 3 new skills…\\n\\nNew
    skills:\\n- …' where their response's words say what they did."""
    folder = chats(gemini)
    write_legacy(folder / "session-2026-01-16T18-34-5f0e2a8c.json", legacy_doc(legacy_messages()))
    cut = '{\n  "response": "Extracted 2 \\"new\\" skills.\\n\\nNew skills:\\n- **cart-fix**: Procedure ...'
    whole = '{\n  "response": "Memory updated."\n}'
    plain = "Fix the cart total"
    for n, summary in enumerate((cut, whole, plain)):
        sid = f"9d8c7b6a-0000-4000-8000-00000000001{n}"
        doc = legacy_doc([user("c1", "go"), reply("c2", "done")])
        write_legacy(
            folder / SID / f"{sid}.json", {**doc, "sessionId": sid, "kind": "subagent", "summary": summary}
        )
    ingest(conn, gemini)
    titles = [session(conn, f"9d8c7b6a-0000-4000-8000-00000000001{n}")["title"] for n in range(3)]
    assert titles == [
        'Extracted 2 "new" skills.\n\nNew skills:\n- **cart-fix**: Procedure ...',
        "Memory updated.",
        "Fix the cart total",
    ]


def test_a_subagent_response_cut_after_or_inside_an_escape_keeps_its_words(conn, gemini):
    """A response cut short after an escaped backslash (`C:\\\\Users\\\\`) lost that backslash too,
    every backslash at the cut was dropped; one cut inside `\\u00e9` was titled by its JSON, braces
    and all. Only the escape cut in half is left out."""
    folder = chats(gemini)
    cut = {
        "9d8c7b6a-0000-4000-8000-000000000031": '{"response": "Saved to C:\\\\Users\\\\',
        "9d8c7b6a-0000-4000-8000-000000000032": '{"response": "Caf\\u00e',
        "9d8c7b6a-0000-4000-8000-000000000033": '{"response": "Kept a\\\\\\',
    }
    for sid, summary in cut.items():
        doc = legacy_doc([user("c1", "go"), reply("c2", "done")])
        write_legacy(
            folder / SID / f"{sid}.json", {**doc, "sessionId": sid, "kind": "subagent", "summary": summary}
        )
    ingest(conn, gemini)
    assert [session(conn, sid)["title"] for sid in cut] == ["Saved to C:\\Users\\", "Caf", "Kept a\\"]


def test_a_subagent_response_cut_through_a_surrogate_pair_is_stored_whole(conn, gemini):
    """A response cut in half of an emoji's escapes (`\\ud83d` with no low half) decoded to a lone
    surrogate, which no database stores: the whole chat, every byte of it, was left out of the
    archive as an error. Its title has the half replaced; the chat is kept and read."""
    folder = chats(gemini)
    sid = "9d8c7b6a-0000-4000-8000-000000000021"
    doc = legacy_doc([user("c1", "go"), reply("c2", "done")])
    summary = '{"response": "Shipped it \\ud83d'
    path = write_legacy(folder / SID / f"{sid}.json", {**doc, "sessionId": sid, "summary": summary})
    lines = [meta(sessionId=sid + "-b", summary='{"response": "Half \\udc00 done"}'), user("u1", "hi")]
    jsonl = write_jsonl(folder / "session-2026-04-29T21-39-0000abcd.jsonl", lines)
    report = run_ingest(conn, [gemini], include_defaults=False)
    assert report.errors == []
    assert session(conn, sid)["title"] == "Shipped it ?"
    assert session(conn, sid + "-b")["title"] == "Half ? done"
    assert round_trips(conn, path) and round_trips(conn, jsonl)


WINDOWS_PROJECT = "C:\\Users\\Me\\Proj"


def windows_chat(gemini: Path, name: str, sid: str, lines: list[dict]) -> Path:
    """A chat of a project Gemini CLI ran in on Windows: its `.project_root` lowercased, as it writes it."""
    folder = gemini / "tmp" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".project_root").write_text(WINDOWS_PROJECT.lower().replace("proj", name))
    digest = hashlib.sha256(WINDOWS_PROJECT.replace("Proj", name.capitalize()).encode()).hexdigest()
    head = {**meta(projectHash=digest), "sessionId": sid}
    return write_jsonl(folder / "chats" / f"session-2026-04-29T21-39-{sid[:8]}.jsonl", [head, *lines])


def read_call(cid: str, path: str) -> dict:
    return {
        "id": cid,
        "name": "read_file",
        "args": {"file_path": path},
        "status": "success",
        "timestamp": "2026-04-29T21:39:35.364Z",
        "result": [{"functionResponse": {"id": cid, "name": "read_file", "response": {"output": "x"}}}],
    }


def test_a_windows_project_keeps_the_casing_its_log_gives(conn, gemini):
    """On Windows Gemini CLI keeps its project's folder lowercased (`.project_root`, projects.json),
    so `C:\\Users\\Me\\Proj` was listed as `c:\\users\\me\\proj`. Its log names the folder as the user
    wrote it: in the workspace folders (`directories`), and in the paths its tools were given,
    taken when they hash to the session's `projectHash`; a path of other casing that does not is
    not taken, and a chat that names it nowhere keeps the folder as Gemini CLI wrote it."""
    sids = [f"9d8c7b6a-0000-4000-8000-00000000004{n}" for n in range(4)]
    windows_chat(
        gemini, "proj", sids[0], [user("u1", "hi"), {"$set": {"directories": [WINDOWS_PROJECT, "D:\\Other"]}}]
    )
    called = read_call("t1", "C:\\Users\\Me\\Tools\\src\\main.py")
    windows_chat(gemini, "tools", sids[1], [user("u1", "read it"), reply("g1", "ok", tools=[called])])
    miscased = read_call("t1", "c:\\USERS\\me\\Web\\main.py")  # the model's casing, not the folder's
    windows_chat(gemini, "web", sids[2], [user("u1", "read it"), reply("g1", "ok", tools=[miscased])])
    windows_chat(gemini, "bare", sids[3], [user("u1", "hi"), reply("g1", "hello")])
    ingest(conn, gemini)
    found = [(session(conn, sid)["project"], session(conn, sid)["project_path"]) for sid in sids]
    assert found == [
        ("Proj", "C:\\Users\\Me\\Proj"),
        ("Tools", "C:\\Users\\Me\\Tools"),
        ("web", "C:\\users\\me\\web"),
        ("bare", "C:\\users\\me\\bare"),
    ]


def test_each_tool_path_is_hashed_once_while_the_casing_is_looked_for(conn, gemini, monkeypatch):
    """The folder's casing is looked for at every record while unknown: each path a tool was given
    is hashed once, not again at each record after it (a session of 8,000 such calls took 51 s)."""
    from threadloom.core.adapters import gemini as reader

    hashed: list[bytes] = []
    real = hashlib.sha256

    def counting(data: bytes = b"", **kw):  # type: ignore[no-untyped-def]
        hashed.append(data)
        return real(data, **kw)

    monkeypatch.setattr(reader.hashlib, "sha256", counting)
    turns = 200
    lines = []
    for i in range(turns):  # the model's casing, never the folder's: looked for to the end
        lines += [
            user(f"u{i}", "read"),
            reply(f"g{i}", "ok", tools=[read_call(f"t{i}", f"c:\\USERS\\me\\Web\\f{i}.py")]),
        ]
    windows_chat(gemini, "web", "9d8c7b6a-0000-4000-8000-000000000050", lines)
    ingest(conn, gemini)
    assert session(conn, "9d8c7b6a-0000-4000-8000-000000000050")["project_path"] == "C:\\users\\me\\web"
    looked_at = [h for h in hashed if h.lower().startswith(b"c:\\users\\me\\web")]
    assert turns <= len(looked_at) <= 2 * turns, len(looked_at)


@pytest.mark.parametrize("context", [False, True], ids=["no-context", "session-context"])
@pytest.mark.parametrize("target", ["u2", "u1", "gone"])
def test_a_rewind_withdraws_what_it_took_back_even_to_the_first_message(conn, gemini, target, context):
    """`$rewindTo` drops the message named and all after it (all of them when the id is unknown).
    A rewind to a later prompt starts a branch and what it dropped is marked withdrawn; one to the
    first message (or to none) started a tree of its own, which no rewind is read from: what it
    dropped was shown as if the model still had it."""
    from threadloom.core.read.browse import withdrawn_seqs

    # a chat of 2026-06 on begins with its history set to the session context, which a rewind
    # to the first prompt leaves in place
    opening = [
        {"$set": {"messages": [user("c1", "<session_context>\nThis is the Gemini CLI.\n</session_context>")]}}
    ]
    lines = [
        meta(),
        *(opening if context else []),
        user("u1", "first"),
        reply("g1", "one"),
        user("u2", "second"),
        reply("g2", "two"),
        {"$rewindTo": target},
        user("u3", "again"),
        reply("g3", "three"),
    ]
    write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    ingest(conn, gemini)
    gone = withdrawn_seqs(conn, SID)
    shown = conn.execute(
        "SELECT seq, content FROM entries WHERE session_id = ? AND seq IS NOT NULL AND role IN ('user', 'assistant') "
        "ORDER BY seq",
        (SID,),
    ).fetchall()
    taken = {"second", "two"} if target == "u2" else {"first", "one", "second", "two"}
    assert {text for seq, text in shown if seq in gone} == taken
    assert all(seq not in gone for seq, text in shown if text in ("again", "three"))


def test_a_rebuild_places_chats_by_the_project_files_the_archive_kept(conn, gemini, tmp_path):
    """A chat's folder is its project's `.project_root`, or the projects.json entry of its hashed
    folder: both are kept as side files, but a replay (a schema upgrade's, `ingest --rebuild`) read
    them from the disk, so once the project's folder was gone its chats came back with no folder.
    A replay reads them as the archive kept them; an archive that holds none reads the disk's."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", jsonl_session())
    digest = hashlib.sha256(b"/srv/api").hexdigest()
    (gemini / "projects.json").write_text(json.dumps({"projects": {"/srv/api": "api"}}))
    hashed = "9d8c7b6a-0000-4000-8000-000000000002"
    write_jsonl(
        gemini / "tmp" / digest / "chats" / "session-2025-10-01T10-00-9d8c7b6a.jsonl",
        [{**meta(projectHash=digest), "sessionId": hashed}, user("u1", "hello")],
    )
    ingest(conn, gemini)
    folders = {sid: session(conn, sid)["project_path"] for sid in (SID, hashed)}
    assert folders == {SID: PROJECT, hashed: "/srv/api"}
    older = db.connect(tmp_path / "older.db")
    try:
        ingest(older, gemini)
        older.execute(  # an archive from before they were kept: the disk's are read
            "DELETE FROM entries WHERE source_file_id IN (SELECT id FROM source_files WHERE kind = 'side')"
        )
        older.execute("DELETE FROM source_files WHERE kind = 'side'")
        rebuild_derived(older)
        assert {sid: session(older, sid)["project_path"] for sid in folders} == folders
    finally:
        older.close()
    shutil.rmtree(gemini)
    rebuild_derived(conn)
    assert {sid: session(conn, sid)["project_path"] for sid in folders} == folders
