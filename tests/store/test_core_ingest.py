"""Zero-loss, incremental ingest: what is stored, what is re-read, and bad input."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import orjson
from threadloom.core.adapters.base import Adapter
from threadloom.core.read.archive import file_bytes
from threadloom.core.store import db

from tests.builders.claude import Transcript, tool_use
from tests.support import SID, ingest


def entries_of(conn: sqlite3.Connection, path: Path) -> list[tuple]:
    return conn.execute(
        "SELECT e.byte_offset, e.line_number, e.raw, e.newline, e.entry_type, e.known, e.parse_error "
        "FROM entries e JOIN source_files f ON f.id = e.source_file_id WHERE f.path = ? ORDER BY e.byte_offset",
        (str(path),),
    ).fetchall()


def file_id(conn: sqlite3.Connection, path: Path) -> int:
    return conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]


def simple_session(
    root: Path, sid: str = "11111111-aaaa-4bbb-8ccc-000000000001", turns: int = 2
) -> Transcript:
    t = Transcript(root / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    for i in range(turns):
        t.user(f"prompt number {i}")
        t.assistant(f"answer number {i}")
    return t


def test_every_record_type_is_kept_including_unknown_and_invalid(conn, tmp_path):
    t = simple_session(tmp_path, turns=1)
    t.raw({"type": "summary", "summary": "A title", "leafUuid": "nowhere"})
    t.raw({"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}, "isSnapshotUpdate": False})
    t.raw({"type": "queue-operation", "operation": "enqueue", "content": "later", "sessionId": t.session_id})
    t.raw({"type": "brand-new-record-type", "payload": {"x": 1}, "sessionId": t.session_id})
    path = t.write()
    with open(path, "ab") as f:
        f.write(b"this is not json\n\n[1, 2]\n")
    ingest(conn, tmp_path / "projects")
    rows = entries_of(conn, path)
    types = [r[4] for r in rows]
    assert types[:2] == ["user", "assistant"]
    assert "brand-new-record-type" in types and "summary" in types and "queue-operation" in types
    unknown = [r for r in rows if r[4] == "brand-new-record-type"][0]
    assert unknown[5] == 0  # kept and marked unknown
    invalid = [r for r in rows if r[4] == "invalid"][0]
    assert invalid[2] == b"this is not json" and invalid[6]
    assert [r[4] for r in rows[-2:]] == ["blank", "non-object"]
    # every line is one row, and the rows give back the file byte for byte
    assert len(rows) == path.read_bytes().count(b"\n")
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()


def test_a_teleported_session_is_known_and_on_its_branch(conn, tmp_path):
    """`claude --teleport` opens a transcript with `teleported-from` (the web session it came from,
    its branch; two real 2026 transcripts are that line alone): it was kept as an unknown record
    and the session had no branch."""
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.raw(
        {
            "type": "teleported-from",
            "remoteSessionId": "session_01VTbXvvfTJP4zM7sQA7UupG",
            "branch": "claude/explain-claude-md-W4jAl",
            "messageCount": 0,
        }
    )
    path = t.write()
    ingest(conn, tmp_path / "projects")
    assert [(r[4], r[5]) for r in entries_of(conn, path)] == [("teleported-from", 1)]
    branch = conn.execute("SELECT git_branch FROM agent_sessions WHERE id = ?", (SID,)).fetchone()[0]
    assert branch == "claude/explain-claude-md-W4jAl"


def test_bad_bytes_are_kept_raw_and_do_not_stop_the_file(conn, tmp_path):
    sid = "22222222-aaaa-4bbb-8ccc-000000000002"
    path = tmp_path / "projects" / "p" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    good = json.dumps(
        {"type": "user", "uuid": "u1", "sessionId": sid, "message": {"role": "user", "content": "hello"}}
    )
    bad_utf8 = (
        b'{"type":"user","uuid":"u2","parentUuid":"u1","sessionId":"'
        + sid.encode()
        + b'","message":{"content":"caf\xe9 \xff"}}'
    )
    surrogate = (
        b'{"type":"user","uuid":"u3","parentUuid":"u2","sessionId":"'
        + sid.encode()
        + b'","message":{"content":"lone \\ud800 here"}}'
    )
    nul_padded = (
        b"\x00\x00\x00"
        + json.dumps(
            {
                "type": "assistant",
                "uuid": "u4",
                "parentUuid": "u3",
                "sessionId": sid,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "after crash"}]},
            }
        ).encode()
    )
    huge_text = "x" * (20 * 1024 * 1024)
    huge = json.dumps(
        {
            "type": "user",
            "uuid": "u5",
            "parentUuid": "u4",
            "sessionId": sid,
            "message": {"role": "user", "content": huge_text},
        }
    ).encode()
    data = b"\n".join([good.encode(), bad_utf8, surrogate, nul_padded, huge]) + b"\n"
    path.write_bytes(data)
    ingest(conn, tmp_path / "projects")
    rows = entries_of(conn, path)
    assert len(rows) == 5
    assert rows[1][2] == bad_utf8 and rows[1][4] == "user" and "leniently" in rows[1][6]
    assert rows[2][4] == "user"
    assert rows[3][2].startswith(b"\x00\x00\x00") and rows[3][4] == "assistant"
    assert len(rows[4][2]) > 20 * 1024 * 1024
    assert file_bytes(conn, file_id(conn, path))[0] == data
    content = conn.execute("SELECT content FROM entries WHERE uuid = 'u2'").fetchone()[0]
    assert content.startswith("caf")


def test_empty_file_and_unreadable_file(conn, tmp_path):
    projects = tmp_path / "projects" / "p"
    projects.mkdir(parents=True)
    (projects / "33333333-aaaa-4bbb-8ccc-000000000003.jsonl").write_bytes(b"")
    (projects / "44444444-aaaa-4bbb-8ccc-000000000004.jsonl").symlink_to(tmp_path / "missing-target.jsonl")
    from threadloom.core.ingest.pipeline import run_ingest

    report = run_ingest(conn, [tmp_path / "projects"], include_defaults=False)
    assert report.files_read == 1
    assert len(report.errors) == 1 and "44444444" in report.errors[0]


def test_a_source_that_is_a_loop_of_links_is_an_error_named_not_a_crash(conn, tmp_path):
    """`--source` given a link that points at itself (or two that point at each other) stopped the
    whole run with a traceback while its path was made absolute; it is an error the report names,
    and the other sources are read."""
    loop = tmp_path / "history.jsonl"
    loop.symlink_to(loop.name)
    t = simple_session(tmp_path, turns=1)
    t.write()
    from threadloom.core.ingest.pipeline import run_ingest

    report = run_ingest(conn, [loop, tmp_path / "projects"], include_defaults=False)
    assert report.records_added == 2
    assert len(report.errors) == 1 and "history.jsonl" in report.errors[0]


def test_truncated_last_line_waits_then_is_read_once_complete(conn, tmp_path):
    t = simple_session(tmp_path, turns=1)
    path = t.write()
    partial = (
        b'{"type":"user","uuid":"late","parentUuid":null,"sessionId":"'
        + t.session_id.encode()
        + b'","message":{"content":"still be'
    )
    with open(path, "ab") as f:
        f.write(partial)
    report = ingest(conn, tmp_path / "projects")
    assert report.records_added == 2
    status = conn.execute(
        "SELECT status, bytes_ingested FROM source_files WHERE path = ?", (str(path),)
    ).fetchone()
    assert status[0] == "waiting" and status[1] == path.stat().st_size - len(partial)
    with open(path, "ab") as f:
        f.write(b'ing written"}}\n')
    report = ingest(conn, tmp_path / "projects")
    assert report.records_added == 1
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()


def test_complete_last_line_without_newline_is_ingested_and_reread_if_extended(conn, tmp_path):
    t = simple_session(tmp_path, turns=1)
    path = t.write(final_newline=False)
    ingest(conn, tmp_path / "projects")
    rows = entries_of(conn, path)
    assert len(rows) == 2 and rows[-1][3] == 0
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()
    # the writer finishes the line and appends another record
    t2 = Transcript(path, t.session_id)
    t2.n = 50
    t2.last = t.last
    t2.user("one more")
    with open(path, "ab") as f:
        f.write(b"\n" + json.dumps(t2.lines[0]).encode() + b"\n")
    report = ingest(conn, tmp_path / "projects")
    assert report.records_added == 1
    rows = entries_of(conn, path)
    assert len(rows) == 3 and rows[1][3] == 1
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()


def test_unchanged_second_run_reads_nothing(conn, tmp_path):
    simple_session(tmp_path).write()
    first = ingest(conn, tmp_path / "projects")
    assert first.files_read == 1 and first.records_added == 4
    second = ingest(conn, tmp_path / "projects")
    assert (second.files_read, second.bytes_read, second.records_added, second.files_skipped) == (0, 0, 0, 1)


def test_append_reads_only_new_records(conn, tmp_path):
    t = simple_session(tmp_path)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    size_before = path.stat().st_size
    before = len(t.lines)
    t.user("third prompt")
    t.assistant("third answer")
    with open(path, "ab") as f:
        for line in t.lines[before:]:
            f.write(json.dumps(line).encode() + b"\n")
    report = ingest(conn, tmp_path / "projects")
    assert report.records_added == 2
    assert report.bytes_read == path.stat().st_size - size_before
    session = conn.execute(
        "SELECT message_count, turn_count FROM agent_sessions WHERE id = ?", (t.session_id,)
    ).fetchone()
    assert session == (6, 3)
    turns = conn.execute(
        "SELECT id, parent_turn_id FROM agent_turns WHERE session_id = ? ORDER BY sequence", (t.session_id,)
    ).fetchall()
    assert turns[2][1] == turns[1][0]  # the appended turn continues the previous one


def test_a_rewritten_or_truncated_file_shows_its_new_bytes_and_keeps_the_old_ones(conn, tmp_path):
    t = simple_session(tmp_path, turns=3)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    ids = [r[0] for r in conn.execute("SELECT id FROM entries ORDER BY byte_offset")]
    # rewrite a line in the middle (same length, different bytes)
    data = path.read_bytes().replace(b"answer number 1", b"ANSWER NUMBER 1")
    path.write_bytes(data)
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    ingest(conn, tmp_path / "projects")
    contents = [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE role = 'assistant' AND seq IS NOT NULL ORDER BY byte_offset"
        )
    ]
    assert contents == ["answer number 0", "ANSWER NUMBER 1", "answer number 2"]
    # the unchanged records are the same rows (ids people copied still name them); the edited
    # one's old bytes are kept, in no session
    current = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM entries WHERE source_file_id = ? ORDER BY byte_offset", (file_id(conn, path),)
        )
    ]
    assert [i for i in current if i in ids] == [i for i in ids if i in current] and len(
        set(ids) & set(current)
    ) == 5
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 7
    # truncate to the first two records
    lines = data.split(b"\n")
    path.write_bytes(b"\n".join(lines[:2]) + b"\n")
    ingest(conn, tmp_path / "projects")
    assert conn.execute("SELECT count(*) FROM entries WHERE seq IS NOT NULL").fetchone()[0] == 2
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 7  # nothing deleted
    assert conn.execute("SELECT message_count, turn_count FROM agent_sessions").fetchone() == (2, 1)
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()


def test_disappeared_source_keeps_its_session_and_restores(conn, tmp_path):
    from threadloom.core.actions.restore import restore_session

    t = simple_session(tmp_path)
    path = t.write()
    original = path.read_bytes()
    ingest(conn, tmp_path / "projects")
    path.unlink()
    report = ingest(conn, tmp_path / "projects")
    assert report.files_gone == 1
    assert conn.execute("SELECT status FROM source_files").fetchone()[0] == "gone"
    assert conn.execute("SELECT message_count FROM agent_sessions").fetchone()[0] == 4
    restored = restore_session(conn, t.session_id, tmp_path / "restored")
    assert len(restored) == 1 and restored[0].complete
    assert Path(restored[0].written_to).read_bytes() == original
    assert Path(restored[0].written_to).relative_to(tmp_path / "restored").parts[0] == "-home-dev-app"


def test_sources_are_never_modified(conn, tmp_path):
    t = simple_session(tmp_path)
    t.add(
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [tool_use("t1", "Bash", command="ls")]},
        }
    )
    path = t.write()
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    ingest(conn, tmp_path / "projects")
    ingest(conn, tmp_path / "projects")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_crash_mid_file_leaves_database_consistent(conn, tmp_path, monkeypatch):
    import threadloom.core.ingest.pipeline as ingest_mod

    simple_session(tmp_path, "55555555-aaaa-4bbb-8ccc-000000000005").write()
    simple_session(tmp_path, "66666666-aaaa-4bbb-8ccc-000000000006").write()
    original = ingest_mod.INSERT_ENTRY
    calls = {"n": 0}

    class Boom(Exception):
        pass

    real_executemany = sqlite3.Connection.executemany

    def flaky(self, sql, rows):
        if sql == original:
            calls["n"] += 1
            if calls["n"] == 2:
                raise Boom("disk on fire")
        return real_executemany(self, sql, rows)

    class FlakyConn(sqlite3.Connection):
        executemany = flaky

    flaky_conn = sqlite3.connect(tmp_path / "ledger.db", factory=FlakyConn, isolation_level=None)
    report = ingest_mod.run_ingest(flaky_conn, [tmp_path / "projects"], include_defaults=False)
    assert len(report.errors) == 1 and "disk on fire" in report.errors[0]
    # the file that failed is kept as bytes, its records unread (the next run reads them)
    assert conn.execute("SELECT count(*), sum(known = 0) FROM entries").fetchone() == (8, 4)
    report = ingest(conn, tmp_path / "projects")  # the next run finishes the job, no duplicates
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 8
    assert conn.execute("SELECT count(*), sum(message_count) FROM agent_sessions").fetchone() == (2, 8)


class _DocAdapter(Adapter):
    """A toy document format: a JSON object {"messages": [...]} cut into exact message slices."""

    name = "toydoc"
    mode = "document"

    def default_roots(self):
        return []

    def claims(self, path):
        return path.suffix == ".toy"

    def discover(self, root):
        from threadloom.core.adapters.base import SourceRef

        for p in sorted(root.rglob("*.toy")):
            yield SourceRef(p, self.name, "transcript", p.parent.name)

    def split(self, data):
        from threadloom.core.adapters.base import RawRecord, SourceIncomplete

        try:
            doc = json.loads(data)
        except ValueError:
            raise SourceIncomplete from None
        records, pos = [], 0
        for msg in doc["messages"]:
            raw = json.dumps(msg).encode()
            at = data.index(raw, pos)
            records.append(RawRecord(pos, len(records) + 1, data[pos:at], newline=False))
            records.append(RawRecord(at, len(records) + 1, raw, newline=False))
            pos = at + len(raw)
        records.append(RawRecord(pos, len(records) + 1, data[pos:], newline=False))
        return [r for r in records if r.raw]

    def normalize(self, rec, ctx):
        from threadloom.core.adapters.base import Record, SessionInfo

        try:
            obj = json.loads(rec.raw)
        except ValueError:
            return Record(entry_type="document-part", session_id=ctx.path.stem)
        if not isinstance(obj, dict) or "role" not in obj:
            return Record(entry_type="document-part", session_id=ctx.path.stem)
        return Record(
            entry_type="message",
            role=obj["role"],
            content=obj["text"],
            is_message=True,
            is_prompt=obj["role"] == "user",
            uuid=f"{ctx.path.stem}:{obj['id']}",
            parent_uuid=f"{ctx.path.stem}:{obj['id'] - 1}" if obj["id"] > 1 else None,
            session_id=ctx.path.stem,
            session=SessionInfo(source=self.name),
        )


def test_document_sources_are_cut_into_exact_records_and_reread_only_when_content_changes(
    conn, tmp_path, monkeypatch
):
    from threadloom.core import adapters

    monkeypatch.setitem(adapters.ADAPTERS, "toydoc", _DocAdapter())
    folder = tmp_path / "docs" / "proj"
    folder.mkdir(parents=True)
    path = folder / "task1.toy"
    doc = {
        "title": "t",
        "messages": [
            {"id": 1, "role": "user", "text": "hello doc"},
            {"id": 2, "role": "assistant", "text": "hi"},
        ],
    }
    path.write_text(json.dumps(doc))
    ingest(conn, tmp_path / "docs")
    raws = [bytes(r[0]) for r in conn.execute("SELECT raw FROM entries ORDER BY byte_offset")]
    assert json.dumps(doc["messages"][0]).encode() in raws
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()
    assert conn.execute("SELECT message_count FROM agent_sessions WHERE id = 'task1'").fetchone()[0] == 2
    # rewritten with the same bytes: not read again
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 5_000_000))
    assert ingest(conn, tmp_path / "docs").records_added == 0
    # caught mid-write: waits, loses nothing, and is read once complete
    full = json.dumps(doc | {"messages": doc["messages"] + [{"id": 3, "role": "user", "text": "more"}]})
    path.write_text(full[: len(full) // 2])
    ingest(conn, tmp_path / "docs")
    assert (
        conn.execute("SELECT status FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
        == "waiting"
    )
    path.write_text(full)
    ingest(conn, tmp_path / "docs")
    assert conn.execute("SELECT message_count FROM agent_sessions WHERE id = 'task1'").fetchone()[0] == 3
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()


def test_same_size_edit_in_the_middle_is_picked_up(conn, tmp_path):
    t = simple_session(tmp_path, turns=400)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    data = path.read_bytes()
    middle = data.index(b"answer number 200")
    path.write_bytes(data[:middle] + b"ANSWER NUMBER 200" + data[middle + 17 :])
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    ingest(conn, tmp_path / "projects")
    assert conn.execute("SELECT count(*) FROM entries WHERE content = 'ANSWER NUMBER 200'").fetchone()[0] == 1
    assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()


def test_append_to_a_large_file_reads_only_the_new_bytes(conn, tmp_path):
    t = simple_session(tmp_path, turns=3000)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    assert path.stat().st_size > 500_000
    with open(path, "ab") as f:
        f.write(
            json.dumps(
                {
                    "type": "user",
                    "uuid": "tail-1",
                    "sessionId": t.session_id,
                    "message": {"role": "user", "content": "late"},
                }
            ).encode()
            + b"\n"
        )
    report = ingest(conn, tmp_path / "projects")
    assert report.records_added == 1 and report.bytes_read < 1000


def test_database_sources_reread_only_when_rows_change_and_verify_by_rows(conn, tmp_path):
    import shutil

    from threadloom.core.actions.restore import restore_session
    from threadloom.core.read.archive import verify

    from tests.support import CORPUS

    found = sorted((CORPUS / "cursor").rglob("*.vscdb")) if (CORPUS / "cursor").is_dir() else []
    if not found:
        import pytest

        pytest.skip("no Cursor database in the corpus")
    folder = tmp_path / "cursor"
    folder.mkdir()
    db_copy = folder / "state.vscdb"
    shutil.copy(found[0], db_copy)
    first = ingest(conn, folder)
    assert first.records_added > 0
    os.utime(db_copy, ns=(time.time_ns(), time.time_ns() + 5_000_000))  # touched, rows unchanged
    assert ingest(conn, folder).records_added == 0
    report = verify(conn)
    assert report.ok and report.records_checked >= first.records_added
    session = conn.execute("SELECT id FROM agent_sessions WHERE message_count > 0 LIMIT 1").fetchone()[0]
    restored = restore_session(conn, session, tmp_path / "out")
    assert restored and restored[0].written_to.endswith(".rows.jsonl")


def test_unchanged_folders_skip_the_adapters_walks_and_new_files_are_still_found(conn, tmp_path, monkeypatch):
    from threadloom.core.adapters.claude import ClaudeAdapter

    simple_session(tmp_path, "77777777-aaaa-4bbb-8ccc-000000000007").write()
    ingest(conn, tmp_path / "projects")
    calls = []
    real = ClaudeAdapter.discover

    def counting(self, root):
        calls.append(root)
        return real(self, root)

    monkeypatch.setattr(ClaudeAdapter, "discover", counting)
    again = ingest(conn, tmp_path / "projects")
    assert calls == [] and again.files_seen == 1 and again.files_skipped == 1
    time.sleep(0.01)
    t = simple_session(tmp_path, "88888888-aaaa-4bbb-8ccc-000000000008")
    t.path = tmp_path / "projects" / "-home-dev-other" / t.path.name  # a new project folder
    t.path.parent.mkdir(parents=True)
    t.write()
    found = ingest(conn, tmp_path / "projects")
    assert calls and found.files_seen == 2 and found.files_read == 1


def test_a_discovery_opens_each_new_file_once_and_the_next_one_looks_again(tmp_path, monkeypatch):
    """Every adapter asks of every file whether it is its own (Claude Code's asks every other one
    too): each file was opened about ten times to read its head, 40% of a first ingest of a folder
    of small sessions. One pass opens each once; the next pass looks again."""
    from threadloom.core.ingest.pipeline import discover

    for n in range(12):
        simple_session(tmp_path, f"{n:08d}-aaaa-4bbb-8ccc-000000000000").write()
    opened: list[str] = []
    real_open = os.open

    def counting(path, *args, **kwargs):
        if os.fspath(path).endswith(".jsonl"):
            opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    found, _ = discover([tmp_path / "projects"])
    assert len(found) == 12 and {a for a, *_ in found.values()} == {"claude-code"}
    assert len(opened) == 12 and len(set(opened)) == 12
    # the pass is over: the next one reads the files as they are then, each once again
    opened.clear()
    again, _ = discover([tmp_path / "projects"])
    assert again.keys() == found.keys() and sorted(opened) == sorted(found)


def test_a_file_written_in_chunks_gives_the_same_ledger(tmp_path, monkeypatch):
    from threadloom.core.store import db

    t = simple_session(tmp_path, turns=7)
    t.write()
    whole = db.connect(tmp_path / "whole.db")
    ingest(whole, tmp_path / "projects")
    monkeypatch.setattr("threadloom.core.ingest.reading.ROWS_PER_CHUNK", 3)
    chunked = db.connect(tmp_path / "chunked.db")
    report = ingest(chunked, tmp_path / "projects")
    assert report.records_added == 14
    for query in (
        "SELECT id, byte_offset, raw, session_id, seq, turn_id, content FROM entries ORDER BY id",
        "SELECT id, message_count, turn_count, first_prompt FROM agent_sessions",
        "SELECT id, parent_turn_id, sequence, last_entry_uuid FROM agent_turns ORDER BY id",
        "SELECT lines_ingested, bytes_ingested FROM source_files",
    ):
        assert whole.execute(query).fetchall() == chunked.execute(query).fetchall(), query


def test_a_file_added_or_a_folder_removed_deep_under_a_root_is_noticed(tmp_path):
    from threadloom.core.ingest.pipeline import folder_snapshot, snapshot_unchanged

    deep = tmp_path / "root" / "project" / "session" / "subagents"
    deep.mkdir(parents=True)
    (tmp_path / "root" / "project" / "kept").mkdir()
    stored = orjson.dumps(folder_snapshot(tmp_path / "root")).decode()
    assert len(orjson.loads(stored)) == 5 and snapshot_unchanged(stored)
    time.sleep(0.01)
    (deep / "agent-1.jsonl").write_text("{}\n")
    assert not snapshot_unchanged(stored)
    stored = orjson.dumps(folder_snapshot(tmp_path / "root")).decode()
    (deep / "agent-1.jsonl").write_text("{}\n{}\n")  # growing a file is the stat check's business
    assert snapshot_unchanged(stored)
    (tmp_path / "root" / "project" / "kept").rmdir()
    assert not snapshot_unchanged(stored)
    assert not snapshot_unchanged("0123abcd") and not snapshot_unchanged(
        None
    )  # an older signature: walk again


def test_ingest_leaves_no_reference_cycles_behind(conn, tmp_path):
    """Ingest runs with the cyclic GC off (PERF.md: 2.6x), so a cycle made per record is never
    freed: one per tool call held ~120 MB by the end of a 1 GB load."""
    import gc

    t = simple_session(tmp_path, turns=3)
    t.assistant(
        tools=[
            tool_use(
                "tu_nested",
                "MultiEdit",
                file_path="a.py",
                edits=[{"old_string": "a", "new_string": {"deep": ["b", "c"]}}],
            )
        ]
    )
    t.tool_result("tu_nested", "done")
    t.write()
    from threadloom.core.insight.cost import prices_version, rates

    rates("claude-opus-4-5"), prices_version()  # loaded once per process: not the ingest's garbage
    gc.collect()
    gc.disable()
    try:
        report = ingest(conn, tmp_path / "projects")
        assert report.records_added == 8
        assert gc.collect() == 0
    finally:
        gc.enable()
    text = conn.execute("SELECT tool_text FROM entries WHERE tool_text LIKE 'MultiEdit%'").fetchone()[0]
    assert text == "MultiEdit a.py a b c"  # the input's strings, depth first, in order


def test_a_new_file_in_one_folder_is_found_without_offering_the_other_folders_files_again(
    conn, tmp_path, monkeypatch
):
    from threadloom.core.adapters.claude import ClaudeAdapter

    def session_in(project: str, sid: str) -> Transcript:
        t = Transcript(tmp_path / "projects" / project / f"{sid}.jsonl", sid)
        t.user("hello")
        t.assistant("hi")
        return t

    session_in("-home-dev-app", "11111111-aaaa-4bbb-8ccc-000000000001").write()
    session_in("-home-dev-api", "22222222-aaaa-4bbb-8ccc-000000000002").write()
    gone = session_in("-home-dev-api", "33333333-aaaa-4bbb-8ccc-000000000003")
    gone.write()
    assert ingest(conn, tmp_path / "projects").files_read == 3
    asked: list[str] = []
    real = ClaudeAdapter.claims

    def claims(self, path):
        asked.append(f"{path.parent.name}/{path.name}")
        return real(self, path)

    monkeypatch.setattr(ClaudeAdapter, "claims", claims)
    time.sleep(0.01)
    session_in("-home-dev-api", "44444444-aaaa-4bbb-8ccc-000000000004").write()  # a new session
    gone.path.unlink()
    report = ingest(conn, tmp_path / "projects")
    assert report.files_read == 1 and report.files_seen == 3 and report.files_gone == 1
    # neither the app folder's file nor the api folder's known one is offered again: only the new name
    assert set(asked) == {"-home-dev-api/44444444-aaaa-4bbb-8ccc-000000000004.jsonl"}
    sessions = {r[0] for r in conn.execute("SELECT id FROM agent_sessions")}
    assert "44444444-aaaa-4bbb-8ccc-000000000004" in sessions and len(sessions) == 4
    asked.clear()
    again = ingest(conn, tmp_path / "projects")  # nothing changed since: no folder is walked
    assert again.files_seen == 3 and again.files_read == 0 and asked == []


def test_a_first_line_with_a_byte_order_mark_is_read_and_kept_as_written(tmp_path):
    """Some editors and Windows tools write UTF-8 with a BOM: the line is parsed (agent, first
    prompt), and the stored bytes still start with the mark, so the file restores exactly."""
    sid = "bbbbbbbb-0000-4000-8000-0000000000b0"
    for folder in (tmp_path / "projects" / "p", tmp_path / "elsewhere"):  # Claude's own folder, and any other
        t = Transcript(folder / f"{sid}.jsonl", sid)
        t.user("fix the flaky test")
        t.assistant("Fixed.")
        path = t.write()
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
        conn = db.connect(tmp_path / f"{folder.name}.db")
        ingest(conn, folder)
        rows = entries_of(conn, path)
        assert rows[0][2].startswith(b"\xef\xbb\xbf") and rows[0][4] == "user" and rows[0][6] is None
        assert file_bytes(conn, file_id(conn, path))[0] == path.read_bytes()
        assert conn.execute(
            "SELECT source, first_prompt FROM agent_sessions WHERE id = ?", (sid,)
        ).fetchone() == ("claude-code", "fix the flaky test")
        conn.close()


def test_blank_text_is_not_an_empty_message(conn, tmp_path):
    """A streamed chunk whose text block is only whitespace (or a blank prompt) shows nothing: it is
    stored, but not shown, counted or searched as a message."""
    t = simple_session(tmp_path, turns=1)
    t.assistant("\n\n", msg_id="msg_blank")
    t.user("   ")
    t.add({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": " \n "}]}})
    t.assistant("Still here.")
    path = t.write()
    ingest(conn, tmp_path / "projects")
    shown = conn.execute("SELECT role, content FROM entries WHERE seq IS NOT NULL ORDER BY seq").fetchall()
    assert shown == [
        ("user", "prompt number 0"),
        ("assistant", "answer number 0"),
        ("assistant", "Still here."),
    ]
    assert conn.execute("SELECT message_count, turn_count FROM agent_sessions").fetchone() == (3, 1)
    assert len(entries_of(conn, path)) == 6


def test_a_prompt_queued_while_the_agent_worked_is_a_prompt(conn, tmp_path):
    """Claude Code 2.1.x writes a prompt typed while the agent is busy only as a `queued_command`
    attachment (shapes of a 2.1.101 session); the next answer replies to it. It is shown, counted
    and searched as the user's prompt; a background task's notice queued the same way is no blank
    message, and a queued command with no words shows nothing."""
    t = simple_session(tmp_path, turns=1)
    t.add({"type": "queue-operation", "operation": "remove"}, chain=False)
    queued = {"type": "queued_command", "prompt": "zebrafinch: the registry is per subsystem"}
    t.add({"type": "attachment", "attachment": {**queued, "source_uuid": "q1", "commandMode": "prompt"}})
    t.assistant("Good, it corrected itself.")
    blocks = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]
    t.add(
        {
            "type": "attachment",
            "attachment": {
                "type": "queued_command",
                "prompt": blocks + [{"type": "text", "text": "and this one"}],
            },
        }
    )
    t.add(
        {
            "type": "attachment",
            "attachment": {"type": "queued_command", "prompt": "  ", "commandMode": "prompt"},
        }
    )
    t.write()
    ingest(conn, tmp_path / "projects")
    shown = conn.execute("SELECT role, content FROM entries WHERE seq IS NOT NULL ORDER BY seq").fetchall()
    assert shown == [
        ("user", "prompt number 0"),
        ("assistant", "answer number 0"),
        ("user", "zebrafinch: the registry is per subsystem"),
        ("assistant", "Good, it corrected itself."),
        ("user", "and this one"),
    ]
    assert conn.execute("SELECT message_count, turn_count FROM agent_sessions").fetchone() == (5, 3)
    from threadloom.core.read.search import search

    assert [h.snippet for h in search(conn, "zebrafinch").hits] == [
        "zebrafinch: the registry is per subsystem"
    ]


def test_each_entries_value_is_written_under_its_own_columns_name():
    """entry_row writes its values by position for speed: each must land in the column of its name."""
    from threadloom.core.adapters.base import RawRecord, Record
    from threadloom.core.ingest.pipeline import ENTRY_COLUMNS, FLAG_COLUMNS, RECORD_COLUMNS, entry_row

    rec = Record(**{name: f"<{name}>" for name in RECORD_COLUMNS})
    rec.known, rec.is_sidechain, rec.is_meta = False, True, False
    row = dict(
        zip(ENTRY_COLUMNS, entry_row(7, 3, RawRecord(40, 2, b"{}", False), rec, 5, "t", 1), strict=True)
    )
    assert {name: row[name] for name in RECORD_COLUMNS} == {name: f"<{name}>" for name in RECORD_COLUMNS}
    assert {name: row[name] for name in FLAG_COLUMNS} == {"known": 0, "is_sidechain": 1, "is_meta": 0}
    assert (row["id"], row["source_file_id"], row["byte_offset"], row["line_number"]) == (7, 3, 40, 2)
    assert (row["raw"], row["newline"], len(row["hash"])) == (b"{}", 0, 32)
    assert (row["seq"], row["turn_id"], row["dup_of"]) == (5, "t", 1)
    assert len(set(ENTRY_COLUMNS)) == len(ENTRY_COLUMNS)


def test_a_windows_folder_is_one_project_whatever_case_its_drive_letter(conn, tmp_path):
    """Claude Code's CLI writes `C:\\…` and its desktop app `c:\\…` for the same folder (a real 2026
    Windows home): one project, named by its last folder wherever the archive is read."""
    from threadloom.core.read.browse import list_projects

    for n, cwd in enumerate(("C:\\Users\\dev\\shop", "c:\\Users\\dev\\shop", "D:/work/api")):
        sid = f"11111111-aaaa-4bbb-8ccc-00000000000{n}"
        t = Transcript(tmp_path / "projects" / f"p{n}" / f"{sid}.jsonl", sid, cwd=cwd)
        t.user(f"prompt {n}")
        t.assistant("ok")
        t.write()
    ingest(conn, tmp_path / "projects")
    projects = {(p.path, p.name, p.session_count) for p in list_projects(conn)}
    assert projects == {("C:\\Users\\dev\\shop", "shop", 2), ("D:/work/api", "api", 1)}


def test_a_subagent_s_meta_written_before_its_log_leaves_the_log_its_file(conn, tmp_path):
    """Claude Code writes a subagent's `.meta.json` when it spawns it, its log a moment later: read
    in between (a watch, the TUI), the session kept the meta as its file, where a fresh archive of
    the same files names the log."""
    sid, agent = "11111111-2222-4333-8444-555555555555", "a0123456789abcdef"
    t = Transcript(tmp_path / "projects" / "-home-dev-shop" / f"{sid}.jsonl", sid)
    t.user("spawn a helper")
    t.write()
    folder = tmp_path / "projects" / "-home-dev-shop" / sid / "subagents"
    folder.mkdir(parents=True)
    (folder / f"agent-{agent}.meta.json").write_text('{"agentType":"general-purpose","description":"look"}')
    ingest(conn, tmp_path / "projects")
    sub = Transcript(folder / f"agent-{agent}.jsonl", sid, isSidechain=True, agentId=agent)
    sub.user("sub task", parent=False)
    sub.write()
    ingest(conn, tmp_path / "projects")
    files = "SELECT s.id, f.path FROM agent_sessions s JOIN source_files f ON f.id = s.source_file_id ORDER BY s.id"
    fresh = db.connect(tmp_path / "fresh.db")
    try:
        ingest(fresh, tmp_path / "projects")
        assert conn.execute(files).fetchall() == fresh.execute(files).fetchall()
        assert {Path(p).name for _, p in conn.execute(files)} == {f"{sid}.jsonl", f"agent-{agent}.jsonl"}
    finally:
        fresh.close()


def test_a_log_seen_empty_is_read_as_its_agent_s_once_written(tmp_path, monkeypatch):
    """pi (as Kimi, Droid and others) makes its session's log, then writes it. Seen empty in between,
    it was taken for an empty Claude Code log and kept so, pi's records read as Claude's (no
    message); and a log no reader takes is not offered again as it grows (its folder keeps its
    mtime). Empty in another agent's folder, it is no one's yet, and its root is walked again until
    it says whose it is."""
    from threadloom.core.adapters import ADAPTERS
    from threadloom.core.ingest.pipeline import run_ingest

    from tests.builders.pi import pi_sessions
    from tests.support import home_env

    for key, value in home_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    home = Path(os.environ["HOME"])
    pi_sessions(home)
    logs = sorted((home / ".pi").rglob("*.jsonl"))
    log, written = logs[0], logs[0].read_bytes()
    for other in logs[1:]:
        other.unlink()
    log.write_bytes(b"")
    assert [name for name, a in ADAPTERS.items() if a.claims(log)] == []
    conn = db.connect(tmp_path / "t.db")
    run_ingest(conn, [], include_defaults=True)
    run_ingest(conn, [], include_defaults=True)  # still empty: looked at again, still no one's
    log.write_bytes(written)  # the same folder, its mtime as it was
    run_ingest(conn, [], include_defaults=True)
    assert conn.execute("SELECT agent, kind FROM source_files").fetchall() == [("pi", "transcript")]
    assert conn.execute("SELECT source, message_count > 0 FROM agent_sessions").fetchall() == [("pi", 1)]
    # and once read, the root's folders are trusted again: a run with nothing new walks none
    assert conn.execute("SELECT value FROM ledger_meta WHERE key LIKE 'roots:%pi%'").fetchone()[0] != ""
