"""What a fork does not undo: the files edited after the fork point, and a patch that `git apply`
takes back to their state at the fork point, built from the records alone."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from threadloom.core.actions.undo import changes_after, plan_undo, undo_patch, written_by_shell
from threadloom.core.cli import main
from threadloom.core.store import db

from tests.builders.aider import AIDER_EDITS
from tests.builders.claude import Transcript, tool_use
from tests.builders.undo import GIT, SID, ClaudeWork, git, structured_patch
from tests.support import CORPUS, ingest

THREAD = "019a0000-2222-7333-8444-555566667777"
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def entry_of(conn, uuid: str) -> int:
    return conn.execute("SELECT id FROM entries WHERE uuid = ?", (uuid,)).fetchone()[0]


def apply_patch(cwd: Path, patch: str, tmp_path: Path) -> None:
    path = tmp_path / "undo.patch"
    path.write_text(patch)
    checked = git(cwd, "apply", "--check", str(path), check=False)
    assert checked.returncode == 0, checked.stderr + "\n" + patch
    git(cwd, "apply", str(path))


def tree(cwd: Path, names) -> dict[str, str | None]:
    return {n: (cwd / n).read_text() if (cwd / n).exists() else None for n in names}


A_PY = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(12))
B_PY = "import os\n\nVALUE = 1\nOTHER = 2\n\n\ndef main():\n    print(VALUE, OTHER)\n"
D_TXT = "line one\nline two\nline three"  # no final newline


@needs_git
def test_claude_edits_after_the_fork_point_are_taken_back_by_git_apply(conn, tmp_path):
    w = ClaudeWork(tmp_path, {"a.py": A_PY, "b.py": B_PY, "d.txt": D_TXT, "keep.txt": "old\n"})
    w.t.user("first part")
    w.edit("keep.txt", "old", "new")  # before the fork point: stays
    fork = w.t.assistant("first part done")
    at_fork = w.snapshot()
    w.t.user("second part")
    w.edit("a.py", "return 3\n", "return 30\n")
    w.edit("a.py", "return 30\n", "return 300  # changed twice\n")
    w.edit("a.py", "def f10():\n    return 10\n\n", "")  # deleting a whole function
    w.multi_edit("b.py", [("VALUE = 1", "VALUE = 10"), ("print(VALUE, OTHER)", "print(OTHER)")])
    w.write("c.py", "print('new file')\n")
    w.edit("c.py", "new file", "new file, edited")
    w.write("d.txt", "line one\nline 2\nline three\nline four\n")
    w.write("sub dir/e.md", "# notes\n")  # a space in the path
    w.write('say "hi"\there.txt', "quoted\n")  # a name git quotes
    w.t.assistant("second part done")
    w.t.write()
    ingest(conn, tmp_path / "projects")

    changes = {c.path: c for c in changes_after(conn, SID, entry_of(conn, fork))}
    assert list(changes) == ["a.py", "b.py", "c.py", "d.txt", "sub dir/e.md", 'say "hi"\there.txt']
    assert (changes["a.py"].tool, changes["a.py"].edits) == ("Edit", 3)
    assert (changes["c.py"].tool, changes["c.py"].edits, changes["c.py"].created) == ("Write, Edit", 2, True)
    assert changes["b.py"].tool == "MultiEdit" and not changes["b.py"].created
    assert all(c.revertible and c.why_not is None for c in changes.values())

    patch, problems = undo_patch(conn, SID, entry_of(conn, fork))
    assert problems == []
    w.lay_out(w.files)
    apply_patch(w.cwd, patch, tmp_path)
    assert tree(w.cwd, w.files) == at_fork | {"c.py": None, "sub dir/e.md": None, 'say "hi"\there.txt': None}
    assert (w.cwd / "keep.txt").read_text() == "new\n"  # the edit before the fork point is kept


@needs_git
def test_a_file_the_records_cannot_rebuild_is_named_with_the_reason(conn, tmp_path):
    w = ClaudeWork(
        tmp_path, {"a.py": A_PY, "b.py": B_PY, "d.txt": D_TXT, "e.txt": "e\n", "f.txt": "f1\nf2\n"}
    )
    fork = w.t.user("change things")
    at_fork = w.snapshot()
    w.write("d.txt", "replaced\n", original=False, patch=False)  # an old Write: no originalFile, no diff
    w.write("e.txt", "e, rewritten\n", original=False)  # Claude Code 1.0.98: no originalFile, but a diff
    w.edit("b.py", "VALUE = 1", "VALUE = 2", result=False)  # no toolUseResult: the strings alone
    w.edit("a.py", "return 5\n", "return 50\n", original=False)  # structuredPatch only
    w.edit("a.py", "return 7\n", "return 70\n", original=False)
    w.bash("sed -i 's/f1/F1/' f.txt && ls > /dev/null")
    w.t.assistant("done")
    w.t.write()
    ingest(conn, tmp_path / "projects")

    entry = entry_of(conn, fork)
    changes = {c.path: c for c in changes_after(conn, SID, entry)}
    assert {p for p, c in changes.items() if c.revertible} == {"a.py", "e.txt"}
    assert "neither what it held before nor a diff" in changes["d.txt"].why_not
    assert "not the file around it" in changes["b.py"].why_not
    assert changes["f.txt"].tool == "shell" and "sed -i 's/f1/F1/' f.txt" in changes["f.txt"].why_not

    patch, problems = undo_patch(conn, SID, entry)
    assert sorted(p.split(":")[0] for p in problems) == ["b.py", "d.txt", "f.txt"]
    w.lay_out(w.files)
    apply_patch(w.cwd, patch, tmp_path)
    assert tree(w.cwd, ["a.py", "e.txt"]) == {"a.py": at_fork["a.py"], "e.txt": at_fork["e.txt"]}
    assert (w.cwd / "d.txt").read_text() == "replaced\n"  # not in the patch: left as it is


@needs_git
def test_failed_rejected_and_unanswered_edits(conn, tmp_path):
    w = ClaudeWork(tmp_path, {"a.py": A_PY, "b.py": B_PY})
    fork = w.t.user("try")
    w.n += 1
    w.t.assistant(
        tools=[tool_use("toolu_rej", "Edit", file_path=str(w.cwd / "a.py"), old_string="f1", new_string="g1")]
    )
    w.t.tool_result(
        "toolu_rej",
        "The user doesn't want to proceed with this tool use. The tool use was rejected",
        is_error=True,
        tool_use_result="User rejected tool use",
    )
    w.t.assistant(
        tools=[
            tool_use("toolu_err", "Edit", file_path=str(w.cwd / "a.py"), old_string="nope", new_string="x")
        ]
    )
    w.t.tool_result(
        "toolu_err",
        "String to replace not found in file.",
        is_error=True,
        tool_use_result="Error: String to replace not found in file.",
    )
    w.t.assistant(
        tools=[
            tool_use("toolu_open", "Edit", file_path=str(w.cwd / "b.py"), old_string="os", new_string="sys")
        ]
    )
    w.t.write()
    ingest(conn, tmp_path / "projects")

    changes = changes_after(conn, SID, entry_of(conn, fork))
    assert [(c.path, c.revertible) for c in changes] == [("b.py", False)]  # a.py was never changed
    assert "no recorded result" in changes[0].why_not


def test_edits_before_the_point_and_in_its_own_api_message_are_kept(conn, tmp_path):
    """Forking at one block of an API message keeps the whole message: its parallel edits are not
    after the fork point."""
    w = ClaudeWork(tmp_path, {"a.py": A_PY, "b.py": B_PY})
    w.t.user("edit both")
    first = w.t.assistant(
        msg_id="m1",
        tools=[
            tool_use(
                "t1", "Edit", file_path=str(w.cwd / "a.py"), old_string="return 1\n", new_string="return 11\n"
            )
        ],
    )
    w.t.assistant(
        msg_id="m1",
        tools=[
            tool_use(
                "t2", "Edit", file_path=str(w.cwd / "b.py"), old_string="VALUE = 1", new_string="VALUE = 3"
            )
        ],
    )
    w.t.tool_result(
        "t1",
        "ok",
        parent=first,
        chain=False,
        tool_use_result={
            "filePath": str(w.cwd / "a.py"),
            "originalFile": A_PY,
            "structuredPatch": structured_patch(A_PY, A_PY.replace("return 1\n", "return 11\n", 1)),
        },
    )
    w.t.tool_result(
        "t2",
        "ok",
        tool_use_result={
            "filePath": str(w.cwd / "b.py"),
            "originalFile": B_PY,
            "structuredPatch": structured_patch(B_PY, B_PY.replace("VALUE = 1", "VALUE = 3")),
        },
    )
    w.t.assistant("both edited")
    w.t.write()
    ingest(conn, tmp_path / "projects")
    assert changes_after(conn, SID, entry_of(conn, first)) == []
    prompt = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND role = 'user' ORDER BY id LIMIT 1", (SID,)
    ).fetchone()[0]
    assert [c.path for c in changes_after(conn, SID, prompt)] == ["a.py", "b.py"]


def test_edits_on_a_rewound_branch_are_not_undone_but_named(conn, tmp_path):
    """After the fork point the user rewound (Esc Esc) and took another way: the patch follows the
    branch taken, and names the files the abandoned branch edited, which may still hold its edits."""
    w = ClaudeWork(tmp_path, {"a.py": A_PY, "b.py": B_PY})
    w.t.user("start")
    fork = w.t.assistant("ready")
    w.t.user("try one way")
    w.edit("b.py", "VALUE = 1", "VALUE = 5")
    w.t.assistant("tried")
    w.t.user("try another way", parent=fork)  # the rewind: a second child of the fork point
    w.edit("a.py", "return 6\n", "return 66\n")
    w.t.assistant("done")
    w.t.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_undo(conn, SID, entry_of(conn, fork))
    assert [c.path for c in plan.files] == ["a.py"]
    assert plan.problems == [
        "b.py: also edited on a branch of the conversation that was rewound after this point; "
        "if the rewind did not restore it, those edits are still in it and the patch may not "
        "apply to it"
    ]


def test_a_turn_recorded_as_its_own_parent_does_not_hang(conn, tmp_path):
    """A damaged (or trimmed) log whose prompt names itself as its parent made the walk over the
    turns after the fork point loop for ever."""
    import threading

    w = ClaudeWork(tmp_path, {"a.py": A_PY})
    # two prompts under one uuid (as the corpus's trimmed fixture has), the second naming the first as parent
    w.t.add({"type": "user", "uuid": "loop", "message": {"role": "user", "content": "go"}}, parent=False)
    w.t.add({"type": "user", "uuid": "loop", "message": {"role": "user", "content": "go on"}}, parent="loop")
    w.edit("a.py", "return 1\n", "return 11\n")
    w.t.write()
    ingest(conn, tmp_path / "projects")
    entry = conn.execute("SELECT min(id) FROM entries WHERE uuid = 'loop'").fetchone()[0]
    assert conn.execute("SELECT parent_turn_id FROM agent_turns WHERE id = 'loop'").fetchone() == ("loop",)
    found: list = []
    worker = threading.Thread(target=lambda: found.append(changes_after(conn, SID, entry)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert found and [c.path for c in found[0]] == ["a.py"]


@needs_git
def test_edits_of_a_subagent_started_after_the_fork_point(conn, tmp_path):
    w = ClaudeWork(tmp_path, {"a.py": A_PY})
    fork = w.t.user("delegate")
    at_fork = w.snapshot()
    w.t.assistant(tools=[tool_use("toolu_task", "Task", description="Fix a.py", prompt="fix a.py")])
    w.t.tool_result(
        "toolu_task", "fixed", tool_use_result={"status": "completed", "agentId": "a0123456789abcdef"}
    )
    w.t.assistant("the helper fixed it")
    w.t.write()
    sub = ClaudeWork.__new__(ClaudeWork)
    sub.cwd, sub.files, sub.n = w.cwd, w.files, 100
    sub.t = Transcript(
        w.t.path.parent / SID / "subagents" / "agent-a0123456789abcdef.jsonl",
        SID,
        cwd=str(w.cwd),
        isSidechain=True,
        agentId="a0123456789abcdef",
    )
    sub.t.user("fix a.py", parent=False)
    sub.edit("a.py", "return 2\n", "return 22\n")
    sub.t.assistant("done")
    sub.t.write()
    ingest(conn, tmp_path / "projects")

    changes = changes_after(conn, SID, entry_of(conn, fork))
    assert [(c.path, c.tool, c.revertible) for c in changes] == [("a.py", "Edit", True)]
    patch, _ = undo_patch(conn, SID, entry_of(conn, fork))
    w.lay_out(w.files)
    apply_patch(w.cwd, patch, tmp_path)
    assert (w.cwd / "a.py").read_text() == at_fork["a.py"]


def test_files_outside_the_session_folder_are_reported(conn, tmp_path):
    w = ClaudeWork(tmp_path, {})
    fork = w.t.user("touch the shell config")
    outside = tmp_path / "home" / ".bashrc"
    w.n += 1
    w.t.assistant(
        tools=[tool_use("toolu_out", "Write", file_path=str(outside), content="alias ll='ls -l'\n")]
    )
    w.t.tool_result(
        "toolu_out",
        "ok",
        tool_use_result={
            "type": "create",
            "filePath": str(outside),
            "content": "alias ll='ls -l'\n",
            "structuredPatch": [],
        },
    )
    w.t.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_undo(conn, SID, entry_of(conn, fork))
    assert plan.patch == ""
    assert [(c.path, c.revertible) for c in plan.files] == [(str(outside), False)]
    assert "outside the session's folder" in plan.problems[0]


# ---------------------------------------------------------------------- Codex


class CodexWork:
    """A Codex rollout (wrapped era) whose turns apply patches under `cwd`."""

    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path / "repo"
        self.cwd.mkdir()
        self.path = (
            tmp_path
            / "codex"
            / "sessions"
            / "2026"
            / "03"
            / "02"
            / f"rollout-2026-03-02T10-00-00-{THREAD}.jsonl"
        )
        self.path.parent.mkdir(parents=True)
        self.lines: list[dict] = []
        self.add(
            "session_meta",
            {
                "id": THREAD,
                "timestamp": "2026-03-02T10:00:00.000Z",
                "cwd": str(self.cwd),
                "originator": "codex_cli_rs",
                "cli_version": "0.101.0",
                "source": "cli",
            },
        )

    def add(self, rtype: str, payload: dict) -> None:
        n = len(self.lines)
        self.lines.append(
            {"timestamp": f"2026-03-02T10:{n // 60:02d}:{n % 60:02d}.000Z", "type": rtype, "payload": payload}
        )

    def turn(self, prompt: str) -> None:
        self.add("turn_context", {"cwd": str(self.cwd), "approval_policy": "never", "model": "gpt-5.2-codex"})
        self.add(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
        )

    def say(self, text: str) -> None:
        self.add(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
        )

    def apply_patch(
        self, call_id: str, patch: str, *, shell: bool = False, ok: bool = True, changes: dict | None = None
    ) -> None:
        if shell:
            self.add(
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": call_id,
                    "arguments": json.dumps({"command": ["apply_patch", patch], "workdir": str(self.cwd)}),
                },
            )
        else:
            self.add(
                "response_item",
                {
                    "type": "custom_tool_call",
                    "name": "apply_patch",
                    "call_id": call_id,
                    "input": patch,
                    "status": "completed",
                },
            )
        if changes is not None:
            self.add(
                "event_msg",
                {
                    "type": "patch_apply_end",
                    "call_id": call_id,
                    "success": ok,
                    "stdout": "",
                    "stderr": "",
                    "changes": changes,
                },
            )
        output = json.dumps(
            {
                "output": "Success. Updated the following files:"
                if ok
                else "apply_patch verification failed",
                "metadata": {"exit_code": 0 if ok else 1, "duration_seconds": 0.0},
            }
        )
        self.add(
            "response_item",
            {
                "type": "function_call_output" if shell else "custom_tool_call_output",
                "call_id": call_id,
                "output": output,
            },
        )

    def write(self) -> Path:
        self.path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return self.path


APP = "".join(f"line {i}\n" for i in range(1, 21))
OLD_TXT = "obsolete\ncontent\n"


def codex_session(tmp_path: Path) -> CodexWork:
    c = CodexWork(tmp_path)
    c.turn("look around")
    c.say("I looked.")
    c.turn("make the changes")
    c.apply_patch(
        "call_1",
        "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n+\n+text\n"
        "*** Update File: app.txt\n@@\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n"
        "@@ line 14\n line 15\n-line 16\n+line sixteen\n+line sixteen and a half\n line 17\n"
        "*** End Patch",
    )
    c.apply_patch(
        "call_2",
        "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch",
        changes={str(c.cwd / "old.txt"): {"type": "delete", "content": OLD_TXT}},
    )
    c.apply_patch(
        "call_3",
        "*** Begin Patch\n*** Update File: app.txt\n@@\n line 9\n-line 10\n+line ten\n line 11\n*** End Patch",
        shell=True,
    )
    c.apply_patch(
        "call_4", "*** Begin Patch\n*** Update File: app.txt\n@@\n-line 1\n+LINE 1\n*** End Patch", ok=False
    )
    c.say("Done.")
    return c


@needs_git
def test_codex_apply_patch_after_the_fork_point_is_reversed(conn, tmp_path):
    c = codex_session(tmp_path)
    ingest(conn, c.write())
    fork = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND role = 'assistant' ORDER BY id LIMIT 1", (THREAD,)
    ).fetchone()[0]
    changes = {ch.path: ch for ch in changes_after(conn, THREAD, fork)}
    assert {p: (ch.tool, ch.edits, ch.revertible, ch.created) for p, ch in changes.items()} == {
        "docs/new.md": ("apply_patch", 1, True, True),
        "app.txt": ("apply_patch", 2, True, False),  # the failed patch is not counted
        "old.txt": ("apply_patch", 1, True, False),
    }
    patch, problems = undo_patch(conn, THREAD, fork)
    assert problems == []
    after = APP.replace("line 5\n", "line five\n").replace(
        "line 16\n", "line sixteen\nline sixteen and a half\n"
    )
    after = after.replace("line 10\n", "line ten\n")
    (c.cwd / "docs").mkdir()
    (c.cwd / "docs" / "new.md").write_text("# New\n\ntext\n")
    (c.cwd / "app.txt").write_text(after)
    git(c.cwd, "init", "-q")
    apply_patch(c.cwd, patch, tmp_path)
    assert tree(c.cwd, ["app.txt", "old.txt", "docs/new.md"]) == {
        "app.txt": APP,
        "old.txt": OLD_TXT,
        "docs/new.md": None,
    }


def test_codex_changes_the_records_cannot_place_are_reported(conn, tmp_path):
    c = CodexWork(tmp_path)
    c.turn("go")
    c.apply_patch(
        "call_1", "*** Begin Patch\n*** Update File: app.txt\n@@\n line 9\n-line 10\n+line ten\n*** End Patch"
    )
    c.apply_patch("call_2", "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch")
    c.apply_patch(
        "call_3",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n x\n-y\n+z\n w\n*** End Patch",
    )
    c.say("Done.")
    ingest(conn, c.write())
    prompt = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND role = 'user' ORDER BY id LIMIT 1", (THREAD,)
    ).fetchone()[0]
    plan = plan_undo(conn, THREAD, prompt)
    why = {ch.path: ch.why_not for ch in plan.files}
    assert "without the lines after it" in why["app.txt"]
    assert "does not hold what it held" in why["gone.txt"] or "do not hold what it held" in why["gone.txt"]
    assert "git mv b.txt a.txt" in why["a.txt"]
    assert plan.patch == "" and len(plan.problems) == 3


@needs_git
@pytest.mark.parametrize("shape", ["type", "tagged"])
def test_codex_s_own_diff_places_a_change_its_patch_cannot(conn, tmp_path, shape):
    """The model's patch has no line after its change; Codex's `patch_apply_end` diff (2026 shape
    `{type: update, …}`, or 2025's `{update: {…}}`) has line numbers, so the change is undone."""
    c = CodexWork(tmp_path)
    c.turn("go")
    diff = "@@ -8,5 +8,5 @@\n line 8\n line 9\n-line 10\n+line ten\n line 11\n line 12\n"
    change = {"unified_diff": diff, "move_path": None}
    c.apply_patch(
        "call_1",
        "*** Begin Patch\n*** Update File: app.txt\n@@\n line 9\n-line 10\n+line ten\n*** End Patch",
        changes={
            str(c.cwd / "app.txt"): {"type": "update", **change} if shape == "type" else {"update": change}
        },
    )
    c.say("Done.")
    ingest(conn, c.write())
    prompt = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND role = 'user' ORDER BY id LIMIT 1", (THREAD,)
    ).fetchone()[0]
    patch, problems = undo_patch(conn, THREAD, prompt)
    assert problems == []
    (c.cwd / "app.txt").write_text(APP.replace("line 10\n", "line ten\n"))
    git(c.cwd, "init", "-q")
    apply_patch(c.cwd, patch, tmp_path)
    assert (c.cwd / "app.txt").read_text() == APP


