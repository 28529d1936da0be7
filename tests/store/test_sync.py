"""`threadloom sync` against a real PostgreSQL server the tests start (tests/pg_support.py): two
machines' archives syncing both ways, appends and rewrites, what is shared, redaction, restore of
another machine's session byte for byte, and a sync stopped half-way then resumed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from threadloom.core.actions.restore import restore_session
from threadloom.core.ingest import sync
from threadloom.core.store import db

from tests.builders.claude import Transcript
from tests.builders.sync import ALL, A, B, Machine, machine_session
from tests.pg_support import PgServer


@pytest.fixture
def hub(pg_server: PgServer, hub_db: str) -> str:
    url = pg_server.url(hub_db)
    sync.init_hub(url)
    return url


def test_two_machines_sync_both_ways(tmp_path: Path, hub: str) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    machine_session(box.root, B, "/srv/api", turns=2)
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
    from threadloom.core.read.archive import verify

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
    t = machine_session(laptop.root, A, "/home/me/app")
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
    t = machine_session(laptop.root, A, "/home/me/app")
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


def stopped_at(monkeypatch, name: str, nth: int) -> tuple[dict[str, int], object]:
    """`sync.<name>` stopped (as Ctrl+C stops it) on its `nth` call: the count of calls, and the
    real function (to put back)."""
    real = getattr(sync, name)
    calls = {"n": 0}

    def dies(*args, **kw):
        calls["n"] += 1
        if calls["n"] == nth:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(sync, name, dies)
    return calls, real


def test_a_sync_stopped_half_way_resumes_without_duplicates(tmp_path: Path, hub: str, monkeypatch) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    for n in range(4):
        machine_session(
            laptop.root, f"aaaaaaaa-0000-4000-8000-00000000001{n}", "/home/me/app", project=f"-p{n}"
        )
    laptop.ingest()
    _, real = stopped_at(monkeypatch, "_push_source", 3)
    with pytest.raises(KeyboardInterrupt):
        laptop.sync(hub)
    monkeypatch.setattr(sync, "_push_source", real)
    assert laptop.sync(hub).pushed_sources == 2  # the two not pushed before
    # the pull side stopped half-way too
    _, real_place = stopped_at(monkeypatch, "_place_source", 3)
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


GHP = "ghp_" + "Zq8XkL2mN4pR7sT1vW3yB5dF9hJ0aC6eG8iK"


def test_a_redacted_push_leaves_no_secret_on_the_hub(tmp_path: Path, hub: str) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    t = Transcript(laptop.root / "projects" / "-srv-app" / f"{A}.jsonl", A, cwd="/srv/app")
    t.user(f"use the token {GHP} to push")
    t.assistant("Pushed with it.")
    t.write()
    laptop.ingest()
    report = laptop.sync(hub, sharing=sync.Sharing(share=["all"], redact=True))
    assert report.redacted_records == 1 and report.pushed_records == 2
    import psycopg

    with psycopg.connect(hub) as c:
        raws = [bytes(r[0]) for r in c.execute("SELECT raw FROM threadloom.records")]
        flags = sorted(r[0] for r in c.execute("SELECT redacted FROM threadloom.records"))
        assert c.execute("SELECT bool_and(redacted) FROM threadloom.layouts").fetchone()[0]
    assert raws and not any(GHP.encode() in raw for raw in raws)
    assert any(b"[REDACTED:" in raw for raw in raws) and flags == [False, True]
    box.sync(hub)
    assert box.sessions() == {A: 2}
    text = " ".join(r[0] or "" for r in box.conn.execute("SELECT content FROM entries"))
    assert GHP not in text and "[REDACTED:" in text
    # marked as masked where it was pulled: never taken for the original
    assert box.conn.execute("SELECT redacted FROM sync_pulled").fetchone()[0] == 1
    # the laptop keeps its own bytes
    assert GHP.encode() in b"".join(bytes(r[0]) for r in laptop.conn.execute("SELECT raw FROM entries"))


def test_what_is_shared_is_chosen(tmp_path: Path, hub: str) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/private", project="-home-me-private")
    machine_session(laptop.root, B, "/srv/api", project="-srv-api")
    laptop.ingest()
    only_api = sync.Sharing(share=["project:/srv/*"])
    report = laptop.sync(hub, sharing=only_api)
    assert (report.pushed_sources, report.not_shared) == (1, 1)
    box.sync(hub)
    assert set(box.sessions()) == {B}
    everything_but = sync.Sharing(share=["all"], exclude=["project:/home/me/private"])
    assert laptop.sync(hub, sharing=everything_but).pushed_sources == 0
    assert laptop.sync(hub, sharing=sync.Sharing(share=["agent:claude-code"])).pushed_sources == 1
    box.sync(hub)
    assert set(box.sessions()) == {A, B}


def test_three_machines_syncing_at_once(tmp_path: Path, hub: str) -> None:
    import threading

    names = ["one", "two", "three"]
    machines = [Machine(tmp_path, n) for n in names]
    for i, m in enumerate(machines):
        for k in range(3):
            machine_session(
                m.root, f"{i}{k}aaaaaa-0000-4000-8000-000000000000", f"/srv/{m.name}", project=f"-p{k}"
            )
        m.ingest()
    # each archive's connection is used from its own thread only
    for m in machines:
        m.conn.close()
    errors: list[BaseException] = []

    def run(m: Machine) -> None:
        try:
            m.conn = db.connect(m.root / "archive.db")
            for _ in range(3):
                m.sync(hub)
            m.conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m,)) for m in machines]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for m in machines:
        m.conn = db.connect(m.root / "archive.db")
        m.sync(hub)
    want = machines[0].sessions()
    assert len(want) == 9
    assert all(m.sessions() == want for m in machines)
    counts = {m.conn.execute("SELECT count(*) FROM entries").fetchone()[0] for m in machines}
    assert counts == {54}


def test_user_data_tables_travel_with_sync(tmp_path: Path, hub: str, monkeypatch) -> None:
    """A table registered in SHARED_TABLES (one line) is pushed and merged on the other machines."""
    monkeypatch.setitem(sync.SHARED_TABLES, "notes_t", ("id", "scope", "body"))
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    for m in (laptop, box):
        m.conn.execute("CREATE TABLE notes_t (id VARCHAR PRIMARY KEY, scope VARCHAR, body VARCHAR)")
    laptop.conn.execute("INSERT INTO notes_t VALUES ('n1', 'global', 'use uv, not pip')")
    box.conn.execute("INSERT INTO notes_t VALUES ('n2', 'project', 'tests need postgres')")
    assert laptop.sync(hub).pushed_rows == 1
    report = box.sync(hub)
    assert (report.pushed_rows, report.pulled_rows) == (1, 1)
    assert laptop.sync(hub).pulled_rows == 1
    again = laptop.sync(hub)
    assert (again.pushed_rows, again.pulled_rows) == (0, 0)
    rows = sorted(laptop.conn.execute("SELECT * FROM notes_t"))
    assert (
        rows
        == sorted(box.conn.execute("SELECT * FROM notes_t"))
        == [
            ("n1", "global", "use uv, not pip"),
            ("n2", "project", "tests need postgres"),
        ]
    )


def test_other_machines_sessions_are_filtered_by_machine_and_person(tmp_path: Path, hub: str) -> None:
    from threadloom.core.read.query import list_sessions
    from threadloom.core.read.search import search

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    machine_session(box.root, B, "/srv/api")
    laptop.ingest()
    box.ingest()
    laptop.sync(hub)
    box.sync(hub)
    laptop.sync(hub)
    assert [s.id for s in list_sessions(laptop.conn, machine="box")] == [B]
    mine = [s.id for s in list_sessions(laptop.conn, machine="lap")]
    assert mine == [A]  # its own, by the name it syncs as
    assert {s.id for s in list_sessions(laptop.conn, who="postgres")} == {A, B}
    assert list_sessions(laptop.conn, who="nobody") == []
    hits = search(laptop.conn, "question machine:box").hits
    assert hits and {h.session_id for h in hits} == {B}
    assert {h.session_id for h in search(laptop.conn, "question machine:laptop").hits} == {A}
    assert {h.session_id for h in search(laptop.conn, "machine:box").hits} == {B}  # filters alone
    assert sync.session_origins(laptop.conn) == {B: ("box", "postgres")}


def test_hostile_values_from_the_hub_are_refused(tmp_path: Path, hub: str) -> None:
    """A hub written by someone else (its owner can write anything): a path leaving its place, bytes
    that are not what their hash says, a layout out of order, an agent no reader takes. Each is
    refused and said; the good source beside them is placed; nothing is written on disk."""
    import hashlib

    import orjson
    import psycopg

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    laptop.sync(hub)
    good = b'{"type":"user","message":{"role":"user","content":"hi"}}'
    digest = hashlib.sha256(good).hexdigest()[:32]
    with psycopg.connect(hub) as c:
        c.execute("ALTER TABLE threadloom.machines DROP CONSTRAINT machines_name_check")
        c.execute("INSERT INTO threadloom.machines (name) VALUES ('evil'), ('../up')")

        def source(machine: str, path: bytes, agent: str = "claude-code") -> int:
            return c.execute(
                "INSERT INTO threadloom.sources (machine, path, agent, kind) VALUES (%s, %s, %s, 'transcript') RETURNING id",
                (machine, path, agent),
            ).fetchone()[0]

        def layout(sid: int, machine: str, items: list, raw: bytes = good, digest_of: str = digest) -> None:
            c.execute(
                "INSERT INTO threadloom.records (source_id, hash, machine, raw) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (sid, digest_of, machine, raw),
            )
            c.execute(
                "INSERT INTO threadloom.layouts (source_id, machine, generation, from_offset, end_offset, items, record_count) "
                "VALUES (%s, %s, 1, 0, 100, %s, %s)",
                (sid, machine, orjson.dumps(items), len(items)),
            )

        layout(source("evil", b"/home/x/../../etc/cron.d/x.jsonl"), "evil", [[0, 1, 1, digest]])
        layout(source("evil", b"relative/x.jsonl"), "evil", [[0, 1, 1, digest]])
        layout(source("../up", b"/home/x/p/a.jsonl"), "../up", [[0, 1, 1, digest]])
        layout(source("evil", b"/home/x/p/b.jsonl"), "evil", [[0, 1, 1, digest]], raw=b"other bytes")
        layout(source("evil", b"/home/x/p/c.jsonl"), "evil", [[10, 2, 1, digest], [0, 1, 1, digest]])
        layout(source("evil", b"/home/x/p/d.jsonl", agent="$(rm -rf ~)"), "evil", [[0, 1, 1, digest]])
        layout(source("evil", b"/home/x/p/e.jsonl"), "evil", [["0; DROP", 1, 1, digest]])
        layout(source("evil", b"/home/x/p/fine.jsonl"), "evil", [[0, 1, 1, digest]])
    report = box.sync(hub)
    assert len(report.refused) == 7, report.refused
    text = " ".join(report.refused)
    assert "'..'" in text and "absolute" in text and "machine name" in text and "hash names" in text
    assert "file order" in text and "does not read" in text and "range" in text
    paths = [r[0] for r in box.conn.execute("SELECT path FROM source_files ORDER BY path")]
    assert paths == [
        "/threadloom-sync/evil/home/x/p/fine.jsonl",
        f"/threadloom-sync/laptop{laptop.root}/projects/-srv-app/{A}.jsonl",
    ]
    assert not Path("/threadloom-sync").exists()
    assert box.sync(hub).refused == []  # said once: the cursor moved past them


def test_mirror_paths() -> None:
    assert sync.mirror_path("m1", b"C:\\Users\\ana\\.claude\\projects\\p\\s.jsonl") == (
        "/threadloom-sync/m1/C/Users/ana/.claude/projects/p/s.jsonl"
    )
    name = "/home/\udcff/s.jsonl"  # a name that is not UTF-8 on its machine, stored with its bytes
    from threadloom.core.adapters.base import disk_name, stored_name

    mirrored = sync.mirror_path("m1", stored_name(name).encode())
    assert disk_name(mirrored) == "/threadloom-sync/m1" + name
    for bad in (b"/a/./b", b"/a//b", b"", b"/", b"/a/\x00b", b"\xff"):
        with pytest.raises(sync.HubValueError):
            sync.mirror_path("m1", bad)
    with pytest.raises(sync.HubValueError):
        sync.mirror_path("../x", b"/a")


def test_watch_syncs_after_each_change(tmp_path: Path, hub: str) -> None:
    import logging
    import threading

    from threadloom.core.serve.watch import Watcher, WatchOptions
    from threadloom.core.store.sql import set_meta

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    t = machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    laptop.sync(hub)
    laptop.conn.execute("BEGIN IMMEDIATE")
    set_meta(laptop.conn, sync.URL_KEY, hub)
    sync.save_sharing(laptop.conn, ALL)
    laptop.conn.execute("COMMIT")
    options = WatchOptions(laptop.root / "archive.db", tmp_path / "watch.log", sync=True)
    watcher = Watcher(options, threading.Event(), logging.getLogger("test-watch"))
    t.user("and one more")
    t.write()
    report = watcher._ingest("", [str(t.path)])
    assert report is not None and report.records_added == 1
    assert box.sync(hub).pulled_records == 7  # pushed by the watch, with the ingest


def test_a_file_rewritten_before_its_first_push_takes_its_history_along(tmp_path: Path, hub: str) -> None:
    from threadloom.core.read.archive import version_bytes, versions

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    t = machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    first = t.path.read_bytes()
    lines = first.splitlines(keepends=True)
    t.path.write_bytes(b"".join(lines[:2]) + lines[4])  # an edit: a turn taken out
    laptop.ingest()
    assert laptop.sync(hub).pushed_records == 6 + 3
    box.sync(hub)

    def old_versions(m: Machine) -> list[bytes]:
        (fid,) = m.conn.execute(
            "SELECT id FROM source_files WHERE kind = 'transcript' AND path LIKE ?", (f"%{A}.jsonl",)
        ).fetchone()
        return [version_bytes(m.conn, v)[0] for v in versions(m.conn, fid)]

    assert old_versions(box) == old_versions(laptop) == [first]
    assert box.sessions() == laptop.sessions() == {A: 3}
    out = tmp_path / "restored"
    written = restore_session(box.conn, A, out)
    assert Path(written[0].written_to).read_bytes() == t.path.read_bytes()


def test_another_machines_session_is_restored_where_claude_resumes_it(
    tmp_path: Path, hub: str, monkeypatch
) -> None:
    from threadloom.core.actions.fork import claude_restore_step

    here = tmp_path / "work" / "app"
    here.mkdir(parents=True)
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    t = machine_session(laptop.root, A, str(here))
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "box-claude"))
    step = claude_restore_step(box.conn, A, str(here))
    assert step is not None and list(step.files) == [
        f"/threadloom-sync/laptop{laptop.root}/projects/-srv-app/{A}.jsonl"
    ]
    target = Path(step.files[next(iter(step.files))])
    assert target.is_relative_to(tmp_path / "box-claude" / "projects")
    restore_session(box.conn, A, Path(step.folder), only={s: Path(d) for s, d in step.files.items()})
    assert target.read_bytes() == t.path.read_bytes()


def test_a_private_projects_side_files_stay_with_it(tmp_path: Path, hub: str) -> None:
    """A side file (a tool output saved apart) holds no session's records: it is known to be the
    private project's by its folder, and stays with it."""
    laptop = Machine(tmp_path, "laptop")
    machine_session(laptop.root, A, "/home/me/private", project="-home-me-private")
    saved = laptop.root / "projects" / "-home-me-private" / A / "tool-results" / "toolu_1.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text("PRIVATE OUTPUT " * 100)
    machine_session(laptop.root, B, "/srv/api", project="-srv-api")
    laptop.ingest()
    kinds = dict(laptop.conn.execute("SELECT kind, count(*) FROM source_files GROUP BY kind"))
    assert kinds.get("side") == 1
    report = laptop.sync(hub, sharing=sync.Sharing(share=["all"], exclude=["project:/home/me/private"]))
    assert (report.pushed_sources, report.not_shared) == (1, 2)
    import psycopg

    with psycopg.connect(hub) as c:
        assert not any(b"PRIVATE" in bytes(r[0]) for r in c.execute("SELECT raw FROM threadloom.records"))
        assert c.execute("SELECT project FROM threadloom.sources").fetchall() == [("/srv/api",)]


