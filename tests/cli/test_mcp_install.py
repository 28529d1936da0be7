"""`threadloom mcp install --agent A` on a copy of each agent's own configuration: the server merged
in as that agent documents it, every other key kept, idempotent; `--dry-run` writes nothing;
`uninstall` takes back exactly what install added."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.support import run

CODEX_TOML = """\
# my codex settings
model = "gpt-5.2-codex"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]  # keep this comment

[profiles.fast]
model = "gpt-5-mini"
"""

JSON_CONFIGS = {
    "claude": (
        ".claude.json",
        {
            "numStartups": 34,
            "theme": "dark",
            "projects": {"/srv/api": {"allowedTools": [], "mcpServers": {}}},
            "mcpServers": {"memory": {"type": "stdio", "command": "npx", "args": ["-y", "mem"], "env": {}}},
        },
    ),
    "gemini": (
        ".gemini/settings.json",
        {"theme": "Dracula", "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}},
    ),
    "cursor": (".cursor/mcp.json", {"mcpServers": {"github": {"url": "https://example.invalid/mcp"}}}),
    "opencode": (
        ".config/opencode/opencode.json",
        {
            "$schema": "https://opencode.ai/config.json",
            "model": "anthropic/claude-sonnet-4-5",
            "mcp": {"jira": {"type": "remote", "url": "https://jira.example.invalid/mcp", "enabled": True}},
        },
    ),
}


def home_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": "",
        "CODEX_HOME": str(home / ".codex"),
        "GEMINI_CLI_HOME": str(home),  # Gemini CLI's own: `$GEMINI_CLI_HOME/.gemini`
        "XDG_CONFIG_HOME": str(home / ".config"),
        "THREADLOOM_DB": "",  # the default archive, which the server finds without being told
    }


def mcp(home: Path, *args: str) -> str:
    res = run("mcp", *args, env_extra=home_env(home))
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.parametrize("agent", sorted(JSON_CONFIGS))
def test_install_merges_into_a_json_configuration(tmp_path: Path, agent: str) -> None:
    home = tmp_path / "home"
    name, config = JSON_CONFIGS[agent]
    path = home / name
    path.parent.mkdir(parents=True)
    original = json.dumps(config, indent=2) + "\n"
    path.write_text(original)
    path.chmod(0o640)

    dry = mcp(home, "install", "--agent", agent, "--dry-run")
    assert dry.startswith(f"--- {path}") and '"threadloom"' in dry and path.read_text() == original

    said = mcp(home, "install", "--agent", agent)
    assert said.startswith(f"registered threadloom's MCP server in {path}")
    after = json.loads(path.read_text())
    key = "mcp" if agent == "opencode" else "mcpServers"
    entry = after[key]["threadloom"]
    if agent == "opencode":
        assert entry["type"] == "local" and entry["enabled"] is True and entry["command"][-1] == "mcp"
    else:
        assert entry["args"][-1] == "mcp" and Path(entry["command"]).name in (
            "threadloom",
            "python",
            "python3",
        )
        if agent == "claude":
            assert entry["type"] == "stdio"
    # every other key as it was, the other servers too
    assert {k: v for k, v in after[key].items() if k != "threadloom"} == config[key]
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in config.items() if k != key}
    assert path.stat().st_mode & 0o777 == 0o640

    written = path.read_bytes()
    assert "already registered" in mcp(home, "install", "--agent", agent)
    assert path.read_bytes() == written  # idempotent: not even rewritten

    assert "took threadloom's MCP server out" in mcp(home, "uninstall", "--agent", agent)
    assert json.loads(path.read_text()) == config
    assert "is not in" in mcp(home, "uninstall", "--agent", agent)


def test_install_keeps_a_codex_toml_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(CODEX_TOML)
    mcp(home, "install", "--agent", "codex", "--db", str(tmp_path / "arch.db"))
    text = path.read_text()
    assert text.startswith(CODEX_TOML.split("[profiles.fast]")[0])  # comments, order and spacing kept
    assert "# keep this comment" in text and "[profiles.fast]" in text
    data = tomllib.loads(text)
    server = data["mcp_servers"]["threadloom"]
    assert server["args"][-3:] == ["mcp", "--db", str((tmp_path / "arch.db").resolve())]
    assert data["mcp_servers"]["docs"] == {"command": "npx", "args": ["-y", "docs-mcp"]}
    assert data["model"] == "gpt-5.2-codex" and data["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert "already registered" in mcp(home, "install", "--agent", "codex", "--db", str(tmp_path / "arch.db"))
    mcp(home, "uninstall", "--agent", "codex")
    assert tomllib.loads(path.read_text()) == tomllib.loads(CODEX_TOML)
    assert "# keep this comment" in path.read_text()


def test_install_creates_a_missing_file_and_refuses_one_it_cannot_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    said = json.loads(mcp(home, "install", "--agent", "cursor", "--json"))
    assert said["action"] == "added" and said["changed"] is True
    assert list(json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]) == ["threadloom"]
    assert "mcp_servers" in tomllib.loads(
        mcp(home, "install", "--agent", "codex") and (home / ".codex" / "config.toml").read_text()
    )

    broken = home / ".gemini" / "settings.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"theme": "x", // a comment\n}')
    res = run("mcp", "install", "--agent", "gemini", env_extra=home_env(home))
    assert res.returncode == 1 and "is not JSON threadloom can rewrite" in res.stderr
    assert broken.read_text() == '{"theme": "x", // a comment\n}'


def test_install_extends_inline_tables_writes_through_links_and_keeps_the_users_keys(tmp_path: Path) -> None:
    home = tmp_path / "home"
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    # an inline `mcp_servers`: joined inline, never a traceback
    codex.write_text('mcp_servers = { docs = { command = "npx", args = ["docs"] } }\n')
    mcp(home, "install", "--agent", "codex")
    servers = tomllib.loads(codex.read_text())["mcp_servers"]
    assert (
        servers["docs"] == {"command": "npx", "args": ["docs"]} and servers["threadloom"]["args"][-1] == "mcp"
    )

    # a link into dotfiles: the dotfiles copy is written, the link stays
    dotfiles = tmp_path / "dotfiles" / "codex.toml"
    dotfiles.parent.mkdir()
    dotfiles.write_text('model = "o3"\n')
    codex.unlink()
    codex.symlink_to(dotfiles)
    mcp(home, "install", "--agent", "codex")
    assert codex.is_symlink() and "threadloom" in tomllib.loads(dotfiles.read_text())["mcp_servers"]

    # the user's keys on the entry stay when install updates the ones threadloom owns
    codex.write_text(
        '[mcp_servers.threadloom]\ncommand = "/old/threadloom"\nargs = ["mcp"]\n'
        'startup_timeout_sec = 60\nenv = { THREADLOOM_MCP_WAIT = "30" }\n'
    )
    mcp(home, "install", "--agent", "codex", "--db", str(tmp_path / "a.db"))
    entry = tomllib.loads(dotfiles.read_text())["mcp_servers"]["threadloom"]
    assert entry["command"] != "/old/threadloom" and entry["args"][-1] == str((tmp_path / "a.db").resolve())
    assert entry["startup_timeout_sec"] == 60 and entry["env"] == {"THREADLOOM_MCP_WAIT": "30"}

    # a JSON file keeps its indent and the entry's own keys
    gemini = home / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    config = {"theme": "GitHub", "mcpServers": {"threadloom": {"command": "/old", "args": [], "timeout": 9}}}
    gemini.write_text(json.dumps(config, indent=4) + "\n")
    mcp(home, "install", "--agent", "gemini")
    text = gemini.read_text()
    assert (
        text.startswith('{\n    "theme": "GitHub",\n')
        and json.loads(text)["mcpServers"]["threadloom"]["timeout"] == 9
    )


def test_an_archive_named_by_threadloom_db_is_named_in_the_servers_command(tmp_path: Path) -> None:
    """With $THREADLOOM_DB set and no --db, the server was registered without the archive's path:
    an agent started from a launcher or an IDE, without the variable, read the default archive."""
    home = tmp_path / "home"
    path = home / ".cursor" / "mcp.json"
    mine = tmp_path / "elsewhere" / "mine.db"
    res = run("mcp", "install", "--agent", "cursor", env_extra={**home_env(home), "THREADLOOM_DB": str(mine)})
    assert res.returncode == 0, res.stderr
    args = json.loads(path.read_text())["mcpServers"]["threadloom"]["args"]
    assert args[-3:] == ["mcp", "--db", str(mine.resolve())]
    path.unlink()
    mcp(home, "install", "--agent", "cursor")  # neither: the default, found alike, is not named
    args = json.loads(path.read_text())["mcpServers"]["threadloom"]["args"]
    assert args[-1] == "mcp" and "--db" not in args
