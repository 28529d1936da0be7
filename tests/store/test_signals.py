"""Signals found by the ledger after an ingest: one Claude Code transcript written to show each
pattern (and one to show none), each test asserting the signal, the records it points at, and
that nothing else fires."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.base.text import SIGNALS
from threadloom.core.insight import signals
from threadloom.core.insight.signals import Evidence, session_signals
from threadloom.core.read import query

from tests.builders.claude import tool_use
from tests.builders.signals import EXPENSIVE, OPUS, REJECTED, SID, SONNET, at, cached, compact, transcript
from tests.support import CORPUS, THREAD, Rollout, ingest


def found(conn: sqlite3.Connection, tmp_path: Path, sid: str = SID) -> list[signals.StoredSignal]:
    ingest(conn, tmp_path / "projects")
    return session_signals(conn, sid)


def entry(conn: sqlite3.Connection, uuid: str) -> tuple[int, int]:
    """(entry id, seq) of the record with this uuid."""
    row = conn.execute("SELECT id, seq FROM entries WHERE uuid = ? AND dup_of IS NULL", (uuid,)).fetchone()
    assert row is not None, uuid
    return row[0], row[1]


def message(conn: sqlite3.Connection, uuid: str) -> Evidence:
    entry_id, seq = entry(conn, uuid)
    return Evidence(entry_id=entry_id, seq=seq)


def call(conn: sqlite3.Connection, call_uuid: str, result_uuid: str, tool_id: str, tool: str) -> Evidence:
    entry_id, seq = entry(conn, call_uuid)
    result_id, result_seq = entry(conn, result_uuid)
    return Evidence(entry_id, seq, tool_id, tool, result_id, result_seq)


# ---------------------------------------------------------------------------- none


def test_an_ordinary_session_shows_no_signal(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("add a --verbose flag to the command line")
    t.assistant("looking", usage=cached(30_000, 0), tools=[tool_use("t1", "Read", file_path="cli.py")])
    t.tool_result("t1", "def main(): ...")
    t.assistant("editing", usage=cached(500, 30_000), tools=[tool_use("t2", "Edit", file_path="cli.py")])
    t.tool_result("t2", "ok")
    t.assistant(
        "one test failed first", usage=cached(300, 30_500), tools=[tool_use("t3", "Bash", command="pytest")]
    )
    t.tool_result("t3", "1 failed", is_error=True)  # one failure, then a fix: no loop, no cascade
    t.assistant("fixed", usage=cached(200, 30_800), tools=[tool_use("t4", "Bash", command="pytest -x")])
    t.tool_result("t4", "3 passed")
    t.assistant("Done.", usage=cached(100, 31_000))
    t.user("now document it in the README")
    t.assistant("Documented.", usage=cached(2_000, 31_000))
    t.write()
    assert found(conn, tmp_path) == []
    assert conn.execute("SELECT count(*) FROM session_signals").fetchone()[0] == 0


# ---------------------------------------------------------------------------- failing tools


def test_the_same_failing_command_three_times_is_a_retry_loop(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("run the test suite and fix what fails")
    uuids = []
    for i, command in enumerate(["npm test", "npm test ", "npm  test"]):
        attempt = tool_use(f"b{i}", "Bash", command=command, description=f"Run the tests, attempt {i}")
        c = t.assistant(f"try {i}", tools=[attempt])  # the description is reworded each time
        r = t.tool_result(f"b{i}", "Error: Cannot find module 'jest'", is_error=True)
        uuids.append((c, r, f"b{i}"))
    t.assistant("installing", tools=[tool_use("b3", "Bash", command="npm install --save-dev jest")])
    t.tool_result("b3", "added 300 packages")
    t.assistant("Installed jest.")
    t.write()
    (loop,) = found(conn, tmp_path)
    assert loop.name == "retry-loop" and loop.severity == "medium"
    assert loop.evidence == [call(conn, c, r, tid, "Bash") for c, r, tid in uuids]
    assert loop.detail == "Bash failed 3 times in a row with near-identical input"
    assert loop.turn_id == conn.execute("SELECT turn_id FROM agent_tool_calls WHERE id = 'b0'").fetchone()[0]
    assert loop.seq == loop.evidence[0].seq


def test_different_calls_failing_in_a_row_are_an_error_cascade(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("refactor the parser module")
    calls = []
    for tid, tool, params in [
        ("e1", "Read", {"file_path": "src/parser.py"}),
        ("e2", "Bash", {"command": "ls src"}),
        ("e3", "Edit", {"file_path": "src/parse.py", "old_string": "a", "new_string": "b"}),
    ]:
        c = t.assistant(None, tools=[tool_use(tid, tool, **params)])
        r = t.tool_result(tid, "Error: no such file", is_error=True)
        calls.append((c, r, tid, tool))
    t.assistant("The module is missing.")
    t.write()
    (cascade,) = found(conn, tmp_path)
    assert cascade.name == "error-cascade"
    assert cascade.evidence == [call(conn, *c) for c in calls]
    assert cascade.detail == "3 tool calls failed in a row (Bash, Edit, Read)"


# ---------------------------------------------------------------------------- permission friction


def test_refused_and_interrupted_calls_and_an_interrupted_reply(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("rewrite the config loader")
    edit = t.assistant(None, tools=[tool_use("r1", "Edit", file_path="config.py")])
    refused = t.tool_result("r1", REJECTED, is_error=True, tool_use_result="User rejected tool use")
    notice = t.user("[Request interrupted by user for tool use]")
    t.user("then run the slow integration tests")
    bash = t.assistant(None, tools=[tool_use("i1", "Bash", command="make integration")])
    stopped = t.tool_result(
        "i1",
        "[Request interrupted by user for tool use]",
        is_error=True,
        tool_use_result={"stdout": "", "stderr": "", "interrupted": True},
    )
    t.user("what does the loader read first?")
    t.assistant("It reads the environment, then")
    esc = t.user("[Request interrupted by user]")
    t.write()
    got = found(conn, tmp_path)
    assert [(s.name, s.detail) for s in got] == [
        ("rejected", "the user refused 1 tool call (Edit)"),
        ("interrupted", "the user interrupted 1 tool call (Bash)"),
        ("interrupted", "the user interrupted the reply"),
    ]
    # the notice Claude Code writes after a refusal belongs to the refusal
    assert got[0].evidence == [call(conn, edit, refused, "r1", "Edit"), message(conn, notice)]
    assert got[1].evidence == [call(conn, bash, stopped, "i1", "Bash")]
    assert got[2].evidence == [message(conn, esc)]
    assert len({s.turn_id for s in got}) == 3


# ---------------------------------------------------------------------------- context and cache


def test_a_codex_turn_the_user_stopped_is_an_interruption(conn, tmp_path):
    """Codex writes no interruption text: a `turn_aborted` event ends the turn the user stopped
    (Esc, or a new prompt sent over it). A line of its own in the viewer ("the user stopped it"):
    its evidence is that line, in the turn of the message before it."""
    r = Rollout(tmp_path / "codex", THREAD)
    r.meta()
    r.prompt("refactor the parser")
    r.say("Starting on the parser")
    r.add("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
    r.prompt("only the tokenizer, please")
    r.say("Done with the tokenizer")
    r.add("event_msg", {"type": "turn_aborted", "reason": "review_ended"})  # not the user stopping it
    for odd in (["interrupted"], {"why": 1}, None, 7):  # what a damaged or crafted log may hold
        r.add("event_msg", {"type": "turn_aborted", "reason": odd})
    r.write()
    ingest(conn, tmp_path / "codex")
    got = session_signals(conn, THREAD)
    assert [(s.name, s.detail) for s in got] == [("interrupted", "the user interrupted the reply")]
    aborted, seq, before = conn.execute(
        "SELECT id, seq, (SELECT max(seq) FROM entries m WHERE m.session_id = e.session_id AND m.id < e.id) "
        "FROM entries e WHERE session_id = ? AND subtype = 'turn_aborted' ORDER BY id LIMIT 1",
        (THREAD,),
    ).fetchone()
    assert seq == before + 1 and got[0].evidence == [Evidence(entry_id=aborted, seq=seq)]
    said = conn.execute(
        "SELECT seq, turn_id FROM entries WHERE session_id = ? AND content = 'Starting on the parser' "
        "AND seq IS NOT NULL",
        (THREAD,),
    ).fetchone()
    assert (before, got[0].turn_id) == (said[0], said[1])
    assert signals.excerpts(conn, THREAD, got)[(aborted, None)] == "the user stopped it"
    lines = [m.content for m in query.messages(conn, THREAD) if m.subtype == "turn_aborted"]
    assert lines == ["the user stopped it", "the review ended", *["the turn ended early"] * 4]


def test_codex_compactions_close_together_are_thrashing_and_say_what_they_are(conn, tmp_path):
    r = Rollout(tmp_path / "codex", THREAD)
    r.meta()
    r.prompt("migrate the schema")
    r.say("Migrating")
    r.add("compacted", {"replacement_history": []})  # no summary text of its own
    r.say("Still migrating")
    r.add("compacted", {"replacement_history": []})
    r.say("Done")
    r.write()
    ingest(conn, tmp_path / "codex")
    got = session_signals(conn, THREAD)
    assert [s.name for s in got] == ["context-thrashing"]
    assert set(signals.excerpts(conn, THREAD, got).values()) == {"(compacted)"}  # not an empty line


def test_signals_found_by_an_older_pass_are_all_found_again_by_the_next_ingest(conn, tmp_path, monkeypatch):
    """An archive whose signals an older threadloom found (before it knew Codex's turn_aborted)
    has them all found again by the next ingest, though no log changed."""
    from threadloom.core.base.text import SIGNALS_VERSION, SIGNALS_VERSION_KEY
    from threadloom.core.store.sql import get_meta, set_meta

    r = Rollout(tmp_path / "codex", THREAD)
    r.meta()
    r.prompt("refactor the parser")
    r.say("Starting on the parser")
    r.add("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
    r.write()
    ingest(conn, tmp_path / "codex")
    assert [s.name for s in session_signals(conn, THREAD)] == ["interrupted"]
    conn.execute("DELETE FROM session_signals")  # as the older pass left it: no such signal
    set_meta(conn, SIGNALS_VERSION_KEY, "1")
    rebuilds = []
    real = signals.rebuild
    monkeypatch.setattr(signals, "rebuild", lambda c, progress=None: rebuilds.append(1) or real(c, progress))
    assert ingest(conn, tmp_path / "codex").files_read == 0
    assert [s.name for s in session_signals(conn, THREAD)] == ["interrupted"]
    assert get_meta(conn, SIGNALS_VERSION_KEY) == SIGNALS_VERSION
    ingest(conn, tmp_path / "codex")
    assert rebuilds == [1]  # once: then only the sessions a run changes


def test_finding_every_sessions_signals_again_says_how_far_it_is(conn, tmp_path, monkeypatch):
    """That pass takes seconds on a large archive, after the files are all read: the ingest's
    progress names it and counts its sessions, so a bar does not sit still meanwhile."""
    from threadloom.core.base.text import SIGNALS_VERSION_KEY
    from threadloom.core.ingest.pipeline import Phase, run_ingest
    from threadloom.core.store.sql import set_meta

    from tests.support import archive

    projects = archive(tmp_path, sessions=5)
    ingest(conn, projects)
    set_meta(conn, SIGNALS_VERSION_KEY, "1")
    monkeypatch.setattr(signals, "PROGRESS_SECONDS", 0.0)  # every session, not every 0.2 s
    seen = []
    report = run_ingest(conn, [projects], include_defaults=False, progress=seen.append)
    assert report.signals_seconds > 0 and not report.errors
    phase = [(p.phase_done, p.phase_total) for p in seen if p.phase is Phase.SIGNALS]
    assert phase == [(done, 5) for done in range(5)]
    assert seen[-1].path == ""  # then the run's end, as before


def test_two_compactions_within_the_hour_are_context_thrashing(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("migrate every model to the new ORM")
    at(t, "2026-03-01T10:00:00.000Z")
    t.assistant("reading all the models")
    at(t, "2026-03-01T10:01:00.000Z")
    first = compact(t, "2026-03-01T10:20:00.000Z", "models read")
    t.assistant("still reading")
    at(t, "2026-03-01T10:21:00.000Z")
    second = compact(t, "2026-03-01T10:45:00.000Z", "half migrated")
    t.assistant("migrated")
    at(t, "2026-03-01T10:46:00.000Z")
    t.write()
    (thrash,) = found(conn, tmp_path)
    assert thrash.name == "context-thrashing" and thrash.turn_id is None
    assert thrash.evidence == [message(conn, first), message(conn, second)]
    assert thrash.detail == "2 compactions within 25 min (2 in the session, 2.0 per hour)"


def test_cline_condensing_its_context_twice_within_the_hour_is_context_thrashing(conn, tmp_path):
    """Cline records a compaction as a condense_context message, not as Claude Code's boundary."""
    from tests.builders.cline import TASK, say, storage, task_folder

    minute, start = 60_000, 1_770_858_773_985
    condensed = {"cost": 0.1, "prevContextTokens": 190_000, "newContextTokens": 9_000, "summary": "So far…"}
    task_folder(
        tmp_path,
        ui=[
            say(start, "task", "port the build to the new bundler"),
            say(start + minute, "text", "Reading the config"),
            say(start + 10 * minute, "condense_context", "", contextCondense=condensed),
            say(start + 11 * minute, "text", "Still porting"),
            say(start + 25 * minute, "condense_context", "", contextCondense=condensed),
            say(start + 26 * minute, "text", "Done"),
        ],
    )
    ingest(conn, storage(tmp_path))
    got = session_signals(conn, TASK)
    assert [(s.name, s.detail.split(" (")[0]) for s in got] == [
        ("context-thrashing", "2 compactions within 15 min")
    ]
    marks = conn.execute(
        "SELECT id, seq FROM entries WHERE session_id = ? AND subtype = 'condense_context' ORDER BY seq",
        (TASK,),
    ).fetchall()
    assert got[0].evidence == [Evidence(entry_id=i, seq=q) for i, q in marks]


def test_compactions_hours_apart_are_not_thrashing(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("migrate every model to the new ORM")
    at(t, "2026-03-01T10:00:00.000Z")
    compact(t, "2026-03-01T11:00:00.000Z", "models read")
    t.assistant("still reading")
    at(t, "2026-03-01T11:01:00.000Z")
    compact(t, "2026-03-01T13:00:00.000Z", "half migrated")
    t.assistant("migrated")
    at(t, "2026-03-01T13:01:00.000Z")
    t.write()
    assert found(conn, tmp_path) == []


def test_a_request_within_a_turn_that_skips_the_cache_is_a_cache_miss(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("summarize the design document")
    t.assistant(None, usage=cached(40_000, 0), tools=[tool_use("c1", "Read", file_path="DESIGN.md")])
    t.tool_result("c1", "the design")
    missed = t.assistant("Summary: ...", usage=cached(41_000, 1_000))
    t.user("and the risks?")  # a new turn's first request is never counted
    t.assistant("Risks: ...", usage=cached(42_000, 0))
    t.write()
    (miss,) = found(conn, tmp_path)
    assert miss.name == "cache-miss"
    assert miss.evidence == [message(conn, missed)]
    assert (
        miss.detail == "1 request in the turn sent 41,005 context tokens without reading them from the cache"
    )


# ---------------------------------------------------------------------------- models, pauses, prompts


def test_a_model_change_names_the_two_models_and_their_messages(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("plan the change")
    before = t.assistant("The plan.", model=OPUS)
    t.user("now implement it")
    after = t.assistant("Implemented.", model=SONNET)
    t.assistant("Tests pass.", model=SONNET)
    t.write()
    (change,) = found(conn, tmp_path)
    assert change.name == "model-change"
    assert change.detail == f"the model changed from {OPUS} to {SONNET}"
    assert change.evidence == [message(conn, before), message(conn, after)]


def test_a_long_wait_before_a_reply_is_a_long_pause(conn, tmp_path):
    t = transcript(tmp_path)
    prompt = t.user("prove the scheduler never starves a task")
    at(t, "2026-03-01T10:00:00.000Z")
    reply = t.assistant("Here is the proof.", usage={"input_tokens": 10, "output_tokens": 1_200})
    at(t, "2026-03-01T10:06:30.000Z")
    t.user("thanks, and for priorities?")
    at(t, "2026-03-01T12:00:00.000Z")  # the user's own pause is not the model's
    t.assistant("The same argument holds.")
    at(t, "2026-03-01T12:00:40.000Z")
    t.write()
    (pause,) = found(conn, tmp_path)
    assert pause.name == "long-pause"
    assert pause.evidence == [message(conn, prompt), message(conn, reply)]
    assert pause.detail == "6 min 30 s before a reply of 1,200 output tokens"


def test_the_same_prompt_sent_again_is_a_repeated_prompt(conn, tmp_path):
    t = transcript(tmp_path)
    first = t.user("Please fix the failing parser test in core/")
    t.assistant("Fixed it.")
    t.user("yes")
    t.assistant("Done.")
    t.user("yes")  # short prompts repeat by nature
    t.assistant("Done again.")
    again = t.user("please fix the failing  parser test in core/")
    t.assistant("Fixed it properly this time.")
    t.write()
    (repeat,) = found(conn, tmp_path)
    assert repeat.name == "repeated-prompt"
    assert repeat.evidence == [message(conn, first), message(conn, again)]
    assert repeat.turn_id == again


# ---------------------------------------------------------------------------- expensive dead ends


def test_cost_spent_on_a_branch_rewound_away_from_is_an_abandoned_branch(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("speed up the importer")
    fork = t.assistant("Two ways: caching or batching.")
    dead = t.user("try the caching approach")
    t.assistant("Caching added.", usage=EXPENSIVE)
    t.assistant("Benchmarks are worse.", usage=EXPENSIVE)
    t.user("try the batching approach", parent=fork)  # rewound: a new branch from the fork point
    t.assistant("Batching added; 3x faster.")
    t.write()
    (dead_end,) = found(conn, tmp_path)
    assert dead_end.name == "abandoned-branch"
    assert dead_end.turn_id == dead
    assert dead_end.evidence == [message(conn, dead)]
    cost = conn.execute("SELECT sum(cost_usd) FROM agent_usage WHERE turn_id = ?", (dead,)).fetchone()[0]
    assert cost > signals.limit("dead_end_usd")
    assert dead_end.detail.startswith(f"${cost:.2f} spent on 1 turn of a branch rewound away from")


def test_new_price_data_recomputes_the_dead_ends_it_prices(conn, tmp_path):
    """A dead end's cost is in its signal's text: new price data prices every session again, and
    their signals follow, though no log changed."""
    from threadloom.core.insight import cost
    from threadloom.core.store.sql import set_meta

    t = transcript(tmp_path)
    t.user("speed up the importer")
    fork = t.assistant("Two ways: caching or batching.")
    t.user("try the caching approach")
    t.assistant("Caching added.", usage=EXPENSIVE)
    t.user("try the batching approach", parent=fork)
    t.assistant("Batching added.")
    t.write()
    (dead_end,) = found(conn, tmp_path)
    conn.execute("UPDATE session_signals SET detail = 'priced with the old table'")
    ingest(conn, tmp_path / "projects")  # nothing new, same prices: nothing recomputed
    assert [s.detail for s in session_signals(conn, SID)] == ["priced with the old table"]
    set_meta(conn, cost.PRICES_KEY, "genai-prices 0.0.1")  # as after an upgrade of the price data
    ingest(conn, tmp_path / "projects")
    assert [s.detail for s in session_signals(conn, SID)] == [dead_end.detail]


def test_a_cheap_abandoned_branch_is_not_a_signal(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("speed up the importer")
    fork = t.assistant("Two ways: caching or batching.")
    t.user("try the caching approach")
    t.assistant("Caching added.")
    t.user("try the batching approach", parent=fork)
    t.assistant("Batching added.")
    t.write()
    assert found(conn, tmp_path) == []


def test_a_subagent_whose_task_failed_is_an_expensive_dead_end(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("audit the dependencies")
    task = t.assistant(None, tools=[tool_use("task1", "Task", description="audit", prompt="audit deps")])
    result = t.tool_result(
        "task1", "Agent failed: context limit reached", is_error=True, tool_use_result={"agentId": "dead0001"}
    )
    t.assistant("The audit agent failed; I will do it myself.")
    t.write()
    sub = transcript(tmp_path, name=f"{SID}/subagents/agent-dead0001", isSidechain=True, agentId="dead0001")
    sub.user("audit deps", parent=False)
    sub.assistant("reading every lockfile", usage=EXPENSIVE, msg_id="msg_subagent_1")
    sub.write()
    got = found(conn, tmp_path)
    assert [s.name for s in got] == ["unused-subagent"]
    assert got[0].evidence == [call(conn, task, result, "task1", "Task")]
    child = conn.execute("SELECT child_session_id FROM agent_tool_calls WHERE id = 'task1'").fetchone()[0]
    cost = conn.execute("SELECT cost_usd FROM agent_sessions WHERE id = ?", (child,)).fetchone()[0]
    assert got[0].detail == f"${cost:.2f} spent on a subagent whose result was not used (Task failed)"
    assert session_signals(conn, child) == []


# ---------------------------------------------------------------------------- kept up to date


def test_an_append_recomputes_the_session_and_a_rebuild_recomputes_all(conn, tmp_path):
    t = transcript(tmp_path)
    t.user("run the test suite")
    for i in range(2):
        t.assistant(None, tools=[tool_use(f"b{i}", "Bash", command="npm test")])
        t.tool_result(f"b{i}", "Error: failed", is_error=True)
    t.write()
    assert found(conn, tmp_path) == []  # two failures are not a loop yet
    t.assistant(None, tools=[tool_use("b2", "Bash", command="npm test")])
    t.tool_result("b2", "Error: failed", is_error=True)
    t.write()
    (loop,) = found(conn, tmp_path)
    assert loop.name == "retry-loop" and len(loop.evidence) == 3
    conn.execute("DELETE FROM session_signals")
    signals.rebuild(conn)
    assert [s.name for s in session_signals(conn, SID)] == ["retry-loop"]


# ---------------------------------------------------------------------------- the corpus


@pytest.mark.long(4)
@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside the repository")
def test_every_signal_in_the_corpus_points_at_records_that_exist(conn):
    ingest(conn, CORPUS)
    rows = conn.execute("SELECT session_id, name, evidence, turn_id FROM session_signals").fetchall()
    assert rows, "the corpus shows no signal at all"
    names = {name for _, name, _, _ in rows}
    assert names <= set(SIGNALS)
    assert {"rejected", "interrupted", "error-cascade"} <= names  # the corpus holds real ones
    for session_id, name, evidence, turn_id in rows:
        items = json.loads(evidence)
        assert items, (session_id, name)
        if turn_id is not None:
            assert conn.execute("SELECT 1 FROM agent_turns WHERE id = ?", (turn_id,)).fetchone()
        for item in items:
            for key, seq_key in (("entry_id", "seq"), ("result_entry_id", "result_seq")):
                if item[key] is None:
                    continue
                owner, seq, before = conn.execute(
                    "SELECT session_id, seq, (SELECT max(seq) FROM entries m "
                    "WHERE m.session_id = e.session_id AND m.id < e.id) FROM entries e WHERE id = ?",
                    (item[key],),
                ).fetchone()
                # a record that is not a message may be placed at the one before it (Codex's
                # turn_aborted, which ends the turn shown there)
                assert owner == session_id and item[seq_key] in {seq, before if seq is None else seq}, (
                    name,
                    item,
                )
            if item["tool_call_id"] is not None:
                assert conn.execute(
                    "SELECT 1 FROM agent_tool_calls WHERE id = ? AND session_id = ? AND entry_id = ?",
                    (item["tool_call_id"], session_id, item["entry_id"]),
                ).fetchone(), (name, item)


def test_search_knows_every_signal_by_name():
    from threadloom.core.read import search

    for name in SIGNALS:  # one list: what the signal pass finds is what search takes
        assert search.parse_query(f"signal:{name} x").problems == [], name
    assert search.parse_query("signal:nope x").problems == [
        f"signal:nope is not known ({', '.join(SIGNALS)})"
    ]
    assert search.parse_query("signal:nope x").signal is None  # searched without it, as it says


def test_an_unknown_signal_is_searched_without_and_said(conn, tmp_path):
    from threadloom.core.read.search import search

    t = transcript(tmp_path)
    t.user("fix the parser please")
    t.assistant("The parser is fixed.")
    t.write()
    ingest(conn, tmp_path / "projects")
    result = search(conn, "signal:retry parser")
    assert [h.entry_id for h in result.hits] == [h.entry_id for h in search(conn, "parser").hits] != []
    assert result.problems[0].startswith("signal:retry is not known (retry-loop")


def test_signal_search_finds_a_signal_that_happened_in_a_subagent(conn, tmp_path):
    """`threadloom signals` lists a retry loop a subagent ran into; `signal:retry-loop` in search
    finds its records too, without in:subagents (it found nothing, and said nothing)."""
    from threadloom.core.read.search import search

    t = transcript(tmp_path)
    t.user("migrate the database")
    t.assistant(None, tools=[tool_use("task1", "Task", description="migrate", prompt="run the migration")])
    t.tool_result("task1", "done", tool_use_result={"agentId": "loop0001"})
    t.write()
    sub = transcript(tmp_path, name=f"{SID}/subagents/agent-loop0001", isSidechain=True, agentId="loop0001")
    sub.user("run the migration", parent=False)
    for i in range(4):
        sub.assistant(None, tools=[tool_use(f"m{i}", "Bash", command="./migrate.sh")])
        sub.tool_result(f"m{i}", "Error: database is locked", is_error=True)
    sub.assistant("The database stays locked.")
    sub.write()
    ingest(conn, tmp_path / "projects")
    looping = {s for (s,) in conn.execute("SELECT session_id FROM session_signals WHERE name = 'retry-loop'")}
    assert len(looping) == 1 and looping != {SID}  # the subagent's own
    hits = search(conn, "signal:retry-loop").hits
    assert hits and {h.session_id for h in hits} == looping
    assert {h.session_id for h in search(conn, "signal:retry-loop locked").hits} == looping
