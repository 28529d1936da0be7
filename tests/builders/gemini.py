"""Gemini CLI chats: the JSONL log of 0.39+ and the `gemini` fixture (a Gemini CLI home)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

SID = "5f0e2a8c-1b2d-4e3f-9a0b-c1d2e3f4a5b6"


PROJECT = "/home/dev/webshop"


@pytest.fixture
def gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    root = tmp_path / "ghome" / ".gemini"
    (root / "tmp" / "webshop").mkdir(parents=True)
    (root / "tmp" / "webshop" / ".project_root").write_text(PROJECT + "\n")
    return root


def user(mid: str, text: str, ts: str = "2026-04-29T21:39:33.155Z") -> dict:
    return {"id": mid, "timestamp": ts, "type": "user", "content": [{"text": text}]}


def reply(mid: str, text: str, *, tools: list[dict] | None = None, tokens: dict | None = None) -> dict:
    msg = {
        "id": mid,
        "timestamp": "2026-04-29T21:39:35.125Z",
        "type": "gemini",
        "content": text,
        "thoughts": [
            {"subject": "Plan", "description": "read the file", "timestamp": "2026-04-29T21:39:34Z"}
        ],
        "model": "gemini-3-flash-preview",
    }
    if tools is not None:
        msg["toolCalls"] = tools
    if tokens is not None:
        msg["tokens"] = tokens
    return msg


def shell(cid: str, command: str, *, result: str | None = None, status: str = "executing") -> dict:
    call = {
        "id": cid,
        "name": "run_shell_command",
        "args": {"command": command},
        "status": status,
        "timestamp": "2026-04-29T21:39:35.364Z",
        "displayName": "Shell",
        "description": command,
    }
    if result is not None:
        call["result"] = [
            {"functionResponse": {"id": cid, "name": "run_shell_command", "response": {"output": result}}}
        ]
        call["resultDisplay"] = result
    return call


def meta(**extra) -> dict:
    return {
        "sessionId": SID,
        "projectHash": hashlib.sha256(PROJECT.encode()).hexdigest(),
        "startTime": "2026-04-29T21:39:22.319Z",
        "lastUpdated": "2026-04-29T21:39:22.319Z",
        "kind": "main",
        **extra,
    }


def write_jsonl(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def chats(gemini: Path) -> Path:
    return gemini / "tmp" / "webshop" / "chats"


def jsonl_session() -> list[dict]:
    tokens = {"input": 12069, "output": 147, "cached": 11502, "thoughts": 20, "tool": 0, "total": 12236}
    return [
        meta(),
        user("u1", "list the files"),
        {"$set": {"lastUpdated": "2026-04-29T21:39:33.156Z"}},
        reply("g1", "Let me look."),
        reply("g1", "Let me look.", tools=[shell("t1", "ls")]),  # the same message, its call added
        reply("g1", "Let me look.", tools=[shell("t1", "ls", result="a.py\nb.py", status="success")]),
        reply(
            "g1",
            "Let me look.",
            tools=[shell("t1", "ls", result="a.py\nb.py", status="success")],
            tokens=tokens,
        ),
        reply("g2", "Two files."),
        {"$set": {"lastUpdated": "2026-04-29T21:40:00.000Z"}},
        user("u2", "and the tests?"),
        reply("g3", "None yet.", tokens={"input": 100, "output": 5, "cached": 0, "total": 105}),
        {"id": "n1", "timestamp": "2026-04-29T21:41:00Z", "type": "info", "content": "Request cancelled."},
    ]
