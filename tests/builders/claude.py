"""Claude Code JSONL transcripts: `Transcript` writes records with consistent uuid chains, and a few
ready-made sessions (terminal escapes, a background agent's notice, Claude Code's own markup)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path


class Transcript:
    """Writes Claude Code JSONL records with consistent uuid/parentUuid chains."""

    def __init__(self, path: Path, session_id: str, cwd: str = "/home/dev/app", **common) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.common = common
        self.last: str | None = None
        self.n = 0
        self.lines: list[dict] = []
        path.parent.mkdir(parents=True, exist_ok=True)

    def _uuid(self) -> str:
        self.n += 1
        salt = zlib.crc32(self.path.name.encode()) % 0xFFFF  # distinct uuids per file of a session
        return f"{self.session_id[-8:]}-{self.n:04d}-4000-8000-{salt:04x}{self.n:08d}"

    def _ts(self) -> str:
        return f"2026-03-01T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"

    def add(self, record: dict, *, parent: str | None | bool = True, chain: bool = True) -> str:
        uuid = record.get("uuid") or self._uuid()
        base = {
            "parentUuid": self.last if parent is True else (None if parent is False else parent),
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.20",
            "gitBranch": "main",
            "uuid": uuid,
            "timestamp": self._ts(),
        }
        base.update(self.common)
        base.update(record)
        self.lines.append(base)
        if chain:
            self.last = uuid
        return uuid

    def user(self, text: str, **kw) -> str:
        return self.add({"type": "user", "message": {"role": "user", "content": text}}, **kw)

    def assistant(
        self,
        text: str | None = None,
        *,
        msg_id: str | None = None,
        usage: dict | None = None,
        tools: list[dict] | None = None,
        thinking: str | None = None,
        model: str = "claude-opus-4-5",
        request_id: str | None = None,
        **kw,
    ) -> str:
        content: list[dict] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
        if text:
            content.append({"type": "text", "text": text})
        content += tools or []
        msg_id = msg_id or f"msg_{self.session_id[:6]}_{self.n}"
        return self.add(
            {
                "type": "assistant",
                "requestId": request_id or f"req_{msg_id}",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": "end_turn",
                    "usage": usage or {"input_tokens": 10, "output_tokens": 5},
                },
            },
            **kw,
        )

    def tool_result(
        self,
        tool_use_id: str,
        output: str,
        *,
        is_error: bool = False,
        tool_use_result=None,
        parent: str | None | bool = True,
        chain: bool = True,
        **fields,
    ) -> str:
        rec = {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": output,
                        "is_error": is_error,
                    }
                ],
            },
            **fields,
        }
        if tool_use_result is not None:
            rec["toolUseResult"] = tool_use_result
        return self.add(rec, parent=parent, chain=chain)

    def raw(self, record: dict) -> None:
        self.lines.append(record)

    def write(self, *, final_newline: bool = True) -> Path:
        text = "\n".join(json.dumps(line) for line in self.lines)
        self.path.write_text(text + ("\n" if final_newline else ""))
        return self.path


def tool_use(tool_id: str, name: str, **params) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": params}


def ansi_session(root: Path, sid: str = "eeeeeeee-1111-4222-8333-00000000a051") -> Transcript:
    """A session whose tools printed terminal escape sequences: a hook's bold name, a coloured
    test run, a window title."""
    t = Transcript(root / "projects" / "-srv-ansi" / f"{sid}.jsonl", sid, cwd="/srv/ansi")
    t.user("run the tests")
    t.assistant("Running them.", tools=[tool_use("tb1", "Bash", command="pytest --color=yes")])
    t.tool_result("tb1", "\x1b]0;pytest\x07\x1b[32m12 passed\x1b[0m in 0.4s\n\x1b[31m1 failed\x1b[0m")
    t.add(
        {
            "type": "system",
            "subtype": "informational",
            "content": "Running \x1b[1mPostToolUse:Edit\x1b[22m...",
        }
    )
    t.user("<local-command-stdout>\x1b[1mCost:\x1b[22m $0.12</local-command-stdout>")
    t.assistant("Done: \x1b[1m12 passed\x1b[22m.")
    t.write()
    return t


TASK_NOTICE = (
    "<task-notification>\n<task-id>b07h5t4ng</task-id>\n<tool-use-id>tn1</tool-use-id>\n"
    '<status>completed</status>\n<summary>Agent "Coverage analysis" completed</summary>\n'
    "<result>Coverage is now 96%.</result>\n<usage>total_tokens: 23099\nduration_ms: 15506</usage>\n"
    "</task-notification>\nFull transcript available at: /tmp/tasks/b07h5t4ng.output"
)


def notice_session(root: Path, sid: str = "eeeeeeee-1111-4222-8333-00000000b0b0") -> Transcript:
    """A session with a background agent whose end reaches the model as `<task-notification>` tags
    in a user message."""
    t = Transcript(root / "projects" / "-srv-notice" / f"{sid}.jsonl", sid, cwd="/srv/notice")
    t.user("measure the coverage in the background")
    t.assistant(
        "Started it.",
        tools=[
            tool_use(
                "tn1",
                "Task",
                description="Coverage analysis",
                prompt="measure coverage",
                run_in_background=True,
            )
        ],
    )
    t.tool_result("tn1", "Async agent launched successfully\nagentId: ab07h5t4ng")
    t.user(TASK_NOTICE)
    t.assistant("Coverage reached 96%.")
    t.write()
    return t


CAVEAT = (
    "<local-command-caveat>Caveat: The messages below were generated by the user while running local "
    "commands. DO NOT respond to these messages or otherwise consider them in your response unless the "
    "user explicitly asks you to.</local-command-caveat>"
)


TODOS_1 = [
    {
        "content": "Reproduce the dropped token",
        "status": "in_progress",
        "activeForm": "Reproducing the dropped token",
    },
    {"content": "Fix the loop bound", "status": "pending", "activeForm": "Fixing the loop bound"},
    {"content": "Add a regression test", "status": "pending", "activeForm": "Adding a regression test"},
]


TODOS_2 = [
    {
        "content": "Reproduce the dropped token",
        "status": "completed",
        "activeForm": "Reproducing the dropped token",
    },
    {"content": "Fix the loop bound", "status": "in_progress", "activeForm": "Fixing the loop bound"},
    {"content": "Add a regression test", "status": "pending", "activeForm": "Adding a regression test"},
    {"content": "Run the whole suite", "status": "pending", "activeForm": "Running the whole suite"},
]


def reply(t: Transcript, msg_id: str, *blocks: dict, model: str = "claude-opus-4-7") -> list[str]:
    """One API message written as Claude Code writes it: a line per content block, one message id,
    opening on the empty thinking block (its text omitted, its signature kept) of Opus 4.7."""
    uuids = []
    for block in ({"type": "thinking", "thinking": "", "signature": "EqQBCkYIBxgCKkB"}, *blocks):
        uuids.append(
            t.add(
                {
                    "type": "assistant",
                    "requestId": f"req_{msg_id}",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [block],
                        "stop_reason": None,
                        "usage": {"input_tokens": 6, "output_tokens": 40},
                    },
                }
            )
        )
    return uuids


def hook(t: Transcript, kind: str, event: str, **fields) -> str:
    """A hook's `attachment` record (2.1.x), in the uuid chain after the record it followed."""
    return t.add(
        {"type": "attachment", "attachment": {"type": kind, "hookEvent": event, "hookName": event, **fields}}
    )


