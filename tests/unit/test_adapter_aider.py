"""Aider chat histories: sessions, prompts, replies and token lines written here, plus the corpus file."""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.aider import AiderAdapter
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes
from threadloom.core.store import db

from tests.builders.aider import PREAMBLE, SESSION_1, SESSION_2, history
from tests.support import CORPUS, ingest


def sessions(conn: sqlite3.Connection) -> dict[str, dict]:
    cur = conn.execute("SELECT * FROM agent_sessions ORDER BY created_at IS NOT NULL, created_at")
    names = [d[0] for d in cur.description]
    return {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}


def shown(conn: sqlite3.Connection, sid: str) -> list[tuple]:
    return conn.execute(
        "SELECT role, content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
    ).fetchall()


def test_sessions_prompts_replies_commands_and_tokens(conn, tmp_path):
    path = history(tmp_path / "parser-project", PREAMBLE + SESSION_1 + SESSION_2)
    ingest(conn, tmp_path)
    found = sessions(conn)
    assert len(found) == 3  # the lines before the first header are a session of their own
    pre, first, second = found.values()
    assert pre["id"].endswith(":0") and pre["turn_count"] == 1 and pre["title"] == "finish the parser"
    assert (first["source"], first["project_path"], first["model"], first["cli_version"]) == (
        "aider",
        str(tmp_path / "parser-project"),
        "anthropic/claude-sonnet-4-5",
        "0.86.1",
    )
    stamp = int(datetime(2025, 12, 3, 14, 43, 45).timestamp() * 1000)  # aider writes local time
    assert first["created_at"] == stamp
    assert first["turn_count"] == 2 and first["title"] == "Fix the tokenizer: it drops the last token"
    messages = shown(conn, first["id"])
    assert messages[1] == ("user", "Fix the tokenizer:\nit drops the last token")
    reply = messages[2][1]
    assert messages[2][0] == "assistant" and "#### not a prompt" in reply and "> not aider output" in reply
    assert "> Quoted in the reply, right after text." not in reply  # a quote after a blank line is aider's
    assert ("user", "/run pytest -q") in messages and ("system", "3 passed") in messages
    # 2.4k sent includes the 1.6k written to the cache
    assert (first["input_tokens"], first["cache_creation_tokens"], first["output_tokens"]) == (800, 1600, 104)
    assert (
        second["input_tokens"],
        second["cache_read_tokens"],
        second["output_tokens"],
        second["model"],
    ) == (234, 1000, 12, "gpt-4o-mini")
    fid = conn.execute("SELECT id FROM source_files").fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == path.read_bytes().count(b"\n")


TAG = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"  # aider's reasoning_tags.REASONING_TAG

REASONING = f"""
# aider chat started at 2026-06-18 16:13:30

> Aider v0.86.2  
> Model: openrouter/inclusionai/ring-2.6-1t with ask edit format  

#### review the README  

<{TAG}>



The user wants a review. I should read the README first.

</{TAG}>

The README is clear; two sections need examples.

> Tokens: 343 sent, 271 received. Cost: $0.00020 message, $0.00020 session.  

#### and the tests?  

<{TAG}>

Thinking about the tests, cut off before the end
"""


def test_reasoning_markers_are_thinking_not_text(conn, tmp_path):
    """aider 0.86 writes a reasoning model's thoughts into the history between its
    `<thinking-content-…>` tags: they are the reply's thinking, its text is what follows; a reply
    cut off inside them is all thinking."""
    history(tmp_path / "proj", REASONING)
    ingest(conn, tmp_path)
    sid = [k for k, v in sessions(conn).items() if v["message_count"]][0]
    rows = conn.execute(
        "SELECT role, content, thinking FROM entries WHERE session_id = ? AND role = 'assistant' ORDER BY seq",
        (sid,),
    ).fetchall()
    assert rows == [
        (
            "assistant",
            "The README is clear; two sections need examples.",
            "The user wants a review. I should read the README first.",
        ),
        ("assistant", None, "Thinking about the tests, cut off before the end"),
    ]
    assert all(TAG not in (content or "") + (thinking or "") for _, content, thinking in rows)


