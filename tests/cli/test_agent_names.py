"""The CLI's agent filters take an agent by the names people call it, as the MCP server does:
`--agent gemini-cli` and `agent:gemini-cli` are the archive's `gemini` (`sessions`, `stats` and
`search` found nothing and said nothing), and a name that is no agent's says which names there are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.gemini import chats, gemini, meta, reply, user, write_jsonl  # noqa: F401  (a fixture)
from tests.support import make_archive, run


def both(tmp_path: Path, gemini: Path) -> str:  # noqa: F811
    """An archive of one Claude Code session and one Gemini CLI session; its path."""
    lines = [meta(), user("u1", "list the files"), reply("g1", "Two files here.")]
    write_jsonl(chats(gemini) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    dbp = str(tmp_path / "t.db")
    for source in (make_archive(tmp_path), gemini):
        done = run("--db", dbp, "ingest", "--only", "--source", str(source))
        assert done.returncode == 0, done.stderr
    return dbp


def test_an_agent_is_found_by_its_other_names(tmp_path: Path, gemini: Path) -> None:  # noqa: F811
    dbp = both(tmp_path, gemini)
    for name in ("gemini", "gemini-cli", "Gemini-CLI"):
        listed = json.loads(run("--db", dbp, "sessions", "--agent", name, "--json").stdout)
        assert [s["agent"] for s in listed] == ["gemini"], name
        rows = json.loads(run("--db", dbp, "stats", "--agent", name, "--by", "agent", "--json").stdout)
        assert [(r["label"], r["sessions"]) for r in rows] == [("gemini", 1)], name
        found = run("--db", dbp, "search", f"files agent:{name}", "--mode", "words", "--json")
        assert found.returncode == 0, found.stderr
        assert {h["agent"] for h in json.loads(found.stdout)} == {"gemini"}, name
    # claude is Claude Code's other name; in search's agent: a name's start (claude-code, claude-store)
    listed = json.loads(run("--db", dbp, "sessions", "--agent", "claude", "--json").stdout)
    assert [s["agent"] for s in listed] == ["claude-code"]
    found = json.loads(run("--db", dbp, "search", "health agent:claude", "--mode", "words", "--json").stdout)
    assert found and {h["agent"] for h in found} == {"claude-code"}
    # an agent with nothing in the archive is an empty answer, not a mistake
    assert json.loads(run("--db", dbp, "sessions", "--agent", "droid", "--json").stdout) == []


def test_a_name_that_is_no_agents_says_which_there_are(tmp_path: Path, gemini: Path) -> None:  # noqa: F811
    dbp = both(tmp_path, gemini)
    for args in (
        ("sessions", "--agent", "gemni"),
        ("stats", "--agent", "gemni"),
        ("search", "files agent:gemni"),
    ):
        done = run("--db", dbp, *args)
        assert done.returncode == 2 and done.stdout == "", args
        assert "no agent is called 'gemni': give one of claude-code," in done.stderr, done.stderr
        assert "gemini," in done.stderr and "gemini-cli" in done.stderr, done.stderr


def test_one_function_names_the_agents() -> None:
    from threadloom.core.adapters import UnknownAgent, archive_agent

    assert archive_agent("gemini-cli") == "gemini" and archive_agent(" Droid ") == "factory-droid"
    assert archive_agent("claude") == "claude-code"
    assert archive_agent("claude", prefix=True) == "claude"  # the start of claude-code and claude-store
    assert archive_agent("toy", ["toy"]) == "toy"  # an agent the archive holds, though no adapter reads it
    with pytest.raises(UnknownAgent, match="no agent is called 'toys'"):
        archive_agent("toys", ["toy"])
    # `kimi` is the command of Kimi CLI and of Kimi Code alike: no one of them, the two named
    with pytest.raises(UnknownAgent, match="kimi-cli, kimi-code"):
        archive_agent("kimi")
    assert archive_agent("kimi", prefix=True) == "kimi"  # search's agent:kimi: the start of both
