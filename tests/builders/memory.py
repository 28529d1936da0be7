"""An archive of two Claude Code projects for the memory commands (the MCP server, the TUI, sync)."""

from __future__ import annotations

from pathlib import Path

from tests.builders.claude import Transcript
from tests.support import run

API = "a1000000-0000-4000-8000-0000000000a1"


WEB = "b1000000-0000-4000-8000-0000000000b1"


def write_archive(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "projects"
    for sid, cwd, prompt in (
        (API, "/srv/api", "Make the dates timezone aware"),
        (WEB, "/srv/web", "Try the bundler"),
    ):
        t = Transcript(root / cwd.replace("/", "-") / f"{sid}.jsonl", sid, cwd=cwd)
        t.user(prompt)
        t.assistant("Done.")
        t.write()
    path = tmp_path / "t.db"
    res = run("ingest", "--db", str(path), "--only", "--source", str(root), "-q")
    assert res.returncode == 0, res.stderr
    return path, root