def test_stats_by_machine(tmp_path: Path, hub: str) -> None:
    from threadloom.core.insight import stats

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app", turns=3)
    machine_session(box.root, B, "/srv/api", turns=2)
    laptop.ingest()
    box.ingest()
    laptop.sync(hub)
    box.sync(hub)
    laptop.sync(hub)
    rows = {r.key: r.messages for r in stats.report(laptop.conn, by="machine")}
    assert rows == {"laptop": 6, "box": 4}


def test_a_hub_that_fails_is_said_without_its_password(tmp_path: Path, pg_server: PgServer, hub: str) -> None:
    laptop = Machine(tmp_path, "laptop")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    gone = pg_server.url("no_such_db", password="hunter2-secret")
    with pytest.raises(sync.SyncError, match="cannot reach") as caught:
        laptop.sync(gone)
    assert "hunter2" not in str(caught.value)
    import psycopg

    with psycopg.connect(hub, autocommit=True) as c:
        c.execute("ALTER TABLE threadloom.layouts RENAME TO layouts_away")
    with pytest.raises(sync.SyncError, match="next sync goes on"):
        laptop.sync(hub)
    assert not laptop.conn.in_transaction
    with psycopg.connect(hub, autocommit=True) as c:
        c.execute("ALTER TABLE threadloom.layouts_away RENAME TO layouts")
    assert laptop.sync(hub).pushed_records == 6


