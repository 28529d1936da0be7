"""A Claude Code session file rewritten later, for the archive's versions of a file."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.builders.claude import Transcript

SID = "aaaaaaaa-2222-4333-8444-000000000001"


def session_file(root: Path, turns: int = 4) -> Path:
    t = Transcript(root / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    for n in range(turns):
        t.user(f"question {n}")
        t.assistant(f"answer {n}")
    return t.write()


def later(path: Path) -> None:
    """A new mtime, as a rewrite a moment later would have."""
    ns = time.time_ns() + 2_000_000_000
    os.utime(path, ns=(ns, ns))
