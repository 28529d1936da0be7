"""Every registered adapter's `normalize`, called directly on records of its agent's own format.

The other adapter tests read through an ingest into SQLite: a field `normalize` got wrong can be
hidden by what the ledger derives (a role from a record kind, a time from a neighbour). Here each
adapter's records, written by the same builders (tests/builders/), are cut as the ingest cuts them
(lines; `split` of a document; `read_rows` of a database) and handed to `adapter.normalize` with one
FileContext per file, as the ingest does, and the Records it returns are checked field by field: role,
entry type, text, tool calls and results with their ids, times, model, session. Each adapter also
meets a record of a type it does not know (kept, marked unknown) and values it cannot use (no
exception). The table is checked against the registry: a new adapter without a case fails here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import Adapter, FileContext, RawRecord, Record, SourceRef

from tests.builders import (
    aider,
    amazon_q,
    claude,
    claude_store,
    cline,
    continue_dev,
    copilot,
    crush,
    cursor,
    droid,
    gemini,
    goose,
    kimi,
    kimi_code,
    kiro,
    opencode,
    openhands,
    pi,
    qwen,
    warp,
    zed,
)
from tests.support import THREAD, full_session


def ms(iso: str) -> int:
    """Epoch milliseconds of an ISO time (as the Records hold times)."""
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC).timestamp() * 1000)


# ---------------------------------------------------------------------- reading as the ingest does


def lines_of(data: bytes) -> list[RawRecord]:
    """A log cut into its lines (without their newline), with offsets and 1-based line numbers."""
    records, offset = [], 0
    for number, line in enumerate(data.split(b"\n"), 1):
        if line:
            records.append(RawRecord(offset, number, line, newline=True))
        offset += len(line) + 1
    return records


def records_of(adapter: Adapter, ref: SourceRef) -> list[RawRecord]:
    """The records of a file as `core.ingest.pipeline` cuts them: a database's rows, a document split, a log's lines."""
    if adapter.mode == "database":
        return list(adapter.read_rows(ref.path))
    data = ref.path.read_bytes()
    if ref.kind == "side":  # kept whole, not split (a side file need not be JSON)
        return [RawRecord(0, 1, data, newline=False)]
    if adapter.mode == "document" or ref.kind == "document":
        return adapter.split(data)
    return lines_of(data)


def contexts(adapter: Adapter, root: Path) -> list[tuple[FileContext, list[RawRecord]]]:
    refs = list(adapter.discover(root))
    assert refs, f"{adapter.name} found nothing under {root}"
    return [(FileContext(ref.path, ref.kind, ref.project_key), records_of(adapter, ref)) for ref in refs]


# ---------------------------------------------------------------------- what a record says

FIELDS = (
    "entry_type",
    "known",
    "role",
    "content",
    "thinking",
    "session_id",
    "timestamp",
    "model",
    "is_prompt",
)


def said(rec: Record) -> dict[str, Any]:
    """The fields compared, with the calls as (id, name), the results as (call id, status), the
    tokens as (input, output, cache read) and those given per model as (model, input, output, cache
    read)."""
    out = {name: getattr(rec, name) for name in FIELDS}
    out["tools"] = [(t.id, t.name) for t in rec.tool_uses]
    out["results"] = [(r.tool_use_id, r.status) for r in rec.tool_results]
    usage = rec.usage
    out["usage"] = (
        None if usage is None else (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens)
    )
    out["more_usage"] = [
        (u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens) for u in rec.more_usage
    ]
    return out


def brief(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if v not in (None, False, [], "")}


@dataclass
class Case:
    """An adapter's sample: `write(tmp)` puts its agent's files there and gives the folder to
    discover them in; every item of `expect` is said by some record of them (only the fields it
    names are compared)."""

    write: Callable[[Path], Path]
    expect: list[dict[str, Any]]


def in_folder(write: Callable[[Path], object]) -> Callable[[Path], Path]:
    def run(root: Path) -> Path:
        write(root)
        return root

    return run


def claude_session(root: Path) -> Path:
    sid = "c1a0de00-0000-4000-8000-000000000001"
    t = claude.Transcript(root / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("why is the cart total wrong?")
    t.assistant(
        "Let me look.",
        thinking="the loop",
        tools=[claude.tool_use("tu1", "Read", file_path="cart.py")],
        usage={"input_tokens": 30, "output_tokens": 7, "cache_read_input_tokens": 100},
    )
    t.tool_result("tu1", "no such file", is_error=True)
    t.add({"type": "brand-new-kind", "payload": {"x": 1}})
    t.write()
    return root


def claude_store_db(root: Path) -> Path:
    claude_store.make_store(root / "claude" / "__store.db").close()
    return root / "claude"


def amazon_q_db(root: Path) -> Path:
    path = root / "amazon-q" / "data.sqlite3"
    path.parent.mkdir(parents=True)
    source = sqlite3.connect(path)
    source.execute("CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)")
    value = json.dumps(amazon_q.state(amazon_q.pairs()))
    source.execute("INSERT INTO conversations VALUES (?, ?)", (amazon_q.CWD, value))
    source.commit()
    source.close()
    return path.parent


def gemini_chats(root: Path) -> Path:
    home = root / ".gemini"
    (home / "tmp" / "webshop").mkdir(parents=True)
    (home / "tmp" / "webshop" / ".project_root").write_text(gemini.PROJECT + "\n")
    lines = [*gemini.jsonl_session(), {"type": "brand_new", "id": "z1", "timestamp": "2026-04-29T21:50:00Z"}]
    gemini.write_jsonl(gemini.chats(home) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    return root


def cline_task(ext: str) -> Callable[[Path], Path]:
    def write(root: Path) -> Path:
        ui = [*cline.ui_stream(), cline.say(1999, "brand_new_say", "?")]
        cline.task_folder(root, ext=ext, ui=ui, api=cline.api_history())
        return root

    return write


def cursor_agent(root: Path) -> Path:
    sid = "a9e1c2d3-0000-4000-8000-000000000001"
    folder = root / ".cursor" / "projects" / "home-dev-shop" / "agent-transcripts" / sid
    gemini.write_jsonl(folder / f"{sid}.jsonl", [*cursor.transcript_lines(), {"role": "brand_new"}])
    return root


def amazon_q_save(root: Path) -> Path:
    amazon_q.save(root / "convo.json", amazon_q.state(amazon_q.pairs()))
    return root


def aider_history(root: Path) -> Path:
    aider.history(root / "shop", aider.SESSION_1)
    return root


CLAUDE_SID = "c1a0de00-0000-4000-8000-000000000001"
CLINE = {"session_id": cline.TASK}
CURSOR_AGENT = "a9e1c2d3-0000-4000-8000-000000000001"
GEMINI = {"session_id": gemini.SID}
KIRO = {"session_id": kiro.SID}
Q_CONV = {"session_id": amazon_q.CONV}


def cline_expect() -> list[dict[str, Any]]:
    return [
        {
            **CLINE,
            "entry_type": "say",
            "role": "user",
            "content": "fix the cart",
            "timestamp": 1000,
            "is_prompt": True,
        },
        {**CLINE, "role": "assistant", "thinking": "look at cart.py first", "timestamp": 1002},
        {**CLINE, "role": "assistant", "content": "Reading the cart.", "model": "claude-sonnet-4-5"},
        {
            **CLINE,
            "tools": [(f"{cline.TASK}:1004", "readFile")],
            "results": [(f"{cline.TASK}:1004", "completed")],
        },
        {**CLINE, "entry_type": "say", "usage": (20, 150, 9000)},
        {**CLINE, "entry_type": "api-message", "role": "assistant", "model": "claude-sonnet-4-5"},
    ]


CASES: dict[str, Case] = {
    "claude-code": Case(
        claude_session,
        [
            {
                "session_id": CLAUDE_SID,
                "role": "user",
                "content": "why is the cart total wrong?",
                "is_prompt": True,
            },
            {
                "entry_type": "assistant",
                "content": "Let me look.",
                "thinking": "the loop",
                "model": "claude-opus-4-5",
                "timestamp": ms("2026-03-01T10:00:02Z"),
                "tools": [("tu1", "Read")],
                "usage": (30, 7, 100),
            },
            {"role": "user", "results": [("tu1", "failed")], "is_prompt": False},
            {"entry_type": "brand-new-kind", "known": False, "session_id": CLAUDE_SID},
        ],
    ),
    "claude-store": Case(
        claude_store_db,
        [
            # the first rows' times are in seconds, the later ones in milliseconds: both read as ms
            {
                "session_id": claude_store.SID,
                "role": "user",
                "content": "list the files",
                "timestamp": 1743500000000,
            },
            {
                "role": "assistant",
                "content": "Listing.",
                "model": "claude-3-7-sonnet-20250219",
                "timestamp": 1743500002000,
                "tools": [("toolu_1", "LS")],
                "usage": (10, 5, 0),
            },
            {"role": "user", "results": [("toolu_1", "completed")], "timestamp": 1743500003000},
            {"entry_type": "summary", "content": "Listing the app files"},
        ],
    ),
    "codex": Case(
        lambda root: full_session(root).write() and root,
        [
            {
                "session_id": THREAD,
                "entry_type": "event_msg",
                "role": "user",
                "content": "add a cart total",
                "is_prompt": True,
            },
            {"entry_type": "turn_context", "model": "gpt-5.2-codex", "timestamp": ms("2026-03-02T10:00:02Z")},
            {"role": "assistant", "thinking": "Looking at cart.py"},
            {"role": "assistant", "tools": [("call_1", "shell")]},
            {"results": [("call_1", "failed")]},
            {"tools": [("call_2", "apply_patch")]},
            {"results": [("call_2", "completed")]},
            {"entry_type": "response_item", "role": "assistant", "content": "Added the total."},
            {"entry_type": "event_msg", "usage": (200, 50, 800)},
        ],
    ),
    "cline": Case(cline_task("saoudrizwan.claude-dev"), []),
    "roo-code": Case(cline_task("rooveterinaryinc.roo-cline"), []),
    "kilo-code": Case(cline_task("kilocode.kilo-code"), []),
    "cursor": Case(
        in_folder(cursor.install),
        [
            {
                "session_id": cursor.COMPOSER,
                "entry_type": "ai-title",
                "content": "Fix the checkout",
                "timestamp": 1760000000000,
            },
            {
                "role": "user",
                "content": "fix the checkout total",
                "timestamp": 1760000400000,
                "is_prompt": True,
            },
            {
                "role": "assistant",
                "content": "Looking at cart.py",
                "thinking": "the rounding is off",
                "model": "claude-4.5-sonnet",
                "usage": (1200, 80, 0),
            },
            {"tools": [("toolu_1", "run_terminal_cmd")], "results": [("toolu_1", "completed")]},
            {"session_id": cursor.LEGACY, "role": "user", "content": "old style question"},
        ],
    ),
    "cursor-agent": Case(
        cursor_agent,
        [
            {"session_id": CURSOR_AGENT, "role": "user", "content": "run the tests", "is_prompt": True},
            {"role": "assistant", "content": "Running.", "tools": [(f"{CURSOR_AGENT}:2:1", "Shell")]},
            {"role": "user", "results": [(f"{CURSOR_AGENT}:2:1", "completed")]},
            {"entry_type": "error", "role": "system", "content": "Provider Error: upstream timeout"},
            {"entry_type": "brand_new", "known": False},
        ],
    ),
    "opencode": Case(
        lambda root: opencode.write_storage(root / "storage") or root,
        [
            {
                "session_id": opencode.SID,
                "entry_type": "ai-title",
                "content": "Fix the cart",
                "timestamp": 1760000000000,
            },
            {"entry_type": "message", "role": "user", "timestamp": 1760000001000, "is_prompt": True},
            {"entry_type": "part", "role": "user", "content": "fix the cart total"},
            {
                "entry_type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "usage": (100, 25, 900),
            },
            {"entry_type": "part", "thinking": "check rounding"},
            {"tools": [("call_prt_05", "bash")], "results": [("call_prt_05", "failed")]},
            {"session_id": opencode.CHILD, "content": "find the tests"},
        ],
    ),
    "opencode-db": Case(
        lambda root: opencode.make_db(root / "opencode.db").close() or root,
        [
            {"session_id": opencode.SID, "entry_type": "ai-title", "content": "Fix the cart"},
            {"entry_type": "message", "role": "user", "timestamp": 1760000001000, "is_prompt": True},
            {"entry_type": "part", "role": "user", "content": "fix the cart total"},
            {
                "entry_type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "usage": (100, 25, 900),
            },
            {"tools": [("call_prt_06", "task")], "results": [("call_prt_06", "completed")]},
            {"session_id": opencode.CHILD, "content": "find the tests"},
        ],
    ),
    "aider": Case(
        aider_history,
        [
            {"entry_type": "session-start", "timestamp": ms("2025-12-03T14:43:45Z")},
            {
                "entry_type": "user",
                "role": "user",
                "content": "Fix the tokenizer:\nit drops the last token",
                "is_prompt": True,
            },
            {"entry_type": "reply", "role": "assistant", "model": "anthropic/claude-sonnet-4-5"},
            {"entry_type": "user", "content": "/run pytest -q"},
            {"entry_type": "quote", "role": "system", "content": "3 passed"},
        ],
    ),
    "amazon-q": Case(
        amazon_q_save,
        [
            {**Q_CONV, "role": "user", "content": "deploy the stack", "is_prompt": True},
            {**Q_CONV, "role": "assistant", "content": "Building first.", "tools": [("t1", "execute_bash")]},
            {"role": "user", "results": [("t1", "completed")], "is_prompt": False},
            {"results": [("t2", "failed")]},
        ],
    ),
    "amazon-q-db": Case(
        amazon_q_db,
        [
            {**Q_CONV, "role": "user", "content": "deploy the stack", "is_prompt": True},
            {**Q_CONV, "role": "assistant", "content": "Now deploying.", "tools": [("t2", "execute_bash")]},
            {"results": [("t2", "failed")]},
        ],
    ),
    "kiro-cli": Case(
        lambda root: kiro.kiro_sessions(root / "sessions" / "cli") and root,
        [
            {
                **KIRO,
                "entry_type": "Prompt",
                "role": "user",
                "content": "fix the cart total",
                "is_prompt": True,
            },
            {
                **KIRO,
                "entry_type": "AssistantMessage",
                "thinking": "look at cart.py",
                "model": "claude-opus-4.8",
            },
            {
                "entry_type": "ToolResults",
                "results": [
                    ("tooluse_edit", "completed"),
                    ("tooluse_ls", "failed"),
                    ("tooluse_rd", "completed"),
                ],
            },
            {"entry_type": "SomeFutureKind", "known": False},
            {"session_id": kiro.CHILD, "content": "run the tests", "is_prompt": False},
        ],
    ),
    "gemini": Case(
        gemini_chats,
        [
            {
                **GEMINI,
                "entry_type": "user",
                "content": "list the files",
                "timestamp": ms("2026-04-29T21:39:33.155Z"),
                "is_prompt": True,
            },
            {
                **GEMINI,
                "role": "assistant",
                "content": "Let me look.",
                "thinking": "Plan: read the file",
                "model": "gemini-3-flash-preview",
            },
            {"tools": [("t1", "run_shell_command")]},
            {"results": [("t1", "completed")], "usage": (567, 167, 11502)},
            {"entry_type": "info", "role": "system", "content": "Request cancelled."},
            {"entry_type": "brand_new", "known": False, "timestamp": ms("2026-04-29T21:50:00Z")},
        ],
    ),
    "qwen-code": Case(
        in_folder(qwen.qwen_session),
        [
            {"session_id": qwen.SID, "role": "user", "content": "fix the cart total", "is_prompt": True},
            {
                "role": "assistant",
                "content": "I will set it to zero.",
                "thinking": "looking at cart.py",
                "model": "qwen3-coder-plus",
            },
            {"entry_type": "tool_result", "role": "user", "results": [("call_1", "completed")]},
            {"entry_type": "custom-title", "content": "Cart total"},
            {"entry_type": "some_future_record", "known": False},
        ],
    ),
    "copilot-cli": Case(
        in_folder(copilot.copilot_session),
        [
            {
                "session_id": copilot.SID,
                "entry_type": "user.message",
                "role": "user",
                "content": "fix the cart total",
                "is_prompt": True,
            },
            {
                "entry_type": "assistant.message",
                "content": "I will set it to zero.",
                "thinking": "looking at cart.py",
                "model": "claude-sonnet-4.5",
            },
            {"entry_type": "tool.execution_complete", "results": [("call_edit", "completed")]},
            {"session_id": f"{copilot.SID}:agent-call_task", "content": "tests pass"},
            {"entry_type": "session.shutdown", "more_usage": [("claude-sonnet-4.5", 200, 0, 1000)]},
            {"entry_type": "some.future_event", "known": False},
        ],
    ),
    "factory-droid": Case(
        in_folder(droid.droid_sessions),
        [
            {"session_id": droid.SID, "entry_type": "ai-title", "content": "Cart total fix"},
            {"session_id": droid.SID, "role": "user", "content": "fix the cart total", "is_prompt": True},
            {"role": "assistant", "content": "Fixing it.", "thinking": "look at cart.py", "model": "glm-5.2"},
            {"role": "user", "results": [("call_edit", "completed"), ("call_task", "completed")]},
            {"entry_type": "some_future_state", "known": False},
            {"session_id": droid.CHILD, "role": "assistant", "content": "tests pass"},
        ],
    ),
    "pi": Case(
        in_folder(pi.pi_sessions),
        [
            {"session_id": pi.SID, "entry_type": "session", "timestamp": ms("2026-03-02T09:00:00Z")},
            {"entry_type": "model_change", "model": "claude-sonnet-4-5"},
            {"role": "user", "content": "fix the cart total", "is_prompt": True},
            {"role": "assistant", "content": "Fixing it.", "thinking": "look at cart.py"},
            {"role": "user", "results": [("call_1", "completed")]},
            {"entry_type": "custom-title", "content": "Cart total"},
            {"entry_type": "some_future_entry", "known": False},
            {"session_id": pi.FORK, "content": "fix the cart total"},
        ],
    ),
    "kimi-cli": Case(
        in_folder(kimi.kimi_session),
        [
            {
                "session_id": kimi.SID,
                "entry_type": "user",
                "content": "fix the cart total",
                "is_prompt": True,
            },
            {"role": "assistant", "content": "Fixing it.", "thinking": "look at cart.py"},
            {"entry_type": "tool", "results": [("StrReplaceFile:0", "completed")]},
            {"entry_type": "StatusUpdate", "usage": (200, 40, 1000)},
            {"entry_type": "something_new", "known": False},
            {"session_id": f"{kimi.SID}:agent-a1b2c3", "content": "tests pass"},
        ],
    ),
    "kimi-code": Case(
        kimi_code.kimi_code_sessions,
        [
            {"session_id": kimi_code.SID, "entry_type": "metadata", "timestamp": kimi_code.T0},
            {"role": "user", "content": "fix the cart total", "is_prompt": True},
            {"role": "assistant", "thinking": "look at cart.py", "model": "moonshot-ai/kimi-k2.7"},
            {"role": "assistant", "content": "Fixing it.", "model": "moonshot-ai/kimi-k2.7"},
            {"role": "assistant", "tools": [("Edit_0", "Edit")]},
            {"role": "user", "results": [("Bash_1", "failed")]},
            {"entry_type": "usage.record", "usage": (200, 40, 1000), "model": "moonshot-ai/kimi-k2.7"},
            {"entry_type": "custom-title", "content": "Cart total"},
            {"entry_type": "some.future_record", "known": False},
            {"session_id": f"{kimi_code.SID}:agent-0", "content": "tests pass"},
            {"session_id": f"{kimi_code.SID}:agent-0", "content": kimi_code.SUB_TASK, "is_prompt": True},
            {"session_id": kimi_code.FORK, "entry_type": "forked", "timestamp": kimi_code.FORKED_AT + 5},
            {"session_id": kimi_code.REWOUND, "entry_type": "context.undo", "role": "system"},
            {"session_id": kimi_code.REWOUND, "entry_type": "context.clear", "role": "system"},
            {"session_id": f"{kimi_code.SWARM}:agent-1", "content": "tax.py rounds twice"},
            {"session_id": kimi_code.PLANNED, "entry_type": "side-file"},
        ],
    ),
    "continue": Case(
        in_folder(continue_dev.continue_sessions),
        [
            {"session_id": continue_dev.SID, "entry_type": "ai-title", "content": "Fix the cart total"},
            {
                "session_id": continue_dev.SID,
                "role": "user",
                "content": "fix the cart total",
                "is_prompt": True,
            },
            {
                "content": "Fixing it.",
                "thinking": "look at cart.py",
                "tools": [("call_1", "single_find_and_replace")],
            },
            {"entry_type": "something_new", "known": False},
            {"session_id": continue_dev.CLI_SID, "entry_type": "tool", "results": [("tc1", "completed")]},
            {"session_id": continue_dev.CLI_SID, "entry_type": "usage", "usage": (300, 20, 100)},
        ],
    ),
    "goose": Case(
        in_folder(goose.goose_db),
        [
            {
                "session_id": goose.SID,
                "entry_type": "ai-title",
                "content": "Fix the cart total",
                "model": "claude-sonnet-4-5",
            },
            {"role": "user", "content": "fix the cart total", "timestamp": 1772359200000, "is_prompt": True},
            {
                "role": "assistant",
                "thinking": "look at cart.py",
                "tools": [("toolu_1", "edit"), ("toolu_2", "shell")],
            },
            {"results": [("toolu_1", "completed"), ("toolu_2", "failed")]},
            {"entry_type": "assistant", "known": False},
        ],
    ),
    "crush": Case(
        in_folder(crush.crush_db),
        [
            {"session_id": crush.SID, "entry_type": "ai-title", "content": "Fix the cart total"},
            {"role": "user", "content": "fix the cart total", "timestamp": 1772359200000, "is_prompt": True},
            {
                "role": "assistant",
                "content": "Fixing it.",
                "thinking": "look at cart.py",
                "model": "claude-sonnet-4-5",
            },
            {"entry_type": "tool", "results": [("call_edit", "completed"), ("call_agent", "completed")]},
            {"tools": [("msg-4:shell:0", "bash")], "results": [("msg-4:shell:0", "completed")]},
            {"session_id": crush.CHILD, "content": "3 passed"},
            {"content": "Done.", "known": False},
        ],
    ),
    "opencode-go": Case(
        in_folder(lambda root: crush.crush_db(root, ".opencode", "opencode.db")),
        [
            {"session_id": crush.SID, "entry_type": "ai-title", "content": "Fix the cart total"},
            {"role": "user", "content": "fix the cart total", "timestamp": 1772359200000, "is_prompt": True},
            {"role": "assistant", "content": "Fixing it.", "model": "claude-sonnet-4-5"},
        ],
    ),
    "openhands": Case(
        in_folder(openhands.openhands_conversation),
        [
            {
                "session_id": openhands.SID,
                "entry_type": "base_state",
                "model": "litellm_proxy/claude-sonnet-4-5",
            },
            {
                "entry_type": "MessageEvent",
                "role": "user",
                "content": "fix the cart total",
                "is_prompt": True,
            },
            {"entry_type": "ActionEvent", "content": "Fixing it.", "tools": [("toolu_1", "file_editor")]},
            {"entry_type": "UserRejectObservation", "results": [("toolu_2", "rejected")]},
            {"entry_type": "AgentErrorEvent", "results": [("toolu_3", "failed")]},
            {"entry_type": "SomethingNewEvent", "known": False, "timestamp": ms("2026-03-02T10:00:09Z")},
        ],
    ),
    "zed": Case(
        in_folder(zed.zed_db),
        [
            {"session_id": zed.TID, "entry_type": "ai-title", "content": "Fix the cart total"},
            {"session_id": zed.TID, "entry_type": "User", "content": "fix the cart total", "is_prompt": True},
            {
                "entry_type": "Agent",
                "thinking": "look at cart.py",
                "tools": [("toolu_1", "edit_file"), ("toolu_2", "terminal")],
            },
            {"entry_type": "thread", "model": "claude-sonnet-4-5", "usage": (500, 60, 400)},
            {"entry_type": "unknown", "known": False},
            {"session_id": zed.CHILD, "content": "run the tests"},
        ],
    ),
    "warp": Case(
        lambda root: warp.warp_db(root / "warp").parent,
        [
            {
                "session_id": warp.CONV,
                "entry_type": "user_query",
                "content": "fix the cart total",
                "is_prompt": True,
            },
            {"entry_type": "agent_reasoning", "thinking": "look at cart.py", "timestamp": 1781000001000},
            {"entry_type": "tool_call", "tools": [("call-shell", "run_shell_command")]},
            {"entry_type": "tool_call_result", "results": [("call-shell", "completed")]},
            {"entry_type": "row", "model": "claude-4-5-opus"},
            {"entry_type": "message-99", "known": False},
            {"session_id": warp.CHILD, "content": "tests pass"},
        ],
    ),
}
for _name in ("cline", "roo-code", "kilo-code"):
    CASES[_name].expect = [
        {
            **CLINE,
            "entry_type": "say",
            "role": "user",
            "content": "fix the cart",
            "timestamp": 1000,
            "is_prompt": True,
        },
        {**CLINE, "role": "assistant", "thinking": "look at cart.py first", "timestamp": 1002},
        {**CLINE, "role": "assistant", "content": "Reading the cart.", "model": "claude-sonnet-4-5"},
        {"tools": [(f"{cline.TASK}:1004", "readFile")], "results": [(f"{cline.TASK}:1004", "completed")]},
        {"entry_type": "say", "usage": (20, 150, 9000)},
        {"entry_type": "api-message", "role": "assistant", "model": "claude-sonnet-4-5"},
        {"entry_type": "say", "timestamp": 1999, "known": False},
    ]

# values an agent never writes where it writes its fields: each adapter must take them without raising
UNUSABLE = [
    b"",
    b"{",
    b"\xff\xfe not UTF-8",
    b"null",
    b"[]",
    b'"a string"',
    b"{}",
    b'{"type": 7, "role": [], "timestamp": "not a time", "message": "x", "content": {"a": null}}',
    b'{"id": null, "sessionId": 3, "timestamp": -1e309, "parts": "x", "data": [1], "payload": null}',
    b'{"$row": "messages", "id": 1, "session_id": [], "created_at": "never", "parts": 5}',
    b'{"' + b"x" * 1000 + b'": ' + b"[" * 200 + b"]" * 200 + b"}",
]


# ---------------------------------------------------------------------- the tests


def test_every_registered_adapter_has_a_case() -> None:
    assert set(CASES) == set(ADAPTERS), "add a Case for each adapter (and none for an adapter that is gone)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_normalize_says_what_each_record_means(name: str, tmp_path: Path) -> None:
    adapter = ADAPTERS[name]
    case = CASES[name]
    assert case.expect, f"{name}: its case expects nothing"
    said_all = [
        said(adapter.normalize(rec, ctx))
        for ctx, recs in contexts(adapter, case.write(tmp_path))
        for rec in recs
    ]
    for rec in said_all:
        assert rec["known"] or rec["entry_type"] is not None, "an unread record keeps what it was"
    missing = [
        want for want in case.expect if not any(all(r[k] == v for k, v in want.items()) for r in said_all)
    ]
    assert not missing, f"{name}: no record says {missing}; the records say:\n" + "\n".join(
        str(brief(r)) for r in said_all
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_normalize_takes_unusable_values_without_raising(name: str, tmp_path: Path) -> None:
    """Each value first in a file (a fresh context) and after the file's own records."""
    adapter = ADAPTERS[name]
    for ctx, recs in contexts(adapter, CASES[name].write(tmp_path)):
        for offset, raw in enumerate(UNUSABLE):
            fresh = FileContext(ctx.path, ctx.kind, ctx.project_key)
            assert isinstance(adapter.normalize(RawRecord(offset, 1, raw), fresh), Record)
        for rec in recs:
            adapter.normalize(rec, ctx)
        end = recs[-1].offset + len(recs[-1].raw) + 1 if recs else 0
        for n, raw in enumerate(UNUSABLE):
            out = adapter.normalize(RawRecord(end + n * 4096, len(recs) + n + 1, raw), ctx)
            assert isinstance(out, Record)
            assert not (out.known and out.is_message and out.content is None and not out.tool_uses), raw


