"""Cline, Roo Code and the Cline SDK: task folders and sessions written here, plus the corpus samples."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.shared import editor_user_dirs
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes
from threadloom.core.store import db

from tests.builders.cline import (
    CWD,
    TASK,
    api_history,
    api_req,
    ask,
    native_tools_history,
    say,
    storage,
    task_folder,
    ui_stream,
    write,
)
from tests.support import CORPUS, ingest

ROO_TASK = "0198f0a2-7c3e-7b41-9d2e-5f6a7b8c9d0e"
ROO_CHILD = "0198f0a2-9999-7b41-9d2e-5f6a7b8c9d0e"


def session(conn: sqlite3.Connection, sid: str) -> dict:
    cur = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (sid,))
    row = cur.fetchone()
    assert row is not None, sid
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def shown(conn: sqlite3.Connection, sid: str) -> list[tuple]:
    return conn.execute(
        "SELECT role, content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
    ).fetchall()


def round_trips(conn: sqlite3.Connection, path: Path) -> bool:
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path.resolve()),)).fetchone()[0]
    data, contiguous = file_bytes(conn, fid)
    return contiguous and data == path.read_bytes()


def test_cline_task_ui_stream_turns_tools_and_tokens(conn, tmp_path):
    folder = task_folder(tmp_path, ui=ui_stream(), api=api_history())
    write(
        folder / "task_metadata.json",
        {
            "files_in_context": [{"path": "cart.py", "record_state": "active", "record_source": "read_tool"}],
            "model_usage": [
                {"ts": 1000, "model_id": "claude-sonnet-4-5", "model_provider_id": "anthropic", "mode": "act"}
            ],
            "environment_history": [{"ts": 1000, "os_name": "linux", "cline_version": "3.17.0"}],
        },
    )
    ingest(conn, storage(tmp_path))
    s = session(conn, TASK)
    assert (s["source"], s["turn_count"], s["project_path"], s["model"], s["cli_version"]) == (
        "cline",
        3,
        CWD,
        "claude-sonnet-4-5",
        "3.17.0",
    )
    assert s["title"] == "fix the cart"
    contents = [c for _, c in shown(conn, TASK)]
    assert contents[:3] == ["fix the cart", None, "Reading the cart."]  # reasoning is a thinking-only message
    assert "Which file?\n- tests/test_cart.py\n- new file" in contents
    assert ("system", "Cline tried to use write_to_file without value for required parameter") in shown(
        conn, TASK
    )
    assert "something new" not in contents  # an unknown kind is kept, marked, not shown
    assert conn.execute("SELECT known FROM entries WHERE subtype = 'brand_new_kind'").fetchone() == (0,)
    calls = dict(
        conn.execute("SELECT tool_name, status || ':' || COALESCE(result_json, '') FROM agent_tool_calls")
    )
    assert calls == {"readFile": 'completed:"def total(): ..."', "execute_command": 'completed:"3 passed"'}
    # Anthropic-style tokensIn excludes the cache; deleted_api_reqs count as Cline counts them
    assert (s["input_tokens"], s["output_tokens"], s["cache_read_tokens"], s["cache_creation_tokens"]) == (
        12 + 20 + 30 + 5,
        300 + 150 + 80 + 6,
        9000 + 9100,
        9000,
    )
    # the model-facing history is kept record by record but neither shown nor counted again
    assert conn.execute(
        "SELECT count(*) FROM entries WHERE entry_type = 'api-message' AND seq IS NULL"
    ).fetchone() == (3,)
    for name in ("ui_messages.json", "api_conversation_history.json", "task_metadata.json"):
        assert round_trips(conn, folder / name), name
    raws = {bytes(r[0]) for r in conn.execute("SELECT raw FROM entries")}
    assert json.dumps(ui_stream()[4], separators=(",", ":")).encode() in raws  # each message's exact JSON


def test_a_provider_that_counts_the_cache_apart_does_so_in_every_request(conn, tmp_path):
    """With no `apiProtocol`, a request that cached no more than its tokensIn was taken to count
    the cache inside it: a task's first (11495 in, 512 read) lost 512 input tokens, though its
    provider's later requests (349 in, 12352 read) show it counts the cache apart. That provider's
    every request now does; another provider of the task keeps its own reading."""
    cline = {"providerId": "cline", "modelId": "x-ai/grok-code-fast-1", "mode": "act"}
    other = {"providerId": "openai-compatible", "modelId": "qwen3", "mode": "act"}
    ui = [
        say(1000, "task", "fix the cart"),
        {**api_req(1001, 11495, 16, reads=512), "modelInfo": cline},
        {**api_req(1002, 349, 60, reads=12352), "modelInfo": cline},
        {**api_req(1003, 5000, 70, reads=4000), "modelInfo": other},
    ]
    task_folder(tmp_path, ui=ui)
    ingest(conn, storage(tmp_path))
    s = session(conn, TASK)
    assert (s["input_tokens"], s["cache_read_tokens"]) == (11495 + 349 + 1000, 512 + 12352 + 4000)


def test_retries_and_failed_requests_read_as_words(conn, tmp_path):
    """Cline 3.x writes a retry and a failed request as JSON, which `show` printed raw
    (`error_retry: {"attempt":1,"maxAttempts":3,"delaySeconds":2}`): they read as words."""
    failure = {"message": "Failed to create stream: status 400", "code": "stream_initialization_failed"}
    ui = [
        say(1000, "task", "fix the cart"),
        say(1001, "error_retry", json.dumps({"attempt": 1, "maxAttempts": 3, "delaySeconds": 2})),
        say(
            1002,
            "error_retry",
            json.dumps({"attempt": 3, "maxAttempts": 3, "delaySeconds": 0, "failed": True}),
        ),
        ask(1003, "api_req_failed", json.dumps(failure)),
        ask(1004, "api_req_failed", "Request timed out"),
    ]
    task_folder(tmp_path, ui=ui)
    ingest(conn, storage(tmp_path))
    assert shown(conn, TASK)[1:] == [
        ("system", "retry 1 of 3 in 2 s"),
        ("system", "retry 3 of 3 failed: no more retries"),
        ("system", "Failed to create stream: status 400"),
        ("system", "Request timed out"),
    ]


def test_task_rewritten_whole_is_read_again_and_mid_write_waits(conn, tmp_path):
    stream = ui_stream()
    folder = task_folder(tmp_path, ui=stream[:6])
    ingest(conn, storage(tmp_path))
    assert session(conn, TASK)["turn_count"] == 1
    path = folder / "ui_messages.json"
    full = json.dumps(stream, separators=(",", ":"))
    path.write_text(full[: len(full) // 2])  # caught mid-write: no error, waits
    report = ingest(conn, storage(tmp_path))
    assert report.records_added == 0
    assert conn.execute("SELECT status FROM source_files WHERE path = ?", (str(path),)).fetchone() == (
        "waiting",
    )
    write(path, stream)
    ingest(conn, storage(tmp_path))
    s = session(conn, TASK)
    assert (s["turn_count"], s["output_tokens"]) == (3, 300 + 150 + 80 + 6)
    assert round_trips(conn, path)
    os.utime(path, None)  # same bytes, new mtime: not read again
    assert ingest(conn, storage(tmp_path)).records_added == 0


def test_task_without_ui_messages_shows_the_api_history(conn, tmp_path):
    api = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nlist files\n</task>"}], "ts": 2000},
        {
            "role": "assistant",
            "ts": 2001,
            "modelInfo": {"modelId": "gpt-5", "providerId": "openai", "mode": "act"},
            "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "call_1", "name": "execute_command", "input": {"command": "ls"}},
            ],
            "metrics": {"tokens": {"prompt": 1000, "completion": 40, "cached": 600}},
        },
        {
            "role": "user",
            "ts": 2002,
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "a.py"}],
        },
        {
            "role": "user",
            "ts": 2003,
            "content": [{"type": "text", "text": "<feedback>\nnow the tests\n</feedback>"}],
        },
    ]
    task_folder(tmp_path, api=api)
    ingest(conn, storage(tmp_path))
    s = session(conn, TASK)
    assert (
        s["turn_count"],
        s["tool_call_count"],
        s["input_tokens"],
        s["cache_read_tokens"],
        s["output_tokens"],
    ) == (2, 1, 400, 600, 40)
    assert conn.execute("SELECT status, result_json FROM agent_tool_calls").fetchone() == (
        "completed",
        '"a.py"',
    )
    assert [c for _, c in shown(conn, TASK)][0] == "list files"


def test_native_tool_results_sent_back_as_text_blocks(conn, tmp_path):
    """Cline 3.x (2026) sends a native call's result back as a `[read_file for 'x'] Result:` text
    block: every call stayed pending with no output and the results showed as the user's words.
    Each block is the result of the open call of its tool, in call order, failed or rejected as
    Cline words it."""
    folder = task_folder(tmp_path, api=native_tools_history())
    ingest(conn, storage(tmp_path))
    calls = conn.execute("SELECT id, status, result_json FROM agent_tool_calls ORDER BY id").fetchall()
    assert [(c[0], c[1]) for c in calls] == [("t1", "completed"), ("t2", "failed"), ("t3", "rejected")]
    assert json.loads(calls[0][2]) == "1 | hello readme"
    assert "File not found" in json.loads(calls[1][2])
    assert shown(conn, TASK) == [
        ("user", "Create hello.ts"),
        ("assistant", None),
        ("user", None),
        ("assistant", "Done."),
    ]
    assert session(conn, TASK)["turn_count"] == 1
    assert round_trips(conn, folder / "api_conversation_history.json")


def test_a_call_the_next_user_message_does_not_answer_is_interrupted(conn, tmp_path):
    """A call left unanswered by a `[TASK RESUMPTION]` stayed open and took the next result of its
    tool, and every later call of that tool showed its successor's output (a real Cline 3.x task:
    75 of 231 calls). A result answers a call of the assistant message just before it; the calls
    a user message does not answer are interrupted there."""

    def call(call_id: str, name: str, params: dict) -> dict:
        return {"type": "tool_use", "id": call_id, "name": name, "input": params}

    def said(ts: int, *texts: str) -> dict:
        return {"role": "user", "ts": ts, "content": [{"type": "text", "text": t} for t in texts]}

    api = [
        said(4000, "<task>\nrun the app\n</task>"),
        {
            "role": "assistant",
            "ts": 4001,
            "content": [call("c0", "execute_command", {"command": "npm start"})],
        },
        said(
            4002,
            "[TASK RESUMPTION] This task was interrupted 3 days ago. If a tool use the user did not "
            "provide a result for, assume it was not successful.",
            "<user_message>\ngo on\n</user_message>",
        ),
        {"role": "assistant", "ts": 4003, "content": [call("c1", "execute_command", {"command": "ls"})]},
        said(4004, "[execute_command for 'ls'] Result:\nREADME.md"),
        {"role": "assistant", "ts": 4005, "content": [call("c2", "execute_command", {"command": "pwd"})]},
        said(4006, "[execute_command for 'pwd'] Result:\n/home/dev"),
    ]
    task_folder(tmp_path, api=api)
    ingest(conn, storage(tmp_path))
    calls = conn.execute(
        "SELECT c.id, c.status, c.result_json, e.timestamp FROM agent_tool_calls c "
        "LEFT JOIN entries e ON e.id = c.result_entry_id ORDER BY c.id"
    ).fetchall()
    assert [(i, status, result and json.loads(result), ts) for i, status, result, ts in calls] == [
        ("c0", "interrupted", None, 4002),
        ("c1", "completed", "README.md", 4004),
        ("c2", "completed", "/home/dev", 4006),
    ]


def test_todo_list_reminders_are_not_the_user_s_words(conn, tmp_path):
    """Cline 3.x adds a reminder about its todo list (`# TODO LIST UPDATE REQUIRED`, `# task_progress
    …`) to the user messages that carry tool results: each was shown as a prompt the person typed,
    a new turn every few calls (a real task: 17 of them)."""
    reminder = (
        "\n\n\t\t\t\t# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter.\n- [ ] a"
    )
    progress = (
        "\n# task_progress List (Optional - Plan Mode)\n\nWhile in PLAN MODE, you may include a todo list."
    )
    env = "<environment_details>\n# Visual Studio Code Visible Files\n</environment_details>"

    def said(ts: int, *texts: str) -> dict:
        return {"role": "user", "ts": ts, "content": [{"type": "text", "text": t} for t in texts]}

    api = [
        said(6000, "<task>\nplan the refactor\n</task>", progress, env),
        {
            "role": "assistant",
            "ts": 6001,
            "content": [{"type": "tool_use", "id": "r1", "name": "read_file", "input": {"path": "a.ts"}}],
        },
        said(6002, "[read_file for 'a.ts'] Result:\n1 | x", reminder, env),
        {"role": "assistant", "ts": 6003, "content": [{"type": "text", "text": "Read it."}]},
        said(6004, "now write the plan", reminder, env),
        {"role": "assistant", "ts": 6005, "content": [{"type": "text", "text": "Planned."}]},
    ]
    task_folder(tmp_path, api=api)
    ingest(conn, storage(tmp_path))
    assert [c for role, c in shown(conn, TASK) if role == "user"] == [
        "plan the refactor",
        None,  # the read's result
        "now write the plan",
    ]
    assert session(conn, TASK)["turn_count"] == 2
    assert conn.execute("SELECT status FROM agent_tool_calls").fetchone() == ("completed",)


def test_subagents_results_answer_their_calls(conn, tmp_path):
    """Cline labels use_subagents' result `[subagents] Result:` and a configured subagent's
    (use_subagent_x) `[subagent: x] Result:`: neither label is the tool's name, so the call got no
    result and the subagents' report showed as the user's words."""
    api = [
        {"role": "user", "ts": 5000, "content": [{"type": "text", "text": "<task>\nread the code\n</task>"}]},
        {
            "role": "assistant",
            "ts": 5001,
            "content": [
                {"type": "tool_use", "id": "s1", "name": "use_subagents", "input": {"prompt_1": "map it"}},
                {"type": "tool_use", "id": "s2", "name": "use_subagent_explore", "input": {"prompt": "look"}},
            ],
        },
        {
            "role": "user",
            "ts": 5002,
            "content": [
                {"type": "text", "text": "[subagents] Result:\nSubagent results:\nTotal: 1\nSucceeded: 1"},
                {"type": "text", "text": "[subagent: explore] Result:\nfound 3 modules"},
            ],
        },
    ]
    task_folder(tmp_path, api=api)
    ingest(conn, storage(tmp_path))
    calls = conn.execute("SELECT id, status, result_json FROM agent_tool_calls ORDER BY id").fetchall()
    assert [(i, status, json.loads(result)) for i, status, result in calls] == [
        ("s1", "completed", "Subagent results:\nTotal: 1\nSucceeded: 1"),
        ("s2", "completed", "found 3 modules"),
    ]
    assert shown(conn, TASK)[-1] == ("user", None)


def test_native_file_tools_name_their_file_absolute_path(conn, tmp_path):
    """Cline 3.x's native write_to_file and replace_in_file name their file `absolutePath`: their
    lines counted +0 -0 and the call's line showed its raw JSON; they count and show the path."""
    from threadloom.core.read.calls import tool_summary
    from threadloom.core.read.query import messages

    path = "c:\\Apps\\demo\\hello.ts"
    blocks = "------- SEARCH\nexport const b = 2;\n=======\nexport const b = 3;\n+++++++ REPLACE\n"
    api = [
        {
            "role": "user",
            "ts": 2000,
            "content": [{"type": "text", "text": "<task>\nCreate hello.ts\n</task>"}],
        },
        {
            "role": "assistant",
            "ts": 2001,
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "write_to_file",
                    "input": {"absolutePath": path, "content": "export const a = 1;\nexport const b = 2;\n"},
                },
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "replace_in_file",
                    "input": {"absolutePath": path, "diff": blocks},
                },
            ],
        },
        {
            "role": "user",
            "ts": 2002,
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
            ],
        },
    ]
    task_folder(tmp_path, api=api)
    ingest(conn, storage(tmp_path))
    assert conn.execute(
        "SELECT sum(lines_added), sum(lines_removed) FROM agent_file_changes WHERE path = ?", (path,)
    ).fetchone() == (3, 1)
    assert [tool_summary(c) for m in messages(conn, TASK) for c in m.tool_calls] == [path, path]


