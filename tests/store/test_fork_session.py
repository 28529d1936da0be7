"""The fork session without Textual (issue 29): the state the fork picker draws and the steps it
takes, on a real archive: the rows and the cursor, the turns picked, where a fork cuts, the plan and
the questions it waits on, the restore, the edits after the point and their undo patch."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from threadloom.core.actions.fork import claude_folder_name
from threadloom.core.actions.fork_session import ForkSession, Target, next_step, plan_for
from threadloom.core.cli import main

from tests.builders.claude import Transcript, tool_use
from tests.builders.fork_points import parallel_session
from tests.builders.undo import ClaudeWork
from tests.support import ingest

SID = "a1600000-0000-4000-8000-000000000016"  # parallel_session's
EDITS = "e2900000-0000-4000-8000-000000000029"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work" / "shop"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def session(conn, tmp_path, work) -> Transcript:
    """Read from a folder Claude Code never looks in (as with `--source`)."""
    t = parallel_session(tmp_path / "backup", str(work))
    ingest(conn, tmp_path / "backup")
    return t


def entry(conn, content: str) -> int:
    return conn.execute("SELECT id FROM entries WHERE content = ?", (content,)).fetchone()[0]


def call_entry(conn, tool_id: str) -> int:
    """The record of the tool call `tool_id`."""
    rows = conn.execute("SELECT id, raw FROM entries WHERE session_id = ? ORDER BY id", (SID,)).fetchall()
    return next(
        i for i, raw in rows if f'"type":"tool_use","id":"{tool_id}"' in bytes(raw).decode().replace(" ", "")
    )


COPIED: list[str] = []  # what the sessions opened here copied, newest last


def turn_of(conn, entry_id: int | None) -> str | None:
    """The turn of a record, as the app finds it before it opens the picker."""
    row = conn.execute("SELECT turn_id FROM entries WHERE id = ?", (entry_id,)).fetchone()
    return row[0] if row else None


def opened(conn, at: int | None = None) -> ForkSession:
    """A session opened on `at` (else its latest turn), read on this thread; it copies to COPIED."""
    COPIED.clear()
    return ForkSession(
        conn,
        SID,
        entry_id=at,
        turn_id=turn_of(conn, at),
        copy=lambda command: COPIED.append(command) or "copied",
    ).load()


def test_the_model_never_loads_textual():
    code = "import sys, threadloom.core.actions.fork_session; print(sorted(m for m in sys.modules if m.startswith('textual')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"


def test_opened_on_a_message_its_turn_is_open_and_the_cursor_on_it(conn, session):
    bash = call_entry(conn, "t4")
    model = opened(conn, bash)
    assert model.points_read and model.branch_turns == 2 and len(model.points) == 2
    assert model.chosen == 0 and model.marked is not None and model.marked.entry_id == bash
    row = model.current_row()
    assert row is not None and row.message is model.marked
    # the text and the call of one API message are bracketed, and fork as one
    assert row.bracket == "└" and row.blocks == 2
    assert [r.message is None for r in model.rows].count(True) == 2  # both turns listed
    assert model.is_open(model.rows[0]) and not model.is_open(model.rows[-1])
    assert model.target_at() == Target(
        str(bash), "the chosen Bash call of turn 1 (with its whole API message)"
    )


def test_turns_open_close_and_keep_the_cursor(conn, session):
    model = opened(conn, call_entry(conn, "t4"))
    last = len(model.rows) - 1
    model.move_to(last)  # turn 2, closed
    assert model.expand() and model.unread() == model.points[1].turn_id
    assert model.current_row() is model.rows[last] and model.rows[last].message is None
    messages, error = model.read_messages(conn, model.points[1].turn_id)
    model.took_messages(model.points[1].turn_id, messages, error)
    assert model.unread() is None and [r.message.kind for r in model.rows[last + 1 :]] == ["prompt", "reply"]
    assert not model.expand()  # open already
    model.move_to(last + 1)  # on its prompt: closing from a message closes its turn
    assert model.can_fork_before() and model.collapse()
    assert len(model.rows) == last + 1 and model.current_row() is model.rows[last]


def test_the_selection_is_the_turns_and_messages_picked_in_branch_order(conn, session):
    model = opened(conn, call_entry(conn, "t4"))
    bash = model.current_row()
    assert model.selection().turn_ids == [model.points[0].turn_id]  # none picked: the row under the cursor
    assert model.selection().entry_ids == [bash.message.entry_id]
    model.move_to(len(model.rows) - 1)
    assert model.toggle_pick()  # turn 2
    model.move_to(0)
    assert model.toggle_pick()  # turn 1
    model.move_to(model.rows.index(bash))
    assert model.toggle_pick() and model.is_picked(bash)
    chosen = model.selection()
    assert chosen.session_id == SID and chosen.turn_ids == [p.turn_id for p in model.points]
    assert chosen.entry_ids == [bash.message.entry_id]
    assert not model.toggle_pick() and model.selection().entry_ids == []
    model.clear_picks()
    assert model.selection().turn_ids == [model.points[0].turn_id]


def test_fork_here_asks_then_writes_and_copies(conn, session, tmp_path, work):
    model = opened(conn, entry(conn, "All three are done."))
    assert model.allows("fork_here") and not model.allows("fork_before") and model.allows("run") is None
    step = model.plan_now("fork", model.target_at())
    assert step == "write" and model.pending is not None and model.asking == "write" and model.plan is None
    assert model.busy and model.allows("fork_here") is None and model.allows("confirm")
    assert model.target.where == "the chosen reply of turn 1"
    assert model.confirm() == "write"
    path = model.write()
    assert path == tmp_path / "no-claude-here" / "projects" / claude_folder_name(str(work)) / path.name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert model.plan is not None and model.written == path and model.pending is None and not model.busy
    assert [model.plan.command] == COPIED and model.copied_how == "copied"
    assert model.allows("run") and model.allows("copy")


def test_a_command_that_needs_the_transcript_back_is_asked_then_restored(conn, session, tmp_path):
    model = opened(conn)
    assert model.plan_now("fork-end") == "restore" and model.asking == "restore"
    model.cancel_ask()  # no: the command is on show, said not to work yet
    plan = model.plan
    assert plan is not None and plan.restore is not None and not COPIED
    assert model.allows("run") is None and model.run_refusal() and model.allows("confirm")
    assert model.confirm() == "restore" and model.start_restore() is plan and model.restoring
    assert model.restore(conn, plan) == ""
    model.took_restore(plan, "")
    assert plan.restore is None and model.plan is plan and [plan.command] == COPIED
    assert any(n.startswith("Restored ") for n in model.notes()) and model.allows("run")
    assert Path(next(iter(Path(tmp_path / "no-claude-here").rglob(f"{SID}.jsonl")))).is_file()


def test_what_cannot_be_done_is_said_and_nothing_is_on_show(conn, session):
    model = opened(conn, entry(conn, "All three are done."))
    reply = model.target_at()
    assert model.plan_now("fork", Target(reply.ref, "x", before=True)) == "failed"
    assert model.error.startswith("Cannot fork here: ") and "only a prompt" in model.error
    assert model.plan is None and not model.busy
    model.agent, model.adapter = "aider", None
    assert "for aider fork at the message before it" in model.refusal("before")
    assert "for aider use Fork here" in model.refusal("native")


def test_fork_before_a_prompt_edits_it_on_one_line(conn, session):
    model = opened(conn, entry(conn, "thanks, now the summary"))
    assert model.can_fork_before() and model.allows("fork_before")
    assert model.open_prompt("before") == "thanks, now the summary" and model.busy
    assert model.typed("  first ⏎ second ") == "first\nsecond"
    target = model.target_at(before=True)
    model.close_prompt()
    assert target.before and target.where == "just before the prompt of turn 2"
    assert model.plan_now("fork", target, "a table instead") == "write"
    assert model.pending.command.endswith("'a table instead'")


def test_the_cli_and_the_model_make_the_same_plans(conn, session, capsys):
    """`threadloom fork` and `resume` take the picker's steps: the same commands, the same questions."""
    prompt = entry(conn, "thanks, now the summary")
    plan = plan_for(conn, "fork", str(prompt), before=True)
    assert next_step("fork", plan) == "write" and plan.action == "fork"
    resume = plan_for(conn, "resume", session_id=SID)
    assert next_step("resume", resume) == "restore" and resume.command.endswith(f"claude --resume {SID}")
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    reply = entry(conn, "Here is the log.")
    model = opened(conn, reply)
    assert model.plan_now("fork-prompt", model.target_at(), "a table") == "restore"
    native = ["fork", "--db", db_path, "--json", "--dry-run", "--native", "--prompt", "a table", str(reply)]
    assert main(native) == 0
    assert json.loads(capsys.readouterr().out)["command"] == model.pending.command
    model.cancel_ask()
    assert model.plan_now("resume") == "restore"
    assert main(["resume", "--db", db_path, "--json", SID]) == 1  # not without --restore
    out = capsys.readouterr()
    refused = json.loads(out.out)  # said on stdout too, for a script
    assert "--restore" in out.err and refused["ok"] is False and "--restore" in refused["error"]
    assert main(["resume", "--db", db_path, "--json", "--restore", SID]) == 0
    assert json.loads(capsys.readouterr().out)["command"] == model.pending.command


