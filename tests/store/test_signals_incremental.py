"""What an append brings up to date from where it lands gives what a whole pass gives.

Signals are read from the session's checkpoint (the prompt of the turn it continued), the stats'
sums from the quarter hour the new facts fall in, the turns' tokens for the turns they touch; none
from the session's start. Each test grows session files a piece at a time, ingesting after each
piece, and compares every signal, every stats row, every turn's and session's tokens and every
changed file with those of a database that read the same bytes in one go."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.insight import signals
from threadloom.core.insight.signals import session_signals
from threadloom.core.store import db

from tests.conftest import CORPUS, Transcript, ingest, tool_use
from tests.store.test_signals import EXPENSIVE, OPUS, REJECTED, SID, SONNET, at, cached, compact, transcript


def every_kind(tmp_path: Path) -> Transcript:
    """One session that shows every signal, with runs and pairs that straddle turns."""
    t = transcript(tmp_path)
    t.user("Please run the test suite and fix what fails")
    at(t, "2026-03-01T09:00:00.000Z")
    for i in range(2):
        t.assistant(None, tools=[tool_use(f"b{i}", "Bash", command="npm test")], model=OPUS)
        t.tool_result(f"b{i}", "Error: Cannot find module 'jest'", is_error=True)
    t.user("keep going with the same command")  # the failing run goes on into this turn
    t.assistant(None, tools=[tool_use("b2", "Bash", command="npm test")], model=OPUS)
    t.tool_result("b2", "Error: Cannot find module 'jest'", is_error=True)
    for tid, tool in [("e1", "Read"), ("e2", "Grep"), ("e3", "Edit")]:
        t.assistant(None, tools=[tool_use(tid, tool, file_path="src/x.py")], model=OPUS)
        t.tool_result(tid, "Error: no such file", is_error=True)
    t.assistant("Nothing works yet.", model=OPUS, usage=cached(40_000, 0))
    t.assistant("Still reading.", model=OPUS, usage=cached(41_000, 1_000))
    t.user("rewrite the config loader")
    t.assistant(None, tools=[tool_use("r1", "Edit", file_path="config.py")], model=SONNET)
    t.tool_result("r1", REJECTED, is_error=True, tool_use_result="User rejected tool use")
    t.user("[Request interrupted by user for tool use]")
    compact(t, "2026-03-01T10:00:00.000Z", "the loader")
    t.user("Please run the test suite and fix what fails")  # sent again, after replies
    at(t, "2026-03-01T10:01:00.000Z")
    t.assistant("Running them.", model=SONNET)
    at(t, "2026-03-01T10:09:00.000Z")  # a long pause
    compact(t, "2026-03-01T10:20:00.000Z", "the tests")
    fork = t.assistant("Two ways: caching or batching.", model=SONNET)
    t.user("try the caching approach")
    t.assistant("Caching added.", usage=EXPENSIVE, model=OPUS)
    t.user("try the batching approach", parent=fork)  # rewound: the caching turn is abandoned
    t.assistant(None, tools=[tool_use("task1", "Task", description="audit", prompt="audit deps")], model=OPUS)
    t.tool_result(
        "task1", "Agent failed: context limit reached", is_error=True, tool_use_result={"agentId": "dead0001"}
    )
    t.user("Please run the test suite and fix what fails")
    t.assistant("Done.", model=OPUS)
    # a turn whose calls were summed under one model, then answered by another half an hour later
    t.user("profile the importer")
    at(t, "2026-03-01T10:30:00.000Z")
    t.assistant(None, tools=[tool_use("p1", "Bash", command="py-spy record")], model=OPUS)
    at(t, "2026-03-01T10:30:10.000Z")
    t.tool_result("p1", "profile written")
    at(t, "2026-03-01T10:30:20.000Z")
    t.assistant("The hot loop is the parser.", model=SONNET)
    at(t, "2026-03-01T11:00:00.000Z")
    t.write()
    sub = transcript(tmp_path, name=f"{SID}/subagents/agent-dead0001", isSidechain=True, agentId="dead0001")
    sub.user("audit deps", parent=False)
    sub.assistant("reading every lockfile", usage=EXPENSIVE, msg_id="msg_subagent_1")
    sub.write()
    return t


def stored(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every session's signals (as listed, their records named by file and place), stats rows,
    turns' tokens, totals and changed files."""
    where = {
        entry_id: (path, offset)
        for entry_id, path, offset in conn.execute(
            "SELECT e.id, f.path, e.byte_offset FROM entries e JOIN source_files f ON f.id = e.source_file_id"
        )
    }
    out: dict[str, list[tuple]] = {}
    for (session_id,) in conn.execute("SELECT id FROM agent_sessions ORDER BY id"):
        out[session_id] = [
            (
                s.name,
                s.severity,
                s.seq,
                s.turn_id,
                s.detail,
                [(where.get(e.entry_id), e.seq, e.tool_call_id, e.result_seq) for e in s.evidence],
            )
            for s in session_signals(conn, session_id)
        ]
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT bucket, model, root_session_id, project_path, agent, messages, api_messages, input_tokens, "
                    "output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd, unpriced_messages, tool_calls, "
                    "failed_tool_calls, lines_added, lines_removed FROM stats_rollup WHERE session_id = ? "
                    "ORDER BY bucket, model",
                    (session_id,),
                )
            )
        )
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT id, token_count FROM agent_turns WHERE session_id = ? ORDER BY id", (session_id,)
                )
            )
        )
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd, "
                    "unpriced_messages, message_count FROM agent_sessions WHERE id = ?",
                    (session_id,),
                )
            )
        )
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT call_id, path, turn_id, timestamp, lines_added, lines_removed FROM agent_file_changes "
                    "WHERE session_id = ? ORDER BY call_id, path",
                    (session_id,),
                )
            )
        )
    return out