def test_roo_task_subtask_condense_and_openai_usage(conn, tmp_path):
    ext = "rooveterinaryinc.roo-cline"
    task_folder(
        tmp_path,
        ROO_TASK,
        ext,
        ui=[
            say(1, "task", "plan the refactor"),
            api_req(2, 5000, 100, reads=4000, writes=500, apiProtocol="openai"),
            say(
                3,
                "condense_context",
                "",
                contextCondense={
                    "cost": 0.1,
                    "prevContextTokens": 9000,
                    "newContextTokens": 900,
                    "summary": "We planned.",
                },
            ),
            ask(4, "tool", json.dumps({"tool": "newTask", "mode": "code", "content": "do step 1"})),
        ],
    )
    task_folder(tmp_path, ROO_CHILD, ext, ui=[say(5, "task", "do step 1"), say(6, "text", "done")])
    write(
        storage(tmp_path, ext) / "tasks" / "_index.json",
        {
            "version": 1,
            "updatedAt": 7,
            "entries": [
                {
                    "id": ROO_TASK,
                    "number": 1,
                    "ts": 1,
                    "task": "plan the refactor",
                    "tokensIn": 5000,
                    "tokensOut": 100,
                    "totalCost": 0.1,
                    "workspace": "/srv/roo",
                },
                {
                    "id": ROO_CHILD,
                    "rootTaskId": ROO_TASK,
                    "parentTaskId": ROO_TASK,
                    "number": 2,
                    "ts": 5,
                    "task": "do step 1",
                    "tokensIn": 0,
                    "tokensOut": 0,
                    "totalCost": 0,
                    "workspace": "/srv/roo",
                },
                {
                    "id": "gone-task",
                    "number": 3,
                    "ts": 9,
                    "task": "deleted",
                    "tokensIn": 0,
                    "tokensOut": 0,
                    "totalCost": 0,
                },
            ],
        },
    )
    ingest(conn, tmp_path / ".config")
    parent, child = session(conn, ROO_TASK), session(conn, ROO_CHILD)
    assert (parent["source"], parent["compaction_count"], parent["project_path"]) == (
        "roo-code",
        1,
        "/srv/roo",
    )
    assert (parent["input_tokens"], parent["cache_read_tokens"], parent["cache_creation_tokens"]) == (
        500,
        4000,
        500,
    )
    assert (child["kind"], child["is_subagent"], child["parent_session_id"]) == ("subagent", 1, ROO_TASK)
    # the subtask hangs off the newTask call that created it (its message is the subtask's prompt)
    call = conn.execute(
        "SELECT id, tool_name, child_session_id FROM agent_tool_calls WHERE session_id = ?", (ROO_TASK,)
    ).fetchone()
    assert call[1:] == ("newTask", ROO_CHILD) and child["tool_call_id"] == call[0]
    assert conn.execute("SELECT count(*) FROM agent_sessions WHERE id = 'gone-task'").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM entries WHERE subtype = 'no-task-folder'").fetchone() == (1,)
    assert {r[0] for r in conn.execute("SELECT DISTINCT agent FROM source_files")} == {"roo-code"}


