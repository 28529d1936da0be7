"""A throwaway PostgreSQL server for the sync tests: a cluster made with `initdb` in a temporary
folder, started with `pg_ctl` on a unix socket in that folder (no port is shared with anything),
run as an unprivileged user (the `postgres` account when the tests run as root), one per test
worker, stopped at the end. Each test gets a database of its own. Skipped, saying why, when the
server's programs are not installed (Debian's `postgresql` package; `.ci/run` installs it)."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _bin_dir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


@dataclass
class PgServer:
    socket_dir: Path
    port: int
    superuser: str

    def url(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        auth = f"{user or self.superuser}" + (f":{password}" if password else "")
        return f"postgresql://{auth}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def sql(self, dbname: str, statement: str, user: str | None = None) -> None:
        import psycopg

        with psycopg.connect(self.url(dbname, user), autocommit=True) as c:
            c.execute(statement)

    def new_database(self, template: str | None = None) -> str:
        """A new database: empty, or a copy of the database `template` (PostgreSQL copies its
        files: a hub a module filled once, each test's own to write to)."""
        name = f"hub_{uuid.uuid4().hex[:10]}"
        if template is None:
            self.sql("postgres", f'CREATE DATABASE "{name}"')
            return name
        import psycopg

        deadline = time.monotonic() + 10
        while True:  # the template's last client may have gone before its server process has
            try:
                self.sql("postgres", f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                return name
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)


def _as_user(uid: int, gid: int):  # noqa: ANN202 - a preexec function
    def drop() -> None:
        os.setgid(gid)
        os.setuid(uid)

    return drop


class NoServer(Exception):
    """Why no test server can be started here."""


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        with throwaway_server() as server:
            yield server
    except NoServer as exc:
        pytest.skip(str(exc))


@contextlib.contextmanager
def throwaway_server() -> Iterator[PgServer]:
    """A PostgreSQL server of its own, stopped and removed on leaving (also used by the bench)."""
    bindir = _bin_dir()
    if bindir is None or not (bindir / "initdb").exists():
        raise NoServer(
            "PostgreSQL's server programs (initdb, pg_ctl) are not installed: apt-get install postgresql"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise NoServer("psycopg is not installed") from None
    preexec = None
    owner = pwd.getpwuid(os.getuid())
    if os.getuid() == 0:  # PostgreSQL refuses to run as root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise NoServer("running as root, and no `postgres` account to run the test server as") from None
        preexec = _as_user(owner.pw_uid, owner.pw_gid)
    folder = Path(tempfile.mkdtemp(prefix="tlpg-"))
    os.chmod(folder, 0o755)
    data = folder / "data"
    sock = folder / "s"
    data.mkdir()
    sock.mkdir()
    for p in (folder, data, sock):
        os.chown(p, owner.pw_uid, owner.pw_gid)
    os.chmod(data, 0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C.UTF-8" if os.path.exists("/usr/lib/locale/C.utf8") else "C"
    subprocess.run(
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            owner.pw_name,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        preexec_fn=preexec,
        env=env,
        cwd=folder,
    )
    port = 20000 + os.getpid() % 20000  # names the socket file only: nothing listens on TCP
    options = f"-c listen_addresses='' -c unix_socket_directories={sock} -p {port} -c fsync=off -c max_connections=60 -c shared_buffers=16MB"
    subprocess.run(
        [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-s", "start"],
        check=True,
        capture_output=True,
        preexec_fn=preexec,
        env=env,
        cwd=folder,
    )
    server = PgServer(sock, port, owner.pw_name)
    try:
        import psycopg

        deadline = time.monotonic() + 60
        while True:  # ready when it takes a connection (polled, no fixed sleep)
            try:
                psycopg.connect(server.url("postgres"), connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield server
    finally:
        subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-s", "stop"],
            capture_output=True,
            preexec_fn=preexec,
            env=env,
            cwd=folder,
        )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def hub_db(pg_server: PgServer) -> str:
    """A new database on the test server, for one test's hub."""
    return pg_server.new_database()
