"""GitHub Copilot CLI session folders: `events.jsonl` events in a chain."""

from __future__ import annotations

import json
from pathlib import Path

SID = "3bc4d926-f2d2-48ec-81fb-aafb579e671a"


def event(n: int, kind: str, data: dict, **more: object) -> dict:
    return {
        "type": kind,
        "data": data,
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-06-18T19:13:{n:02d}.000Z",
        "parentId": f"00000000-0000-4000-8000-{n - 1:012d}" if n > 1 else None,
        **more,
    }


def copilot_session(root: Path) -> Path:
    folder = root / ".copilot" / "session-state" / SID
    folder.mkdir(parents=True)
    (folder / "workspace.yaml").write_text(f"id: {SID}\ncwd: /home/dev/shop\nsummary: Cart total\n")
    edit = {"path": "/home/dev/shop/cart.py", "old_str": "total = None", "new_str": "total = 0"}
    lines = [
        event(
            1,
            "session.start",
            {
                "sessionId": SID,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.63",
                "startTime": "2026-06-18T19:13:01.000Z",
                "context": {"cwd": "/home/dev/shop", "branch": "main"},
            },
        ),
        event(2, "session.model_change", {"newModel": "claude-sonnet-4.5"}),
        event(3, "system.message", {"role": "system", "content": "You are the GitHub Copilot CLI"}),
        event(4, "user.message", {"content": "fix the cart total", "attachments": []}),
        event(5, "assistant.turn_start", {"turnId": "0"}),
        event(
            6,
            "assistant.message",
            {
                "messageId": "m1",
                "content": "I will set it to zero.",
                "reasoningText": "looking at cart.py",
                "toolRequests": [
                    {"toolCallId": "call_edit", "name": "edit", "arguments": edit, "type": "function"},
                    {"toolCallId": "call_task", "name": "task", "arguments": {"description": "check tests"}},
                ],
                "model": "claude-sonnet-4.5",
                "outputTokens": 40,
            },
        ),
        event(7, "tool.execution_start", {"toolCallId": "call_edit", "toolName": "edit", "arguments": edit}),
        event(
            8,
            "tool.execution_complete",
            {"toolCallId": "call_edit", "success": True, "result": {"content": "File updated"}},
        ),
        event(
            9,
            "subagent.started",
            {
                "toolCallId": "call_task",
                "agentName": "explore",
                "agentDisplayName": "Explore",
                "agentDescription": "x",
            },
            agentId="agent-1",
        ),
        event(
            10,
            "assistant.message",
            {"messageId": "m2", "content": "tests pass", "parentToolCallId": "call_task", "outputTokens": 5},
            agentId="agent-1",
        ),
        event(
            11, "subagent.completed", {"toolCallId": "call_task", "agentName": "explore"}, agentId="agent-1"
        ),
        event(
            12,
            "tool.execution_complete",
            {"toolCallId": "call_task", "success": True, "result": {"content": "tests pass"}},
        ),
        event(13, "assistant.message", {"messageId": "m3", "content": "Done.", "outputTokens": 3}),
        event(14, "some.future_event", {"x": 1}),
        event(
            15,
            "session.shutdown",
            {
                "shutdownType": "routine",
                "codeChanges": {"filesModified": [], "linesAdded": 1, "linesRemoved": 1},
                "modelMetrics": {
                    "claude-sonnet-4.5": {
                        "requests": {"count": 3, "cost": 3},
                        "usage": {
                            "inputTokens": 1200,
                            "outputTokens": 48,
                            "cacheReadTokens": 1000,
                            "cacheWriteTokens": 0,
                        },
                    }
                },
                "sessionStartTime": 1781810000000,
                "totalApiDurationMs": 100,
            },
        ),
    ]
    path = folder / "events.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def write_events(root: Path, sid: str, lines: list[dict]) -> Path:
    """A session folder under `root/.copilot/session-state/` holding these events."""
    folder = root / ".copilot" / "session-state" / sid
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def model_row(fresh: int, reads: int, writes: int, output: int, *, details: bool = True) -> dict:
    """One model's row of a shutdown's `modelMetrics`, as 1.0.5x on writes it: `usage.inputTokens`
    holding both cache buckets, `tokenDetails` naming each (left out as older versions do)."""
    row: dict = {
        "requests": {"count": 1, "cost": 1},
        "usage": {
            "inputTokens": fresh + reads + writes,
            "outputTokens": output,
            "cacheReadTokens": reads,
            "cacheWriteTokens": writes,
            "reasoningTokens": 0,
        },
    }
    if details:
        row["tokenDetails"] = {
            "input": {"tokenCount": fresh},
            "cache_read": {"tokenCount": reads},
            "cache_write": {"tokenCount": writes},
            "output": {"tokenCount": output},
        }
    return row