def test_a_task_opened_with_say_text_starts_with_its_prompt(conn, tmp_path):
    """Cline (and Roo, Kilo) open a task with `say: "text"` holding the person's prompt, not
    `say: "task"`: that first message is the task (a prompt, and the title), and the `text`
    messages after it are the model's."""
    model = {"providerId": "anthropic", "modelId": "claude-sonnet-4-5", "mode": "act"}
    folder = task_folder(
        tmp_path,
        ui=[
            say(1000, "text", "make the cart total round to cents", images=[], files=[]),
            api_req(1001, 900, 40),
            say(1002, "text", "I'll look at cart.py.", modelInfo=model, partial=False),
            say(1003, "completion_result", "Rounded."),
            ask(1004, "completion_result", ""),
            say(1005, "user_feedback", "and add a test"),
            say(1006, "text", "Added one.", modelInfo=model),
        ],
    )
    ingest(conn, storage(tmp_path))
    assert shown(conn, TASK)[:3] == [
        ("user", "make the cart total round to cents"),
        ("assistant", "I'll look at cart.py."),
        ("assistant", "Rounded."),
    ]
    s = session(conn, TASK)
    assert (s["title"], s["turn_count"]) == ("make the cart total round to cents", 2)
    assert s["first_prompt"] == "make the cart total round to cents"
    assert round_trips(conn, folder / "ui_messages.json")


