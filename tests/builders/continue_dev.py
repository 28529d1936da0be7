"""Continue sessions: the IDE extension's `sessions/<id>.json` and the CLI's."""

from __future__ import annotations

import json
from pathlib import Path

SID = "3b9e2c41-7a1d-4f5e-8c2b-0d9e8f7a6b5c"


CLI_SID = "8c1f0a2e-4d3b-4a6c-9e8f-7b6a5c4d3e2f"


CWD = "/home/dev/shop"


def call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def continue_sessions(root: Path) -> Path:
    folder = root / ".continue" / "sessions"
    folder.mkdir(parents=True)
    edit = {"filepath": "cart.py", "old_string": "total = None", "new_string": "total = 0"}
    ide = {
        "sessionId": SID,
        "title": "Fix the cart total",
        "workspaceDirectory": f"file://{CWD}",
        "history": [
            {
                "message": {"role": "user", "content": [{"type": "text", "text": "fix the cart total"}]},
                "contextItems": [{"name": "cart.py", "description": "cart.py", "content": "total = None"}],
                "editorState": {"type": "doc", "content": []},
            },
            {
                "message": {
                    "role": "assistant",
                    "content": "Fixing it.",
                    "toolCalls": [call("call_1", "single_find_and_replace", edit)],
                    "usage": {
                        "promptTokens": 1200,
                        "completionTokens": 40,
                        "promptTokensDetails": {"cachedTokens": 1000},
                    },
                },
                "contextItems": [],
                "reasoning": {"active": False, "text": "look at cart.py", "startAt": 1781810001000},
                "promptLogs": [
                    {"modelTitle": "GPT-5", "modelProvider": "openai", "prompt": "…", "completion": ""}
                ],
                "toolCallStates": [
                    {
                        "toolCallId": "call_1",
                        "toolCall": call("call_1", "single_find_and_replace", edit),
                        "status": "done",
                        "parsedArgs": edit,
                        "output": [{"name": "Edit", "description": "", "content": "Edited cart.py"}],
                    }
                ],
            },
            {"message": {"role": "assistant", "content": "Done."}, "contextItems": []},
            {"message": {"role": "something_new", "content": "x"}, "contextItems": []},
        ],
        "mode": "agent",
        "chatModelTitle": "GPT-5",
        "usage": {"promptTokens": 9999, "completionTokens": 9999, "totalCost": 0.5},
    }
    (folder / f"{SID}.json").write_text(json.dumps(ide, indent=2))
    cli = {
        "sessionId": CLI_SID,
        "title": "New Session",
        "workspaceDirectory": "/home/dev/api",
        "history": [
            {"message": {"role": "user", "content": "run the tests"}, "contextItems": []},
            {
                "message": {
                    "role": "assistant",
                    "content": "",
                    "toolCalls": [call("tc1", "Bash", {"command": "pytest"})],
                },
                "contextItems": [],
            },
            {"message": {"role": "tool", "content": "3 passed", "toolCallId": "tc1"}, "contextItems": []},
            {"message": {"role": "assistant", "content": "All pass."}, "contextItems": []},
        ],
        "usage": {
            "promptTokens": 300,
            "completionTokens": 20,
            "promptTokensDetails": {"cachedTokens": 100, "cacheWriteTokens": 50},
            "totalCost": 0.01,
        },
    }
    (folder / f"{CLI_SID}.json").write_text(json.dumps(cli, indent=2))
    listed = [
        {
            "sessionId": SID,
            "title": "Fix the cart total",
            "dateCreated": "1781810000000",
            "workspaceDirectory": f"file://{CWD}",
            "messageCount": 2,
        },
        {
            "sessionId": CLI_SID,
            "title": "New Session",
            "dateCreated": "1781820000000",
            "workspaceDirectory": "/home/dev/api",
            "messageCount": 2,
        },
    ]
    (folder / "sessions.json").write_text(json.dumps(listed, indent=2))
    return folder


WIRE_SID = "2f4e6a80-1c3b-4d5e-9f70-a1b2c3d4e5f6"


def continue_cli_wire_usage(root: Path) -> Path:
    """A `cn` session of 2026 whose replies keep the provider's own usage (snake_case, with the
    model and rounded cents) and whose running totals disagree with their sum."""
    folder = root / ".continue" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)

    def reply(text: str, prompt: int, completion: int, calls: list[dict] | None = None) -> dict:
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "model": "gemini-2.5-pro",
            "cost_cents": 1,
        }
        message: dict = {"role": "assistant", "content": text, "usage": usage}
        if calls:
            message["toolCalls"] = calls
        return {"message": message, "contextItems": []}

    history = [
        {"message": {"role": "user", "content": "list the files"}, "contextItems": [], "editorState": {}},
        reply("", 2000, 15, [call("c1", "Bash", {"command": "ls"})]),
        {"message": {"role": "tool", "content": "a.py", "toolCallId": "c1"}, "contextItems": []},
        reply("One file: a.py.", 2500, 30),
    ]
    session = {
        "sessionId": WIRE_SID,
        "title": "Files",
        "workspaceDirectory": "/home/dev/api",
        "history": history,
        "usage": {"totalCost": 0.5, "promptTokens": 100, "completionTokens": 5},
    }
    (folder / f"{WIRE_SID}.json").write_text(json.dumps(session, indent=2))
    return folder