def test_a_machine_renamed_does_not_pull_its_own_files_back(tmp_path: Path, hub: str) -> None:
    laptop = Machine(tmp_path, "laptop")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    laptop.sync(hub)
    report = laptop.sync(hub, machine="laptop-renamed")
    assert report.pulled_records == 0
    assert report.pushed_records == 0  # on the hub already, under its old name: not sent again
    assert laptop.conn.execute("SELECT count(*) FROM source_files").fetchone()[0] == 1


@pytest.mark.parametrize("bulk", [False, True], ids=["file by file", "a bulk pull"])
def test_pulled_sessions_are_derived_as_on_their_machine(
    tmp_path: Path, hub: str, monkeypatch, bulk: bool
) -> None:
    """A session with subagents (one described by its .meta.json beside it): every derived fact of
    every session is the same on the machine that pulled it as on its own; a pull large enough to
    index once afterwards (BULK_RECORDS) reads the turns for meaning after that index, as a first
    load does, and leaves nothing behind."""
    import json

    from threadloom.core.ingest import sync
    from threadloom.core.insight import episodes as episodes_of
    from threadloom.core.insight import refresh

    if bulk:
        monkeypatch.setattr(sync, "BULK_RECORDS", 1)

    from tests.builders.claude import tool_use

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    project = laptop.root / "projects" / "-srv-app"
    t = Transcript(project / f"{A}.jsonl", A, cwd="/srv/app")
    t.user("Document the API")
    t.assistant(tools=[tool_use("toolu_new", "Agent", description="New helper", prompt="Write docs")])
    t.tool_result("toolu_new", "done")
    t.write()
    sub_dir = project / A / "subagents"
    sub = Transcript(
        sub_dir / "agent-a0123456789abcdef.jsonl", A, isSidechain=True, agentId="a0123456789abcdef"
    )
    sub.user("Write docs", parent=False)
    sub.assistant("written")
    sub.write()
    (sub_dir / "agent-a0123456789abcdef.meta.json").write_text(
        json.dumps({"agentType": "docs-writer", "description": "New helper", "toolUseId": "toolu_new"})
    )
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    columns = (
        "id, source, project_path, title, message_count, parent_session_id, tool_call_id, task_description, "
    )
    columns += (
        "kind, agent_type, turn_count, tool_call_count, input_tokens, output_tokens, created_at, ended_at"
    )
    query = f"SELECT {columns} FROM agent_sessions ORDER BY id"
    mine, theirs = laptop.conn.execute(query).fetchall(), box.conn.execute(query).fetchall()
    assert len(mine) == 2 and theirs == mine
    assert ("docs-writer",) in box.conn.execute("SELECT agent_type FROM agent_sessions").fetchall()
    signals = "SELECT session_id, name, detail FROM session_signals ORDER BY 1, 2"
    assert box.conn.execute(signals).fetchall() == laptop.conn.execute(signals).fetchall()
    # its turns as episodes, embedded for search by meaning, as there
    episodes = (
        "SELECT turn_id, session_id, files, commands, tools, vector IS NOT NULL FROM episodes ORDER BY 1"
    )
    mine = laptop.conn.execute(episodes).fetchall()
    assert mine and box.conn.execute(episodes).fetchall() == mine
    assert not refresh.left_behind(box.conn) and not episodes_of.left_for_index(box.conn)


