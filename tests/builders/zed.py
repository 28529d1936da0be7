"""Zed's `threads.db`: threads stored as zstd-compressed JSON."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import zstandard

TID = "8c1f3e2a-6b4d-4f7e-9a0b-1c2d3e4f5a6b"


CHILD = "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"


CWD = "/home/dev/shop"


def _thread(title: str, messages_: list, **extra) -> bytes:
    thread = {
        "title": title,
        "messages": messages_,
        "updated_at": "2026-04-01T10:05:00Z",
        "detailed_summary": None,
        "initial_project_snapshot": None,
        "cumulative_token_usage": {
            "input_tokens": 500,
            "output_tokens": 60,
            "cache_creation_input_tokens": 10,
            "cache_read_input_tokens": 400,
        },
        "request_token_usage": {},
        "model": {"provider": "zed.dev", "model": "claude-sonnet-4-5"},
        "profile": "write",
        **extra,
        "version": "0.3.0",
    }
    return json.dumps(thread, separators=(",", ":")).encode()


MAIN = [
    {"User": {"id": "u-1", "content": [{"Text": "fix the cart total"}]}},
    {
        "Agent": {
            "content": [
                {"Thinking": {"text": "look at cart.py", "signature": "sig"}},
                {"Text": "Fixing it."},
                {
                    "ToolUse": {
                        "id": "toolu_1",
                        "name": "edit_file",
                        "raw_input": "{}",
                        "input": {"path": "shop/cart.py", "mode": "edit", "display_description": "fix"},
                        "is_input_complete": True,
                    }
                },
                {
                    "ToolUse": {
                        "id": "toolu_2",
                        "name": "terminal",
                        "raw_input": "{}",
                        "input": {"command": "pytest", "cd": "shop"},
                        "is_input_complete": True,
                    }
                },
            ],
            "tool_results": {
                "toolu_1": {
                    "tool_use_id": "toolu_1",
                    "tool_name": "edit_file",
                    "is_error": False,
                    "content": {"Text": "Edited shop/cart.py"},
                    "output": {
                        "input_path": "shop/cart.py",
                        "old_text": "total = None\n",
                        "new_text": "total = 0\n",
                        "diff": "",
                    },
                },
                "toolu_2": {
                    "tool_use_id": "toolu_2",
                    "tool_name": "terminal",
                    "is_error": True,
                    "content": {"Text": "1 failed"},
                    "output": None,
                },
            },
        }
    },
    "Resume",
    {"Agent": {"content": [{"Text": "Done."}], "tool_results": {}}},
    {"Something": 1},
]


def zed_db(root: Path) -> Path:
    folder = root / ".local" / "share" / "zed" / "threads"
    folder.mkdir(parents=True)
    path = folder / "threads.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL,"
        " data_type TEXT NOT NULL, data BLOB NOT NULL, parent_id TEXT, folder_paths TEXT,"
        " folder_paths_order TEXT, created_at TEXT)"
    )
    main = _thread("Fix the cart total", MAIN)
    child = _thread("Run the tests", [{"User": {"id": "u-2", "content": [{"Text": "run the tests"}]}}])
    rows = [
        (TID, "Fix the cart total", "2026-04-01T10:05:00Z", "zstd", zstandard.compress(main), None, CWD, "0"),
        (CHILD, "Run the tests", "2026-04-01T10:03:00Z", "json", child, TID, CWD, "0"),
    ]
    for tid, title, updated, kind, data, parent, folders, order in rows:
        conn.execute(
            "INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (tid, title, updated, kind, data, parent, folders, order, "2026-04-01T10:00:00Z"),
        )
    conn.commit()
    conn.close()
    return path
