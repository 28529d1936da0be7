"""Helpers more than one layer of tests uses: archives to ingest, the CLI run as a process, printed
commands run in a shell with fake agents, fork files checked, Codex rollouts written."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from threadloom.core.ingest.pipeline import IngestReport, run_ingest
from threadloom.core.serve.service import carried_names

from tests.builders.claude import Transcript, tool_use

FORKED = "99999999-0000-4000-8000-000000000099"  # the session id the fake `claude -p` reports


def usage(inp: int, cached: int, out: int, reasoning: int = 0) -> dict:
    return {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
        "total_tokens": inp + out,
    }


def archive(root: Path, sessions: int = 4) -> Path:
    projects = root / "projects"
    for n in range(sessions):
        sid = f"55555555-aaaa-4bbb-8ccc-{n:012d}"
        t = Transcript(projects / f"-srv-app{n % 2}" / f"{sid}.jsonl", sid)
        for turn in range(6):
            t.user(f"question {turn} of session {n}")
            t.assistant(f"answer {turn}")
        t.write()
    return projects


SID = "dddddddd-1111-4222-8333-000000000001"


def run(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )


def make_archive(root: Path) -> Path:
    t = Transcript(root / "projects" / "-srv-api" / f"{SID}.jsonl", SID, cwd="/srv/api")
    t.user("Add a health endpoint")
    t.assistant(
        "Adding it",
        tools=[tool_use("tu1", "Write", file_path="/srv/api/health.py", content="ok")],
        usage={"input_tokens": 12, "output_tokens": 30},
    )
    t.tool_result("tu1", "File created")
    t.assistant("Done.")
    t.write()
    return root / "projects"


def run_printed(command: str, fake_agents: Path, sandbox: Path) -> list[list[str]]:
    """Run `command` as a user pasting it would (bash, from `sandbox`); the fake agents' calls."""
    log = fake_agents.parent / "calls.log"
    log.unlink(missing_ok=True)
    lookups(fake_agents)  # a fresh list of what the agents looked for
    env = {
        "PATH": f"{fake_agents}:/usr/bin:/bin",
        "FAKE_LOG": str(log),
        "FORKED": FORKED,
        "HOME": str(sandbox),
        "LC_ALL": "C.UTF-8",
        "FAKE_LOOKUPS": str(fake_agents.parent / "lookups.log"),
        "CLAUDE_CONFIG_DIR": os.environ.get("CLAUDE_CONFIG_DIR", str(sandbox / ".claude")),
        "CODEX_HOME": os.environ.get("CODEX_HOME", str(sandbox / ".codex")),
    }
    subprocess.run(
        ["bash", "-c", command], cwd=sandbox, env=env, capture_output=True, timeout=60, check=False
    )
    if not log.exists():
        return []
    words = log.read_bytes().decode().split("\0")[:-1]
    calls, call = [], []
    for word in words:
        if word == "\x1e":
            calls.append(call)
            call = []
        else:
            call.append(word)
    return calls


def lookups(fake_agents: Path) -> list[str]:
    """What the fake agents of the last `run_printed` looked for ("found PATH" / "missing PATH"),
    as the real ones look: Claude Code in `$CLAUDE_CONFIG_DIR/projects/<its folder, encoded>/`, Codex
    in `$CODEX_HOME/sessions/YYYY/MM/DD/`. Reading them empties the list."""
    log = fake_agents.parent / "lookups.log"
    found = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return found


