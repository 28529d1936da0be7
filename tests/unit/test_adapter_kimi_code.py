"""Kimi Code's session logs (core/adapters/kimi_code.py), the parts beyond a session's own turns: a
session forked from another, an undone or cleared context, a swarm of subagents, and a step's
thinking and text as one reply. Fixtures are builder-made (tests/builders/kimi_code.py), in the
shapes kimi-code's source writes (packages/agent-core-v2, 2026-08)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.present.render import render_session
from threadloom.core.read import browse
from threadloom.core.read.query import children_of, get_session, resolve_session
from threadloom.core.store import db

from tests.builders import kimi_code
from tests.support import ingest, read_in_pieces, stored_bytes


def test_a_forked_kimi_code_session_is_shown_under_its_source_as_a_fork(tmp_path):
    """`/fork` copies the source's log, adds a `forked` record and names the source in state.json's
    `forkedFrom`: the fork hangs under its source, starts when it was forked (not when the source
    did), and the tokens of the copied history are the source's, not counted again."""
    source = kimi_code.kimi_code_session(tmp_path)
    kimi_code.forked_session(tmp_path, source)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        refresh_pending(conn)
        row = conn.execute(
            "SELECT kind, parent_session_id, forked_from_session_id, created_at, title, "
            "input_tokens, output_tokens FROM agent_sessions WHERE id = ?",
            (kimi_code.FORK,),
        ).fetchone()
        assert tuple(row) == (
            "fork",
            kimi_code.SID,
            kimi_code.SID,
            kimi_code.FORKED_AT + 5,
            "Fork: Cart total",
            30,
            7,
        )
        assert kimi_code.FORK in [c.id for c in children_of(conn, kimi_code.SID)]
        fork = get_session(conn, kimi_code.FORK)
        assert fork is not None and fork.forked_from_session_id == kimi_code.SID
        source_row = conn.execute(
            "SELECT kind, forked_from_session_id, input_tokens FROM agent_sessions WHERE id = ?",
            (kimi_code.SID,),
        ).fetchone()
        assert tuple(source_row) == ("main", None, 550)
    finally:
        conn.close()


def test_a_fork_s_copied_subagent_logs_are_not_counted_again(tmp_path):
    """`/fork` copies every agent's log, its subagents' too: the copy of a subagent's requests was
    counted again under the fork (its subagent 100 input tokens, the source's own 100 again)."""
    source = kimi_code.kimi_code_session(tmp_path)
    kimi_code.forked_session(tmp_path, source, subagents=True)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        refresh_pending(conn)
        tokens = dict(
            conn.execute(
                "SELECT id, input_tokens FROM agent_sessions WHERE id IN (?, ?)",
                (f"{kimi_code.SID}:agent-0", f"{kimi_code.FORK}:agent-0"),
            ).fetchall()
        )
        assert tokens == {f"{kimi_code.SID}:agent-0": 100, f"{kimi_code.FORK}:agent-0": 0}
        usage_rows = conn.execute(
            "SELECT count(*) FROM agent_usage WHERE session_id = ?", (f"{kimi_code.FORK}:agent-0",)
        ).fetchone()[0]
        assert usage_rows == 0
    finally:
        conn.close()


def shown(tmp_path, sid: str) -> str:
    """The session as `threadloom show` prints it, after an ingest of every Kimi Code log."""
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        out = io.StringIO()
        render_session(Console(file=out, width=120, highlight=False), conn, resolve_session(conn, sid))
    finally:
        conn.close()
    return out.getvalue()


def test_a_reply_s_text_after_a_subagent_s_transcript_has_its_header_again(tmp_path):
    """One response's records go on under its first header, but not past a subagent's transcript
    printed under its call: "Done." read as the subagent's last words, four columns out."""
    kimi_code.kimi_code_session(tmp_path)
    lines = shown(tmp_path, kimi_code.SID).splitlines()
    done = next(n for n, line in enumerate(lines) if line.strip() == "Done.")
    header = next(line for line in reversed(lines[:done]) if line.strip())
    assert header.startswith("assistant ") and lines[done].startswith("  Done."), lines[done - 3 : done + 1]