def read_at_once(tmp_path: Path, files: dict[Path, bytes], name: str) -> dict[str, list[tuple]]:
    """The signals of a database that read `files` (relative path → bytes) in one ingest."""
    root = tmp_path / name / "projects"
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    conn = db.connect(tmp_path / name / "once.db")
    ingest(conn, root)
    found = stored(conn)
    conn.close()
    shutil.rmtree(root)
    return _relative(found, root)


def _relative(found: dict[str, list[tuple]], root: Path) -> dict[str, list[tuple]]:
    """Records named relative to their root, so two databases of copies in two places compare."""
    out = {}
    for sid, listed in found.items():
        signals_found, sums = listed[:-4], listed[-4:]
        out[sid] = [
            (*s[:5], [((str(Path(w[0]).relative_to(root)), w[1]) if w else None, *rest) for w, *rest in s[5]])
            for s in signals_found
        ] + sums
    return out


def test_a_session_grown_a_record_at_a_time_has_the_signals_of_one_read(conn, tmp_path):
    every_kind(tmp_path)
    root = tmp_path / "projects"
    main = next(root.rglob(f"{SID}.jsonl"))
    files = {p.relative_to(root): p.read_bytes() for p in root.rglob("*.jsonl")}
    whole = read_at_once(tmp_path, files, "once-whole")
    names = {s[0] for listed in whole.values() for s in listed[:-4]}
    # the session shows every kind of signal (else this test would check less than it says)
    assert names >= set(signals.LOCAL_SIGNALS) - {"interrupted"} | {
        "context-thrashing",
        "abandoned-branch",
        "unused-subagent",
        "repeated-prompt",
    }, names
    lines = files[main.relative_to(root)].splitlines(keepends=True)
    main.write_bytes(b"")
    checked = 0
    for count in range(1, len(lines) + 1):
        main.write_bytes(b"".join(lines[:count]))
        ingest(conn, root)
        if count % 3 and count != len(lines):
            continue  # every third step, and the last, is compared with a database that read it at once
        files[main.relative_to(root)] = b"".join(lines[:count])
        assert _relative(stored(conn), root) == read_at_once(tmp_path, files, f"once-{count}"), count
        checked += 1
    assert checked > 5
    # the appends were read from checkpoints: the session has one, past its first turns
    cut = conn.execute("SELECT cut FROM signals_state WHERE session_id = ?", (SID,)).fetchone()
    assert cut is not None and cut[0] > 10