def test_cline_task_history_gives_the_working_folder(conn, tmp_path):
    task_folder(tmp_path, ui=[say(1, "task", "hello"), say(2, "text", "hi")])
    write(
        storage(tmp_path) / "state" / "taskHistory.json",
        [
            {
                "id": TASK,
                "ts": 1,
                "task": "hello",
                "tokensIn": 1,
                "tokensOut": 1,
                "totalCost": 0,
                "cwdOnTaskInitialization": "/work/from-history",
                "modelId": "claude-opus-4",
            }
        ],
    )
    ingest(conn, storage(tmp_path))
    assert session(conn, TASK)["project_path"] == "/work/from-history"


def sdk_messages(sid: str, messages: list[dict], **extra) -> dict:
    return {
        "version": 1,
        "updated_at": "2026-07-15T05:42:04.818Z",
        "agent": "lead",
        "sessionId": sid,
        "messages": messages,
        **extra,
    }


def sdk_manifest(folder: Path, sid: str) -> dict:
    """An SDK session's manifest (`<id>.json`), its messages in `<id>.messages.json` beside it."""
    return {
        "version": 1,
        "session_id": sid,
        "source": "cli",
        "started_at": "2026-07-15T05:42:04.609Z",
        "status": "completed",
        "provider": "cline",
        "model": "anthropic/claude-opus-4.8",
        "cwd": "/Users/me/app",
        "workspace_root": "/Users/me/app",
        "metadata": {"title": "rename the sidebar"},
        "messages_path": str(folder / f"{sid}.messages.json"),
    }