def test_an_undo_and_a_cleared_context_are_shown_where_they_happened(tmp_path):
    """`context.undo` (`/undo` withdrew the last prompt) and `context.clear` were kept as events no
    one saw: the prompt asked again read as a second thought, and nothing told that the model
    no longer had what was above."""
    kimi_code.rewound_session(tmp_path)
    lines = [line.strip() for line in shown(tmp_path, kimi_code.REWOUND).splitlines() if line.strip()]
    undo = next(
        n for n, line in enumerate(lines) if line.startswith("── undo: the last prompt and its replies")
    )
    clear = next(n for n, line in enumerate(lines) if line.startswith("── clear: context cleared"))
    assert lines.index("Summed in floats.") < undo < lines.index("sum the carts in Decimal")
    assert lines.index("Summed in Decimal.") < clear < lines.index("what is left to do?")


def test_a_session_s_prompts_follow_one_another_each_reply_in_its_turn(tmp_path):
    """Kimi Code's records name no parent: each prompt was a root of its own, a session of three
    prompts listed as three branches the user never made, and the replies were in no turn (a
    turn's tokens, `show SESSION#n`, a fork at a turn missed them). Each record follows the one
    before it: one line of turns, each reply in its prompt's."""
    kimi_code.rewound_session(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        assert browse.branches(conn, kimi_code.REWOUND) == []
        branch_count = conn.execute(
            "SELECT branch_count FROM agent_sessions WHERE id = ?", (kimi_code.REWOUND,)
        ).fetchone()[0]
        rows = conn.execute(
            "SELECT role, content, turn_id FROM entries WHERE session_id = ? AND seq IS NOT NULL "
            "AND role IN ('user', 'assistant') ORDER BY seq",
            (kimi_code.REWOUND,),
        ).fetchall()
        parents = conn.execute(
            "SELECT parent_turn_id FROM agent_turns WHERE session_id = ? ORDER BY sequence",
            (kimi_code.REWOUND,),
        ).fetchall()
    finally:
        conn.close()
    assert branch_count == 0
    prompts = [turn for role, _, turn in rows if role == "user"]
    assert [p for (p,) in parents] == [None, *prompts[:-1]]
    assert [(role, turn) for role, _, turn in rows] == [
        (role, prompts[n // 2]) for n, role in enumerate(["user", "assistant"] * 3)
    ]


def test_a_compaction_is_drawn_as_one_and_starts_a_segment(tmp_path):
    """`context.apply_compaction` was printed as a system note ("── system: …") and started no
    segment: it is a compaction's line, with its summary, and the session's second segment."""
    from threadloom.core.read.browse import compaction_segments

    kimi_code.kimi_code_session(tmp_path)
    lines = [line.strip() for line in shown(tmp_path, kimi_code.SID).splitlines() if line.strip()]
    assert "── ✂ conversation compacted: The cart total was fixed." in lines
    conn = db.connect(tmp_path / "ledger.db")
    try:
        session = get_session(conn, kimi_code.SID)
        assert session is not None
        assert len(compaction_segments(conn, kimi_code.SID, session.message_count)) == 2
    finally:
        conn.close()


def test_what_an_undo_withdrew_is_shown_as_withdrawn(tmp_path):
    """The prompt `/undo` withdrew and its reply were printed as ordinary messages, read as still
    in the model's context: a line opens what was withdrawn and each says so; what was asked
    after the undo, and what a clear left behind, are not withdrawn."""
    kimi_code.rewound_session(tmp_path)
    lines = [line.strip() for line in shown(tmp_path, kimi_code.REWOUND).splitlines() if line.strip()]
    note = lines.index("── ⤺ withdrawn by an undo or a rewind below ──")
    withdrawn = [n for n, line in enumerate(lines) if line.endswith("  ⤺ withdrawn")]
    assert [lines[n].split()[0] for n in withdrawn] == ["user", "assistant"]
    assert note < withdrawn[0] < lines.index("sum the carts in floats") < withdrawn[1]
    assert withdrawn[1] < lines.index("Summed in floats.") < lines.index("sum the carts in Decimal")
    assert sum(line.startswith("── ⤺ withdrawn") for line in lines) == 1
    conn = db.connect(tmp_path / "ledger.db")
    try:
        texts = conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IN (SELECT value FROM json_each(?)) "
            "ORDER BY seq",
            (kimi_code.REWOUND, json.dumps(sorted(browse.withdrawn_seqs(conn, kimi_code.REWOUND)))),
        ).fetchall()
    finally:
        conn.close()
    assert [t for (t,) in texts] == ["sum the carts in floats", "Summed in floats."]


def test_a_swarm_s_subagents_are_each_under_the_call_that_started_them(tmp_path):
    """`AgentSwarm` starts a subagent per item at once; its result names each (`<subagent
    agent_id=…>`): every one of them hangs under that call with its item, and `show` prints each
    under it (only `Agent`'s one subagent was linked, the swarm's were loose under the session)."""
    kimi_code.swarm_session(tmp_path)
    text = shown(tmp_path, kimi_code.SWARM)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        rows = conn.execute(
            "SELECT id, parent_session_id, tool_call_id, task_description, agent_type FROM agent_sessions "
            "WHERE is_subagent = 1 ORDER BY id"
        ).fetchall()
        assert [tuple(r) for r in rows] == [
            (f"{kimi_code.SWARM}:agent-{n}", kimi_code.SWARM, "AgentSwarm_0", item, "explore")
            for n, item in enumerate(kimi_code.ITEMS)
        ]
        child = conn.execute(
            "SELECT child_session_id FROM agent_tool_calls WHERE id = 'AgentSwarm_0'"
        ).fetchone()
        assert child[0] == f"{kimi_code.SWARM}:agent-0"
    finally:
        conn.close()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    call = next(n for n, line in enumerate(lines) if line.startswith("▸ AgentSwarm"))
    first, second = lines.index("cart.py rounds once"), lines.index("tax.py rounds twice")
    assert call < first < second < lines.index("tax.py rounds twice.")


def test_a_swarm_result_names_its_own_subagents_in_any_shape():
    """The result as content parts, an item holding ">" before its id, and a subagent's output that
    quotes a tag: the first went unlinked, the second matched nothing, the third named an agent of
    another call."""
    from threadloom.core.adapters.kimi_code import KimiCodeAdapter

    result = (
        "<agent_swarm_result>\n<summary>2 of 2 done</summary>\n"
        '<subagent agent_id="agent-0" item="cart.py" outcome="completed">\n'
        'It printed <subagent agent_id="agent-9"> from a fixture\n</subagent>\n'
        '<subagent item="a>b" agent_id="agent-1" outcome="completed">\nok\n</subagent>\n'
        "</agent_swarm_result>"
    )
    adapter = KimiCodeAdapter()
    for stored in (result, [{"type": "text", "text": result}]):
        assert adapter.spawned_agents(json.dumps(stored)) == ["agent-0", "agent-1"]
    assert adapter.spawned_agents(json.dumps({"no": "text"})) == [] and adapter.spawned_agents(None) == []


def test_the_viewer_s_pages_count_a_swarm_s_subagents_and_list_them_by_item(tmp_path):
    """The viewer read a call's `child_session_id` alone: an `AgentSwarm` call that started two
    subagents looked like one that started one. Its page counts them, and `call_subagents` lists
    them as the session tree does (each titled by its item); `Agent`'s call is not counted."""
    kimi_code.swarm_session(tmp_path)
    kimi_code.kimi_code_session(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        calls = [c for m in browse.message_page(conn, kimi_code.SWARM, 0, 99) for c in m.tool_calls]
        assert [(c.name, c.subagent_count) for c in calls] == [("AgentSwarm", 2)]
        listed = browse.call_subagents(conn, kimi_code.SWARM, "AgentSwarm_0")
        assert [(s.id, s.title, s.agent_type) for s in listed] == [
            (f"{kimi_code.SWARM}:agent-{n}", item, "explore") for n, item in enumerate(kimi_code.ITEMS)
        ]
        one = [c for m in browse.message_page(conn, kimi_code.SID, 0, 99) for c in m.tool_calls]
        spawn = [c for c in one if c.name == "Agent"]
        assert len(spawn) == 1 and spawn[0].child_session_id and spawn[0].subagent_count == 0
        assert browse.call_subagents(conn, kimi_code.SWARM, "no-such-call") == []
    finally:
        conn.close()


def test_a_swarm_s_subagents_read_before_its_result_are_linked_when_it_comes(tmp_path):
    """Subagents run while their swarm's call waits: an ingest meanwhile reads their logs before
    the result that names them, and the next one links them all the same."""
    folder = kimi_code.swarm_session(tmp_path)
    log = folder / "agents" / "main" / "wire.jsonl"
    whole = log.read_bytes()
    lines = whole.splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3]))  # up to the call
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        assert (
            conn.execute("SELECT count(*) FROM agent_sessions WHERE tool_call_id IS NOT NULL").fetchone()[0]
            == 0
        )
        log.write_bytes(whole)
        ingest(conn, tmp_path / ".kimi-code")
        linked = conn.execute(
            "SELECT id FROM agent_sessions WHERE tool_call_id = 'AgentSwarm_0' ORDER BY id"
        ).fetchall()
        assert [r[0] for r in linked] == [f"{kimi_code.SWARM}:agent-0", f"{kimi_code.SWARM}:agent-1"]
    finally:
        conn.close()