def markup_session(root: Path, sid: str = "eeeeeeee-1111-4222-8333-00000000c0de") -> Transcript:
    """A Claude Code 2.1 session using every shape of its own markup, in the order a user meets them."""
    t = Transcript(root / "projects" / "-srv-tok" / f"{sid}.jsonl", sid, cwd="/srv/tok", version="2.1.114")
    hook(
        t,
        "hook_success",
        "SessionStart",
        hookName="SessionStart:startup",
        content="",
        stdout="session registered\n",
        stderr="",
        exitCode=0,
        command="./scripts/notify.sh started",
        durationMs=1203,
    )
    t.add({"type": "user", "isMeta": True, "message": {"role": "user", "content": CAVEAT}})
    t.user(
        "<command-name>/model</command-name>\n            <command-message>model</command-message>\n"
        "            <command-args>opus</command-args>"
    )
    t.user("<local-command-stdout>Set model to opus (claude-opus-4-7)</local-command-stdout>")
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "<ide_selection>The user selected the lines 12 to 14 from /srv/tok/tok/split.py:\n"
                        "for i in range(len(out) - 1):\n    yield out[i]\n\n"
                        "This may or may not be related to the current task.</ide_selection>",
                    },
                    {"type": "text", "text": "Why does the tokenizer drop the last token?"},
                ],
            },
        }
    )
    hook(
        t,
        "hook_success",
        "UserPromptSubmit",
        content="Status set to busy",
        stdout="Status set to busy\n",
        stderr="",
        exitCode=0,
        command="./scripts/notify.sh busy",
        durationMs=106,
    )
    reply(t, "msg_tok_1", {"type": "text", "text": "Looking at the loop in `split.py`."})
    reply(t, "msg_tok_2", tool_use("td1", "TodoWrite", todos=TODOS_1))
    t.tool_result(
        "td1",
        "Todos have been modified successfully. Ensure that you continue to use the todo list.",
        tool_use_result={"oldTodos": [], "newTodos": TODOS_1},
    )
    reply(
        t,
        "msg_tok_3",
        {"type": "text", "text": "Found it: the loop stops one short."},
        tool_use("td2", "TodoWrite", todos=TODOS_2),
    )
    t.tool_result(
        "td2",
        "Todos have been modified successfully. Ensure that you continue to use the todo list.",
        tool_use_result={"oldTodos": TODOS_1, "newTodos": TODOS_2},
    )
    hook(
        t,
        "hook_non_blocking_error",
        "PostToolUse",
        hookName="PostToolUse:TodoWrite",
        stderr="notify: no display\x1b]0;pwned\x07\n",  # what a terminal would act on: drawn, never sent
        stdout="",
        exitCode=1,
        command="./scripts/notify.sh todo",
        durationMs=75,
    )
    t.user("<bash-input>uv run pytest -q tests/test_split.py</bash-input>")
    t.user(
        "<bash-stdout>F....\n=== FAILURES ===\n_ test_last_token _\nassert ['a'] == ['a', 'b']\n"
        "\x1b[31m1 failed\x1b[0m, 4 passed in 0.12s</bash-stdout>"
        "<bash-stderr>warning: no coverage data collected</bash-stderr>"
    )
    t.user(
        "<command-name>/context</command-name>\n<command-message>context</command-message>\n<command-args></command-args>"
    )
    t.user("<local-command-stdout></local-command-stdout>")
    t.user("Fix it and run the tests again.")
    hook(
        t,
        "hook_blocking_error",
        "PreToolUse",
        hookName="PreToolUse:Bash",
        blockingError={"blockingError": "rm -rf is not allowed here", "command": "./scripts/guard.sh"},
    )
    reply(t, "msg_tok_4", {"type": "text", "text": "Fixed the bound; the suite passes."})
    t.add(
        {
            "type": "system",
            "subtype": "stop_hook_summary",
            "hookCount": 1,
            "hookInfos": [{"command": "./scripts/notify.sh idle", "durationMs": 102}],
            "hookErrors": [],
            "preventedContinuation": False,
            "stopReason": "",
            "hasOutput": True,
            "level": "suggestion",
        }
    )
    t.write()
    return t