@pytest.mark.parametrize("cut", [3, 9, 12, 16])
def test_a_codex_rollout_appended_to_is_derived_as_on_its_machine(tmp_path: Path, hub: str, cut: int) -> None:
    """Codex's reader rebuilds its state from the bytes before an append: on the machine that pulled
    the append, from the archive (the file is not on its disk)."""
    import json

    from threadloom.core.ingest.pipeline import run_ingest

    from tests.support import full_session, usage

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    codex = tmp_path / "codex-home"
    r = full_session(codex)
    r.tokens(usage(10, 0, 5), with_last=False)
    full = list(r.lines)
    r.write(full[:cut])
    run_ingest(laptop.conn, [codex], include_defaults=False)
    laptop.sync(hub)
    box.sync(hub)
    with open(r.path, "a") as f:
        f.write("".join(json.dumps(x) + "\n" for x in full[cut:]))
    run_ingest(laptop.conn, [codex], include_defaults=False)
    assert laptop.sync(hub).pushed_records == len(full) - cut
    box.sync(hub)
    for table, cols in (
        (
            "agent_sessions",
            "id, turn_count, message_count, input_tokens, output_tokens, cache_read_tokens, model, title",
        ),
        ("agent_turns", "id, parent_turn_id, token_count, sequence"),
        ("agent_usage", "message_id, input_tokens, output_tokens, turn_id"),
    ):
        sql = f"SELECT {cols} FROM {table} ORDER BY 1"
        assert box.conn.execute(sql).fetchall() == laptop.conn.execute(sql).fetchall(), table
    # and again when every session is placed again from the stored records (a schema upgrade)
    from threadloom.core.ingest.pipeline import rebuild_pending
    from threadloom.core.store.db import REBUILD_KEY
    from threadloom.core.store.sql import set_meta

    before = box.conn.execute("SELECT * FROM agent_usage ORDER BY 1").fetchall()
    box.conn.execute("BEGIN IMMEDIATE")
    set_meta(box.conn, REBUILD_KEY, "12")
    box.conn.execute("COMMIT")
    assert rebuild_pending(box.conn)
    assert box.conn.execute("SELECT * FROM agent_usage ORDER BY 1").fetchall() == before


