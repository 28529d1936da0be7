"""Access control on the hub, in PostgreSQL itself: two member roles and a reader. A member inserts
only as its own machines and never updates or deletes; a reader only reads; a role reads only what
it is granted."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from threadloom.core.ingest import sync

from tests.builders.sync import ALL, Machine, machine_session
from tests.pg_support import PgServer

A = "aaaaaaaa-0000-4000-8000-0000000000a1"
B = "bbbbbbbb-0000-4000-8000-0000000000b2"


@pytest.fixture
def team(pg_server: PgServer, hub_db: str) -> dict[str, str]:
    """The hub, and the URL of each role: alice and bob members, carol a reader, dave a member who
    reads one project only."""
    owner = pg_server.url(hub_db)
    sync.init_hub(owner)
    urls = {"owner": owner}
    for who in ("alice", "bob", "carol", "dave"):
        role = f"{who}_{hub_db}"
        pg_server.sql("postgres", f'CREATE ROLE "{role}" LOGIN')
        urls[who] = pg_server.url(hub_db, role)
    sync.grant(owner, f"alice_{hub_db}")
    sync.grant(owner, f"bob_{hub_db}")
    sync.grant(owner, f"carol_{hub_db}", reader=True)
    sync.grant(owner, f"dave_{hub_db}", projects=["/srv/api"])
    return urls


def _refused(url: str, statement: str, params: tuple = ()) -> str:
    with psycopg.connect(url) as c, pytest.raises(psycopg.Error) as caught:
        c.execute(statement, params)
    return type(caught.value).__name__


def test_members_write_only_as_their_own_machines(tmp_path: Path, team: dict[str, str]) -> None:
    alice, bob = Machine(tmp_path, "alice-laptop"), Machine(tmp_path, "bob-box")
    machine_session(alice.root, A, "/home/alice/app")
    machine_session(bob.root, B, "/srv/api", project="-srv-api")
    alice.ingest()
    bob.ingest()
    assert alice.sync(team["alice"]).pushed_records == 6
    assert bob.sync(team["bob"]).pulled_records == 6  # members read every project here
    assert alice.sync(team["alice"]).pulled_records == 6
    assert alice.sessions() == bob.sessions()
    # bob cannot take alice's machine name
    with pytest.raises(sync.SyncError, match="belongs to"):
        Machine(tmp_path, "bob2").sync(team["bob"], machine="alice-laptop")
    # nor write as it, nor change or delete anything, nor add a machine in alice's name
    with psycopg.connect(team["owner"]) as c:
        source_id = c.execute("SELECT id FROM threadloom.sources WHERE machine = 'alice-laptop'").fetchone()[
            0
        ]
    bob_url = team["bob"]
    assert (
        _refused(
            bob_url,
            "INSERT INTO threadloom.sources (machine, path, agent, kind) VALUES ('alice-laptop', '\\x2f78', 'claude-code', 'transcript')",
        )
        == "InsufficientPrivilege"
    )
    assert (
        _refused(
            bob_url,
            "INSERT INTO threadloom.records (source_id, hash, machine, raw) VALUES (%s, %s, 'alice-laptop', '\\x00')",
            (source_id, "0" * 32),
        )
        == "InsufficientPrivilege"
    )
    assert (
        _refused(
            bob_url,
            "INSERT INTO threadloom.records (source_id, hash, machine, raw) VALUES (%s, %s, 'bob-box', '\\x00')",
            (source_id, "0" * 32),
        )
        == "InsufficientPrivilege"
    )  # his machine's name on alice's source
    assert (
        _refused(
            bob_url,
            "INSERT INTO threadloom.machines (name, owner) VALUES ('x1', %s)",
            (team["alice"].split("//")[1].split("@")[0],),
        )
        == "InsufficientPrivilege"
    )
    assert _refused(bob_url, "UPDATE threadloom.records SET raw = '\\x00'") == "InsufficientPrivilege"
    assert _refused(bob_url, "DELETE FROM threadloom.layouts") == "InsufficientPrivilege"
    assert _refused(team["alice"], "DELETE FROM threadloom.records") == "InsufficientPrivilege"
    assert _refused(team["alice"], "UPDATE threadloom.machines SET owner = 'x'") == "InsufficientPrivilege"
    with psycopg.connect(team["owner"]) as c:
        assert c.execute("SELECT count(*) FROM threadloom.records").fetchone()[0] == 12


def test_a_reader_reads_and_never_writes(tmp_path: Path, team: dict[str, str]) -> None:
    alice, carol = Machine(tmp_path, "alice-laptop"), Machine(tmp_path, "carol")
    machine_session(alice.root, A, "/home/alice/app")
    alice.ingest()
    alice.sync(team["alice"])
    assert carol.sync(team["carol"], push=False).pulled_records == 6
    machine_session(carol.root, B, "/srv/api")
    carol.ingest()
    with pytest.raises(sync.SyncError, match="may not add machines"):
        carol.sync(team["carol"])
    assert (
        _refused(team["carol"], "INSERT INTO threadloom.machines (name) VALUES ('carol')")
        == "InsufficientPrivilege"
    )


def test_a_role_reads_only_the_projects_it_is_granted(tmp_path: Path, team: dict[str, str]) -> None:
    alice, dave = Machine(tmp_path, "alice-laptop"), Machine(tmp_path, "dave")
    machine_session(alice.root, A, "/home/alice/app", project="-home-alice-app")
    machine_session(alice.root, B, "/srv/api", project="-srv-api")
    alice.ingest()
    from threadloom.core.insight import memory

    alice.conn.execute("BEGIN IMMEDIATE")
    for scope, key, title in (
        ("project", "/srv/api", "Db"),
        ("project", "/home/alice/app", "Port"),
        ("global", None, "Style"),
    ):
        memory.add_entry(
            alice.conn, kind="fact", scope=scope, scope_key=key, title=title, content="x", author="a"
        )
    alice.conn.execute("COMMIT")
    assert alice.sync(team["alice"], sharing=ALL).pushed_sources == 2
    report = dave.sync(team["dave"], push=False)
    assert report.pulled_records == 6 and not report.refused
    assert set(dave.sessions()) == {B}
    titles = lambda: [e.title for e in memory.list_entries(dave.conn)]  # noqa: E731
    assert titles() == ["Db"]  # memory is read per project too; the global entry is alice's machines' only
    # a project granted later: what was pushed before the grant comes with the next pull
    role = team["dave"].split("//")[1].split("@")[0]
    sync.grant(team["owner"], role, projects=["/home/alice/app"])
    assert dave.sync(team["dave"], push=False).pulled_records == 6
    assert set(dave.sessions()) == {A, B}
    assert sorted(titles()) == ["Db", "Port"]
    again = dave.sync(team["dave"], push=False)
    assert (again.pulled_records, again.pulled_rows) == (0, 0)


def test_a_hub_whose_owner_may_not_create_roles(tmp_path: Path, pg_server: PgServer) -> None:
    """A database one owns on a server one does not run (no CREATEROLE): the schema is made, the roles
    are said to be missing, and the owner syncs alone."""
    import uuid

    name = f"own_{uuid.uuid4().hex[:8]}"
    pg_server.sql("postgres", f'CREATE ROLE "{name}" LOGIN')
    pg_server.sql("postgres", f'CREATE DATABASE "{name}" OWNER "{name}"')
    url = pg_server.url(name, name)
    made = sync.init_hub(url)
    assert made.member_role is None and "CREATEROLE" in made.note
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    machine_session(laptop.root, A, "/home/me/app")
    laptop.ingest()
    assert laptop.sync(url).pushed_records == 6
    assert box.sync(url).pulled_records == 6
    assert sync.init_hub(url).version == sync.HUB_VERSION  # again: nothing changes