def test_the_edits_after_the_point_and_their_undo_patch(conn, tmp_path, monkeypatch):
    work = ClaudeWork(tmp_path, {"a.py": "x = 1\n"}, sid=EDITS)
    work.t.user("change it")
    work.edit("a.py", "x = 1", "x = 2")
    work.write("b.py", "new\n")
    work.t.write()
    ingest(conn, tmp_path / "projects")
    monkeypatch.chdir(tmp_path)
    first = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND content = 'change it'", (EDITS,)
    ).fetchone()[0]
    model = ForkSession(conn, EDITS, entry_id=first, turn_id=turn_of(conn, first)).load()
    undo = model.undo_here()
    assert undo is not None and [f.path for f in undo.files] == ["a.py", "b.py"]
    assert model.allows("undo_patch") and model.want_patch() == "ask"
    proposed = model.open_prompt("undo")
    assert proposed == str(tmp_path / f"threadloom-undo-{EDITS[:8]}-at-{model.undo_ref}.patch")
    model.close_prompt()
    model.write_undo_patch(proposed)
    said = model.patch_said
    assert said is not None and said.path == Path(proposed) and said.undo is undo
    assert Path(proposed).read_text() == undo.patch and stat.S_IMODE(Path(proposed).stat().st_mode) == 0o600
    assert said.apply == f"cd {work.cwd} && git apply --check {proposed} && git apply {proposed}"
    model.write_undo_patch(proposed)  # never over a file
    assert model.error.endswith("press u and choose another path.") and said is model.patch_said
    model.start_plan("resume")  # a new command: what was said of the patch goes
    assert model.patch_said is None and model.error == ""