def test_an_agent_read_only_by_a_newer_threadloom_is_pulled_once_this_one_reads_it(
    tmp_path: Path, hub: str, monkeypatch
) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    laptop.sync(hub)
    real = sync._known_agents
    monkeypatch.setattr(sync, "_known_agents", lambda: real() - {"claude-code"})
    first = box.sync(hub)
    assert first.pulled_records == 0 and "read once it does" in first.refused[0]
    assert box.sync(hub).refused == []  # said once
    monkeypatch.setattr(sync, "_known_agents", real)  # an upgrade
    assert box.sync(hub).pulled_records == 6
    assert box.sessions() == {A: 6}
    assert box.sync(hub).pulled_records == 0


def test_a_machines_first_push_after_pulling_reads_nothing_again(
    tmp_path: Path, hub: str, monkeypatch
) -> None:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub, push=False)  # pulled before this machine is on the hub
    calls: list[int] = []
    real = sync._place_source
    monkeypatch.setattr(sync, "_place_source", lambda *a, **k: calls.append(1) or real(*a, **k))
    machine_session(box.root, B, "/srv/api")
    box.ingest()
    assert box.sync(hub).pushed_records == 6  # registers this machine: what it may read is the same
    assert calls == []


def test_an_aider_history_has_the_same_session_ids_on_every_machine(tmp_path: Path, hub: str) -> None:
    """Aider's session ids name the history, not where it sits: pulled to another machine (placed
    under /threadloom-sync/<machine>/…) its sessions keep the ids they have on their own."""
    from tests.builders.aider import SESSION_1, SESSION_2, history

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    history(laptop.root / "projects" / "parser-project", SESSION_1 + SESSION_2)
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    mine = laptop.sessions()
    assert len(mine) == 2 and box.sessions() == mine
    assert all(sid.startswith("aider:") for sid in mine)