def test_a_step_s_thinking_and_text_are_printed_as_one_reply(tmp_path):
    """A step's parts are one record each (`content.part`, the step's uuid their message id):
    `show` printed its thinking and its text under two "assistant" headers, as two replies."""
    kimi_code.kimi_code_session(tmp_path)
    lines = [line.strip() for line in shown(tmp_path, kimi_code.SID).splitlines() if line.strip()]
    thinking = lines.index("(thinking) look at cart.py")
    assert lines[thinking - 1].startswith("assistant ") and lines[thinking + 1] == "Fixing it."
    # the two steps', the subagent's, and the second step's again after the subagent's transcript
    assert sum(line.startswith("assistant ") for line in lines) == 4


def test_a_plan_and_a_background_task_s_files_are_kept_with_their_session(tmp_path, capsys):
    """Plan mode's plan (`agents/main/plans/<id>.md`) and a background task's state and output
    (`tasks/`) were never read: gone from the archive when kimi deletes the session. Now they are
    kept whole with it, `show --plan` prints the plan and a restore writes them back."""
    from threadloom.core import cli
    from threadloom.core.actions.restore import restore_session
    from threadloom.core.read.side_files import side_files

    folder = kimi_code.planned_session(tmp_path)
    plan = folder / "agents" / "main" / "plans" / "plan-7f3a.md"
    task = folder / "tasks" / "bash-4c2e9a1f.json"
    output = folder / "tasks" / "bash-4c2e9a1f" / "output.log"
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        kept = {Path(f.path).name: f.what for f in side_files(conn, kimi_code.PLANNED)}
        assert kept == {
            "plan-7f3a.md": "plan",
            "bash-4c2e9a1f.json": "task",
            "output.log": "task-output",
            "state.json": "session-state",
        }
        for path in (plan, task, output):
            assert stored_bytes(conn, path) == path.read_bytes()
        restore_session(conn, kimi_code.PLANNED, tmp_path / "back")
    finally:
        conn.close()
    home = tmp_path / ".kimi-code"
    for path in (plan, task, output):  # under `sessions/…` as kimi lays them out
        assert (tmp_path / "back" / path.relative_to(home)).read_bytes() == path.read_bytes()
    assert cli.main(["show", "--db", str(tmp_path / "ledger.db"), "--plan", kimi_code.PLANNED]) == 0
    assert "2. Round once, at the end" in capsys.readouterr().out


