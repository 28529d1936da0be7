"""A record orjson refuses but that is JSON all the same is read, in every agent's format: a lone
surrogate escape (what Node's JSON.stringify writes for a string cut through an emoji), invalid
UTF-8, a number past a double's range. orjson is strict about all three; the standard library reads
them (the text made storable), and the record is read with that noted instead of dropped, with the
file or session it sits in."""

from __future__ import annotations

import json
import os
import time

import pytest
from threadloom.core.read.archive import file_bytes, verify

from tests.builders import cline, opencode
from tests.builders.copilot import SID as COPILOT_SID
from tests.builders.copilot import copilot_session
from tests.builders.qwen import SID as QWEN_SID
from tests.builders.qwen import qwen_session
from tests.support import ingest

CUT_EMOJI = "cut \ud83d here"  # json.dumps writes it "\ud83d": the lone high half of an emoji


def contents(conn, sid: str) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL AND content IS NOT NULL "
            "ORDER BY seq",
            (sid,),
        )
    ]


def test_a_cline_task_with_a_lone_surrogate_is_read_and_priced_as_it_recorded(conn, tmp_path):
    """One such string made the whole ui_messages.json a record with no meaning: the task was
    untitled, with no message, hidden from `sessions` and search."""
    stream = cline.ui_stream()
    stream[0]["text"] = "fix the cart " + CUT_EMOJI
    folder = cline.task_folder(tmp_path, ui=stream)
    assert b"\\ud83d" in (folder / "ui_messages.json").read_bytes()
    ingest(conn, cline.storage(tmp_path))
    shown = contents(conn, cline.TASK)
    assert shown[0] == "fix the cart cut ? here" and "Reading the cart." in shown
    cost = conn.execute("SELECT cost_usd FROM agent_sessions WHERE id = ?", (cline.TASK,)).fetchone()[0]
    recorded = sum(json.loads(m["text"]).get("cost", 0) for m in stream if m.get("say") == "api_req_started")
    assert recorded > 0 and abs(cost - recorded) < 1e-9  # the cost Cline recorded, not `?`
    path = folder / "ui_messages.json"
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True) and verify(conn).ok


def test_opencode_parts_with_a_lone_surrogate_or_cut_short_keep_their_session(conn, tmp_path):
    """A part orjson refused had no session: its prompt was missing from `show`, and `restore`
    said every file was written while leaving it out."""
    storage = tmp_path / "share" / "opencode" / "storage"
    opencode.write_storage(storage)
    first = (
        storage / "part" / "msg_01" / "prt_01.json"
    )  # the prompt (a folder lists its files in no set order)
    part = json.loads(first.read_text())
    part["text"] = "fix the cart " + CUT_EMOJI
    first.write_text(json.dumps(part))
    cut = storage / "part" / "msg_03" / "prt_99.json"
    cut.write_text('{"id": "prt_99", "messageID": "msg_03", "type": "text", "text": "cut sh')
    old = time.time() - 600  # left unchanged: kept as it is
    os.utime(cut, (old, old))
    ingest(conn, storage)
    assert "fix the cart cut ? here" in contents(conn, opencode.SID)
    restored = tmp_path / "restored"
    from threadloom.core.actions.restore import restore_session

    written = {os.path.basename(f.written_to) for f in restore_session(conn, opencode.SID, restored)}
    assert {first.name, cut.name} <= written
    for original in (first, cut):
        assert next(restored.rglob(original.name)).read_bytes() == original.read_bytes()


def test_copilot_and_qwen_records_with_invalid_utf8_are_read(conn, tmp_path):
    copilot = copilot_session(tmp_path)
    copilot.write_bytes(copilot.read_bytes().replace(b"fix the cart total", b"fix the \xff cart total"))
    qwen = qwen_session(tmp_path)
    qwen.write_bytes(
        b"\xef\xbb\xbf" + qwen.read_bytes().replace(b"fix the cart total", b"fix the \\ud800 cart total")
    )
    ingest(conn, tmp_path / ".copilot")
    ingest(conn, tmp_path / ".qwen")
    assert contents(conn, COPILOT_SID)[0] == "fix the \ufffd cart total"
    assert contents(conn, QWEN_SID)[0] == "fix the ? cart total"
    note = conn.execute(
        "SELECT parse_error FROM entries WHERE session_id = ? AND content LIKE 'fix the%'", (COPILOT_SID,)
    ).fetchone()[0]
    assert note.startswith("decoded leniently")


