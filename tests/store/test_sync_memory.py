"""Memory over sync (core.ingest.memory_sync through a real PostgreSQL hub, tests/pg_support.py): tags,
notes, relations and knowledge entries with their versions going both ways, by scope; two machines
editing one entry at once kept as a conflict on both; nothing duplicated when synced again."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from threadloom.core.ingest import sync
from threadloom.core.insight import memory

from tests.builders.sync import A, B, Machine, machine_session
from tests.pg_support import PgServer

ME, ANA = "person:me", "person:ana"


@pytest.fixture
def hub(pg_server: PgServer, hub_db: str) -> str:
    url = pg_server.url(hub_db)
    sync.init_hub(url)
    return url


def write(conn: sqlite3.Connection, do: Callable[[sqlite3.Connection], Any]) -> Any:
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = do(conn)
        conn.execute("COMMIT")
        return done
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def entry(conn: sqlite3.Connection, title: str) -> memory.Entry:
    (found,) = [e for e in memory.list_entries(conn) if e.title == title]
    return found


def versions(conn: sqlite3.Connection) -> set[tuple[str, str, str]]:
    return set(conn.execute("SELECT entry_id, vid, content FROM memory_versions"))


def counts(conn: sqlite3.Connection) -> tuple[int, ...]:
    return tuple(
        conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("memory_marks", "memory_entries", "memory_versions", "memory_relations", "memory_conflicts")
    )


def two_machines(tmp_path: Path, hub: str) -> tuple[Machine, Machine]:
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    machine_session(box.root, B, "/srv/api", turns=2, project="-srv-api")
    laptop.ingest()
    box.ingest()
    for m in (laptop, box, laptop):
        m.sync(hub)
    return laptop, box


def test_memory_syncs_both_ways_and_once(tmp_path: Path, hub: str) -> None:
    laptop, box = two_machines(tmp_path, hub)

    def on_laptop(c: sqlite3.Connection) -> None:
        memory.add_mark(c, "tag", memory.Target("session", A, A), "flaky", ME)
        memory.add_mark(c, "note", memory.place_target(c, "message", A, 1), "the cache broke here", ME)
        memory.add_entry(
            c,
            kind="decision",
            scope="project",
            scope_key="/home/me/app",
            title="Dates",
            content="Store UTC",
            author=ME,
        )
        memory.add_entry(
            c, kind="guideline", scope="global", scope_key=None, title="Style", content="black", author=ME
        )
        memory.relate(c, memory.Target("session", A, A), "related_to", memory.Target("session", B, B), ME)

    write(laptop.conn, on_laptop)
    write(box.conn, lambda c: memory.add_mark(c, "tag", memory.Target("session", B, B), "infra", ANA))
    first = laptop.sync(hub)
    assert (first.pushed_rows, first.pulled_rows) == (5, 0)  # two marks, two versions, a relation
    assert box.sync(hub).pulled_rows == 5
    assert laptop.sync(hub).pulled_rows == 1
    for m in (laptop, box):
        assert memory.tags_of(m.conn, [A, B]) == {A: ["flaky"], B: ["infra"]}
        (note,) = memory.marks(m.conn, kind="note")
        assert (note.target_id, note.value) == (f"{A}#1", "the cache broke here")
        assert [r.target_id for r in memory.relations(m.conn, memory.Target("session", A, A))] == [B]
        assert [e.title for e in memory.recall(m.conn, project="/home/me/app")] == ["Dates", "Style"]
    assert versions(laptop.conn) == versions(box.conn)
    assert entry(laptop.conn, "Dates").id == entry(box.conn, "Dates").id
    # again: nothing moves, nothing is duplicated
    before = counts(laptop.conn), counts(box.conn)
    for m in (laptop, box, laptop):
        again = m.sync(hub)
        assert (again.pushed_rows, again.pulled_rows) == (0, 0)
    assert (counts(laptop.conn), counts(box.conn)) == before


def test_an_entry_edited_on_two_machines_at_once_is_a_conflict_on_both(tmp_path: Path, hub: str) -> None:
    laptop, box = two_machines(tmp_path, hub)
    write(
        laptop.conn,
        lambda c: memory.add_entry(
            c,
            kind="decision",
            scope="project",
            scope_key="/home/me/app",
            title="Dates",
            content="Store UTC",
            author=ME,
        ),
    )
    laptop.sync(hub)
    box.sync(hub)
    dates = entry(box.conn, "Dates")
    assert dates.current is not None and dates.current.content == "Store UTC"
    # both edit version 1, neither having seen the other's
    write(
        laptop.conn, lambda c: memory.edit_entry(c, dates.id, content="UTC, ISO 8601 on the wire", author=ME)
    )
    write(box.conn, lambda c: memory.edit_entry(c, dates.id, content="Local time", author=ANA))
    # started apart on both: one entry (its id is its scope's and title's), two first versions
    write(
        laptop.conn,
        lambda c: memory.add_entry(
            c, kind="fact", scope="global", scope_key=None, title="Port", content="8080", author=ME
        ),
    )
    write(
        box.conn,
        lambda c: memory.add_entry(
            c, kind="fact", scope="global", scope_key=None, title="Port", content="9090", author=ANA
        ),
    )
    laptop.sync(hub)
    pulled = box.sync(hub)
    assert pulled.memory_conflicts == 2
    assert laptop.sync(hub).memory_conflicts == 2
    for m in (laptop, box):
        found = memory.conflicts(m.conn)
        assert {c.title for c in found} == {"Dates", "Port"}
        # the version pulled (the third here) was written beside this machine's own second
        assert any(
            c.title == "Dates"
            and (c.version_a, c.version_b) == (2, 3)
            and {c.author_a, c.author_b} == {ME, ANA}
            for c in found
        )
        _, kept = memory.history(m.conn, dates.id)
        assert {v.content for v in kept} == {"Store UTC", "UTC, ISO 8601 on the wire", "Local time"}
        assert len(memory.list_entries(m.conn, scope="global")) == 1
    assert versions(laptop.conn) == versions(box.conn)
    # resolved here by a new version written on the latest: it goes to the other machine as one
    write(box.conn, lambda c: memory.edit_entry(c, dates.id, content="UTC", author=ANA, reason="agreed"))
    write(box.conn, lambda c: memory.resolve_conflicts(c, dates.id, author=ANA, resolution="UTC"))
    box.sync(hub)
    settled = laptop.sync(hub)
    assert (settled.pulled_rows, settled.memory_conflicts) == (1, 0)
    current = entry(laptop.conn, "Dates").current
    assert current is not None and current.content == "UTC"


def test_memory_goes_by_scope(tmp_path: Path, hub: str) -> None:
    laptop, box = two_machines(tmp_path, hub)

    def on_box(c: sqlite3.Connection) -> None:
        memory.add_entry(
            c, kind="fact", scope="project", scope_key="/srv/api", title="Db", content="pg 16", author=ANA
        )
        memory.add_entry(
            c, kind="fact", scope="project", scope_key="/srv/private", title="Key", content="x", author=ANA
        )
        memory.add_entry(
            c, kind="fact", scope="global", scope_key=None, title="Editor", content="vim", author=ANA
        )
        memory.add_mark(c, "tag", memory.Target("session", B, B), "infra", ANA)

    write(box.conn, on_box)
    box.sync(hub, sharing=sync.Sharing(share=["project:/srv/api"]))
    laptop.sync(hub)
    assert [e.title for e in memory.list_entries(laptop.conn)] == [
        "Db"
    ]  # not the private project, nor global
    assert memory.tags_of(laptop.conn, [B]) == {B: ["infra"]}  # B is a session of /srv/api


def test_versions_written_before_they_had_ids_get_the_same_ids_everywhere(tmp_path: Path) -> None:
    """An archive whose memory predates version ids: opening it adds the column, `ingest --rebuild`
    carries its versions (read without the column), and the ids they get are the same wherever the
    same version is (two archives that imported one export sync it as one)."""
    from threadloom.core.store import db

    path = tmp_path / "old.db"
    conn = db.connect(path)
    write(
        conn,
        lambda c: memory.add_entry(
            c, kind="fact", scope="global", scope_key=None, title="Port", content="8080", author=ME
        ),
    )
    (vid,) = conn.execute("SELECT vid FROM memory_versions").fetchone()
    conn.execute("DROP INDEX ix_memory_versions_vid")
    conn.execute("ALTER TABLE memory_versions DROP COLUMN vid")  # as an older threadloom left it
    kept = db.read_user_data(conn)["memory_versions"]
    assert [row[-1] for row in kept] == [None] and kept[0][2] == "8080"
    conn.close()
    conn = db.connect(path)
    assert conn.execute("SELECT vid FROM memory_versions").fetchall() == [(None,)]
    assert write(conn, memory.ensure_version_ids) == 1
    assert conn.execute("SELECT vid FROM memory_versions").fetchall() == [(vid,)]
    # an edit made on it: the next version, no conflict, an id of its own
    write(conn, lambda c: memory.edit_entry(c, "k-", content="9090", author=ME))
    assert len({r[0] for r in conn.execute("SELECT vid FROM memory_versions")}) == 2
    conn.close()


def test_a_hub_from_before_memory_is_upgraded_by_its_owner(tmp_path: Path, hub: str) -> None:
    import psycopg

    with psycopg.connect(hub, autocommit=True) as c:
        c.execute("UPDATE threadloom.meta SET value = '1' WHERE key = 'schema_version'")
        c.execute("ALTER TABLE threadloom.shared_rows DROP COLUMN project CASCADE")
    laptop = Machine(tmp_path, "laptop")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    with pytest.raises(sync.SyncError, match="sync --init"):
        laptop.sync(hub)
    assert laptop.sync(hub, push=False).pulled_records == 0  # pulls go on meanwhile
    assert sync.init_hub(hub).version == 2
    assert laptop.sync(hub).pushed_sources == 1


def test_a_nul_character_in_a_note_or_an_entry_travels_and_does_not_stop_sync(
    tmp_path: Path, hub: str
) -> None:
    """jsonb takes no `\\u0000`: one note holding a NUL (an agent's words over MCP, a value from a
    log) made every push fail until it was deleted. It travels whole, and so does what follows."""
    laptop, box = two_machines(tmp_path, hub)

    def on_laptop(c: sqlite3.Connection) -> None:
        memory.add_mark(c, "note", memory.Target("session", A, A), "before\x00after", ME)
        memory.add_entry(
            c, kind="guideline", scope="global", scope_key=None, title="Nul", content="a\x00b", author=ME
        )

    write(laptop.conn, on_laptop)
    assert laptop.sync(hub).pushed_rows == 2  # the note, the entry's version
    assert box.sync(hub).pulled_rows == 2
    (note,) = memory.marks(box.conn, kind="note")
    assert note.value == "before\x00after"
    assert [
        (e.title, e.current and e.current.content) for e in memory.recall(box.conn) if e.title == "Nul"
    ] == [("Nul", "a\x00b")]
    write(laptop.conn, lambda c: memory.add_mark(c, "tag", memory.Target("session", A, A), "later", ME))
    assert laptop.sync(hub).pushed_rows == 1 and box.sync(hub).pulled_rows == 1