def write_pretty(path: Path, value) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent="\t") + "\n")
    return path


def test_cline_sdk_session_subagent_compaction_and_sidecar(conn, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "cline-home"))
    sessions = tmp_path / "cline-home" / "data" / "sessions"
    sid = "1784094124598_abcde"
    folder = sessions / sid
    write_pretty(folder / f"{sid}.json", sdk_manifest(folder, sid))
    metrics = {
        "inputTokens": 1000,
        "outputTokens": 50,
        "cacheReadTokens": 800,
        "cacheWriteTokens": 100,
        "cost": 0.1,
    }
    transcript = write_pretty(
        folder / f"{sid}.messages.json",
        sdk_messages(
            sid,
            [
                {
                    "id": "u1",
                    "role": "user",
                    "ts": 1,
                    "content": [{"type": "text", "text": "rename the sidebar"}],
                },
                {
                    "id": "a1",
                    "role": "assistant",
                    "ts": 2,
                    "modelInfo": {"id": "claude-opus-4.8", "provider": "cline"},
                    "metrics": metrics,
                    "content": [
                        {"type": "thinking", "thinking": "find it"},
                        {"type": "tool_use", "id": "t1", "name": "spawn_agent", "input": {"task": "find"}},
                    ],
                },
                {
                    "id": "u2",
                    "role": "user",
                    "ts": 3,
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "name": "spawn_agent",
                            "content": "found it",
                            "is_error": False,
                        }
                    ],
                },
                {
                    "id": "u3",
                    "role": "user",
                    "ts": 4,
                    "metadata": {"kind": "compaction", "usageBefore": metrics},
                    "content": [
                        {"type": "text", "text": "and the header"},
                        {"type": "text", "text": "<SYSTEM_NOTICE>compacted</SYSTEM_NOTICE>"},
                    ],
                },
                {
                    "id": "u4",
                    "role": "user",
                    "ts": 5,
                    "content": [
                        {"type": "text", "text": "and the footer"},
                        {
                            "type": "text",
                            "text": "<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions after "
                            "the request above:\nFiles edited:\n/Users/me/app/footer.tsx:3-4\n</SYSTEM_NOTICE>",
                        },
                    ],
                },
            ],
            system_prompt="You are Cline.",
        ),
    )
    write_pretty(
        folder / "explorer.messages.json",
        sdk_messages(
            f"{sid}__explorer",
            [
                {"id": "s1", "role": "user", "ts": 1, "content": [{"type": "text", "text": "find"}]},
                {
                    "id": "s2",
                    "role": "assistant",
                    "ts": 2,
                    "content": [{"type": "text", "text": "in app.tsx"}],
                    "metrics": {"inputTokens": 10, "outputTokens": 5},
                },
            ],
        ),
    )
    write_pretty(
        folder / f"{sid}.compaction.json",
        {
            "version": 1,
            "updated_at": "2026-07-15T05:43:00.000Z",
            "source_message_count": 3,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "summary of it all"}]}],
        },
    )
    ingest(conn, tmp_path / "cline-home")
    s = session(conn, sid)
    assert (
        s["source"],
        s["title"],
        s["project_path"],
        s["turn_count"],
        s["tool_call_count"],
        s["compaction_count"],
    ) == ("cline", "rename the sidebar", "/Users/me/app", 3, 1, 1)
    # input reported with the cache inside; the compaction message's usageBefore counts once more
    assert (s["input_tokens"], s["cache_read_tokens"], s["cache_creation_tokens"], s["output_tokens"]) == (
        200,
        1600,
        200,
        100,
    )
    child = session(conn, f"{sid}__explorer")
    assert (child["kind"], child["parent_session_id"], child["input_tokens"]) == ("subagent", sid, 10)
    assert "summary of it all" not in [c for _, c in shown(conn, sid)]
    # the SDK's notice of what a compacted turn did is for the model: the prompts are the words typed
    prompts = [c for role, c in shown(conn, sid) if role == "user" and c]
    assert prompts == ["rename the sidebar", "and the header", "and the footer"]
    assert round_trips(conn, transcript)
    assert {r[0] for r in conn.execute("SELECT agent FROM source_files")} == {"cline"}


