"""What a fork, a resume or a new session from context hands the agent, checked with the agents' real
CLIs from npm (Claude Code, Codex, Gemini CLI) against ../shared/tools/fake_model_api.py, which records the
request the CLI sends and answers with an error: no network, no key.

The command threadloom prints is run as a user pasting it would (bash), with the real CLI behind a
wrapper on PATH that only adds what running it without a terminal needs (Claude Code's print mode,
`codex exec` and the fake API's address). The request then shows what the agent loaded: the
conversation up to the chosen point, and nothing after it.

The CLIs are installed once on a machine, into tests.support.kept's folder (pinned versions; about
15 s the first time), and the tests are skipped when npm or the registry is not reachable, or
../shared is absent.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.builders.claude import Transcript
from tests.support import Rollout, home_env, kept

SHARED = Path(__file__).resolve().parents[3] / "shared"
FAKE_API = SHARED / "tools" / "fake_model_api.py"
# the versions these tests were written against (a newer one is checked by bumping these)
PACKAGES = {
    "@anthropic-ai/claude-code": "2.1.197",
    "@openai/codex": "0.171.0",
    "@google/gemini-cli": "0.61.0",
}
SID = "5e551011-0000-4000-8000-000000000001"
THREAD = "019a0000-1111-7222-8333-444455556666"
GEMINI_SID = "5f0e2a8c-1b2d-4e3f-9a0b-c1d2e3f4a5b6"
# a folder whose name a shell would read as code if it were not quoted
HOSTILE = "it's a $(touch pwned) `x` ; folder"


@pytest.fixture(scope="session")
def real_clis() -> Path:
    """The folder holding the real `claude` and `codex` (node_modules/.bin), installed once on a
    machine (`kept`: the versions are pinned, so a checkout's run finds another's install)."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the real agents' CLIs cannot be installed")
    if not FAKE_API.is_file():
        pytest.skip("../shared/tools/fake_model_api.py is absent")
    prefix = kept("npm-agents")
    marker = prefix / ("installed-" + "-".join(f"{n.split('/')[-1]}{v}" for n, v in PACKAGES.items()))
    with (prefix / ".lock").open("w") as lock:  # parallel workers install once, one at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            done = subprocess.run(
                [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                 *(f"{n}@{v}" for n, v in PACKAGES.items())],
                capture_output=True, text=True, timeout=600, check=False,
                env={**os.environ, "npm_config_cache": str(prefix / "npm-cache")},  # not ~/.npm
            )  # fmt: skip
            if done.returncode != 0:
                pytest.skip(f"npm could not install the agents' CLIs: {done.stderr.strip()[-300:]}")
            marker.touch()
    bin_dir = prefix / "node_modules" / ".bin"
    # asked for their versions in a home of their own: Gemini CLI writes ~/.gemini/projects.json and
    # Codex ~/.codex/tmp as they start, which every later ingest of the default folders then read
    with tempfile.TemporaryDirectory(prefix="threadloom-agents-home-") as home:
        for name in ("claude", "codex", "gemini"):
            works = subprocess.run(
                [str(bin_dir / name), "--version"],
                capture_output=True,
                timeout=60,
                check=False,
                env=home_env(Path(home)),
            )
            if works.returncode != 0:
                pytest.skip(f"the real {name} does not run here: {works.stderr.decode()[-300:]}")
    return bin_dir


