"""OpenCode sessions: the JSON storage folders and the SQLite database of later versions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SID = "ses_4f2a1c9e8b7dFFFFa1b2c3d4e5"


CHILD = "ses_4f2a1c9e8b7dCCCCa1b2c3d4e5"


def session_obj(sid: str = SID, parent: str | None = None, title: str = "Fix the cart") -> dict:
    return {
        "id": sid,
        "version": "1.0.150",
        "projectID": "a1b2c3",
        "directory": "/home/dev/shop",
        "parentID": parent,
        "title": title,
        "time": {"created": 1760000000000, "updated": 1760000009000},
    }


def message(mid: str, role: str, sid: str = SID, **extra) -> dict:
    base = {
        "id": mid,
        "sessionID": sid,
        "role": role,
        "time": {"created": 1760000000000 + int(mid[-2:]) * 1000},
    }
    if role == "assistant":
        base.update(
            modelID="claude-sonnet-4-5",
            providerID="anthropic",
            path={"cwd": "/home/dev/shop", "root": "/home/dev/shop"},
            cost=0.01,
            tokens={"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 900, "write": 50}},
        )
    base.update(extra)
    return base


def text(pid: str, mid: str, body: str, sid: str = SID, **extra) -> dict:
    return {"id": pid, "sessionID": sid, "messageID": mid, "type": "text", "text": body, **extra}


def tool(pid: str, mid: str, name: str, params: dict, output: str, sid: str = SID, **metadata) -> dict:
    return {
        "id": pid,
        "sessionID": sid,
        "messageID": mid,
        "type": "tool",
        "callID": f"call_{pid}",
        "tool": name,
        "state": {
            "status": "completed",
            "input": params,
            "output": output,
            "metadata": metadata,
            "time": {"start": 1, "end": 2},
        },
    }


def conversation() -> tuple[list[dict], dict[str, list[dict]]]:
    messages = [
        message("msg_01", "user"),
        message("msg_02", "assistant", parentID="msg_01"),
        message("msg_03", "user"),
        message("msg_04", "assistant", parentID="msg_03"),
    ]
    parts = {
        "msg_01": [
            text("prt_01", "msg_01", "fix the cart total"),
            text("prt_02", "msg_01", "<file contents injected>", synthetic=True),
        ],
        "msg_02": [
            {"id": "prt_03", "sessionID": SID, "messageID": "msg_02", "type": "step-start"},
            {
                "id": "prt_04",
                "sessionID": SID,
                "messageID": "msg_02",
                "type": "reasoning",
                "text": "check rounding",
            },
            tool("prt_05", "msg_02", "bash", {"command": "pytest -q"}, "1 failed", exit=1),
            tool(
                "prt_06",
                "msg_02",
                "task",
                {"description": "explore", "prompt": "find the tests"},
                "found them",
                sessionId=CHILD,
            ),
            text("prt_07", "msg_02", "The rounding is wrong."),
            {
                "id": "prt_08",
                "sessionID": SID,
                "messageID": "msg_02",
                "type": "step-finish",
                "tokens": {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 900, "write": 50}},
            },
        ],
        "msg_03": [text("prt_09", "msg_03", "now add a test")],
        "msg_04": [text("prt_10", "msg_04", "Added.")],
    }
    return messages, parts


def write_json(path: Path, value: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))
    return path


def make_db(path: Path, *, wal: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.executescript("""
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
            directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT,
            summary_additions INTEGER, summary_deletions INTEGER, summary_files INTEGER, summary_diffs TEXT,
            revert TEXT, permission TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
            time_compacting INTEGER, time_archived INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE todo (session_id TEXT, content TEXT, status TEXT, priority TEXT, position INTEGER);
    """)
    messages, parts = conversation()
    for sid, parent, title, created in ((SID, None, "Fix the cart", 1), (CHILD, SID, "explore", 2)):
        conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, "
            "time_updated) VALUES (?, 'a1b2c3', ?, 'slug', '/home/dev/shop', ?, '1.2.0', ?, ?)",
            (sid, parent, title, created, created),
        )
    for i, m in enumerate([*messages, message("msg_90", "user", CHILD)]):
        data = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
        conn.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (m["id"], m["sessionID"], i, i, json.dumps(data))
        )
    for p in [p for ps in parts.values() for p in ps] + [text("prt_90", "msg_90", "find the tests", CHILD)]:
        data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
        conn.execute(
            "INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)",
            (p["id"], p["messageID"], p["sessionID"], json.dumps(data)),
        )
    conn.commit()
    return conn


def write_storage(storage: Path) -> None:
    messages, parts = conversation()
    write_json(storage / "session" / "a1b2c3" / f"{SID}.json", session_obj())
    write_json(
        storage / "session" / "a1b2c3" / f"{CHILD}.json",
        session_obj(CHILD, SID, "explore (@general subagent)"),
    )
    for m in messages:
        write_json(storage / "message" / SID / f"{m['id']}.json", m)
        for p in parts[m["id"]]:
            write_json(storage / "part" / m["id"] / f"{p['id']}.json", p)
    write_json(storage / "message" / CHILD / "msg_90.json", message("msg_90", "user", CHILD))
    write_json(storage / "part" / "msg_90" / "prt_90.json", text("prt_90", "msg_90", "find the tests", CHILD))