def test_redact_turned_on_after_a_push_masks_what_follows_and_forget_takes_the_rest_off(
    tmp_path: Path, hub: str
) -> None:
    """--redact given after a first push: the files already pushed go on as appends, their new records
    masked (nothing sent again whole: a masked copy would take nothing off an append-only hub); the
    hub's owner takes the unmasked records off with `forget`, and the machine's next sync pushes its
    files again, masked; an archive that pulled them keeps one session, its records not doubled."""
    import psycopg

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    t = Transcript(laptop.root / "projects" / "-srv-app" / f"{A}.jsonl", A, cwd="/srv/app")
    t.user(f"use the token {GHP} to push")
    t.assistant("Pushed with it.")
    t.write()
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    masked = sync.Sharing(share=["all"], redact=True)
    t.user(f"and again with {GHP}")
    t.assistant("Done.")
    t.write()
    laptop.ingest()
    later = laptop.sync(hub, sharing=masked)
    assert (later.pushed_records, later.redacted_records) == (2, 1)  # the appended records only

    def on_hub() -> list[bytes]:
        with psycopg.connect(hub) as c:
            assert c.execute("SELECT max(generation) FROM threadloom.layouts").fetchone()[0] == 1
            return [bytes(r[0]) for r in c.execute("SELECT raw FROM threadloom.records")]

    raws = on_hub()
    assert sum(GHP.encode() in raw for raw in raws) == 1  # the first push's, kept as it was
    assert box.sync(hub).pulled_records == 2 and box.sessions() == {A: 4}
    assert box.conn.execute("SELECT count(*) FROM source_files WHERE kind = 'version'").fetchone()[0] == 0
    # the hub's owner forgets the laptop's records; its next sync pushes them again, masked
    assert sync.forget(hub, "laptop")["records"] == 4
    again = laptop.sync(hub, sharing=masked)
    assert (again.pushed_records, again.redacted_records) == (4, 2)
    assert not any(GHP.encode() in raw for raw in on_hub())
    box.sync(hub)
    assert box.sessions() == {A: 4}
    assert laptop.sync(hub, sharing=masked).pushed_records == 0