FORKING = "eeeeeeee-1111-4222-8333-00000000f0a7"
FORK_AGENT = "a3f9c2e1d0b4a5968"


def fork_subagent_session(root: Path) -> tuple[Transcript, Transcript]:
    """A session whose reply starts a fork of its own conversation (the `Agent` tool with `fork:
    true`): the fork's transcript (`<session>/subagents/agent-<id>.jsonl`) opens with a
    `fork-context-ref` naming the parent's session and its last message, then the parent's
    conversation up to the call as the fork was handed it (its lines copied, their times and API
    ids the parent's), then what the fork did itself."""
    main = Transcript(root / "-home-dev-app" / f"{FORKING}.jsonl", FORKING)
    main.user("the invoice totals are off by a cent")
    usage = {"input_tokens": 1000, "output_tokens": 50}
    asked = main.assistant("Rounding, most likely.", msg_id="msg_parent_1", usage=usage)
    handed = [dict(line) for line in main.lines]
    call = tool_use(
        "toolu_fork_1", "Agent", description="try half-even", prompt="try half-even rounding", fork=True
    )
    main.assistant(
        None, msg_id="msg_parent_2", tools=[call], usage={"input_tokens": 1200, "output_tokens": 30}
    )
    launched = {"status": "async_launched", "agentId": FORK_AGENT}
    main.tool_result("toolu_fork_1", "Fork started — processing in background", tool_use_result=launched)
    main.assistant(
        "Started a fork to try it.", msg_id="msg_parent_3", usage={"input_tokens": 1300, "output_tokens": 20}
    )
    main.write()
    sub = Transcript(
        main.path.parent / FORKING / "subagents" / f"agent-{FORK_AGENT}.jsonl",
        FORKING,
        isSidechain=True,
        agentId=FORK_AGENT,
    )
    sub.n = main.n + 1  # after the call
    ref = {"type": "fork-context-ref", "agentId": FORK_AGENT, "parentSessionId": FORKING}
    sub.raw({**ref, "parentLastUuid": asked, "contextLength": len(handed), "timestamp": sub._ts()})
    for line in handed:
        sub.raw({**line, "isSidechain": True, "agentId": FORK_AGENT})
    sub.last = asked
    sub.user("try half-even rounding")
    sub.assistant(
        "Half-even fixes it.", msg_id="msg_fork_1", usage={"input_tokens": 400, "output_tokens": 60}
    )
    sub.write()
    meta = {"agentType": "fork", "description": "try half-even", "toolUseId": "toolu_fork_1"}
    (sub.path.parent / f"agent-{FORK_AGENT}.meta.json").write_text(json.dumps(meta))
    return main, sub