def test_the_cursor_moving_on_reads_the_latest_point_once(conn, session):
    bash = call_entry(conn, "t4")
    model = ForkSession(conn, SID, entry_id=bash, turn_id=turn_of(conn, bash))
    model.took_turns(model.read_turns(conn))
    first = model.want_edits()
    assert first is not None and model.undo_reading and model.undo_here() is None
    model.move_to(0)  # moved on while it was read: one read more, for the latest point
    assert model.want_edits() is None
    model.move_to(len(model.rows) - 1)
    assert model.want_edits() is None
    again = model.took_edits(first, *model.read_edits_after(conn, first))
    assert again == model.target_at().ref and model.undo_here() is None
    assert model.took_edits(again, *model.read_edits_after(conn, again)) is None
    assert model.undo_here() is not None and model.undo_here().files == []


def test_a_session_with_no_turns_still_resumes(conn, tmp_path):
    t = Transcript(tmp_path / "p" / "x" / f"{EDITS}.jsonl", EDITS, cwd="/srv/app")
    t.assistant(tools=[tool_use("a", "Bash", command="true")])
    t.write()
    ingest(conn, tmp_path / "p")
    model = ForkSession(conn, EDITS).load()
    assert model.points == [] and model.rows == [] and model.current_row() is None
    assert model.allows("fork_here") is None and model.allows("resume")
    assert model.target_at() is None and model.selection().turn_ids == []