def test_a_gemini_json_chat_with_a_lone_surrogate_shows_every_message(conn, tmp_path):
    chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    doc = {
        "sessionId": "3739ef95-0000-4000-8000-000000000002",
        "projectHash": "ab" * 32,
        "startTime": "2026-01-16T18:34:00.000Z",
        "lastUpdated": "2026-01-16T18:34:10.000Z",
        "messages": [
            {
                "id": "m1",
                "timestamp": "2026-01-16T18:34:01.000Z",
                "type": "user",
                "content": "Hello " + CUT_EMOJI,
            },
            {"id": "m2", "timestamp": "2026-01-16T18:34:02.000Z", "type": "gemini", "content": "Hi there"},
            {
                "id": "m3",
                "timestamp": "2026-01-16T18:34:03.000Z",
                "type": "user",
                "content": "bye",
                "n": 1e400,
            },
        ],
    }
    path = chats / "session-2026-01-16T18-34-3739ef95.json"
    path.write_text(json.dumps(doc, indent=2).replace("Infinity", "1e400"))
    ingest(conn, tmp_path / "gemini")
    assert contents(conn, doc["sessionId"]) == ["Hello cut ? here", "Hi there", "bye"]


# ---------------------------------------------------------------------- known by a damaged first line

FIRST_LINE_READERS = {
    # agent: (builder, the log whose first line is damaged, the folder ingested, the session)
    "pi": ("tests.builders.pi:pi_sessions", "*.jsonl", ".pi", "5b1c7f7e-2a4d-4c1e-9b55-0c2f4e6b8a10"),
    "factory-droid": (
        "tests.builders.droid:droid_sessions",
        "*.jsonl",
        ".factory",
        "2c179b50-6f1e-4c53-9a0e-3d8f1b2c4a55",
    ),
    "copilot-cli": ("tests.builders.copilot:copilot_session", "events.jsonl", ".copilot", COPILOT_SID),
    "kimi-cli": (
        "tests.builders.kimi:kimi_session",
        "context.jsonl",
        ".kimi",
        "0f9a4c1e-5b7d-4e2a-9c3b-8d1e2f3a4b5c",
    ),
}


@pytest.mark.parametrize("agent", FIRST_LINE_READERS)
@pytest.mark.parametrize("damage", ["cut short", "a byte no UTF-8 has"])
def test_a_log_known_by_its_first_line_is_read_when_that_line_is_damaged(conn, tmp_path, agent, damage):
    """pi, Droid, Copilot CLI and Kimi know their logs by the first record: a crash that cut it, or
    a byte no UTF-8 has in it, left the whole file unread ("no agent's records in its first lines")
    though every line after it was the agent's."""
    import importlib

    builder, pattern, folder, sid = FIRST_LINE_READERS[agent]
    module, name = builder.split(":")
    getattr(importlib.import_module(module), name)(tmp_path)
    logs = sorted(p for p in (tmp_path / folder).rglob(pattern) if not p.name.endswith(".settings.json"))
    log = next(
        (p for p in logs if sid in str(p)), logs[0]
    )  # the session's own (a folder is listed in no set order)
    first, rest = log.read_bytes().split(b"\n", 1)
    damaged = first[: len(first) // 2] if damage == "cut short" else first[:-1] + b', "note": "caf\xe9"}'
    log.write_bytes(damaged + b"\n" + rest)
    ingest(conn, tmp_path / folder)
    assert conn.execute("SELECT agent FROM source_files WHERE path = ?", (str(log),)).fetchone() == (agent,)
    assert len(contents(conn, sid)) >= 2
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(log),)).fetchone()[0]
    assert file_bytes(conn, fid) == (log.read_bytes(), True)