def test_a_subagent_s_plan_is_found_in_its_own_agent_folder(tmp_path, capsys):
    """A subagent's id (`<session>:agent-0`) names no folder, so its `ExitPlanMode` found no plan
    while the main session listed the subagent's as its own. Each agent's plans are in its folder
    (`agents/<agent>/plans/`): `show --plan` prints the subagent's for it, the main agent's alone
    for the session."""
    from threadloom.core import cli

    kimi_code.planned_session(tmp_path, subagent=True)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
    finally:
        conn.close()
    show = ["show", "--db", str(tmp_path / "ledger.db"), "--plan"]
    assert cli.main([*show, f"{kimi_code.PLANNED}:agent-0"]) == 0
    out = capsys.readouterr().out
    assert "1. Read tax.py" in out and "Round once" not in out
    assert out.splitlines()[0].endswith("/agents/agent-0/plans/plan-9c1d.md")
    assert cli.main([*show, kimi_code.PLANNED]) == 0
    out = capsys.readouterr().out
    assert "2. Round once, at the end" in out and "Read tax.py" not in out


def test_a_background_task_named_plans_is_no_plan(tmp_path):
    """A plan is a Markdown file right in a `plans/` folder below its session: a task whose id is
    `plans` (its output in tasks/plans/output.log) was listed as the session's plan."""
    from threadloom.core.read.archive import plan_files

    folder = kimi_code.planned_session(tmp_path)
    (folder / "tasks" / "plans").mkdir()
    (folder / "tasks" / "plans" / "output.log").write_text("a task's output\n")
    (folder / "tasks" / "plans.json").write_text('{"id": "plans", "status": "done"}')
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        assert [Path(p).name for _, p, _ in plan_files(conn, kimi_code.PLANNED)] == ["plan-7f3a.md"]
    finally:
        conn.close()