def test_explicit_files_are_recognised_by_content(conn, tmp_path):
    loose = tmp_path / "export"
    ui = write(loose / "ui_messages.json", [say(1, "task", "hi"), say(2, "text", "hello")])
    sdk = write_pretty(
        loose / "mine.messages.json",
        sdk_messages("s-1", [{"id": "u", "role": "user", "content": [{"type": "text", "text": "hey"}]}]),
    )
    assert not ADAPTERS["gemini"].claims(ui) and not ADAPTERS["claude-code"].claims(ui)
    run_ingest(conn, [ui, sdk], include_defaults=False)
    assert (
        conn.execute("SELECT agent, status FROM source_files ORDER BY path").fetchall()
        == [("cline", "ok")] * 2
    )
    assert {r[0] for r in conn.execute("SELECT id FROM agent_sessions")} == {"export", "s-1"}


def test_default_roots_on_each_platform(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert editor_user_dirs(("Code",)) == [tmp_path / ".config" / "Code" / "User"]
    monkeypatch.setattr(sys, "platform", "darwin")
    assert editor_user_dirs(("Code",)) == [tmp_path / "Library" / "Application Support" / "Code" / "User"]
    mac = (
        tmp_path
        / "Library"
        / "Application Support"
        / "Cursor"
        / "User"
        / "globalStorage"
        / "saoudrizwan.claude-dev"
    )
    mac.mkdir(parents=True)
    assert ADAPTERS["cline"].default_roots()[0] == mac  # Cline installed in Cursor is found too
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert editor_user_dirs(("Code",)) == [tmp_path / "Roaming" / "Code" / "User"]


# ---------------------------------------------------------------------- corpus

CLINE_SDK = CORPUS / "cline-sdk"


@pytest.mark.corpus
@pytest.mark.skipif(not CLINE_SDK.is_dir(), reason="../shared/corpus/cline-sdk is not present")
def test_corpus_cline_sdk(tmp_path):
    files = sorted(CLINE_SDK.rglob("*.json"))
    assert len(files) == 5
    expected = {  # per file: (turns, input, cache read, output), each file ingested on its own
        "success.messages.json": (1, 21 - 3 - 1, 3, 8),
        "session.messages.json": (5, 630254 - 534435, 534435, 4395),
        "basic.compaction.json": (5, 630254 - 534435, 534435, 4395),  # usageBefore stands for the removed
        "agentic.compaction.json": (1, 12238 - 12224, 12224, 10),
        "session.json": (0, 0, 0, 0),
    }
    for path in files:
        conn = db.connect(tmp_path / f"{path.name}.db")
        report = run_ingest(conn, [path], include_defaults=False)
        assert not report.errors, report.errors
        fid, agent = conn.execute("SELECT id, agent FROM source_files").fetchone()
        assert agent == "cline"
        assert round_trips(conn, path), path
        doc = json.loads(path.read_bytes())
        raws = {bytes(r[0]) for r in conn.execute("SELECT raw FROM entries WHERE entry_type = 'message'")}
        assert len(raws) == len(doc.get("messages", [])), path
        for raw in raws:
            assert json.loads(raw) in doc["messages"]
        row = conn.execute(
            "SELECT turn_count, input_tokens, cache_read_tokens, output_tokens FROM agent_sessions "
            "WHERE id = ?",
            (doc.get("sessionId") or doc.get("session_id"),),
        ).fetchone()
        assert row == expected[path.name], path
        conn.close()


def test_rebuild_from_entries_converges(conn, tmp_path):
    from threadloom.core.ingest.ledger import rebuild_derived

    folder = task_folder(tmp_path, ui=ui_stream(), api=api_history())
    write(folder / "task_metadata.json", {"model_usage": [], "environment_history": []})
    ingest(conn, storage(tmp_path))
    queries = (
        "SELECT id, turn_count, message_count, input_tokens, output_tokens, cache_read_tokens, project_path "
        "FROM agent_sessions",
        "SELECT id, parent_turn_id, token_count FROM agent_turns ORDER BY id",
        "SELECT id, status, result_json FROM agent_tool_calls ORDER BY id",
    )
    before = [conn.execute(q).fetchall() for q in queries]
    rebuild_derived(conn)
    assert [conn.execute(q).fetchall() for q in queries] == before


def test_a_byte_order_mark_before_a_task_document(conn, tmp_path):
    """A document that starts with a UTF-8 BOM is read (not taken for one caught mid-write), and the
    mark stays in its stored bytes."""
    plain = task_folder(tmp_path / "plain", ui=ui_stream())
    folder = task_folder(tmp_path / "marked", task="1700000000001", ui=ui_stream())
    path = folder / "ui_messages.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    ingest(conn, tmp_path)
    assert shown(conn, "1700000000001") == shown(conn, plain.name) != []
    assert round_trips(conn, path)


def test_a_task_folder_is_found_wherever_it_sits(conn, tmp_path):
    """A task folder copied out of the editor (a backup, another machine's export) given as a source:
    found by its files' names and first bytes, Cline's (ms ids) and Roo's (uuids) told apart as in
    `tasks/`; a file that only shares the name is left alone."""
    export = tmp_path / "backup" / "old-laptop"
    write(export / TASK / "ui_messages.json", ui_stream())
    write(export / TASK / "api_conversation_history.json", api_history())
    write(export / TASK / "task_metadata.json", {"model_usage": []})
    write(
        export / ROO_TASK / "ui_messages.json",
        [say(1, "task", "plan the refactor"), say(2, "text", "planned")],
    )
    write(export / "unrelated" / "ui_messages.json", {"theme": "dark"})
    run_ingest(conn, [tmp_path / "backup"], include_defaults=False)
    agents = {
        str(Path(p).relative_to(export)): a for p, a in conn.execute("SELECT path, agent FROM source_files")
    }
    assert agents == {
        f"{TASK}/ui_messages.json": "cline",
        f"{TASK}/api_conversation_history.json": "cline",
        f"{TASK}/task_metadata.json": "cline",
        f"{ROO_TASK}/ui_messages.json": "roo-code",
    }
    assert session(conn, TASK)["turn_count"] == 3
    assert shown(conn, ROO_TASK) == [("user", "plan the refactor"), ("assistant", "planned")]


def test_a_task_s_edits_count_their_lines_from_either_log(conn, tmp_path):
    """The UI log's file tools (newFileCreated, editedExistingFile) and the API history's
    replace_in_file carry SEARCH/REPLACE blocks (shapes of a real Cline 3.51 task): they changed
    0 lines in the stats and drew no diff. A completion's text loses the flag Cline appends."""
    from threadloom.core.adapters.cline import replaced_blocks

    blocks = "------- SEARCH\nold line\n=======\nnew line\nsecond new line\n+++++++ REPLACE\n"
    ui = [
        say(1000, "text", "Create Hello.cs and fix Notes.txt"),
        say(1001, "tool", json.dumps({"tool": "newFileCreated", "path": "Hello.cs", "content": "a\nb\nc\n"})),
        say(1002, "tool", json.dumps({"tool": "editedExistingFile", "path": "Notes.txt", "content": blocks})),
        say(1003, "completion_result", "Done.HAS_CHANGES"),
    ]
    write_file = {"path": "Hello.cs", "content": "a\nb\nc\n"}
    api = [
        {
            "role": "user",
            "ts": 2000,
            "content": [{"type": "text", "text": "<task>\nCreate Hello.cs\n</task>"}],
        },
        {
            "role": "assistant",
            "ts": 2001,
            "content": [
                {"type": "tool_use", "id": "t1", "name": "write_to_file", "input": write_file},
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "replace_in_file",
                    "input": {"path": "Notes.txt", "diff": blocks},
                },
            ],
        },
        {
            "role": "user",
            "ts": 2002,
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
            ],
        },
    ]
    changes = "SELECT path, lines_added, lines_removed FROM agent_file_changes ORDER BY path"
    task_folder(tmp_path, ui=ui, api=api)
    task_folder(tmp_path, task="1770858773986", api=api)  # a task with no UI log: its API history
    ingest(conn, storage(tmp_path))
    for task in (TASK, "1770858773986"):
        got = conn.execute(changes.replace("ORDER BY", "WHERE session_id = ? ORDER BY"), (task,)).fetchall()
        assert got == [("Hello.cs", 3, 0), ("Notes.txt", 2, 1)], task
    assert [c for _, c in shown(conn, TASK)][-1] == "Done."
    # Roo Code's and older Cline's markers, a line hint, and a block cut short (left out)
    roo = "<<<<<<< SEARCH\n:start_line:4\n-------\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\ny\n====="
    assert replaced_blocks(roo) == [("x = 1", "x = 2")]