# ---------------------------------------------------------------------- Gemini


@needs_git
def test_gemini_edits_are_undone_from_their_result_display(conn, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    work = tmp_path / "webshop"
    work.mkdir()
    project = tmp_path / "ghome" / ".gemini" / "tmp" / "webshop"
    (project / "chats").mkdir(parents=True)
    (project / ".project_root").write_text(f"{work}\n")
    sid = "5f0e2a8c-1b2d-4e3f-9a0b-c1d2e3f4a5b6"
    cart = "total = 0\nfor item in items:\n    total += item.price\n"
    fixed = cart.replace("item.price", "item.price * item.count")

    def call(cid: str, name: str, args: dict, display: dict) -> dict:
        return {
            "id": cid,
            "name": name,
            "args": args,
            "status": "success",
            "timestamp": "2026-04-29T21:39:35Z",
            "result": [{"functionResponse": {"id": cid, "name": name, "response": {"output": "ok"}}}],
            "resultDisplay": display,
        }

    lines = [
        {
            "sessionId": sid,
            "projectHash": "x",
            "startTime": "2026-04-29T21:39:22Z",
            "lastUpdated": "2026-04-29T21:39:22Z",
            "kind": "main",
        },
        {
            "id": "u1",
            "timestamp": "2026-04-29T21:39:30Z",
            "type": "user",
            "content": [{"text": "fix the cart"}],
        },
        {
            "id": "g1",
            "timestamp": "2026-04-29T21:39:35Z",
            "type": "gemini",
            "content": "Fixed.",
            "model": "gemini-3",
            "toolCalls": [
                call(
                    "c1",
                    "replace",
                    {
                        "file_path": str(work / "cart.py"),
                        "old_string": "item.price",
                        "new_string": "item.price * item.count",
                    },
                    {"fileDiff": "…", "fileName": "cart.py", "originalContent": cart, "newContent": fixed},
                ),
                call(
                    "c2",
                    "write_file",
                    {"file_path": str(work / "NOTES.md"), "content": "# notes\n"},
                    {
                        "fileDiff": "…",
                        "fileName": "NOTES.md",
                        "originalContent": None,
                        "newContent": "# notes\n",
                    },
                ),
            ],
        },
    ]
    (project / "chats" / "session-2026-04-29T21-39-5f0e2a8c.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines)
    )
    ingest(conn, tmp_path / "ghome")
    prompt = conn.execute("SELECT id FROM entries WHERE role = 'user'").fetchone()[0]
    changes = changes_after(conn, sid, prompt)
    assert [(c.path, c.tool, c.revertible, c.created) for c in changes] == [
        ("cart.py", "replace", True, False),
        ("NOTES.md", "write_file", True, True),
    ]
    patch, _ = undo_patch(conn, sid, prompt)
    (work / "cart.py").write_text(fixed)
    (work / "NOTES.md").write_text("# notes\n")
    git(work, "init", "-q")
    apply_patch(work, patch, tmp_path)
    assert tree(work, ["cart.py", "NOTES.md"]) == {"cart.py": cart, "NOTES.md": None}


def test_windows_paths_are_named_relative_to_the_session_folder(conn, tmp_path):
    t = Transcript(tmp_path / "projects" / "C--work" / f"{SID}.jsonl", SID, cwd="C:\\work")
    fork = t.user("edit")
    path = "C:\\work\\src\\app.py"
    t.assistant(tools=[tool_use("t1", "Write", file_path=path, content="print(1)\r\n")])
    t.tool_result(
        "t1",
        "ok",
        tool_use_result={
            "type": "create",
            "filePath": path,
            "content": "print(1)\r\n",
            "structuredPatch": [],
        },
    )
    t.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_undo(conn, SID, entry_of(conn, fork))
    assert [(c.path, c.created) for c in plan.files] == [("src/app.py", True)]
    assert "--- a/src/app.py\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-print(1)\r\n" in plan.patch


# ---------------------------------------------------------------------- Aider


@needs_git
def test_aider_search_replace_blocks_after_the_fork_point(conn, tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(AIDER_EDITS + "> Commit 1b2614a fix: tokenizer loop  \n")
    ingest(conn, folder)
    sid, prompt = conn.execute(
        "SELECT session_id, id FROM entries WHERE role = 'user' ORDER BY id LIMIT 1"
    ).fetchone()
    plan = plan_undo(conn, sid, prompt)
    # README.md's block has no "Applied edit to" line: Aider did not write it
    assert [(c.path, c.tool, c.revertible) for c in plan.files] == [("parser.py", "SEARCH/REPLACE", True)]
    assert plan.problems == []
    assert plan.notes == [
        "Aider committed its edits after this point (1b2614a): git revert --no-edit 1b2614a takes "
        "back what those commits hold (instead of the patch, not with it)"
    ]
    patch = plan.patch
    before = "import re\n\n\ndef tokens(text):\n    out = text.split()\n    for i in range(len(out) - 1):\n        yield out[i]\n"
    (folder / "parser.py").write_text(before.replace("range(len(out) - 1)", "range(len(out))"))
    git(folder, "init", "-q")
    apply_patch(folder, patch, tmp_path)
    assert (folder / "parser.py").read_text() == before


# ---------------------------------------------------------------------- the command line


@needs_git
def test_fork_writes_the_undo_patch_once_and_lists_the_files(conn, tmp_path, capsys):
    w = ClaudeWork(tmp_path, {"a.py": A_PY, "d.txt": D_TXT})
    fork = w.t.user("go")
    w.t.assistant("on it")
    at_fork = w.snapshot()
    w.edit("a.py", "return 4\n", "return 44\n")
    w.write("d.txt", "gone\n", original=False, patch=False)
    w.t.assistant("done")
    w.t.write()
    ingest(conn, tmp_path / "projects")
    db_path = str(tmp_path / "ledger.db")
    target = tmp_path / "out" / "undo.patch"
    target.parent.mkdir()
    entry = entry_of(conn, fork)

    assert main(["fork", "--db", db_path, str(entry), "--undo-patch", str(target)]) == 0
    err = capsys.readouterr().err
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert f"wrote {target}" in err and "a.py" in err
    assert "d.txt: Write replaced the whole file" in err
    w.lay_out(w.files)
    apply_patch(w.cwd, target.read_text(), tmp_path)
    assert (w.cwd / "a.py").read_text() == at_fork["a.py"]

    target.write_text("mine")
    assert main(["fork", "--db", db_path, str(entry), "--undo-patch", str(target)]) == 1
    assert "already exists" in capsys.readouterr().err and target.read_text() == "mine"

    assert main(["fork", "--db", db_path, str(entry), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["revertible"]) for f in data["changed_after"]] == [("a.py", True), ("d.txt", False)]
    assert data["undo_patch"] is None and data["undo_problems"][0].startswith("d.txt: Write replaced")
    assert data["undo_notes"] == []

    # without --undo-patch, a fork still says which files stay edited
    assert main(["fork", "--db", db_path, str(entry), "--dry-run"]) == 0
    assert "2 files edited after this point stay as they are: a.py, d.txt" in capsys.readouterr().err


def test_a_fork_that_leaves_one_file_says_the_patch_takes_it_back(conn, tmp_path, capsys):
    """One file edited after the point: "takes it back", not "takes them back"."""
    w = ClaudeWork(tmp_path, {"a.py": A_PY})
    fork = w.t.user("go")
    w.t.assistant("on it")
    w.edit("a.py", "return 4\n", "return 44\n")
    w.t.assistant("done")
    w.t.write()
    ingest(conn, tmp_path / "projects")
    entry = entry_of(conn, fork)
    assert main(["fork", "--db", str(tmp_path / "ledger.db"), str(entry), "--dry-run"]) == 0
    assert (
        "1 file edited after this point stays as it is: a.py "
        "(--undo-patch FILE writes a patch that takes it back)" in capsys.readouterr().err
    )


# ---------------------------------------------------------------------- pieces


@needs_git
def test_diff_sections_apply_with_git(tmp_path):
    """Random texts (repeated lines, blank lines, no final newline, empty, absent): each section
    turns the old text into the new one under `git apply`."""
    import random

    from threadloom.core.actions.undo import diff_section

    rng = random.Random(16)
    words = ["a\n", "b\n", "\n", "    return x\n", "c\n", "tail"]

    def text() -> str | None:
        roll = rng.random()
        if roll < 0.08:
            return None
        if roll < 0.14:
            return ""
        body = "".join(rng.choice(words[:5]) for _ in range(rng.randrange(1, 60)))
        return body + ("tail" if rng.random() < 0.3 else "")

    def mutate(old: str | None) -> str | None:
        if old is None or rng.random() < 0.1:
            return text()
        lines = old.split("\n")
        for _ in range(rng.randrange(1, 5)):
            i = rng.randrange(len(lines) + 1)
            if rng.random() < 0.5 and i < len(lines):
                del lines[i]
            else:
                lines.insert(i, rng.choice(["new", "", "a", "    return y"]))
        return "\n".join(lines)

    pairs = {}
    while len(pairs) < 40:
        old = text()
        new = mutate(old)
        if old != new and not (old is None and new is None):
            pairs[f"f{len(pairs)}.txt"] = (old, new)
    for name, (old, _) in pairs.items():
        if old is not None:
            (tmp_path / name).write_text(old)
    git(tmp_path, "init", "-q")
    apply_patch(
        tmp_path, "".join(diff_section(name, old, new) for name, (old, new) in pairs.items()), tmp_path
    )
    assert tree(tmp_path, pairs) == {name: new for name, (_, new) in pairs.items()}


def test_shell_commands_that_write_files():
    assert written_by_shell("sed -i 's/a/b/' src/x.py && echo done > log.txt 2>&1") == (
        ["src/x.py", "log.txt"],
        False,
    )
    assert written_by_shell("sed -n 1,5p f && cat f | grep x 2>/dev/null") == ([], False)
    assert written_by_shell("cat > f.txt <<EOF\nhello > nowhere\nEOF\nrm -f a b") == (
        ["f.txt", "a", "b"],
        False,
    )
    assert written_by_shell('python -c "\nprint(1 > 0)\n"') == ([], False)
    assert written_by_shell("cp a.txt b.txt; git checkout -- .") == (["b.txt"], True)
    assert written_by_shell("perl -pi -e 's/x/y/' a.pl b.pl") == (["a.pl", "b.pl"], False)


# ---------------------------------------------------------------------- the corpus


def corpus_edit_sessions():
    root = CORPUS / "claude-code"
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.rglob("*.jsonl") if b'"originalFile' in p.read_bytes() and "subagents" not in p.parts
    )


def at_point(lines: list[dict], prompt_uuid: str) -> dict[str, str | None]:
    """Each file's text as the first successful edit after the prompt `prompt_uuid` found it (None:
    a Write created it), read from the raw lines; files with no recorded text are left out."""
    start = next(i for i, rec in enumerate(lines) if rec.get("uuid") == prompt_uuid)
    calls, found = {}, {}
    for rec in lines[start:]:
        content = (rec.get("message") or {}).get("content") if isinstance(rec.get("message"), dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use" and block.get("name") in ("Edit", "MultiEdit", "Write"):
                calls[block["id"]] = block
            elif (
                block.get("type") == "tool_result"
                and block.get("tool_use_id") in calls
                and not block.get("is_error")
            ):
                tur = rec.get("toolUseResult")
                path = calls[block["tool_use_id"]]["input"].get("file_path")
                if not isinstance(tur, dict) or path in found:
                    continue
                text = tur.get("originalFile", tur.get("originalFileContents"))
                if isinstance(text, str) or tur.get("type") == "create":
                    found[path] = text if isinstance(text, str) else None
    return found


def replayed(lines: list[dict]) -> dict[str, str | None]:
    """Each edited file's text after the session, rebuilt independently of core.actions.undo: the last
    edit's recorded `originalFile` with its strings replaced (or a Write's content)."""
    calls, final = {}, {}
    for rec in lines:
        content = (rec.get("message") or {}).get("content") if isinstance(rec.get("message"), dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use" and block.get("name") in ("Edit", "MultiEdit", "Write"):
                calls[block["id"]] = block
            elif (
                block.get("type") == "tool_result"
                and block.get("tool_use_id") in calls
                and not block.get("is_error")
            ):
                call, tur = calls[block["tool_use_id"]], rec.get("toolUseResult")
                if not isinstance(tur, dict):
                    continue
                path = call["input"].get("file_path")
                if call["name"] == "Write":
                    final[path] = call["input"]["content"]
                    continue
                text = tur.get("originalFile", tur.get("originalFileContents"))
                if not isinstance(text, str):
                    final[path] = None
                    continue
                edits = call["input"]["edits"] if call["name"] == "MultiEdit" else [call["input"]]
                for e in edits:
                    old, new = e["old_string"], e["new_string"]
                    if new == "" and not old.endswith("\n") and old + "\n" in text:
                        old += "\n"  # Claude Code deletes the line with its text
                    text = text.replace(old, new) if e.get("replace_all") else text.replace(old, new, 1)
                final[path] = text
    return final


@needs_git
@pytest.mark.parametrize("source", corpus_edit_sessions(), ids=lambda p: p.stem[:8])
def test_real_sessions_patches_apply_to_the_recorded_state(conn, tmp_path, source):
    """At every prompt of a real session: the patch applies with `git apply` to the files as the
    session left them, and gives back each file as the first edit after the point found it."""
    ingest(conn, source)
    lines = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    sid = conn.execute(
        "SELECT id FROM agent_sessions WHERE is_subagent = 0 ORDER BY message_count DESC"
    ).fetchone()[0]
    final = replayed(lines)
    checked = 0
    prompts = conn.execute(
        "SELECT e.id FROM agent_turns t JOIN entries e ON e.uuid = t.id AND e.session_id = "
        "t.session_id WHERE t.session_id = ? ORDER BY t.sequence",
        (sid,),
    ).fetchall()
    for (prompt,) in prompts:
        plan = plan_undo(conn, sid, prompt)
        expected = at_point(
            lines, conn.execute("SELECT uuid FROM entries WHERE id = ?", (prompt,)).fetchone()[0]
        )
        if not plan.patch:
            continue
        work = tmp_path / f"at-{prompt}"
        work.mkdir()
        for path, text in final.items():
            rel = os.path.relpath(path, plan.cwd) if path.startswith(plan.cwd + "/") else None
            if rel is None or text is None:
                continue
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        git(work, "init", "-q")
        apply_patch(work, plan.patch, tmp_path)
        for change in plan.files:
            full = os.path.join(plan.cwd, change.path)
            if change.revertible and full in expected:
                now = (work / change.path).read_text() if (work / change.path).exists() else None
                assert now == expected[full], change.path
                assert (now is None) == change.created
                checked += 1
    assert checked or not final or not prompts  # (one file is a lone Edit with no prompt before it)


def history_note(path: str, copy: str | None, message: str) -> dict:
    """The `file-history-snapshot` record Claude Code writes when it copies a file before editing it
    (no uuid, no session id of its own); `copy` None: the file did not exist."""
    backup = {"backupFileName": copy, "version": 1, "backupTime": "2026-03-01T10:00:30.000Z"}
    return {
        "type": "file-history-snapshot",
        "messageId": message,
        "snapshot": {
            "messageId": message,
            "trackedFileBackups": {path: backup},
            "timestamp": "2026-03-01T10:00:29.000Z",
        },
        "isSnapshotUpdate": True,
    }


@needs_git
def test_file_history_copies_rebuild_what_the_records_cannot(conn, tmp_path):
    """Before editing a file Claude Code copies it to file-history/<session>/ and notes the copy: where
    the records hold neither the file's text nor a diff, the kept copy gives its text at the fork point."""
    w = ClaudeWork(tmp_path, {"d.txt": D_TXT, "b.py": B_PY})
    fork = w.t.user("change things")
    at_fork = w.snapshot()
    for name, tool, params, result, copy in (
        # an old Write: no originalFile, no diff; its path noted absolute
        (
            "d.txt",
            "Write",
            {"content": "replaced\n"},
            {"type": "update", "content": "replaced\n"},
            "d0d0d0d0d0d0d0d0@v1",
        ),
        # an Edit without its toolUseResult; its path noted relative to the session's folder
        ("b.py", "Edit", {"old_string": "VALUE = 1", "new_string": "VALUE = 2"}, None, "b0b0b0b0b0b0b0b0@v1"),
    ):
        path = str(w.cwd / name)
        w.n += 1
        tid = f"toolu_{w.n:03d}"
        w.t.assistant(tools=[tool_use(tid, tool, file_path=path, **params)])
        w.t.lines.append(history_note(name if name == "b.py" else path, copy, fork))
        w.t.tool_result(tid, "ok", tool_use_result=result and {**result, "filePath": path})
        before = w.files.get(name)
        w.files[name] = (
            params["content"] if tool == "Write" else (before or "").replace("VALUE = 1", "VALUE = 2")
        )
    w.t.assistant("done")
    w.t.write()
    history = tmp_path / "file-history" / SID
    history.mkdir(parents=True)
    (history / "d0d0d0d0d0d0d0d0@v1").write_text(D_TXT)
    (history / "b0b0b0b0b0b0b0b0@v1").write_text(B_PY)

    # read without the file history, as before: neither can be taken back
    bare = db.connect(tmp_path / "bare.db")
    ingest(bare, tmp_path / "projects")
    assert not any(c.revertible for c in changes_after(bare, SID, entry_of(bare, fork)))
    bare.close()

    ingest(conn, tmp_path)  # the configuration folder: projects and file-history
    changes = {c.path: c for c in changes_after(conn, SID, entry_of(conn, fork))}
    assert {p for p, c in changes.items() if c.revertible} == {"d.txt", "b.py"}
    assert "file-history copy d0d0d0d0d0d0d0d0@v1" in (changes["d.txt"].note or "")
    patch, problems = undo_patch(conn, SID, entry_of(conn, fork))
    assert problems == []
    w.lay_out(w.files)
    apply_patch(w.cwd, patch, tmp_path)
    assert tree(w.cwd, ["d.txt", "b.py"]) == at_fork