def check_fork_file(path: Path, new_sid: str, fork_point_uuid: str) -> list[dict]:
    """The invariants every fork must hold, checked on the written file itself."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(rec.get("sessionId") == new_sid for rec in lines)
    transcript = [r for r in lines if r.get("type") in ("user", "assistant", "system", "attachment")]
    assert transcript[0]["parentUuid"] is None and transcript[0].get("cwd")
    for prev, rec in zip(transcript, transcript[1:], strict=False):
        assert rec["parentUuid"] == prev["uuid"]  # linear
    assert transcript[-1]["forkedFrom"]["messageUuid"] == fork_point_uuid  # the fork point is the leaf
    assert transcript[-1]["timestamp"] == max(r["timestamp"] for r in transcript)
    assert len({r["uuid"] for r in transcript}) == len(transcript)
    uses, results = set(), set()
    for rec in transcript:
        assert rec["isSidechain"] is False
        for block in (
            rec.get("message", {}).get("content", [])
            if isinstance(rec.get("message", {}).get("content"), list)
            else []
        ):
            if block.get("type") == "tool_use":
                uses.add(block["id"])
            if block.get("type") == "tool_result":
                results.add(block["tool_use_id"])
    assert uses <= results  # every tool_use has its tool_result
    assert lines[-1]["type"] == "custom-title" and lines[-1]["customTitle"].endswith("(fork)")
    return transcript


THREAD = "019a0000-1111-7222-8333-444455556666"


class Rollout:
    """Writes wrapped-era rollout lines (`{timestamp, type, payload}`)."""

    def __init__(self, home: Path, thread: str, day: str = "2026/03/02") -> None:
        self.path = home / "sessions" / day / f"rollout-2026-03-02T10-00-00-{thread}.jsonl"
        self.thread = thread
        self.lines: list[dict] = []
        self.n = 0
        self.total = {
            "input_tokens": 0,
            "cached_input_tokens": 0,
            "output_tokens": 0,
            "reasoning_output_tokens": 0,
            "total_tokens": 0,
        }

    def ts(self) -> str:
        self.n += 1
        return f"2026-03-02T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"

    def add(self, rtype: str, payload: dict, ts: str | None = None) -> None:
        self.lines.append({"timestamp": ts or self.ts(), "type": rtype, "payload": payload})

    def meta(self, **extra) -> None:
        payload = {
            "id": self.thread,
            "timestamp": "2026-03-02T10:00:00.000Z",
            "cwd": "/home/dev/shop",
            "originator": "codex_cli_rs",
            "cli_version": "0.101.0",
            "source": "cli",
            "git": {"branch": "feature/cart", "commit_hash": "abc"},
            **extra,
        }
        self.add("session_meta", payload)

    def context(self, model: str = "gpt-5.2-codex") -> None:
        self.add("turn_context", {"cwd": "/home/dev/shop", "approval_policy": "never", "model": model})

    def prompt(self, text: str, event_first: bool = True) -> None:
        event = ("event_msg", {"type": "user_message", "message": text, "images": []})
        item = (
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        )
        for rtype, payload in (event, item) if event_first else (item, event):
            self.add(rtype, payload)

    def say(self, text: str) -> None:
        self.add(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
        )
        self.add("event_msg", {"type": "agent_message", "message": text})

    def call(self, call_id: str, command: list[str], output: str, exit_code: int = 0) -> None:
        self.add(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "call_id": call_id,
                "arguments": json.dumps({"command": command}),
            },
        )
        self.add(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": json.dumps(
                    {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}}
                ),
            },
        )

    def tokens(self, last: dict | None, *, with_last: bool = True, repeat: int = 1) -> None:
        if last is not None:
            for k in self.total:
                self.total[k] += last[k]
        info = {"total_token_usage": dict(self.total), "model_context_window": 258400}
        if with_last and last is not None:
            info["last_token_usage"] = last
        for _ in range(repeat):
            self.add("event_msg", {"type": "token_count", "info": info, "rate_limits": {}})

    def usage_record(self, last: dict, response_id: str) -> None:
        """The top-level `token_usage_record` 0.15x writes before a request's `token_count`: the
        request's usage and the thread's running total (from `self.total`, so call it first)."""
        total = {k: self.total[k] + last[k] for k in self.total}
        self.add(
            "token_usage_record",
            {
                "response_id": response_id,
                "session_id": self.thread,
                "thread_id": self.thread,
                "usage": last,
                "turn_token_usage": total,
                "thread_token_usage": total,
            },
        )

    def write(self, lines: list[dict] | None = None) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(x) + "\n" for x in (lines or self.lines)))
        return self.path


def full_session(home: Path) -> Rollout:
    r = Rollout(home, THREAD)
    r.meta()
    r.context()
    r.prompt("add a cart total")
    r.add(
        "response_item",
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Looking at cart.py"}],
            "encrypted_content": "xx",
        },
    )
    r.call("call_1", ["bash", "-lc", "pytest -q"], "1 failed", exit_code=1)
    r.add(
        "response_item",
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "call_id": "call_2",
            "input": "*** Begin Patch\n*** Update File: cart.py\n+total = 0\n*** End Patch",
        },
    )
    r.add(
        "event_msg",
        {
            "type": "patch_apply_end",
            "call_id": "call_2",
            "success": True,
            "changes": {"cart.py": {"type": "update", "unified_diff": "@@ -1 +1 @@\n+total = 0"}},
        },
    )
    r.add("response_item", {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Success."})
    r.tokens(usage(1000, 800, 50, 20), repeat=2)  # Codex often writes the same count twice
    r.say("Added the total.")
    r.add("event_msg", {"type": "task_complete", "last_agent_message": "Added the total."})
    r.context()
    r.prompt("now the tests", event_first=False)  # 0.4x wrote the model's item before the event
    r.say("Tests pass.")
    r.tokens(usage(1500, 1200, 30))
    return r


# every variable that moves where an agent's files (or threadloom's) are looked for: the ones a
# service carries into the watch it starts
AGENT_PLACES = carried_names()


def home_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a process that must see a made-up home folder only: HOME and every
    agent's folder under `tmp_path / "home"`, nothing of the developer's own."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in AGENT_PLACES}
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        THREADLOOM_DB=str(tmp_path / "default.db"),
    )
    env.update(extra)
    return env


def orchestrating_session(root: Path, sid: str) -> Transcript:
    """A Claude Code session under `root` (a project folder) that edits one file itself and has a
    subagent write another: the session is written; its subagent's transcript is returned after its
    Write, for a test to go on with and write."""
    main = Transcript(root / f"{sid}.jsonl", sid, cwd="/srv/app")
    main.user("Build the importer")
    main.assistant(
        "Delegating.", tools=[tool_use("tk", "Task", description="write the importer", prompt="write it")]
    )
    main.tool_result("tk", "written", tool_use_result={"agentId": "imp1"})
    main.assistant(
        tools=[tool_use("e0", "Edit", file_path="/srv/app/README.md", old_string="a", new_string="b")]
    )
    main.tool_result("e0", "ok")
    main.write()
    sub = Transcript(
        root / sid / "subagents" / "agent-imp1.jsonl", sid, cwd="/srv/app", isSidechain=True, agentId="imp1"
    )
    sub.user("write it", parent=False)
    sub.assistant(tools=[tool_use("w1", "Write", file_path="/srv/app/importer.py", content="a\nb\nc\nd\n")])
    sub.tool_result("w1", "ok")
    return sub


SHARED = Path(os.environ.get("THREADLOOM_SHARED", Path(__file__).resolve().parents[2] / "shared"))


CORPUS = SHARED / "corpus"


def kept(name: str) -> Path:
    """A folder for what the suite makes once and may keep from run to run and from checkout to
    checkout: pinned packages it installs, mypy's cache. THREADLOOM_TEST_CACHE, else the user's
    cache folder (~/.cache/threadloom-tests/NAME): unlike pytest's own cache, inside the checkout,
    a fresh clone (CI's) on a machine that has run the suite finds it filled."""
    from platformdirs import user_cache_dir

    root = os.environ.get("THREADLOOM_TEST_CACHE") or user_cache_dir("threadloom-tests", appauthor=False)
    folder = Path(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def isolated(root: Path) -> dict[str, str]:
    """What conftest.py `_isolated_home` sets for every test, under `root`: no agent's real folder,
    nor the real database or settings. For a process a module's fixture starts (before any test's
    are set), to build what its tests then share as each of them would have built it."""
    return {
        # every agent read from the home's folders (Kimi Code's ~/.kimi-code, Qwen's, pi's, Droid's,
        # OpenCode's, …) finds none of the developer's own: only these three have variables of their own
        "HOME": str(root / "home"),
        "CLAUDE_CONFIG_DIR": str(root / "no-claude-here"),
        "CODEX_HOME": str(root / "no-codex-here"),
        "GEMINI_CLI_HOME": str(root / "no-gemini-here"),
        "THREADLOOM_DB": str(root / "default.db"),
        "THREADLOOM_SETTINGS": str(root / "settings.toml"),
    }


def copy_database(source: Path, target: Path) -> Path:
    """A copy of the database at `source` (closed: its WAL checkpointed; a -wal and -shm beside it
    are copied too) at `target`: a module builds an archive once, each test works on a copy of its own."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")
    return target


def ingest_into(path: Path | str, *sources: Path) -> IngestReport:
    """What `threadloom ingest --db PATH --only --source SOURCE…` does (core.ingest.update), in
    process: an archive for a test whose subject is another command (a `threadloom` process each)."""
    from threadloom.core.ingest.update import update

    report = update(Path(path), list(sources), include_defaults=False)
    assert not report.errors, report.errors
    return report


def ingest(conn: sqlite3.Connection, *sources: Path) -> IngestReport:
    report = run_ingest(conn, list(sources), include_defaults=False)
    assert not report.errors, report.errors
    return report


def read_in_pieces(
    tmp_path: Path, written: Callable[[Path], Path], folder: str, read: Callable[[sqlite3.Connection], object]
) -> object:
    """What `read` finds once the log `written(root)` makes is ingested whole (from `root / folder`),
    checked to be what it finds when the log is ingested cut at each line, then grown to the whole
    (an append read on its own, as a session followed live is read). Returns the whole read's."""
    from threadloom.core.store import db

    def ingested(root: Path, cut: int | None) -> object:
        log = written(root)
        whole = log.read_bytes()
        conn = db.connect(root.parent / f"{root.name}.db")
        try:
            if cut is not None:
                log.write_bytes(b"".join(whole.splitlines(keepends=True)[:cut]))
                ingest(conn, root / folder)
                log.write_bytes(whole)
            ingest(conn, root / folder)
            return read(conn)
        finally:
            conn.close()

    expected = ingested(tmp_path / "whole", None)
    lines = written(tmp_path / "lines").read_bytes().count(b"\n")
    for cut in range(1, lines):
        assert ingested(tmp_path / f"cut{cut}", cut) == expected, cut
    return expected


def stored_bytes(conn: sqlite3.Connection, path: Path) -> bytes:
    """The file at `path` as its stored lines give it back (raw bytes and newlines, in order): a
    lines-mode log's archive holds it whole when this equals the file's bytes."""
    rows = conn.execute(
        "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
        "WHERE f.path = ? ORDER BY e.byte_offset",
        (str(path),),
    ).fetchall()
    return b"".join(bytes(raw) + b"\n" * newline for raw, newline in rows)


FAKE_AGENT = r"""#!/bin/sh
# a fake agent: records its name, where it ran and its words (NUL-separated; one call per record)
name=$(basename "$0")
printf '%s\0' "$name" "$PWD" "$@" "$(printf '\036')" >> "$FAKE_LOG"  # one write: calls of a pipe run at once
if [ "$name" = claude ] && [ "$1" = -p ]; then printf '{"session_id": "%s"}\n' "$FORKED"; fi
if [ "$name" = jq ]; then sed -n 's/.*"session_id": "\([^"]*\)".*/\1/p'; fi
# where the real agent would look for the session it is asked to resume: found or missing, one line each
prev=""
for word in "$@"; do
  if [ "$name" = claude ] && [ "$prev" = --resume ] && [ "$1" != -p ]; then
    f="$CLAUDE_CONFIG_DIR/projects/$(printf %s "$PWD" | tr -c 'A-Za-z0-9' '-')/$word.jsonl"
    if [ -f "$f" ]; then echo "found $f"; else echo "missing $f"; fi >> "$FAKE_LOOKUPS"
  fi
  if [ "$name" = codex ] && [ "$prev" = resume ]; then
    found=$(ls "$CODEX_HOME"/sessions/*/*/*/rollout-*"$word".jsonl 2>/dev/null | head -n 1)
    if [ -n "$found" ]; then echo "found $found"; else echo "missing $word"; fi >> "$FAKE_LOOKUPS"
  fi
  prev=$word
done
exit 0
"""


AGENTS = ("claude", "codex", "gemini", "aider", "opencode", "agent", "cline", "jq")


def snapshot(home: Path, name: str, items: list[dict]) -> Path:
    path = home / "sessions" / f"rollout-2025-04-20-{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": name, "instructions": ""},
        "items": items,
    }
    path.write_text(json.dumps(doc, indent=2))  # JSON.stringify(…, null, 2): no final newline
    old = time.time() - 86400
    os.utime(path, (old, old))
    return path


SHARED_RANGE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    # SQLite's shared locks are read locks on these 510 bytes; its exclusive lock, a write lock on them
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002)
    print("free")
except OSError:
    print("held")
"""


def readers_seen(path: Path) -> bool:
    """Whether another process sees a connection holding the database file open (every connection
    in WAL mode keeps a shared lock on it: the last one to close checkpoints and removes the WAL)."""
    done = subprocess.run([sys.executable, "-c", SHARED_RANGE, str(path)], capture_output=True, text=True)
    assert done.stdout.strip() in ("held", "free"), done.stderr
    return done.stdout.strip() == "held"