def test_a_rebuild_shows_the_ui_stream_alone_after_the_task_is_gone(conn, tmp_path):
    """A task's API history is shown only where it has no `ui_messages.json`: a replay (a schema
    upgrade's, `ingest --rebuild`) asked the disk whether it had one, so once the task was deleted
    a rebuild showed both, every message twice. It asks the archive."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    task_folder(tmp_path, ui=ui_stream(), api=api_history())
    ingest(conn, storage(tmp_path))
    read_then = shown(conn, TASK)
    facts = ("turn_count", "message_count", "project_path", "created_at", "title")
    then = {k: session(conn, TASK)[k] for k in facts}
    shutil.rmtree(storage(tmp_path))
    rebuild_derived(conn)
    assert shown(conn, TASK) == read_then
    assert {k: session(conn, TASK)[k] for k in facts} == then


def test_a_rebuild_reads_an_sdk_session_s_manifest_after_it_is_gone(conn, tmp_path, monkeypatch):
    """A Cline SDK session's manifest (`<id>.json`, its folder, model and title) is told by what it
    holds, not its name: a replay (a schema upgrade's, `ingest --rebuild`) read its head from the
    disk, so once the session was deleted a rebuild no longer knew it, and the session lost its
    folder and title. It reads the head as the archive holds it."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "cline-home"))
    sessions = tmp_path / "cline-home" / "data" / "sessions"
    sid = "1784094124598_fghij"
    folder = sessions / sid
    manifest = sdk_manifest(folder, sid)
    write_pretty(folder / f"{sid}.json", manifest)
    said = {"id": "u1", "role": "user", "ts": 1, "content": [{"type": "text", "text": "rename the sidebar"}]}
    write_pretty(folder / f"{sid}.messages.json", sdk_messages(sid, [said]))
    ingest(conn, sessions)
    facts = ("project_path", "title", "model", "created_at", "message_count")
    read_then = {k: session(conn, sid)[k] for k in facts}
    assert (read_then["project_path"], read_then["title"]) == ("/Users/me/app", "rename the sidebar")
    shutil.rmtree(sessions)
    rebuild_derived(conn)
    assert {k: session(conn, sid)[k] for k in facts} == read_then