@pytest.fixture
def fake_api(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The fake model API's base URL and the folder its recorded requests are written to."""
    out = tmp_path / "requests"
    server = subprocess.Popen(
        [sys.executable, str(FAKE_API), str(out), "--seconds", "300"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    port = server.stdout.readline().strip()
    try:
        yield f"http://127.0.0.1:{port}", out
    finally:
        server.kill()
        server.wait()


def wrappers(folder: Path, real: Path, api: str) -> Path:
    """`claude` and `codex` on PATH: the real CLIs, run without a terminal and sent to the fake API."""
    folder.mkdir()
    (folder / "claude").write_text(
        "#!/bin/sh\n"
        "# print mode, one prompt (stdin's): what an interactive start would load, sent once\n"
        f'printf "say ok" | exec {real / "claude"} -p "$@"\n'
    )
    (folder / "codex").write_text(
        "#!/bin/sh\n"
        "# `codex resume ID [-C DIR] [PROMPT]` as `codex exec [-C DIR] resume ID PROMPT`\n"
        f"real={real / 'codex'}\n"
        "# the fake API as a provider of its own: over HTTP at once (the built-in one tries a\n"
        "# WebSocket first, five times, 6 s, before it falls back)\n"
        f'api=\'model_providers.fake={{name="fake",base_url="{api}/v1",env_key="OPENAI_API_KEY",wire_api="responses"}}\'\n'
        '[ "$1" = resume ] || exec "$real" "$@"\n'
        "shift; id=$1; shift; dir=.\n"
        'if [ "$1" = -C ]; then dir=$2; shift 2; fi\n'
        'exec "$real" exec -c model_provider=fake -c "$api" --skip-git-repo-check -C "$dir" resume "$id" "${1:-say ok}"\n'
    )
    (folder / "gemini").write_text(
        "#!/bin/sh\n"
        "# headless, one prompt, the folder trusted for this run\n"
        f'exec {real / "gemini"} --skip-trust -p "say ok" "$@"\n'
    )
    for name in ("claude", "codex", "gemini"):
        (folder / name).chmod(0o755)
    return folder


@dataclass
class Desk:
    """A made-up home with threadloom's archive, the real CLIs behind their wrappers, and the fake
    model API they talk to: what a test runs commands at."""

    root: Path
    env: dict[str, str]
    bin_dir: Path
    api: str
    requests: Path

    def threadloom(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "threadloom.core.cli", "--db", str(self.root / "t.db"), *args],
            env=self.env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def fork_at(self, session_id: str, text: str, *extra: str) -> dict[str, Any]:
        """`fork --json` at the first message of the session holding `text`."""
        shown = json.loads(self.threadloom("show", session_id, "--json"))
        message = next(m for m in shown["messages"] if text in (m.get("content") or ""))
        return json.loads(self.threadloom("fork", str(message["entry_id"]), *extra, "--json"))

    def paste(self, command: str) -> list[tuple[str, str]]:
        """Run `command` as a user pasting it would (bash); the conversation the agent sent."""
        env = {
            **self.env,
            "PATH": f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "ANTHROPIC_BASE_URL": self.api,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "OPENAI_API_KEY": "sk-fake",
            "GOOGLE_GEMINI_BASE_URL": self.api,
            "GEMINI_API_KEY": "fake",
            "DISABLE_AUTOUPDATER": "1",
        }
        # the agent is stopped once it has sent its turn: what it does with the fake answer is not
        # looked at, and Codex took 6 s more to give up on it
        agent = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        try:
            while agent.poll() is None and turn_sent(self.requests) is None:
                assert time.monotonic() < deadline, f"no turn sent in 120 s: {command}"
                time.sleep(0.02)
        finally:
            if agent.poll() is None:
                os.killpg(agent.pid, signal.SIGKILL)
            _, stderr = agent.communicate()
        assert not list(self.root.rglob("pwned")), "a folder's name ran as code"
        said = texts(first_request(self.requests))
        assert said, (command, stderr[-500:])
        return said


@pytest.fixture
def desk(tmp_path: Path, real_clis: Path, fake_api: tuple[str, Path]) -> Desk:
    api, requests = fake_api
    env = home_env(tmp_path, TMPDIR=str(tmp_path))  # a Gemini fork is written to $TMPDIR
    return Desk(tmp_path, env, wrappers(tmp_path / "bin", real_clis, api), api, requests)


def texts(request: dict) -> list[tuple[str, str]]:
    """(role, text) of each conversation message a request carried (Anthropic's `messages` or the
    Responses API's `input`), system reminders and environment notes left out."""
    items = request.get("messages") or request.get("input") or request.get("contents") or []
    out = []
    for item in items:
        content = item.get("content", item.get("parts"))  # Gemini's `contents` hold `parts`
        parts = [content] if isinstance(content, str) else [b.get("text") or "" for b in content or []]
        for part in parts:
            if part and not part.startswith(("<system-reminder>", "<environment_context>", "<")):
                out.append((item.get("role", ""), part))
    return out


def first_request(out: Path) -> dict:
    """The first request of the agent's own turn: one that offers tools (Claude Code asks for a new
    session's title first, in a request of its own without them)."""
    turn = turn_sent(out)
    assert turn is not None, (
        f"the agent sent no turn to the model API ({len(list(out.glob('request-*')))} requests)"
    )
    return turn


def turn_sent(out: Path) -> dict | None:
    """The agent's turn, once the fake API has written all of it (a file still being written is
    not JSON yet)."""
    for path in sorted(out.glob("request-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        try:
            body = json.loads(path.read_bytes())
        except ValueError:
            return None
        if body.get("tools") or "tool_choice" in body or "contents" in body:
            return dict(body)
    return None


def claude_session(env: dict[str, str], work: Path) -> tuple[Transcript, str]:
    """Three turns in Claude Code's own folder for `work`; returns the transcript and the id of the
    second answer."""
    work.mkdir()
    folder = "".join(c if c.isalnum() else "-" for c in str(work))  # as Claude Code names it
    t = Transcript(Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / folder / f"{SID}.jsonl", SID, cwd=str(work))
    t.user("first question ALPHA about the parser")
    t.assistant("answer one ALPHA-ANSWER")
    t.user("second question BRAVO about the tests")
    second = t.assistant("answer two BRAVO-ANSWER")
    t.user("third question CHARLIE")
    t.assistant("answer three CHARLIE-ANSWER")
    t.path.write_text("".join(json.dumps(x) + "\n" for x in t.lines))
    return t, second


def test_claude_code_loads_the_fork_up_to_the_chosen_answer_in_a_folder_named_to_harm(desk: Desk) -> None:
    _, second = claude_session(desk.env, desk.root / HOSTILE)
    desk.threadloom("ingest")
    said = desk.paste(json.loads(desk.threadloom("fork", second, "--json"))["command"])
    assert [r for r, _ in said] == ["user", "assistant", "user", "assistant", "user"], said
    assert "ALPHA" in said[0][1] and said[3][1] == "answer two BRAVO-ANSWER"
    assert not any("CHARLIE" in text for _, text in said)  # nothing after the fork point
    assert said[-1][1] == "say ok"


def test_claude_code_resumes_the_whole_session(desk: Desk) -> None:
    claude_session(desk.env, desk.root / "work")
    desk.threadloom("ingest")
    said = [text for _, text in desk.paste(json.loads(desk.threadloom("resume", SID, "--json"))["command"])]
    assert said[-2:] == ["answer three CHARLIE-ANSWER", "say ok"] and "ALPHA" in said[0]


def test_claude_code_is_sent_the_edited_prompt_in_place_of_the_chosen_one(desk: Desk) -> None:
    t, _ = claude_session(desk.env, desk.root / "work")
    third = t.lines[4]["uuid"]  # the third prompt
    desk.threadloom("ingest")
    plan = json.loads(
        desk.threadloom("fork", third, "--before", "--prompt", "DELTA 'instead' $(x)", "--json")
    )
    said = [text for _, text in desk.paste(plan["command"])]
    assert said[-2] == "answer two BRAVO-ANSWER" and said[-1].startswith("DELTA 'instead' $(x)")
    assert not any("CHARLIE" in text for text in said)


def test_a_new_session_from_context_reaches_claude_code_as_its_first_message(desk: Desk) -> None:
    from threadloom.core.actions.launch import launch_command, write_context_file
    from threadloom.core.insight.recall import build_context
    from threadloom.core.store import db as store

    claude_session(desk.env, desk.root / "work")
    desk.threadloom("ingest")
    conn = store.connect(desk.root / "t.db", readonly=True)
    try:
        context = build_context(conn, "the tests BRAVO", budget=1000)
    finally:
        conn.close()
    assert context.turns
    launch = launch_command(
        "claude-code", write_context_file(context, desk.root / "contexts"), str(desk.root / "work")
    )
    said = desk.paste(launch.command)
    assert said[0][0] == "user" and said[0][1].startswith("Context from past sessions")
    assert "BRAVO" in said[0][1]


def test_codex_loads_the_fork_cut_after_the_chosen_turn(desk: Desk) -> None:
    work = desk.root / HOSTILE
    work.mkdir()
    r = Rollout(Path(desk.env["CODEX_HOME"]), THREAD)
    r.meta(cwd=str(work))
    r.add("turn_context", {"cwd": str(work), "approval_policy": "never", "model": "gpt-5.2-codex"})
    for word in ("ALPHA", "BRAVO", "CHARLIE"):
        r.prompt(f"question {word}")
        r.say(f"answer {word}-ANSWER")
        r.add("event_msg", {"type": "task_complete", "last_agent_message": f"answer {word}-ANSWER"})
    r.write()
    desk.threadloom("ingest")
    said = desk.paste(desk.fork_at(THREAD, "BRAVO-ANSWER")["command"])
    conversation = [(role, text) for role, text in said if role in ("user", "assistant")]
    assert conversation[:4] == [
        ("user", "question ALPHA"),
        ("assistant", "answer ALPHA-ANSWER"),
        ("user", "question BRAVO"),
        ("assistant", "answer BRAVO-ANSWER"),
    ], conversation
    assert not any("CHARLIE" in text for _, text in said)
    assert conversation[-1] == ("user", "say ok")


def test_gemini_cli_imports_the_fork_up_to_the_chosen_answer(desk: Desk) -> None:
    work = desk.root / HOSTILE
    work.mkdir()
    gemini = Path(desk.env["HOME"]) / ".gemini"
    (gemini / "tmp" / "shop" / "chats").mkdir(parents=True)
    (gemini / "tmp" / "shop" / ".project_root").write_text(f"{work}\n")
    (gemini / "projects.json").write_text(json.dumps({"projects": {str(work): "shop"}}))
    (gemini / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    lines: list[dict] = [
        {"sessionId": GEMINI_SID, "projectHash": "shop", "startTime": "2026-04-29T21:39:22Z",
         "lastUpdated": "2026-04-29T21:39:22Z", "kind": "main"}
    ]  # fmt: skip
    for n, word in enumerate(("ALPHA", "BRAVO", "CHARLIE")):
        at = f"2026-04-29T21:4{n}:3"
        lines.append(
            {"id": f"u{n}", "timestamp": at + "3Z", "type": "user", "content": [{"text": f"question {word}"}]}
        )
        lines.append(
            {"id": f"g{n}", "timestamp": at + "5Z", "type": "gemini", "content": f"answer {word}-ANSWER"}
        )
    chat = gemini / "tmp" / "shop" / "chats" / f"session-2026-04-29T21-39-{GEMINI_SID[:8]}.jsonl"
    chat.write_text("".join(json.dumps(x) + "\n" for x in lines))
    desk.threadloom("ingest")
    said = desk.paste(desk.fork_at(GEMINI_SID, "BRAVO-ANSWER")["command"])
    assert said == [
        ("user", "question ALPHA"),
        ("model", "answer ALPHA-ANSWER"),
        ("user", "question BRAVO"),
        ("model", "answer BRAVO-ANSWER"),
        ("user", "say ok"),
    ], said