def test_appended_lines_continue_their_session(conn, tmp_path):
    text = PREAMBLE + SESSION_1 + SESSION_2
    path = tmp_path / "proj" / ".aider.chat.history.md"
    cuts = [text.index("The loop stops"), text.index("> Tokens: 2.4k"), text.index("#### hi")]
    for cut in cuts:
        history(tmp_path / "proj", text[:cut])
        ingest(conn, tmp_path)
    history(tmp_path / "proj", text)
    ingest(conn, tmp_path)
    fresh = db.connect(tmp_path / "fresh.db")
    ingest(fresh, tmp_path)
    for sql in (
        "SELECT id, turn_count, message_count, input_tokens, output_tokens, title FROM agent_sessions ORDER BY id",
        "SELECT id, parent_turn_id, token_count FROM agent_turns ORDER BY id",
        "SELECT session_id, role, content FROM entries WHERE seq IS NOT NULL ORDER BY session_id, seq",
    ):
        assert conn.execute(sql).fetchall() == fresh.execute(sql).fetchall(), sql
    assert file_bytes(conn, 1) == (path.read_bytes(), True)
    fresh.close()


def test_discovery_is_cheap_and_recognises_files(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    monkeypatch.delenv("AIDER_CHAT_HISTORY_FILE", raising=False)
    adapter = AiderAdapter()
    near = history(tmp_path / "webshop", SESSION_2)
    under_src = history(tmp_path / "src" / "api", SESSION_2)
    deep = history(tmp_path / "a" / "b" / "c", SESSION_2)  # too deep for the default places
    assert adapter.default_roots() == [near, under_src]
    # a --source folder is walked, skipping dependency folders
    history(tmp_path / "a" / "node_modules" / "x", SESSION_2)
    assert [r.path for r in adapter.discover(tmp_path / "a")] == [deep]
    (tmp_path / "notes").mkdir()
    renamed = (
        tmp_path / "notes" / "chat-history.md"
    )  # --chat-history-file: a history-like name is read on a walk
    renamed.write_text(PREAMBLE + SESSION_1)
    loose = tmp_path / "notes" / "monday.md"  # any other name only when named on the command line
    loose.write_text(PREAMBLE + SESSION_1)
    assert adapter.claims(renamed) and adapter.claims(loose, explicit=True) and not adapter.claims(loose)
    q_save = tmp_path / "notes" / "convo.md"
    q_save.write_text('{\n  "conversation_id": "x",\n  "history": []\n}')
    assert not adapter.claims(q_save, explicit=True)
    assert not ADAPTERS["claude-code"].claims(near)


# ---------------------------------------------------------------------- corpus

AIDER = CORPUS / "aider"


@pytest.mark.corpus
@pytest.mark.skipif(not AIDER.is_dir(), reason="../shared/corpus/aider is not present")
def test_corpus_aider(tmp_path):
    conn = db.connect(tmp_path / "corpus.db")
    (path,) = sorted(AIDER.rglob("*.md"))
    report = run_ingest(conn, [path], include_defaults=False)
    assert not report.errors, report.errors
    data = path.read_bytes()
    assert conn.execute("SELECT agent FROM source_files").fetchone() == ("aider",)
    assert report.records_added == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    assert file_bytes(conn, 1) == (data, True)
    headers = data.count(b"\n# aider chat started at ") + data.startswith(b"# aider chat started at ")
    assert headers == 1133
    assert conn.execute("SELECT count(*) FROM agent_sessions WHERE source = 'aider'").fetchone() == (
        headers + 1,
    )
    # every `> Tokens:` line is one request's usage
    token_lines = re.findall(rb"^> Tokens: .*", data, re.M)
    assert conn.execute("SELECT count(*) FROM agent_usage").fetchone() == (len(token_lines),)
    received = 0
    for line in token_lines:
        m = re.search(rb"([\d.,]+)([kKmM]?) received", line)
        n = float(m.group(1).replace(b",", b""))
        received += round(n * {b"k": 1e3, b"m": 1e6}.get(m.group(2).lower(), 1))
    assert conn.execute("SELECT sum(output_tokens) FROM agent_sessions").fetchone() == (received,)
    turns = conn.execute("SELECT sum(turn_count) FROM agent_sessions").fetchone()[0]
    assert 1500 < turns < len(re.findall(rb"^#### ", data, re.M))
    conn.close()


def test_a_byte_order_mark_before_the_first_header(conn, tmp_path):
    path = history(tmp_path / "proj", SESSION_2.lstrip("\n"))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    ingest(conn, tmp_path)
    (only,) = sessions(conn).values()
    assert only["created_at"] == int(datetime(2025, 12, 4, 9, 0, 0).timestamp() * 1000)
    assert (only["model"], only["cli_version"], only["title"]) == ("gpt-4o-mini", "0.86.1", "hi")
    fid = conn.execute("SELECT id FROM source_files").fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)


# ---------------------------------------------------------------------- session ids


def _ids(db_path: Path, *sources: Path) -> set[str]:
    conn = db.connect(db_path)
    try:
        report = run_ingest(conn, list(sources), include_defaults=False)
        assert not report.errors, report.errors
        return {r[0] for r in conn.execute("SELECT id FROM agent_sessions")}
    finally:
        conn.close()


