"""Machines (each its own agent folder and archive) that sync through one PostgreSQL hub."""

from __future__ import annotations

from pathlib import Path

from threadloom.core.ingest import sync
from threadloom.core.store import db
from threadloom.core.store.writer_lock import writer_lock

from tests.builders.claude import Transcript
from tests.support import ingest

ALL = sync.Sharing(share=["all"])


def machine_session(root: Path, sid: str, cwd: str, turns: int = 3, project: str = "-srv-app") -> Transcript:
    t = Transcript(root / "projects" / project / f"{sid}.jsonl", sid, cwd=cwd)
    for n in range(turns):
        t.user(f"question {n} about {cwd}")
        t.assistant(f"answer {n}")
    t.write()
    return t


class Machine:
    """One machine: its own agent folder and archive."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root / name
        self.name = name
        self.conn = db.connect(self.root / "archive.db")

    def ingest(self) -> None:
        ingest(self.conn, self.root / "projects")

    def sync(self, url: str, **kw) -> sync.SyncReport:
        kw.setdefault("sharing", ALL)
        kw.setdefault("machine", self.name)
        with writer_lock(self.conn):
            return sync.sync(self.conn, url, **kw)

    def sessions(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT id, message_count FROM agent_sessions"))


A = "aaaaaaaa-0000-4000-8000-000000000001"


B = "bbbbbbbb-0000-4000-8000-000000000002"