def test_a_pull_places_its_records_in_a_small_page_cache_and_gives_the_connection_its_own_back(
    tmp_path: Path, hub: str, monkeypatch
) -> None:
    """A pull writes as a first load does, with ONE_PASS_CACHE_KIB of pages: the connection's
    64 MB kept every page it placed, and the catch-up after it grew on top (a 100 MB pull into an
    empty archive peaked at 207 MB, 157 MB so)."""
    from threadloom.core.store.sql import ONE_PASS_CACHE_KIB

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    laptop.sync(hub)
    own = box.conn.execute("PRAGMA cache_size").fetchone()[0]
    seen: list[int] = []
    place = sync._place_source

    def placing(conn, *args, **kwargs):  # noqa: ANN001, ANN202 - sync's own arguments, passed on
        seen.append(conn.execute("PRAGMA cache_size").fetchone()[0])
        return place(conn, *args, **kwargs)

    monkeypatch.setattr(sync, "_place_source", placing)
    assert box.sync(hub).pulled_records == 6 and box.sessions() == {A: 6}
    assert seen == [-ONE_PASS_CACHE_KIB] and own != -ONE_PASS_CACHE_KIB
    assert box.conn.execute("PRAGMA cache_size").fetchone()[0] == own


def test_a_user_data_row_holding_a_nul_travels(tmp_path: Path, hub: str, monkeypatch) -> None:
    """jsonb takes no `\\u0000`: such a row made every push fail until it was deleted."""
    monkeypatch.setitem(sync.SHARED_TABLES, "notes_t", ("id", "scope", "body"))
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    for m in (laptop, box):
        m.conn.execute("CREATE TABLE notes_t (id VARCHAR PRIMARY KEY, scope VARCHAR, body VARCHAR)")
    laptop.conn.execute("INSERT INTO notes_t VALUES ('n1', 'global', ?)", ("before \x00 after",))
    assert laptop.sync(hub).pushed_rows == 1
    assert box.sync(hub).pulled_rows == 1
    assert box.conn.execute("SELECT * FROM notes_t").fetchall() == [("n1", "global", "before \x00 after")]


@pytest.mark.parametrize("marker", [".project_root", "projects.json"])
def test_a_gemini_chat_keeps_its_project_on_the_machine_that_pulls_it(
    tmp_path: Path, hub: str, marker: str
) -> None:
    """Gemini CLI names a chat's project by `tmp/<project>/.project_root` (or `projects.json` beside
    `tmp/`): they were never archived, so every machine that pulled the chat read it with no project
    (and a restored folder had lost it too). Kept with the project's files, and read from the
    archive when the chat is placed."""
    import json

    from tests.builders.gemini import meta, reply, user

    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    home = laptop.root / "projects" / ".gemini"
    project = home / "tmp" / "webshop"
    (project / "chats").mkdir(parents=True)
    if marker == ".project_root":
        (project / ".project_root").write_text("/home/dev/webshop\n")
    else:
        (home / "projects.json").write_text(json.dumps({"projects": {"/home/dev/webshop": "webshop"}}))
    doc = {**meta(), "messages": [user("u1", "list the files"), reply("g1", "Two files.")]}
    (project / "chats" / "session-2026-04-29T21-39-5f0e2a8c.json").write_text(json.dumps(doc, indent=2))
    laptop.ingest()
    laptop.sync(hub)
    box.sync(hub)
    query = "SELECT id, project, project_path FROM agent_sessions ORDER BY id"
    mine = laptop.conn.execute(query).fetchall()
    assert mine and mine[0][2] == "/home/dev/webshop"
    assert box.conn.execute(query).fetchall() == mine


