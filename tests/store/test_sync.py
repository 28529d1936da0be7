"""`threadloom sync` against a real PostgreSQL server the tests start (tests/pg_support.py): two
machines' archives syncing both ways, appends and rewrites, what is shared, redaction, restore of
another machine's session byte for byte, and a sync stopped half-way then resumed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from threadloom.core import db, sync
from threadloom.core.archive import restore_session
from threadloom.core.writer_lock import writer_lock

from tests.conftest import Transcript, ingest
from tests.pg_support import PgServer, hub_db, pg_server  # noqa: F401 - fixtures

ALL = sync.Sharing(share=["all"])


def _session(root: Path, sid: str, cwd: str, turns: int = 3, project: str = "-srv-app") -> Transcript:
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


@pytest.fixture
def hub(pg_server: PgServer, hub_db: str) -> str:  # noqa: F811
    url = pg_server.url(hub_db)
    sync.init_hub(url)
    return url


A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"


def test_two_machines_sync_both_ways(tmp_path: Path, hub: str) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    _session(laptop.root, A, "/home/me/app")
    _session(box.root, B, "/srv/api", turns=2)
    laptop.ingest()
    box.ingest()
    first = laptop.sync(hub)
    assert first.pushed_sources == 1 and first.pushed_records == 6 and first.pulled_records == 0
    second = box.sync(hub)
    assert second.pushed_records == 4 and second.pulled_records == 6
    third = laptop.sync(hub)
    assert third.pushed_records == 0 and third.pulled_records == 4
    # both archives hold both sessions, placed as from their own files
    assert laptop.sessions() == box.sessions() == {A: 6, B: 4}
    hit = laptop.conn.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'api'").fetchone()[0]
    assert hit > 0  # the pulled records are searchable
    # marked with their machine
    machines = sync.machines_of(laptop.conn)
    (fid,) = laptop.conn.execute("SELECT source_file_id FROM agent_sessions WHERE id = ?", (B,)).fetchone()
    assert machines[fid][0] == "box"
    # another machine's files are not this one's to read again: never "gone", never re-read
    from threadloom.core.archive import verify

    checked = verify(laptop.conn)
    assert checked.files_missing == 0 and not checked.mismatches
    laptop.ingest()
    assert laptop.conn.execute("SELECT count(*) FROM source_files WHERE status != 'ok'").fetchone()[0] == 0
    # nothing moves the second time, both ways
    again = laptop.sync(hub)
    assert (again.pushed_records, again.pulled_records) == (0, 0)
    assert again.seconds < 1.0


def test_appends_and_rewrites_follow(tmp_path: Path, hub: str) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    t = _session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    t.user("one more question")
    t.assistant("one more answer")
    t.write()
    laptop.ingest()
    pushed = laptop.sync(hub)
    assert pushed.pushed_records == 2  # only the appended records
    assert box.sync(hub).pulled_records == 2
    assert box.sessions()[A] == 8
    # a rewrite on the laptop (the file edited in place): the box keeps the old version too
    path = t.path
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]))
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    assert box.sessions()[A] == laptop.sessions()[A] == 3
    kept = box.conn.execute("SELECT count(*) FROM source_files WHERE kind = 'version'").fetchone()[0]
    assert kept == 1


def test_restore_other_machines_session_byte_for_byte(tmp_path: Path, hub: str) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    t = _session(laptop.root, A, "/home/me/app")
    with t.path.open("ab") as f:
        f.write(b'{"type":"unknown-thing","x":"\xff\xfe"}\n')  # not UTF-8: kept as it is
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    out = tmp_path / "restored"
    written = restore_session(box.conn, A, out)
    assert len(written) == 1
    assert Path(written[0].written_to).read_bytes() == t.path.read_bytes()
    assert written[0].complete and written[0].written_to.endswith("-srv-app/" + t.path.name)


def test_a_sync_stopped_half_way_resumes_without_duplicates(tmp_path: Path, hub: str, monkeypatch) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    for n in range(4):
        _session(laptop.root, f"aaaaaaaa-0000-4000-8000-00000000001{n}", "/home/me/app", project=f"-p{n}")
    laptop.ingest()
    real = sync._push_source
    calls = {"n": 0}

    def dies(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(sync, "_push_source", dies)
    with pytest.raises(KeyboardInterrupt):
        laptop.sync(hub)
    monkeypatch.setattr(sync, "_push_source", real)
    assert laptop.sync(hub).pushed_sources == 2  # the two not pushed before
    # the pull side stopped half-way too
    real_place = sync._place_source
    calls["n"] = 0

    def dies_placing(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real_place(*args, **kw)

    monkeypatch.setattr(sync, "_place_source", dies_placing)
    with pytest.raises(KeyboardInterrupt):
        box.sync(hub)
    monkeypatch.setattr(sync, "_place_source", real_place)
    box.sync(hub)
    assert box.sessions() == laptop.sessions()
    assert (
        box.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        == laptop.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    )
    import psycopg

    with psycopg.connect(hub) as c:
        assert c.execute("SELECT count(*) FROM threadloom.layouts").fetchone()[0] == 4
        assert c.execute("SELECT count(*) FROM threadloom.records").fetchone()[0] == 24


def _conn_is_sqlite(c: object) -> bool:
    return isinstance(c, sqlite3.Connection)
