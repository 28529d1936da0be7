"""A record orjson refuses but that is JSON all the same is read, in every agent's format: a lone
surrogate escape (what Node's JSON.stringify writes for a string cut through an emoji), invalid
UTF-8, a number past a double's range. orjson is strict about all three; the standard library reads
them (the text made storable), and the record is read with that noted instead of dropped, with the
file or session it sits in."""

from __future__ import annotations

import json
import os
import time

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
    first = next(storage.glob("part/msg_01/*.json"))
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
