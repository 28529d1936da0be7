"""Amazon Q `/save` files of both history shapes and its data.sqlite3, written here, plus the corpus save."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes
from threadloom.core.store import db

from tests.conftest import CORPUS, ingest

CONV = "4e83977c-0000-4000-8000-0000000000aa"
CWD = "/home/dev/thing"


def user(content: dict, **extra) -> dict:
    return {
        "additional_context": "",
        "env_context": {
            "env_state": {
                "operating_system": "linux",
                "current_working_directory": CWD,
                "environment_variables": [],
            }
        },
        "content": content,
        "images": None,
        **extra,
    }


def prompt(text: str, **extra) -> dict:
    return user({"Prompt": {"prompt": text}}, **extra)


def results(*items: tuple[str, str, str], cancelled: bool = False) -> dict:
    body = {
        "tool_use_results": [
            {"tool_use_id": i, "content": [{"Text": out}], "status": status} for i, out, status in items
        ]
    }
    return user({"CancelledToolUses" if cancelled else "ToolUseResults": body})


def tool_use(mid: str, text: str, *calls: tuple[str, str, dict]) -> dict:
    return {
        "ToolUse": {
            "message_id": mid,
            "content": text,
            "tool_uses": [
                {"id": i, "name": n, "orig_name": n, "args": a, "orig_args": a} for i, n, a in calls
            ],
        }
    }


def response(mid: str, text: str) -> dict:
    return {"Response": {"message_id": mid, "content": text}}


def pairs() -> list[list[dict]]:
    return [
        [
            prompt("deploy the stack"),
            tool_use("m1", "Building first.", ("t1", "execute_bash", {"command": "sam build"})),
        ],
        [
            results(("t1", "Build Succeeded", "Success")),
            tool_use("m2", "Now deploying.", ("t2", "execute_bash", {"command": "sam deploy"})),
        ],
        [results(("t2", "Error: no changes", "Error")), response("m3", "Nothing to deploy.")],
        [prompt("thanks"), response("m4", "You're welcome.")],
    ]


def state(history: list, **extra) -> dict:
    return {
        "conversation_id": CONV,
        "next_message": None,
        "history": history,
        "valid_history_range": [0, len(history)],
        "transcript": ["> deploy the stack", "Building first."],
        "tools": {},
        "context_manager": None,
        "context_message_length": None,
        "latest_summary": None,
        "model": "CLAUDE_SONNET_4_20250514_V1_0",
        **extra,
    }


def save(path: Path, value: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))  # serde_json's pretty printer: two spaces
    return path


def session(conn: sqlite3.Connection) -> dict:
    cur = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (CONV,))
    return dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))


def test_tuple_era_save(conn, tmp_path):
    path = save(tmp_path / "saves" / "convo.md", state(pairs()))
    ingest(conn, path)
    s = session(conn)
    assert (
        s["source"],
        s["turn_count"],
        s["tool_call_count"],
        s["project_path"],
        s["model"],
        s["title"],
    ) == ("amazon-q", 2, 2, CWD, "CLAUDE_SONNET_4_20250514_V1_0", "deploy the stack")
    assert dict(conn.execute("SELECT id, status FROM agent_tool_calls")) == {
        "t1": "completed",
        "t2": "failed",
    }
    assert (s["input_tokens"], s["output_tokens"]) == (0, 0)  # the saves hold no token counts
    assert file_bytes(conn, 1) == (path.read_bytes(), True)
    pretty = path.read_bytes()
    raws = [
        bytes(r[0])
        for r in conn.execute("SELECT raw FROM entries WHERE entry_type != 'json-gap' ORDER BY byte_offset")
    ]
    assert all(r in pretty for r in raws)  # each message's exact bytes, as indented in the file
    assert [json.loads(r) for r in raws] == [m for pair in pairs() for m in pair]


def test_object_era_save_with_request_metadata_and_summary(conn, tmp_path):
    history = []
    for i, (u, a) in enumerate(pairs()):
        history.append(
            {
                "user": {**u, "timestamp": f"2026-04-01T10:0{i}:00Z"},
                "assistant": a,
                "request_metadata": {
                    "request_id": f"r{i}",
                    "message_id": f"m{i + 1}",
                    "request_start_timestamp_ms": 1775037600000 + i * 60000,
                    "model_id": "claude-sonnet-4.5",
                    "message_meta_tags": [],
                },
            }
        )
    value = state(
        history,
        latest_summary=["Deployed the stack; nothing changed.", {"request_id": "r9"}],
        model_info={"model_id": "claude-sonnet-4.5", "context_window_tokens": 200000},
    )
    value.pop("model")
    path = save(tmp_path / "saves" / "new.json", value)
    ingest(conn, tmp_path / "saves")  # found by content while walking a --source folder
    s = session(conn)
    assert (s["turn_count"], s["tool_call_count"], s["model"], s["compaction_count"]) == (
        2,
        2,
        "claude-sonnet-4.5",
        1,
    )
    assert (s["created_at"], s["ended_at"]) == (1775037600000, 1775037600000 + 3 * 60000)
    assert file_bytes(conn, 1) == (path.read_bytes(), True)


def test_saving_again_is_read_again_and_copies_count_once(conn, tmp_path):
    first = save(tmp_path / "a" / "convo.json", state(pairs()[:2]))
    ingest(conn, tmp_path / "a")
    assert session(conn)["message_count"] == 4
    save(first, state(pairs()))  # `/save -f`: rewritten whole
    save(tmp_path / "a" / "copy.json", state(pairs()))  # the same conversation saved twice
    ingest(conn, tmp_path / "a")
    s = session(conn)
    assert (s["message_count"], s["turn_count"], s["tool_call_count"]) == (8, 2, 2)


def test_q_database_conversations_never_the_credentials(conn, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    path = ADAPTERS["amazon-q-db"].default_roots()[0]
    path.parent.mkdir(parents=True)
    source = sqlite3.connect(path)
    source.execute("CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)")
    source.execute("CREATE TABLE auth_kv (key TEXT PRIMARY KEY, value TEXT)")
    value = json.dumps(state(pairs()))
    source.execute("INSERT INTO conversations VALUES (?, ?)", (CWD, value))
    source.execute("INSERT INTO auth_kv VALUES ('token', 'secret-token-value')")
    source.commit()
    source.close()
    ingest(conn, path.parent)
    s = session(conn)
    assert (s["turn_count"], s["project_path"]) == (2, CWD)
    raws = [bytes(r[0]) for r in conn.execute("SELECT raw FROM entries ORDER BY byte_offset")]
    assert b"".join(raws[1:]) == value.encode()  # the value, exactly, after its key record
    assert not any(b"secret-token-value" in r for r in raws)


def test_detection(tmp_path):
    md = save(tmp_path / "convo.md", state(pairs()))
    assert ADAPTERS["amazon-q"].claims(md, explicit=True) and ADAPTERS["amazon-q"].claims(md)
    readme = tmp_path / "README.md"
    readme.write_text("# Project\n\nconversation_id and history are words here.\n")
    assert not ADAPTERS["amazon-q"].claims(readme)
    assert not ADAPTERS["aider"].claims(md, explicit=True)
    assert not ADAPTERS["gemini"].claims(save(tmp_path / "q.json", state(pairs())), explicit=True)


# ---------------------------------------------------------------------- corpus

AMAZON_Q = CORPUS / "amazon-q"


@pytest.mark.corpus
@pytest.mark.skipif(not AMAZON_Q.is_dir(), reason="../shared/corpus/amazon-q is not present")
def test_corpus_amazon_q(tmp_path):
    conn = db.connect(tmp_path / "corpus.db")
    (path,) = sorted(p for p in AMAZON_Q.rglob("*") if p.is_file())
    report = run_ingest(conn, [path], include_defaults=False)
    assert not report.errors, report.errors
    assert conn.execute("SELECT agent FROM source_files").fetchone() == ("amazon-q",)
    assert file_bytes(conn, 1) == (path.read_bytes(), True)
    doc = json.loads(path.read_bytes())
    elements = [m for pair in doc["history"] for m in pair]
    stored = [
        json.loads(bytes(r[0]))
        for r in conn.execute("SELECT raw FROM entries WHERE entry_type != 'json-gap'")
    ]
    assert stored == elements  # every message, in order, as its exact JSON
    prompts = sum(
        1
        for u, _ in doc["history"]
        if "Prompt" in u["content"] or u["content"].get("CancelledToolUses", {}).get("prompt")
    )
    calls = sum(len(a["ToolUse"]["tool_uses"]) for _, a in doc["history"] if "ToolUse" in a)
    row = conn.execute(
        "SELECT id, turn_count, tool_call_count, model, input_tokens FROM agent_sessions"
    ).fetchone()
    assert row == (doc["conversation_id"], prompts, calls, doc["model"], 0)
    conn.close()