@pytest.mark.parametrize("name", sorted(n for n in CASES if ADAPTERS[n].mode != "database"))
def test_every_session_restored_reads_back_as_it_was(name: str, tmp_path: Path) -> None:
    """Each main session of each agent restored into a folder (its files as its agent lays them
    out), and that folder read into a new archive, gives the same sessions with the same messages:
    a restore that flattened a layout its reader needs (OpenCode's storage/, Kimi's sessions/<md5>/)
    or left out a subagent with an id of its own (Droid's, Kiro's) gave an archive nothing could
    read back. A database is restored as its rows, not as a database, so it is not read back."""
    from threadloom.core.actions.restore import restore_session
    from threadloom.core.ingest.pipeline import run_ingest
    from threadloom.core.store import db

    listed = (
        "SELECT id, message_count, is_subagent, parent_session_id FROM agent_sessions "
        "WHERE message_count > 0 ORDER BY id"
    )
    archive = db.connect(tmp_path / "archive.db")
    run_ingest(archive, [CASES[name].write(tmp_path / "agent")], include_defaults=False)
    before = archive.execute(listed).fetchall()
    restored = tmp_path / "restored"
    for sid, _, is_subagent, _ in before:
        if not is_subagent:
            restore_session(archive, sid, restored)
    archive.close()
    again = db.connect(tmp_path / "again.db")
    run_ingest(again, [restored], include_defaults=False)
    assert again.execute(listed).fetchall() == before
    again.close()