def test_the_session_index_is_kept_and_a_session_is_restored_into_a_home_that_has_one(tmp_path):
    """`session_index.jsonl` (every session's folder and work dir by id; no titles) is where `kimi
    --session ID` looks a session up: never kept, a restored session could not be resumed. It is
    kept whole as Kimi Code's (Codex's index has its name); a restore of a session leaves it, as every
    session's (a home's own has grown since: every restore into one was refused)."""
    from threadloom.core.actions.restore import restore_session

    source = kimi_code.kimi_code_session(tmp_path)
    index = kimi_code.session_index(tmp_path, source, deleted=("session_gone",))
    home = tmp_path / "home"  # a Kimi Code home whose index has grown since (every real one)
    home.mkdir()
    (home / "session_index.jsonl").write_bytes(index.read_bytes() + b'{"sessionId": "session_new"}\n')
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        kept = conn.execute("SELECT agent, kind FROM source_files WHERE path = ?", (str(index),)).fetchall()
        assert [tuple(r) for r in kept] == [("kimi-code", "index")]
        assert stored_bytes(conn, index) == index.read_bytes()
        restore_session(conn, kimi_code.SID, tmp_path / "back")
        restore_session(conn, kimi_code.SID, home)  # refused whole while the index came with it
    finally:
        conn.close()
    for where in (tmp_path / "back", home):
        assert (where / "sessions" / kimi_code.KEY / kimi_code.SID / "state.json").is_file()
    assert not (tmp_path / "back" / "session_index.jsonl").exists()  # every session's, not this one's


def test_an_empty_index_is_codex_s_only_in_a_codex_home(tmp_path):
    """Codex took an empty session_index.jsonl as its own wherever it was, and a file found once keeps
    its adapter: a Kimi Code home's index, empty at first, stayed Codex's."""
    from threadloom.core.adapters.codex import CodexAdapter

    kimi_home, codex_home = tmp_path / "kimi", tmp_path / "codex"
    (kimi_home / "sessions" / "wd_app_0123456789ab").mkdir(parents=True)
    (codex_home / "sessions" / "2026").mkdir(parents=True)
    for home in (kimi_home, codex_home):
        (home / "session_index.jsonl").write_bytes(b"")
    codex = CodexAdapter()
    assert not codex.claims(kimi_home / "session_index.jsonl")
    assert codex.claims(codex_home / "session_index.jsonl")


def test_a_session_s_folder_is_read_from_state_json_s_cwd_as_the_newer_kimi_writes_it(tmp_path):
    """agent-core-v2 writes the work dir to state.json as `cwd` (the older `workDir` no more): a
    session whose log names no folder had none."""
    folder = kimi_code.rewound_session(tmp_path)
    state = json.loads((folder / "state.json").read_text())
    state["cwd"] = state.pop("workDir")
    (folder / "state.json").write_text(json.dumps(state))
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        row = conn.execute(
            "SELECT project_path FROM agent_sessions WHERE id = ?", (kimi_code.REWOUND,)
        ).fetchone()
        assert row[0] == kimi_code.CWD
    finally:
        conn.close()