def test_a_pass_from_the_checkpoint_reads_only_the_records_past_it(conn, tmp_path, monkeypatch):
    """The point of the checkpoint: a pass over an append reads the turn it continued, not the session."""
    t = transcript(tmp_path)
    for i in range(40):
        t.user(f"step {i}: make the parser handle case {i}")
        t.assistant(f"Handled case {i}.")
    t.write()
    ingest(conn, tmp_path / "projects")
    read: list[int] = []
    real_load = signals._load

    def counting_load(conn, session_id, start=0, start_entry=0):
        session = real_load(conn, session_id, start, start_entry)
        read.append(len(session.messages))
        return session

    monkeypatch.setattr(signals, "_load", counting_load)
    t.user("one more case")
    t.assistant("Handled.")
    t.write()
    ingest(conn, tmp_path / "projects")
    assert read == [4]  # the last turn (prompt and reply) and the new one


def test_a_result_that_comes_back_to_a_call_before_the_cut_reads_the_session_whole(conn, tmp_path):
    """A call made turns ago whose result is appended now changes what lies before the cut."""
    t = transcript(tmp_path)
    t.user("start the long audit")
    t.assistant(None, tools=[tool_use("late", "Bash", command="make audit")])
    for i in range(3):
        t.user(f"meanwhile, look at module {i}")
        t.assistant(f"Module {i} looks fine.")
    t.write()
    ingest(conn, tmp_path / "projects")
    assert conn.execute("SELECT cut FROM signals_state").fetchone()[0] > 2
    for i in range(3):
        t.assistant(None, tools=[tool_use(f"f{i}", "Bash", command="make audit")])
        t.tool_result(f"f{i}", "Error: audit failed", is_error=True)
    t.tool_result("late", "Error: audit failed", is_error=True)
    t.write()
    ingest(conn, tmp_path / "projects")
    files = {
        p.relative_to(tmp_path / "projects"): p.read_bytes() for p in (tmp_path / "projects").rglob("*.jsonl")
    }
    assert _relative(stored(conn), tmp_path / "projects") == read_at_once(tmp_path, files, "once")


def test_a_replay_drops_the_checkpoints_it_invalidates(conn, tmp_path):
    from threadloom.core.ingest.ledger import rebuild_derived

    t = transcript(tmp_path)
    for i in range(5):
        t.user(f"step {i}")
        t.assistant(f"done {i}")
    t.write()
    ingest(conn, tmp_path / "projects")
    assert conn.execute("SELECT count(*) FROM signals_state").fetchone()[0] == 1
    rebuild_derived(conn, {SID})
    assert conn.execute("SELECT count(*) FROM signals_state").fetchone()[0] == 0


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside the repository")
def test_real_sessions_grown_in_three_pieces_have_the_signals_of_one_read(conn, tmp_path):
    """Real Claude Code and Codex sessions cut at a third and two thirds of their lines."""
    picked = sorted(
        (
            p
            for agent in ("claude-code", "codex")
            for p in (CORPUS / agent).rglob("*.jsonl")
            if p.stat().st_size < 3_000_000
        ),
        key=lambda p: p.stat().st_size,
    )[-60:]
    assert picked
    root = tmp_path / "projects"
    full: dict[Path, bytes] = {}
    api_ids: set[bytes] = set()
    for n, source in enumerate(picked):
        data = source.read_bytes()
        # the archive keys API messages and turns by their ids: fixtures that reuse one ("msg_001",
        # "u1") share it with whichever session was read first, grown or not
        ids = set(re.findall(rb'"(?:id|uuid)":\s*"([^"]+)"', data))
        if ids & api_ids:
            continue
        api_ids |= ids
        full[Path(f"{n:03d}") / source.relative_to(CORPUS)] = data
    for share in (1, 2, 3):
        for relative, data in full.items():
            lines = data.splitlines(keepends=True)
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"".join(lines[: len(lines) * share // 3]))
        ingest(conn, root)
    # a session read from several files places their records in the order they were read: grown
    # a piece at a time they interleave, which no checkpoint is for
    one_file = set(
        signals.values(
            conn,
            "SELECT session_id FROM entries WHERE session_id IS NOT NULL GROUP BY 1 HAVING count(DISTINCT source_file_id) = 1",
        )
    )
    grown = {sid: listed for sid, listed in _relative(stored(conn), root).items() if sid in one_file}
    once = {sid: listed for sid, listed in read_at_once(tmp_path, full, "once").items() if sid in one_file}
    assert grown == once
    assert sum(len(v) - 4 for v in once.values()) > 0