def test_a_first_sync_stopped_half_way_is_carried_on_by_the_next_one(
    tmp_path: Path, hub: str, monkeypatch, capsys
) -> None:
    """A first `threadloom sync URL --share all` killed once files were on the hub: the next plain
    `threadloom sync` said "no hub yet" (the URL and what is shared were remembered only at the
    end); now they are once the hub is reached, and it goes on."""
    from threadloom.core.cli import main

    laptop = Machine(tmp_path, "laptop")
    for n in range(3):
        machine_session(
            laptop.root, f"aaaaaaaa-0000-4000-8000-00000000002{n}", "/home/me/app", project=f"-p{n}"
        )
    laptop.ingest()
    laptop.conn.close()
    database = str(laptop.root / "archive.db")
    calls, real = stopped_at(monkeypatch, "_push_source", 2)
    # stopped (the command says so and exits non-zero) with one file on the hub
    assert main(["sync", hub, "--share", "all", "--machine", "laptop", "--db", database]) != 0
    assert calls["n"] == 2
    monkeypatch.setattr(sync, "_push_source", real)
    capsys.readouterr()
    assert main(["sync", "--db", database, "--json"]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["machine"] == "laptop" and report["pushed_sources"] == 2  # the two not pushed before


def _hub_rows(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as c:
        return {
            t: c.execute(f"SELECT count(*) FROM threadloom.{t}").fetchone()[0]
            for t in ("machines", "sources", "records", "layouts")
        }


def test_two_archives_under_one_machine_name_are_told_apart(tmp_path: Path, hub: str) -> None:
    first, second = Machine(tmp_path, "one"), Machine(tmp_path, "two")
    machine_session(first.root, A, "/home/me/app")
    machine_session(second.root, B, "/srv/api", turns=2)
    first.ingest()
    second.ingest()
    first.sync(hub, machine="MacBook-Pro")
    before = _hub_rows(hub)
    with pytest.raises(sync.SyncError, match="another archive syncs as 'MacBook-Pro'.*--machine"):
        second.sync(hub, machine="MacBook-Pro")
    with pytest.raises(sync.SyncError, match="another archive"):
        second.sync(hub, machine="MacBook-Pro", push=False)  # it would never see the first's sessions
    assert _hub_rows(hub) == before  # nothing of the second reached the hub
    assert not second.conn.execute("SELECT 1 FROM ledger_meta WHERE key = 'sync:url'").fetchone()
    assert first.sync(hub, machine="MacBook-Pro").pulled_records == 0 and first.sessions() == {A: 6}
    # under a name of its own, each sees the other's sessions
    assert second.sync(hub, machine="other").pulled_records == 6
    assert first.sync(hub, machine="MacBook-Pro").pulled_records == 4
    assert first.sessions() == second.sessions() == {A: 6, B: 4}
    # a copy of the first archive (a backup restored) is the same archive: it syncs on
    first.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    copy = Machine(tmp_path, "copy")
    copy.conn.close()
    import shutil

    shutil.copy(first.root / "archive.db", copy.root / "archive.db")
    copy.conn = db.connect(copy.root / "archive.db")
    assert copy.sync(hub, machine="MacBook-Pro").pushed_records == 0
    # and so is the archive started afresh by a rebuild (it keeps its id)
    fresh = db.connect(tmp_path / "rebuilt.db")
    db.write_user_data(fresh, db.read_user_data(first.conn))
    assert sync.archive_id(fresh) == sync.archive_id(first.conn)
    # a new archive takes the name over when told: the old one is refused from then on
    new = Machine(tmp_path, "new")
    new.sync(hub, machine="MacBook-Pro", take_over=True)
    assert new.sessions() == {A: 6, B: 4}  # what the name's old archive pushed is pulled here
    assert new.sync(hub, machine="MacBook-Pro").pulled_records == 0
    with pytest.raises(sync.SyncError, match="another archive"):
        first.sync(hub, machine="MacBook-Pro")


def test_a_machine_named_before_archives_had_ids_goes_to_the_first_that_syncs(
    tmp_path: Path, hub: str
) -> None:
    import psycopg

    with psycopg.connect(hub) as c:  # registered by a threadloom that recorded no archive
        c.execute("INSERT INTO threadloom.machines (name) VALUES ('laptop')")
    first, second = Machine(tmp_path, "one"), Machine(tmp_path, "two")
    machine_session(first.root, A, "/home/me/app")
    first.ingest()
    assert first.sync(hub, machine="laptop").pushed_records == 6
    with pytest.raises(sync.SyncError, match="another archive"):
        second.sync(hub, machine="laptop")


def test_the_first_syncs_projects_count_sessions_as_the_project_list_does(tmp_path: Path) -> None:
    """The first sync's question lists each project with its sessions counted as the project list
    counts them: an Aider run that wrote no message (aider started, then quit) is not one."""
    from threadloom.core.ingest.pipeline import run_ingest
    from threadloom.core.read.browse import list_projects

    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(
        "\n# aider chat started at 2026-03-01 10:00:00\n\n"
        "\n# aider chat started at 2026-03-02 10:00:00\n\n#### add a readme\n\nI added README.md.\n"
    )
    conn = db.connect(tmp_path / "t.db")
    run_ingest(conn, [folder], include_defaults=False)
    path = str(folder)
    assert (
        conn.execute("SELECT count(*) FROM agent_sessions WHERE project_path = ?", (path,)).fetchone()[0] == 2
    )
    listed = {p.path: p.session_count for p in list_projects(conn)}
    assert [(c.path, c.sessions) for c in sync.project_choices(conn)] == [(path, listed[path])] == [(path, 1)]