@pytest.mark.parametrize("undone", [1, 2])
def test_a_session_read_in_two_runs_is_what_one_read_gives(tmp_path, undone):
    """An append is read on its own (each launch, each growth followed): its first record began a
    root of its own (a branch the user never made, a turn's earlier prompts left out of its
    export) and an undo in it found no prompt to withdraw. Read in pieces, at every line, a session
    is what reading it whole gives: the same turns, the same parents, the same withdrawn."""

    def read(conn) -> tuple[object, ...]:
        sid = kimi_code.REWOUND
        rows = conn.execute(
            "SELECT seq, role, content, parent_uuid IS NULL, turn_id IS NULL FROM entries "
            "WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq",
            (sid,),
        ).fetchall()
        count = conn.execute("SELECT branch_count FROM agent_sessions WHERE id = ?", (sid,)).fetchone()
        return [tuple(r) for r in rows], tuple(count), sorted(browse.withdrawn_seqs(conn, sid))

    def written(root: Path) -> Path:
        """The builder's session; undoing two prompts, one more asked before the undo."""
        log = kimi_code.rewound_session(root) / "agents" / "main" / "wire.jsonl"
        if undone == 2:
            records = [json.loads(line) for line in log.read_text().splitlines()]
            at = next(n for n, r in enumerate(records) if r["type"] == "context.undo")
            records[at]["count"] = 2
            records[at:at] = [kimi_code.user("and in ints?", 2500), kimi_code.reply("In ints.", "r-i", 2600)]
            log.write_text("".join(json.dumps(r) + "\n" for r in records))
        return log

    expected = read_in_pieces(tmp_path, written, ".kimi-code", read)
    assert len(expected[2]) == 2 * undone  # type: ignore[index]  # the prompts undone and their replies


def test_an_export_marks_what_an_undo_withdrew_as_show_does(tmp_path):
    """`show` and the viewer mark what an undo took back; the Markdown and HTML exports printed it
    as ordinary messages. Each marks it too: a line above the run, a mark on each message's head."""
    from threadloom.core.actions.export import export_session

    kimi_code.rewound_session(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        session = get_session(conn, kimi_code.REWOUND)
        assert session is not None
        markdown = export_session(conn, session, "md").data.decode()
        page = export_session(conn, session, "html").data.decode()
    finally:
        conn.close()
    heads = [line for line in markdown.splitlines() if line.startswith("## ")]
    marked = [n for n, line in enumerate(heads) if line.endswith("· ⤺ withdrawn")]
    assert marked == [0, 1] and len(heads) > 2  # the prompt withdrawn and its reply; none after
    assert markdown.count("*── ⤺ withdrawn by an undo or a rewind below ──*") == 1
    assert markdown.index("withdrawn by an undo") < markdown.index("sum the carts in floats")
    assert page.count("⤺ withdrawn by an undo or a rewind below") == 1 and page.count("⤺ withdrawn<") == 2


def test_a_rebuild_reads_a_session_s_state_json_as_the_archive_kept_it(tmp_path):
    """A session's `state.json` names its folder, its subagents' parents and what it was forked
    from: it is kept as a side file, but a replay (a schema upgrade's, `ingest --rebuild`) read it
    from the disk, so once the session's folder was gone a rebuild left it with no folder and its
    fork an unlinked session. A replay reads it as the archive kept it."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    source = kimi_code.kimi_code_session(tmp_path)
    kimi_code.forked_session(tmp_path, source, subagents=True)
    facts = (
        "SELECT id, kind, parent_session_id, forked_from_session_id, project_path, created_at, title "
        "FROM agent_sessions ORDER BY id"
    )
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        read_then = conn.execute(facts).fetchall()
        assert {row[4] for row in read_then} == {kimi_code.CWD}
        assert any(row[3] for row in read_then)  # the fork is linked to its source
        shutil.rmtree(tmp_path / ".kimi-code")
        rebuild_derived(conn)
        assert conn.execute(facts).fetchall() == read_then
    finally:
        conn.close()
