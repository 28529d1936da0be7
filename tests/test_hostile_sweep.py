"""Hostile input found by a sweep over every agent format: one odd file or row never stops an
ingest, never costs the other files their records, and is never blamed on threadloom's database.

Each test plants what a sweep of mutated logs turned up, next to a good source, and checks that
the run finishes cleanly with everything stored.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from pathlib import Path

from conftest import Transcript

from core import cli


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def ingest_cli(db: Path, *sources: Path) -> tuple[int, str, str]:
    args = [a for s in sources for a in ("--source", str(s))]
    return run_cli("ingest", "--db", str(db), "--only", "-q", *args)


def statuses(db: Path) -> dict[str, tuple[str, str | None]]:
    conn = sqlite3.connect(db)
    try:
        return {Path(p).name: (s, e) for p, s, e in conn.execute("SELECT path, status, error FROM source_files")}
    finally:
        conn.close()


def good_claude_session(root: Path) -> Path:
    t = Transcript(root / "projects" / "-srv-app" / "aaaaaaaa-1111-4222-8333-000000000001.jsonl",
                   "aaaaaaaa-1111-4222-8333-000000000001", cwd="/srv/app")
    t.user("a good prompt")
    t.assistant("a good reply")
    t.write()
    return t.path


# ---------------------------------------------------------------------- discovery


def test_a_first_line_whose_type_is_an_object_does_not_stop_discovery(tmp_path):
    """Claude's and Codex's sniffers looked the `type` up in a set: an object there raised
    TypeError out of discovery and the whole ingest stopped with a traceback."""
    root = tmp_path / "logs"
    good = good_claude_session(root)
    odd = root / "exports"
    odd.mkdir()
    (odd / "notes.jsonl").write_text(json.dumps({"type": {"a": 1}, "uuid": "u", "message": {}}) + "\n")
    (odd / "other.jsonl").write_text(json.dumps({"type": ["session_meta"], "payload": {}}) + "\n")
    code, out, err = ingest_cli(tmp_path / "t.db", root)
    assert code == 0, err
    assert statuses(tmp_path / "t.db")[good.name] == ("ok", None)
