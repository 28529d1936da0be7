"""`threadloom sync` run as a process against a real PostgreSQL server (tests/pg_support.py): the
hub made with --init, the first sync refused without --share, --dry-run moving nothing, the URL
remembered without its password (never printed either), a pull-only machine, a no-change sync."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.builders.claude import Transcript
from tests.pg_support import PgServer
from tests.support import home_env, ingest_into, isolated, run

SID = "cccccccc-0000-4000-8000-0000000000c1"
SECRET = "pw-never-shown-8472"


@pytest.mark.long(7)
def test_sync_from_the_command_line(tmp_path: Path, pg_server: PgServer, hub_db: str) -> None:
    url = pg_server.url(hub_db)
    with_password = pg_server.url(hub_db, password=SECRET)  # the test server trusts its local users
    env = home_env(tmp_path)
    made = run("sync", "--init", url, env_extra=env)
    assert made.returncode == 0, made.stderr
    assert "created" in made.stdout
    again = run("sync", "--init", url, env_extra=env)
    assert again.returncode == 0 and "up to date" in again.stdout

    t = Transcript(tmp_path / "laptop" / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.user("Find the slow query")
    t.assistant("It is the join on orders")
    t.write()
    laptop, box = str(tmp_path / "laptop.db"), str(tmp_path / "box.db")
    ingest_into(laptop, tmp_path / "laptop")  # the subject is sync: the archive made in process

    first = run("sync", with_password, "--db", laptop, "--machine", "laptop", env_extra=env)
    assert first.returncode == 1
    assert "--share" in first.stderr and SECRET not in first.stderr + first.stdout

    dry = run(
        "sync",
        with_password,
        "--db",
        laptop,
        "--machine",
        "laptop",
        "--share",
        "all",
        "--dry-run",
        "--json",
        env_extra=env,
    )
    assert dry.returncode == 0, dry.stderr
    would = json.loads(dry.stdout)
    assert would["dry_run"] and would["pushed_records"] == 2 and SECRET not in dry.stdout
    pushed = run(
        "sync",
        with_password,
        "--db",
        laptop,
        "--machine",
        "laptop",
        "--share",
        "all",
        "--json",
        env_extra=env,
    )
    assert pushed.returncode == 0, pushed.stderr
    report = json.loads(pushed.stdout)
    assert report["pushed_records"] == 2 and report["pushed_sources"] == 1
    assert SECRET not in pushed.stdout + pushed.stderr
    with sqlite3.connect(laptop) as c:
        stored = dict(c.execute("SELECT key, value FROM ledger_meta WHERE key LIKE 'sync:%'"))
    assert SECRET not in json.dumps(stored) and stored["sync:machine"] == "laptop"
    assert SECRET.encode() not in Path(laptop).read_bytes()

    pulled = run("sync", url, "--db", box, "--machine", "box", "--pull-only", "--json", env_extra=env)
    assert pulled.returncode == 0, pulled.stderr
    assert json.loads(pulled.stdout)["pulled_records"] == 2
    listed = json.loads(run("sessions", "--db", box, "--machine", "laptop", "--json", env_extra=env).stdout)
    assert [(s["id"], s["machine"]) for s in listed] == [(SID, "laptop")]
    assert (
        json.loads(run("sessions", "--db", box, "--machine", "elsewhere", "--json", env_extra=env).stdout)
        == []
    )
    table = run("sessions", "--db", box, env_extra=env)
    assert "@laptop" in table.stdout
    found = run("search", "--db", box, "slow query machine:laptop", env_extra=env)
    assert found.returncode == 0 and "slow" in found.stdout

    shown = json.loads(run("sources", "--db", box, "--json", env_extra=env).stdout)["sync"]
    assert shown["machine"] == "box" and shown["pulled"] == [
        {"machine": "laptop", "who": pg_server.superuser, "files": 1, "records": 2}
    ]
    assert SECRET not in run("sources", "--db", laptop, env_extra=env).stdout
    said = run("sources", "--db", laptop, env_extra=env).stdout
    assert "as laptop" in said and "waiting to be pushed: 0 files, 0 memory items" in said
    assert "waiting on the hub to be pulled: 0 records of 0 files" in said
    # what the hub holds past the box's last pull: counted by `sources`, which asks the hub
    t.user("And the index?")
    t.assistant("Add one on orders.customer_id")
    t.write()
    ingest_into(laptop, tmp_path / "laptop")  # the subject is sync: the archive made in process
    said = run("sources", "--db", laptop, env_extra=env).stdout
    assert "waiting to be pushed: 1 files" in said
    assert run("sync", "--db", laptop, "--push-only", env_extra=env).returncode == 0
    waiting = json.loads(run("sources", "--db", box, "--json", env_extra=env).stdout)["sync"][
        "waiting_on_hub"
    ]
    assert waiting == {"files": 1, "records": 2, "items": 0}
    offline = json.loads(run("sources", "--db", box, "--json", "--offline", env_extra=env).stdout)["sync"]
    assert "error" in offline["waiting_on_hub"]
    assert run("sync", "--db", box, "--pull-only", env_extra=env).returncode == 0
    said = run("sources", "--db", box, env_extra=env).stdout
    assert "waiting on the hub to be pulled: 0 records of 0 files, 0 memory items" in said
    later = run("sync", "--db", laptop, "--exclude", "project:/srv/app", "--json", env_extra=env)
    assert later.returncode == 0 and "stays on the hub" in later.stderr
    assert "threadloom sync --forget laptop URL" in later.stderr
    assert json.loads(later.stdout)["pushed_records"] == 0
    assert run("sync", "--db", laptop, "--share", "project:/srv/app", env_extra=env).returncode == 0
    # then with nothing new: the URL and what is shared remembered, nothing moves
    quiet = run("sync", "--db", laptop, env_extra=env)
    assert quiet.returncode == 0, quiet.stderr
    assert "push: 0 records" in quiet.stdout and "pull: 0 records" in quiet.stdout
    timed = run("sync", "--db", laptop, "--json", env_extra=env)
    assert json.loads(timed.stdout)["seconds"] < 1.0
    # the hub's owner takes the laptop's records off; its next sync sends them again
    forgot = run("sync", "--forget", "laptop", url, "--json", env_extra=env)
    assert forgot.returncode == 0, forgot.stderr
    assert json.loads(forgot.stdout) == {"records": 4, "layouts": 2, "sources": 1}
    again = json.loads(run("sync", "--db", laptop, "--json", env_extra=env).stdout)
    assert (again["pushed_sources"], again["pushed_records"]) == (1, 4)


@pytest.mark.long(5)
def test_a_sync_killed_half_way_then_run_again(tmp_path: Path, pg_server: PgServer, hub_db: str) -> None:
    """kill -9 in the middle of a push, then of a pull: the next sync goes on, nothing duplicated or lost."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psycopg

    url = pg_server.url(hub_db)
    env = home_env(tmp_path)
    assert run("sync", "--init", url, env_extra=env).returncode == 0
    n = 120
    for i in range(n):
        sid = f"dddddddd-0000-4000-8000-{i:012d}"
        t = Transcript(
            tmp_path / "laptop" / "projects" / f"-srv-p{i}" / f"{sid}.jsonl", sid, cwd=f"/srv/p{i}"
        )
        for k in range(10):
            t.user(f"question {k} " + "x" * 2000)
            t.assistant(f"answer {k}")
        t.write()
    laptop, box = str(tmp_path / "laptop.db"), str(tmp_path / "box.db")
    ingest_into(laptop, tmp_path / "laptop")  # the subject is sync: the archive made in process

    def killed_when(args: list[str], started: callable) -> bool:
        proc = subprocess.Popen(
            [sys.executable, "-m", "threadloom.core.cli", "sync", *args],
            env=dict(os.environ, **env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                if started():
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return True
                time.sleep(0.002)
            return False
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def layouts() -> int:
        with psycopg.connect(url) as c:
            return c.execute("SELECT count(*) FROM threadloom.layouts").fetchone()[0]

    was_killed = killed_when(
        [url, "--db", laptop, "--machine", "laptop", "--share", "all"], lambda: layouts() > 5
    )
    assert was_killed and layouts() < n  # stopped half-way
    again = run("sync", url, "--db", laptop, "--machine", "laptop", "--share", "all", "--json", env_extra=env)
    assert again.returncode == 0, again.stderr
    assert layouts() == n
    with psycopg.connect(url) as c:
        assert c.execute("SELECT count(*) FROM threadloom.records").fetchone()[0] == n * 20
        assert c.execute("SELECT count(DISTINCT source_id) FROM threadloom.layouts").fetchone()[0] == n

    def pulled() -> bool:
        try:
            with sqlite3.connect(f"file:{box}?mode=ro", uri=True) as c:
                return c.execute("SELECT count(*) FROM sync_pulled").fetchone()[0] > 5
        except sqlite3.Error:
            return False

    assert killed_when([url, "--db", box, "--machine", "box", "--pull-only"], pulled)
    done = run("sync", url, "--db", box, "--machine", "box", "--pull-only", "--json", env_extra=env)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(box) as b, sqlite3.connect(laptop) as a:
        count = "SELECT count(*), count(DISTINCT hash), (SELECT count(*) FROM agent_sessions) FROM entries"
        assert b.execute(count).fetchone() == a.execute(count).fetchone() == (n * 20, n * 20, n)


# a `threadloom sync` that stops where its pull's records are committed and nothing derived from them
# is computed yet (the pull's ledger finalizing), says so in the file given, and waits there to be killed
STOPS_AFTER_COMMIT = """
import sys, threading
from pathlib import Path
from threadloom.core.cli import main
from threadloom.core.ingest.ledger import Ledger

finalize = Ledger.finalize

def stopped(self):
    if self.pending_sessions:
        Path(sys.argv[1]).touch()
        threading.Event().wait()
    return finalize(self)

Ledger.finalize = stopped
sys.exit(main(sys.argv[2:]))
"""


@pytest.fixture(scope="module")
def pushed_hub(tmp_path_factory: pytest.TempPathFactory, pg_server: PgServer) -> str:
    """A hub on the worker's test server holding the six sessions of tests/builders/derived.py
    (`sessions_into`) a laptop pushed, made once a module: each test pulls from a copy of its own
    (`pushed_hub_copy`)."""
    from tests.builders.derived import sessions_into

    root = tmp_path_factory.mktemp("pushed-hub")
    hub = pg_server.new_database()
    url = pg_server.url(hub)
    with pytest.MonkeyPatch.context() as isolating:  # as a test's own process sees it (conftest.py)
        for name, value in isolated(root).items():
            isolating.setenv(name, value)
        env = home_env(root)
    assert run("sync", "--init", url, env_extra=env).returncode == 0
    sessions_into(root / "laptop" / "projects", 0, 6)
    laptop = str(root / "laptop.db")
    source = ("--only", "--source", str(root / "laptop"))
    assert run("ingest", "--db", laptop, *source, env_extra=env).returncode == 0
    assert (
        run("sync", url, "--db", laptop, "--machine", "laptop", "--share", "all", env_extra=env).returncode
        == 0
    )
    return hub


@pytest.fixture
def pushed_hub_copy(pg_server: PgServer, pushed_hub: str) -> str:
    """A copy of the module's `pushed_hub`, this test's own."""
    return pg_server.new_database(template=pushed_hub)


@pytest.mark.long(8)
@pytest.mark.parametrize("then", ["sync", "index"])
def test_a_pull_killed_after_its_commit_is_finished_by_the_next_writer(
    tmp_path: Path, pg_server: PgServer, pushed_hub_copy: str, then: str
) -> None:
    """kill -9 after a pull committed its records, before their costs, stats and signals: the next
    sync (with nothing new to pull) or index finishes them as a clean pull has them; meanwhile
    `signals` and `stats` say they are not computed yet, not that there are none."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.builders.derived import DERIVED, derived

    url = pg_server.url(pushed_hub_copy)  # a laptop's six sessions pushed to it
    env = home_env(tmp_path)
    box, clean = (str(tmp_path / f"{name}.db") for name in ("box", "clean"))

    stopped = tmp_path / "stopped"
    args = ["sync", url, "--db", box, "--machine", "box", "--pull-only", "-q"]
    proc = subprocess.Popen(
        [sys.executable, "-c", STOPS_AFTER_COMMIT, str(stopped), *args],
        env=dict(os.environ, **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not stopped.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with sqlite3.connect(box) as b:
        assert b.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == 6
        assert b.execute("SELECT count(*) FROM derived_pending").fetchone()[0] > 0

    for command in ("signals", "stats"):
        said = run(command, "--db", box, env_extra=env)
        assert said.returncode == 0, said.stderr
        assert "of 6 sessions are not computed yet" in said.stderr and "threadloom ingest" in said.stderr
        assert "nothing is ingested" not in said.stderr and "no sessions match" not in said.stderr

    if then == "sync":
        again = run(*args[:-1], "--json", env_extra=env)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["pulled_records"] == 0  # nothing new: only what was left is done
    else:
        again = run("index", "--db", box, env_extra=env)
        assert again.returncode == 0, again.stderr
        assert "finished what a stopped run left of 6 sessions" in again.stdout
    assert run("sync", url, "--db", clean, "--machine", "clean", "--pull-only", env_extra=env).returncode == 0
    after, expected = derived(Path(box)), derived(Path(clean))
    for name in DERIVED:
        assert after[name] == expected[name], name
    assert expected["signals"] and expected["file changes"] and expected["stats"]
    with sqlite3.connect(box) as b:
        assert b.execute("SELECT count(*) FROM derived_pending").fetchone()[0] == 0
    for command in ("signals", "stats"):
        said = run(command, "--db", box, env_extra=env)
        assert said.returncode == 0 and said.stdout and "not computed" not in said.stderr, said.stderr


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://ana:50%offSECRET@db.example.com/hub",
        "postgresql://ana@db.example.com/hub?password=Pa%zzSECRET",
        "postgresql://ana:Pa%zzSECRET@/hub?host=/nowhere&port=5999",
        "postgresql://ana:p@ssSECRET@db.example.com/hub",
        "postgresql://ana:p@ssSECRET@/hub?host=/nowhere&port=5999",
        "mysql://ana:S3cretSECRET@db.example.com/hub",
        "host=/nowhere password=SECRETxx user",
        "host=/nowhere password='a b SECRET' user",
    ],
)
def test_a_password_is_never_printed_back_however_the_url_is_wrong(tmp_path: Path, url: str) -> None:
    env = home_env(tmp_path)
    for extra in ([], ["--json"]):
        done = run("sync", url, "--pull-only", "--db", str(tmp_path / "a.db"), *extra, env_extra=env)
        assert done.returncode == 1
        assert "SECRET" not in done.stdout + done.stderr, done.stderr


def test_mask_password_masks_every_form() -> None:
    from threadloom.core.ingest.sync import mask_password

    assert mask_password('invalid percent-encoded token: "50%offSECRET"', "x://a:50%offSECRET@h/d") == (
        'invalid percent-encoded token: "***"'
    )
    assert "S3cr" not in mask_password("at postgresql://a:S3cr%21t@h/d", "")
    assert "S3cr" not in mask_password("failed: S3cr!t", "postgresql://a:S3cr%21t@h/d")  # decoded too
    assert mask_password("host=h password='x y z' user=a") == "host=h password=*** user=a"
    assert mask_password("nothing secret here", "") == "nothing secret here"


@pytest.mark.long(5)
def test_a_sync_says_what_memory_moved_and_the_conflicts_it_found(
    tmp_path: Path, pg_server: PgServer, hub_db: str
) -> None:
    url = pg_server.url(hub_db)
    env = home_env(tmp_path)
    assert run("sync", "--init", url, env_extra=env).returncode == 0
    laptop, box = str(tmp_path / "laptop.db"), str(tmp_path / "box.db")
    (tmp_path / "none").mkdir()
    for db_path in (laptop, box):
        ingest_into(db_path, tmp_path / "none")

    def sync(db_path: str, *extra: str) -> str:
        done = run("sync", url, "--db", db_path, "--share", "all", *extra, env_extra=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    added = run(
        "memory", "add", "--kind", "fact", "--title", "Port", "8080", "--json", "--db", laptop, env_extra=env
    )
    entry = json.loads(added.stdout)["id"]
    assert "memory: pushed 1 entry version" in sync(laptop, "--machine", "laptop")
    assert "memory: pulled 1 entry version" in sync(box, "--machine", "box")
    run("memory", "edit", entry, "9090 on the laptop", "--db", laptop, env_extra=env)
    run("memory", "edit", entry, "7070 on the box", "--db", box, env_extra=env)
    sync(laptop)
    said = sync(box)
    assert "memory: pushed 1 entry version; pulled 1 entry version" in said
    assert "1 memory conflict (" in said and "`threadloom memory list --conflicts` shows it" in said
    listed = run("memory", "list", "--conflicts", "--db", box, env_extra=env)
    assert entry in listed.stdout


def test_a_sync_given_a_password_says_it_is_not_kept_and_how_to_give_it(
    tmp_path: Path, pg_server: PgServer, hub_db: str
) -> None:
    env = home_env(tmp_path)
    assert run("sync", "--init", pg_server.url(hub_db), env_extra=env).returncode == 0
    archive = str(tmp_path / "a.db")
    (tmp_path / "none").mkdir()
    ingest_into(archive, tmp_path / "none")
    done = run(
        "sync", pg_server.url(hub_db, password=SECRET), "--share", "all", "--db", archive, env_extra=env
    )
    assert done.returncode == 0, done.stderr
    assert "the password is not kept" in done.stderr and f":{hub_db}:" in done.stderr
    assert "~/.pgpass" in done.stderr and "$PGPASSWORD" in done.stderr and SECRET not in done.stderr
    again = run("sync", "--db", archive, env_extra=env)  # no password given: nothing to say of it
    assert again.returncode == 0 and "password" not in again.stderr


@pytest.mark.parametrize(
    "error", ["fe_sendauth: no password supplied", 'password authentication failed for user "ana"']
)
def test_a_missing_or_wrong_password_says_how_to_give_it(monkeypatch, error: str) -> None:
    import psycopg
    from threadloom.core.ingest import sync

    def refused(*args, **kw):
        raise psycopg.OperationalError(f'connection to server at "db.example.com" failed: {error}')

    monkeypatch.setattr(psycopg, "connect", refused)
    with pytest.raises(sync.SyncError) as caught:
        sync.connect_hub(f"postgresql://ana:{SECRET}@db.example.com/hub")
    said = str(caught.value)
    assert error in said and "~/.pgpass, as the line db.example.com:*:hub:ana:PASSWORD" in said
    assert "$PGPASSWORD" in said and SECRET not in said