def test_the_same_history_anywhere_has_the_same_session_ids(tmp_path):
    text = PREAMBLE + SESSION_1 + SESSION_2
    here = history(tmp_path / "laptop" / "home" / "parser-project", text)
    moved = history(tmp_path / "box" / "srv" / "src" / "parser-project", text)
    ids = _ids(tmp_path / "here.db", here.parent)
    assert len(ids) == 3 and ids == _ids(tmp_path / "moved.db", moved.parent)
    # a copy beside it under another name (what a fork at a point writes), another repository whose
    # history begins with the same line: sessions of their own, in the same archive
    fork = here.with_name(".aider.fork-1a2b3c4d.chat.history.md")
    fork.write_text(text)
    other = history(tmp_path / "laptop" / "home" / "other-project", text)
    both = _ids(tmp_path / "both.db", here.parent, other.parent)
    assert len(both) == 9
    # appended to, the history keeps its ids
    with here.open("a") as f:
        f.write("\n# aider chat started at 2025-12-05 10:00:00\n\n#### more  \n")
    assert ids < _ids(tmp_path / "here.db", here.parent)


def test_an_archive_read_by_an_older_threadloom_keeps_what_was_written_on_aider_sessions(tmp_path):
    """Before schema 14 Aider's session ids hashed the history's path: the upgrade renames the marks,
    entries, relations and hidden sessions written on them, also for a history gone from the disk
    (the sessions are rebuilt from the archive's records)."""
    from threadloom.core.adapters.aider import path_tag
    from threadloom.core.ingest.pipeline import rebuild_pending
    from threadloom.core.insight import memory

    path = history(tmp_path / "parser-project", PREAMBLE + SESSION_1)
    db_path = tmp_path / "old.db"
    ids = _ids(db_path, path.parent)
    first = next(i for i in ids if not i.endswith(":0"))
    new_prefix = first.rsplit(":", 1)[0] + ":"
    old = first.replace(new_prefix, f"aider:{path_tag(path)}:")
    conn = db.connect(db_path)
    with conn:  # what an older threadloom wrote: on the ids it gave
        conn.execute("UPDATE agent_sessions SET id = ? WHERE id = ?", (old, first))
        memory.add_mark(conn, "tag", memory.Target("session", old, old), "parser", "person:me")
        memory.add_mark(
            conn, "note", memory.Target("message", f"{old}#2", old, f"{old}:60"), "here", "person:me"
        )
        memory.add_entry(
            conn,
            kind="fact",
            scope="session",
            scope_key=old,
            title="Tokens",
            content="one short",
            author="me",
        )
        conn.execute("INSERT INTO hidden (kind, key, hidden_at) VALUES ('session', ?, 0)", (old,))
        conn.execute("PRAGMA user_version = 13")
    conn.close()
    path.unlink()  # gone from the disk since: the archive's records are what the sessions are built from
    conn = db.connect(db_path)
    assert rebuild_pending(conn)
    assert {r[0] for r in conn.execute("SELECT id FROM agent_sessions")} == ids
    assert memory.tags_of(conn, [first]) == {first: ["parser"]}
    (note,) = memory.marks(conn, kind="note")
    assert (note.target_id, note.session_id, note.uuid) == (f"{first}#2", first, f"{first}:60")
    assert [e.scope_key for e in memory.list_entries(conn, scope="session")] == [first]
    assert conn.execute("SELECT key FROM hidden").fetchall() == [(first,)]
    titles = dict(conn.execute("SELECT id, title FROM agent_sessions"))
    assert titles[first] == "Fix the tokenizer: it drops the last token"  # its blocks read whole
    conn.close()


def test_the_empty_line_aider_starts_a_history_with_is_in_its_first_session(conn, tmp_path):
    """Aider writes `\\n# aider chat started at …` at each start, so a history opens with an empty
    line: it belongs to the session that follows, not to an empty session of its own."""
    history(tmp_path / "p", "\n# aider chat started at 2026-04-25 21:40:00\n\n#### Reply with ok  \n\nok\n")
    ingest(conn, tmp_path)
    found = sessions(conn)
    assert [(s["id"].rsplit(":", 1)[1], s["title"], s["message_count"]) for s in found.values()] == [
        ("1", "Reply with ok", 2)
    ]
    assert conn.execute("SELECT count(DISTINCT session_id) FROM entries").fetchone() == (1,)
    # named by the time it was started at, as every other session of a history is
    assert [s["external_id"] for s in found.values()] == ["2026-04-25 21:40:00"]
