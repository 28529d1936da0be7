"""One archive across machines: `threadloom sync` through a PostgreSQL hub.

The local SQLite archive stays the working copy. The hub is an append-only PostgreSQL database of
every machine's raw records: what a machine pushes is what its own ingests stored (the exact bytes
of each record), never what was derived from them; what it pulls is placed in this archive as the
records of a source file of that machine (a mirror, named under MIRROR_ROOT), so that sessions,
turns, stats and signals are computed from them by the same code as for local files.

The hub holds, per schema `threadloom` (see HUB_DDL):

- `machines`: each machine's name and the database role (the person) that owns it; which archive
  syncs under the name is a `shared_rows` row (CLAIM_TBL) of the machine: two archives under one
  name would hide and mix each other's sessions, so a sync from another archive is refused;
- `sources`: a machine's source file (its path there, agent, kind, project);
- `records`: a record's bytes, stored once per source and content hash (a file rewritten whole, a
  JSON chat saved again after each message, sends only the records the hub lacks);
- `layouts`: where the records sit in a source: a generation of the file (a new one each time it
  was rewritten on its machine rather than appended to) and, from an offset, its records in order.
  An append is a layout row of the same generation from the old end. Each row takes a sequence
  number in commit order (pushes take a transaction-scoped advisory lock around the insert), so a
  pull asks for the rows past the last one it saw and never misses one committed late;
- `shared_rows`: user data pushed row by row: SHARED_TABLES, and memory (core.ingest.memory_sync: entries'
  versions, marks, relations), each filed under its project for the per-project grants.

Nothing on the hub is updated or deleted. Members insert only as their own machines and read what
they are granted (row-level security); a reader reads only. Passwords are never stored or printed:
the URL kept in the archive has its password taken out (libpq finds it in ~/.pgpass, $PGPASSWORD
or a service file).
"""

from __future__ import annotations

import base64
import fnmatch
import gc
import hashlib
import os
import re
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..store import db
from ..store.db import ARCHIVE_KEY, MACHINE_KEY, MIRROR_ROOT, WHO_KEY
from ..store.sql import get_meta, page_cache, set_meta, transaction

if TYPE_CHECKING:
    import psycopg

HUB_SCHEMA = "threadloom"
HUB_VERSION = 2  # 2: shared_rows.project (memory read per project)
MACHINE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
HASH_RE = re.compile(r"[0-9a-f]{32}")
# the source kinds a machine pushes (a superseded version is carried by the hub's generations)
PUSHED_KINDS = ("transcript", "subagent", "meta", "journal", "document", "decoded", "side")
# Pushes serialise their layout inserts on this advisory lock (transaction-scoped): a layout's
# sequence number is taken under it, so rows become visible in sequence order.
LAYOUT_LOCK = 0x544C4F4D
PULL_BATCH = 2000
FETCH_BATCH = 500  # records whose bytes one query fetches
BULK_RECORDS = 20_000  # a pull of this many records builds the search index once, after it
RAW_BATCH_BYTES = 8 << 20

# User data that travels with sync as rows: table -> its columns. Each row is pushed once (keyed on the
# hub by machine, table and the hash of its values) and pulled into the same table here with INSERT OR
# IGNORE: merged, never replacing a row. Adding a table to what is pushed and pulled is one line here.
# Memory travels beside these, item by item, by scope and with its conflicts (core.ingest.memory_sync).
# Hidden sessions stay this machine's own: they are not listed.
SHARED_TABLES: dict[str, tuple[str, ...]] = {}
ROWS_CURSOR_KEY = "sync:rows:"  # + the hub's id: the last shared_rows sequence number pulled
# shared_rows of this kind say which archive (its ARCHIVE_KEY) syncs as their machine: the latest one.
# Never pulled (no table here takes it); rows, not a column of `machines`, as members only insert.
CLAIM_TBL = "machine.archive"

# meta keys in the local archive
URL_KEY = "sync:url"
SHARE_KEY = "sync:share"
LAST_KEY = "sync:last"  # when this archive last synced (unix ms)
CURSOR_KEY = "sync:cursor:"
LATER_KEY = "sync:later:"  # + the hub's id: sources of agents not read yet, {hub source id: agent}
TAKEN_KEY = (
    "sync:taken:"  # + the hub's id: a machine name taken over, whose earlier rows the next pull takes too
)
READABLE_KEY = "sync:readable:"  # + the hub's id: what the role could read at the last pull  # + the hub's id: the last layout sequence number pulled

# this archive's sync state: what it pushed, what it pulled (core.store.db creates the tables)
LOCAL_DDL = db.SYNC_DDL


class SyncError(RuntimeError):
    """A sync that cannot go on; the message says why and what to do (never a password)."""


class UnknownAgent(Exception):
    """A source of an agent this threadloom does not read (a newer one pushed it): kept for later."""

    def __init__(self, source_id: int, agent: str) -> None:
        super().__init__(f"an agent this threadloom does not read: {agent!r} (read once it does)")
        self.source_id, self.agent = source_id, agent


class HubValueError(ValueError):
    """A value read from the hub that this archive refuses (a path outside its place, a hash that
    is not its bytes'): the row is skipped and said, never used."""


# ---------------------------------------------------------------------------------------- the hub


def _ident(name: str) -> str:
    """A role name as SQL (the hub's own names only: letters, digits, underscores)."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise SyncError(f"not a usable role name: {name!r}")
    return f'"{name}"'


def role_names(dbname: str) -> tuple[str, str]:
    """The group roles of the hub in database `dbname`: its members and its readers. Named after
    the database, so that two hubs on one server keep their own."""
    base = re.sub(r"[^a-z0-9_]", "_", dbname.lower())[:40] or "hub"
    return f"threadloom_{base}_member", f"threadloom_{base}_reader"


HUB_DDL = """
CREATE SCHEMA IF NOT EXISTS threadloom;
CREATE TABLE IF NOT EXISTS threadloom.meta (key text PRIMARY KEY, value text);
CREATE TABLE IF NOT EXISTS threadloom.machines (
    name text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    owner name NOT NULL DEFAULT session_user,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS threadloom.sources (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    machine text NOT NULL REFERENCES threadloom.machines(name),
    path bytea NOT NULL,
    agent text NOT NULL,
    kind text NOT NULL,
    project_key text,
    project text,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (machine, path)
);
CREATE TABLE IF NOT EXISTS threadloom.records (
    source_id bigint NOT NULL REFERENCES threadloom.sources(id),
    hash text NOT NULL,
    machine text NOT NULL REFERENCES threadloom.machines(name),
    raw bytea NOT NULL,
    redacted boolean NOT NULL DEFAULT false,
    PRIMARY KEY (source_id, hash)
);
CREATE TABLE IF NOT EXISTS threadloom.layouts (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id bigint NOT NULL REFERENCES threadloom.sources(id),
    machine text NOT NULL REFERENCES threadloom.machines(name),
    generation integer NOT NULL,
    from_offset bigint NOT NULL,
    end_offset bigint NOT NULL,
    items bytea NOT NULL,
    record_count integer NOT NULL,
    redacted boolean NOT NULL DEFAULT false,
    pushed_by name NOT NULL DEFAULT session_user,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, generation, from_offset)
);
CREATE INDEX IF NOT EXISTS layouts_machine_seq ON threadloom.layouts (machine, seq);
CREATE TABLE IF NOT EXISTS threadloom.shared_rows (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    machine text NOT NULL REFERENCES threadloom.machines(name),
    tbl text NOT NULL,
    row_hash text NOT NULL,
    row jsonb NOT NULL,
    UNIQUE (machine, tbl, row_hash)
);
ALTER TABLE threadloom.shared_rows ADD COLUMN IF NOT EXISTS project text;
CREATE TABLE IF NOT EXISTS threadloom.grants (
    role name NOT NULL,
    project text NOT NULL DEFAULT '*',
    PRIMARY KEY (role, project)
);
"""

# Row-level security: {member} and {reader} are the group roles. A row is read by its machine's
# owner and by a role granted its project ('*': every project); written only as one's own machine.
RLS_DDL = """
ALTER TABLE threadloom.machines ENABLE ROW LEVEL SECURITY;
ALTER TABLE threadloom.sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE threadloom.records ENABLE ROW LEVEL SECURITY;
ALTER TABLE threadloom.layouts ENABLE ROW LEVEL SECURITY;
ALTER TABLE threadloom.shared_rows ENABLE ROW LEVEL SECURITY;
ALTER TABLE threadloom.grants ENABLE ROW LEVEL SECURITY;
CREATE OR REPLACE FUNCTION threadloom.owns(m text) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog AS
    $$ SELECT EXISTS (SELECT 1 FROM threadloom.machines WHERE name = m AND owner = session_user) $$;
CREATE OR REPLACE FUNCTION threadloom.may_read(m text, p text) RETURNS boolean LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog AS
    $$ SELECT threadloom.owns(m) OR EXISTS (SELECT 1 FROM threadloom.grants g WHERE g.role = session_user
       AND (g.project = '*' OR g.project = p)) $$;
CREATE OR REPLACE FUNCTION threadloom.may_read_source(s bigint) RETURNS boolean LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog AS
    $$ SELECT EXISTS (SELECT 1 FROM threadloom.sources x WHERE x.id = s
       AND threadloom.may_read(x.machine, x.project)) $$;
-- whether source s is machine m's (a name inside a policy's subquery would be the subquery's own column)
CREATE OR REPLACE FUNCTION threadloom.source_of(s bigint, m text) RETURNS boolean LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog AS
    $$ SELECT EXISTS (SELECT 1 FROM threadloom.sources x WHERE x.id = s AND x.machine = m) $$;
DROP POLICY IF EXISTS machines_read ON threadloom.machines;
CREATE POLICY machines_read ON threadloom.machines FOR SELECT USING (true);
DROP POLICY IF EXISTS machines_add ON threadloom.machines;
CREATE POLICY machines_add ON threadloom.machines FOR INSERT TO {member} WITH CHECK (owner = session_user);
DROP POLICY IF EXISTS sources_read ON threadloom.sources;
CREATE POLICY sources_read ON threadloom.sources FOR SELECT USING (threadloom.may_read(machine, project));
DROP POLICY IF EXISTS sources_add ON threadloom.sources;
CREATE POLICY sources_add ON threadloom.sources FOR INSERT TO {member} WITH CHECK (threadloom.owns(machine));
DROP POLICY IF EXISTS records_read ON threadloom.records;
CREATE POLICY records_read ON threadloom.records FOR SELECT USING (threadloom.may_read_source(source_id));
DROP POLICY IF EXISTS records_add ON threadloom.records;
CREATE POLICY records_add ON threadloom.records FOR INSERT TO {member} WITH CHECK (threadloom.owns(machine)
    AND threadloom.source_of(source_id, machine));
DROP POLICY IF EXISTS layouts_read ON threadloom.layouts;
CREATE POLICY layouts_read ON threadloom.layouts FOR SELECT USING (threadloom.may_read_source(source_id));
DROP POLICY IF EXISTS layouts_add ON threadloom.layouts;
CREATE POLICY layouts_add ON threadloom.layouts FOR INSERT TO {member} WITH CHECK (threadloom.owns(machine)
    AND pushed_by = session_user AND threadloom.source_of(source_id, machine));
DROP POLICY IF EXISTS shared_read ON threadloom.shared_rows;
CREATE POLICY shared_read ON threadloom.shared_rows FOR SELECT USING (threadloom.may_read(machine, project));
DROP POLICY IF EXISTS shared_add ON threadloom.shared_rows;
CREATE POLICY shared_add ON threadloom.shared_rows FOR INSERT TO {member} WITH CHECK (threadloom.owns(machine));
DROP POLICY IF EXISTS grants_read ON threadloom.grants;
CREATE POLICY grants_read ON threadloom.grants FOR SELECT USING (role = session_user);
REVOKE ALL ON ALL TABLES IN SCHEMA threadloom FROM PUBLIC;
GRANT USAGE ON SCHEMA threadloom TO {member}, {reader};
GRANT SELECT ON ALL TABLES IN SCHEMA threadloom TO {member}, {reader};
GRANT INSERT ON threadloom.machines, threadloom.sources, threadloom.records, threadloom.layouts,
    threadloom.shared_rows TO {member};
GRANT EXECUTE ON FUNCTION threadloom.owns(text), threadloom.may_read(text, text),
    threadloom.may_read_source(bigint), threadloom.source_of(bigint, text) TO {member}, {reader};
"""


def safe_url(url: str) -> str:
    """`url` with any password taken out: what is stored and printed (libpq finds the password in
    ~/.pgpass, $PGPASSWORD or a service file). A service name (`service=team`) is kept as it is."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    if "://" in url and re.split(r"[/?]", url.split("://", 1)[1], maxsplit=1)[0].count("@") > 1:
        # libpq would take what follows the first '@' for the host, and say it
        raise SyncError(
            "the URL's password holds an '@': write it as %40, or leave the password out of the URL and "
            "give it in ~/.pgpass or $PGPASSWORD"
        )
    try:
        params = conninfo_to_dict(url)
    except Exception as exc:  # psycopg.ProgrammingError: not a libpq URL or key=value string
        hint = (
            " (a '%' in a password is written %25 in a URL, or the password is given in ~/.pgpass or $PGPASSWORD)"
            if "percent" in str(exc)
            else ""
        )
        raise SyncError(
            f"not a PostgreSQL URL or service: {mask_password(str(exc), url).strip()}{hint}"
        ) from None
    if "password" not in params:
        return url
    params.pop("password")
    return _url_of(params) if "://" in url else make_conninfo(**{k: str(v) for k, v in params.items()})


def _url_of(params: dict[str, Any]) -> str:
    from urllib.parse import quote, urlencode

    host = str(params.pop("host", ""))
    port = params.pop("port", None)
    user = params.pop("user", None)
    dbname = params.pop("dbname", None)
    auth = f"{quote(str(user), safe='')}@" if user else ""
    where = quote(host, safe="") if host.startswith("/") else host
    netloc = f"{auth}{where}{':' + str(port) if port else ''}"
    query = urlencode({k: str(v) for k, v in params.items()})
    return f"postgresql://{netloc}/{quote(str(dbname or ''), safe='')}" + (f"?{query}" if query else "")


def mask_password(text: str, url: str = "") -> str:
    """`text` (a message, a driver's error) with the password of `url` and anything that looks like a
    password masked: what every message showing a URL or a driver's error goes through."""
    for secret in _passwords_in(url):
        text = text.replace(secret, "***")
    text = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'\"]+)", r"\1***", text, flags=re.I)
    return re.sub(r"(://[^:/@\s]*:)(\S*)@", r"\1***@", text)


def _passwords_in(url: str) -> list[str]:
    """The password of `url` as written, and decoded, longest first (however malformed the URL: a raw
    '%' or '@' in it is what libpq's errors quote back)."""
    from urllib.parse import unquote

    found = [v.strip("'") for v in re.findall(r"password\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&]+)", url, flags=re.I)]
    if "://" in url:
        userinfo = re.split(r"[/?]", url.split("://", 1)[1], maxsplit=1)[0].rpartition("@")[0]
        if ":" in userinfo:
            found.append(userinfo.partition(":")[2])
    forms = {form for value in found for form in (value, unquote(value)) if len(form) >= 3}
    return sorted(forms, key=len, reverse=True)


def connect_hub(url: str, *, timeout: int = 15) -> psycopg.Connection[Any]:
    """A connection to the hub; a failure is said without the URL's password."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - a dependency
        raise SyncError("sync needs psycopg 3: pip install 'psycopg[binary]'") from exc
    try:
        return psycopg.connect(url, connect_timeout=timeout, application_name="threadloom sync")
    except psycopg.Error as exc:
        said = mask_password(str(exc), url).strip()
        if "password authentication failed" in said:
            said += (
                ". The password libpq found (in the URL, ~/.pgpass, $PGPASSWORD or a service file) is not "
                f"the role's: {password_help(url)}"
            )
        elif "no password supplied" in said:
            said += f": the password is not kept in the archive; {password_help(url)}"
        raise SyncError(f"cannot reach the hub {safe_url(url)}: {said}") from None


def password_help(url: str) -> str:
    """How to give the hub's password to libpq, which the archive never keeps: the ~/.pgpass line
    for `url` (the password left for the person to write), $PGPASSWORD or a service file."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except Exception:  # psycopg.ProgrammingError: said where the URL is read
        params = {}

    def field(key: str, default: str) -> str:  # ':' and '\' are escaped in a .pgpass field
        return str(params.get(key) or default).replace("\\", "\\\\").replace(":", "\\:")

    line = ":".join(
        field(k, d) for k, d in (("host", "localhost"), ("port", "*"), ("dbname", "*"), ("user", "*"))
    )
    return (
        f"give it in ~/.pgpass, as the line {line}:PASSWORD (the file readable by you alone: "
        "chmod 600 ~/.pgpass), in $PGPASSWORD, or in a service file (threadloom sync service=NAME)"
    )


def hub_version(hub: psycopg.Connection[Any]) -> int | None:
    row = hub.execute("SELECT to_regclass('threadloom.meta') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return None
    found = hub.execute("SELECT value FROM threadloom.meta WHERE key = 'schema_version'").fetchone()
    return int(found[0]) if found and str(found[0]).isdigit() else None


def hub_id(hub: psycopg.Connection[Any]) -> str:
    row = hub.execute("SELECT value FROM threadloom.meta WHERE key = 'hub_id'").fetchone()
    if not row or not re.fullmatch(r"[0-9a-f-]{36}", str(row[0])):
        raise SyncError("the hub has no id: run `threadloom sync --init URL` on it first")
    return str(row[0])


@dataclass
class InitReport:
    hub: str
    version: int
    created: bool
    member_role: str | None
    reader_role: str | None
    note: str = ""


def init_hub(url: str) -> InitReport:
    """Create (or upgrade) the hub's schema and its group roles; run by the database's owner.
    Doing it again changes nothing."""
    import psycopg

    with connect_hub(url) as hub:
        before = hub_version(hub)
        if before is not None and before > HUB_VERSION:
            raise SyncError(
                f"the hub's schema is version {before}, newer than this threadloom's ({HUB_VERSION}): upgrade threadloom"
            )
        hub.execute(HUB_DDL)
        hub.execute(
            "INSERT INTO threadloom.meta (key, value) VALUES ('hub_id', %s) ON CONFLICT (key) DO NOTHING",
            (str(uuid.uuid4()),),
        )
        hub.execute(
            "INSERT INTO threadloom.meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(HUB_VERSION),),
        )
        hub.commit()
        dbname = str(hub.info.dbname)
        member, reader = role_names(dbname)
        note = ""
        try:
            for role in (member, reader):
                exists = hub.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
                if not exists:
                    hub.execute(f"CREATE ROLE {_ident(role)} NOLOGIN")
            hub.execute(RLS_DDL.format(member=_ident(member), reader=_ident(reader)))
            hub.commit()
        except psycopg.errors.InsufficientPrivilege:
            hub.rollback()
            note = (
                "the roles could not be created (the hub's owner needs CREATEROLE): only the owner can "
                "sync until an administrator runs `threadloom sync --init` again"
            )
            member = reader = ""
        return InitReport(safe_url(url), HUB_VERSION, before is None, member or None, reader or None, note)


def grant(url: str, role: str, *, reader: bool = False, projects: Iterable[str] = ("*",)) -> list[str]:
    """Make an existing login role a member of the hub (or a reader), reading the projects given
    ('*': all). Run by the hub's owner. Returns what was granted."""
    with connect_hub(url) as hub:
        if hub_version(hub) is None:
            raise SyncError("the hub has no schema yet: run `threadloom sync --init URL` first")
        member_role, reader_role = role_names(str(hub.info.dbname))
        if not hub.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            raise SyncError(f"no role {role!r} on the hub's server: create it first (CREATE ROLE … LOGIN)")
        from psycopg import sql

        group = reader_role if reader else member_role
        hub.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(role)))
        done = [f"{role}: {'reader' if reader else 'member'}"]
        for project in projects:
            hub.execute(
                "INSERT INTO threadloom.grants (role, project) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (role, project),
            )
            done.append(f"{role} reads {'every project' if project == '*' else project}")
        hub.commit()
        return done


def forget(url: str, machine: str) -> dict[str, int]:
    """Delete from the hub the records `machine` pushed (its sources, their layouts and records; its
    memory, which `--redact` does not mask, stays), as the hub's owner: members never delete. What it is for: records
    pushed before `--redact` was turned on (or from a project excluded since) stay on the append-only
    hub as they were; forgotten, they are pushed again by the machine's next sync, under its rules
    then. Archives that pulled them already keep their copies: nothing reaches into another machine.
    Returns the rows deleted, by table."""
    check_machine(machine)
    with connect_hub(url) as hub:
        if hub_version(hub) is None:
            raise SyncError("the hub has no schema yet: nothing to forget")
        owner = hub.execute(
            "SELECT tableowner = session_user FROM pg_tables WHERE schemaname = 'threadloom' AND tablename = 'records'"
        ).fetchone()
        if not owner or not owner[0]:
            raise SyncError("only the hub's owner can forget a machine (members never delete)")
        done: dict[str, int] = {}
        sources = "(SELECT id FROM threadloom.sources WHERE machine = %s)"
        for table, where in (
            ("records", f"source_id IN {sources}"),
            ("layouts", f"source_id IN {sources}"),
            ("sources", "machine = %s"),
        ):
            done[table] = hub.execute(f"DELETE FROM threadloom.{table} WHERE {where}", (machine,)).rowcount
        hub.commit()
        return done


# ------------------------------------------------------------------------------- local sync state


def ensure_local(conn: sqlite3.Connection) -> None:
    for ddl in LOCAL_DDL:
        conn.execute(ddl)


def default_machine() -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname().split(".")[0]).strip("-._") or "machine"
    return name[:63]


def check_machine(name: str) -> str:
    if not MACHINE_RE.fullmatch(name):
        raise SyncError(
            f"not a usable machine name: {name!r} (letters, digits, '.', '_' and '-', at most 63, "
            "starting with a letter or digit)"
        )
    return name


@dataclass
class Sharing:
    """What this machine shares: rules `all`, `agent:NAME`, `project:PATTERN` (a project's path,
    name or folder key; shell wildcards); a source is pushed when a share rule takes it and no
    exclude rule does. Remembered in the archive."""

    share: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    redact: bool = False

    @property
    def takes_everything(self) -> bool:
        """Whether everything is shared (`all`, nothing excluded): what a global memory entry needs."""
        return "all" in self.share and not self.exclude

    def takes(self, agent: str, projects: set[str]) -> bool:
        return any(_matches(r, agent, projects) for r in self.share) and not any(
            _matches(r, agent, projects) for r in self.exclude
        )


def _matches(rule: str, agent: str, projects: set[str]) -> bool:
    if rule == "all":
        return True
    kind, _, value = rule.partition(":")
    if kind == "agent" and not any(c in value for c in "*?["):  # a rule kept before names were
        from ..adapters import agent_named  # checked (agent:gemini-cli, agent:Claude-Code) is the agent

        return agent == (agent_named(value) or value)
    if kind == "agent":
        return fnmatch.fnmatchcase(agent, value)
    if kind == "project":
        return any(
            fnmatch.fnmatchcase(p, value) or p.startswith(value.rstrip("/") + "/") for p in projects if p
        )
    return False


def check_rule(rule: str) -> str:
    """`rule` as it is kept: an agent named as the archive names it (agent:gemini-cli is agent:gemini;
    one of no such name refused, with the names there are), a pattern of names as given."""
    kind, sep, value = rule.partition(":")
    if kind == "agent" and value and not any(c in value for c in "*?["):
        from ..adapters import UnknownAgent, archive_agent

        try:
            return f"agent:{archive_agent(value)}"
        except UnknownAgent as exc:
            raise SyncError(f"not a sharing rule: {rule!r}: {exc}") from None
    if rule == "all" or (sep and kind in ("agent", "project") and value):
        return rule
    raise SyncError(f"not a sharing rule: {rule!r} (all, agent:NAME or project:PATH)")


def load_sharing(conn: sqlite3.Connection) -> Sharing | None:
    stored = get_meta(conn, SHARE_KEY)
    if not stored:
        return None
    try:
        data = orjson.loads(stored)
        return Sharing(list(data.get("share", [])), list(data.get("exclude", [])), bool(data.get("redact")))
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return None


def save_sharing(conn: sqlite3.Connection, sharing: Sharing) -> None:
    set_meta(conn, SHARE_KEY, orjson.dumps(asdict(sharing)).decode())


def apply_rules(
    sharing: Sharing | None,
    share: Iterable[str] = (),
    exclude: Iterable[str] = (),
    redact: bool | None = None,
) -> Sharing | None:
    """What is shared once `share` and `exclude` rules are added to what was (a rule moves from one
    list to the other), and `redact` set when given; None while nothing is shared yet."""
    share, exclude = [check_rule(r) for r in share], [check_rule(r) for r in exclude]
    if sharing is None and not share:
        return None
    sharing = sharing or Sharing()
    for rule in share:
        sharing.exclude = [r for r in sharing.exclude if r != rule]
        if rule not in sharing.share:
            sharing.share.append(rule)
    for rule in exclude:
        sharing.share = [r for r in sharing.share if r != rule]
        if rule not in sharing.exclude:
            sharing.exclude.append(rule)
    if redact is not None:
        sharing.redact = redact
    return sharing


def configured(conn: sqlite3.Connection) -> tuple[str | None, Sharing | None]:
    """The hub this archive syncs with (no password) and what it shares: (None, None) before the first
    sync, which must say what is shared (the TUI asks; the CLI wants --share)."""
    return get_meta(conn, URL_KEY), load_sharing(conn)


def remember(
    conn: sqlite3.Connection, url: str, sharing: Sharing | None, *, sharing_changed: bool, done: bool = True
) -> None:
    """The hub's URL (its password taken out) and what is shared when it changed, once the hub is
    reached (so that a sync stopped half way is carried on by the next one, given no URL); and,
    after a sync (`done`), when."""
    with transaction(conn, immediate=True):
        set_meta(conn, URL_KEY, safe_url(url))
        if sharing is not None and sharing_changed:
            save_sharing(conn, sharing)
        if done:
            set_meta(conn, LAST_KEY, str(int(time.time() * 1000)))


@dataclass(frozen=True)
class ProjectChoice:
    """One of this machine's projects, as the first sync's question lists it."""

    path: str
    sessions: int
    agents: str

    @property
    def rule(self) -> str:
        return f"project:{self.path}"


def project_choices(conn: sqlite3.Connection) -> list[ProjectChoice]:
    """This machine's own projects (not those pulled from others), most sessions first: what a
    person chooses among before anything leaves the machine. Sessions are counted as the project
    list counts them (those with a message); a project of none is listed all the same, its files
    going with its rule."""
    pulled = (
        "AND s.source_file_id NOT IN (SELECT source_file_id FROM sync_pulled)"
        if _has_local_tables(conn)
        else ""
    )
    return [
        ProjectChoice(str(path), int(n), str(agents or ""))
        for path, n, agents in conn.execute(
            "SELECT COALESCE(s.project_path, s.project) AS p, sum(s.message_count > 0), group_concat(DISTINCT s.source) "
            f"FROM agent_sessions s WHERE s.is_subagent = 0 AND p IS NOT NULL {pulled} GROUP BY p ORDER BY 2 DESC, p"
        )
    ]


# ------------------------------------------------------------------------------------- the sync


@dataclass
class SyncReport:
    hub: str = ""
    machine: str = ""
    dry_run: bool = False
    pushed_sources: int = 0
    pushed_records: int = 0
    pushed_bytes: int = 0
    redacted_records: int = 0
    not_shared: int = 0
    pulled_sources: int = 0
    pulled_records: int = 0
    pulled_bytes: int = 0
    pushed_rows: int = 0  # user data (SHARED_TABLES) and memory items
    pulled_rows: int = 0
    memory_conflicts: int = 0  # versions pulled that were written beside one here: flagged
    memory_pushed: dict[str, int] = field(default_factory=dict)  # memory items by what they are (a tag …)
    memory_pulled: dict[str, int] = field(default_factory=dict)
    sessions: int = 0  # sessions the pulled records changed here, and those a stopped writer left unfinished
    refused: list[str] = field(default_factory=list)  # hub rows not taken, and why
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SyncProgress:
    phase: str  # "push" | "pull"
    done: int
    total: int
    what: str = ""


@dataclass
class _Item:
    offset: int
    line: int
    newline: bool
    hash: str

    def as_list(self) -> list[Any]:
        return [self.offset, self.line, int(self.newline), self.hash]


def _digest(items: Iterable[_Item], h: Any = None) -> Any:
    h = h or hashlib.sha256()
    for it in items:
        h.update(f"{it.offset},{it.line},{int(it.newline)},{it.hash};".encode())
    return h


def sync(
    conn: sqlite3.Connection,
    url: str,
    *,
    push: bool = True,
    pull: bool = True,
    dry_run: bool = False,
    machine: str | None = None,
    sharing: Sharing | None = None,
    progress: Callable[[SyncProgress], None] | None = None,
    reached: Callable[[], None] | None = None,
    take_over: bool = False,
) -> SyncReport:
    """Push what this machine has that the hub lacks, then pull what other machines pushed since
    the last pull. The caller holds the archive's writer lock. Safe to interrupt anywhere: each
    source is pushed (or placed) in one transaction, and what was done is never done twice.
    `reached` is called once the hub is known to be one, before anything moves (a caller
    remembers it there). `take_over`: this archive takes the machine name from the archive that
    synced under it (a new laptop in an old one's place)."""
    import psycopg

    started = time.perf_counter()
    report = SyncReport(hub=safe_url(url), dry_run=dry_run)
    machine = check_machine(machine or get_meta(conn, MACHINE_KEY) or default_machine())
    report.machine = machine
    if not dry_run:  # what a writer killed after committing its records left (a pull, an ingest), done first
        from .ledger import finish_derived

        report.sessions += len(finish_derived(conn))
    try:
        _sync(conn, url, push, pull, dry_run, machine, sharing, progress, report, reached, take_over)
    except psycopg.Error as exc:  # the connection lost, the server stopped, a privilege missing
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise SyncError(
            f"the hub {report.hub} failed: {mask_password(str(exc), url).strip()}. What was synced is kept; the next "
            "sync goes on from there"
        ) from None
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _sync(
    conn: sqlite3.Connection,
    url: str,
    push: bool,
    pull: bool,
    dry_run: bool,
    machine: str,
    sharing: Sharing | None,
    progress: Callable[[SyncProgress], None] | None,
    report: SyncReport,
    reached: Callable[[], None] | None = None,
    take_over: bool = False,
) -> None:
    with connect_hub(url) as hub:
        version = hub_version(hub)
        if version is None:
            raise SyncError(
                f"the hub {report.hub} has no threadloom schema: run `threadloom sync --init URL` once"
            )
        if version > HUB_VERSION:
            raise SyncError(
                f"the hub's schema is version {version}, newer than this threadloom's: upgrade threadloom"
            )
        hid = hub_id(hub)
        hub.commit()
        if push:
            if sharing is None:
                raise SyncError("nothing is shared yet: pass --share (all, agent:NAME or project:PATH)")
            if version < HUB_VERSION:
                raise SyncError(
                    f"the hub's schema is version {version}, older than this threadloom's ({HUB_VERSION}): "
                    "its owner runs `threadloom sync --init URL` once to upgrade it (pulls work meanwhile)"
                )
            _register(hub, machine, dry_run)
        elif take_over:
            raise SyncError("--take-over takes a machine name to push under: not with --pull-only")
        # before anything is written here or there
        _claim(conn, hub, hid, machine, push=push and not dry_run, take_over=take_over)
        if reached is not None and not dry_run:
            reached()
        if not dry_run:
            with transaction(conn, immediate=True):
                ensure_local(conn)
                set_meta(conn, MACHINE_KEY, machine)
                me = hub.execute("SELECT session_user").fetchone()
                set_meta(conn, WHO_KEY, str(me[0]) if me else None)
                hub.commit()
        elif not _has_local_tables(conn):
            with transaction(conn, immediate=True):
                ensure_local(conn)
        if push:
            assert sharing is not None
            _push(conn, hub, hid, machine, sharing, report, dry_run, progress)
            _push_rows(conn, hub, hid, machine, report, dry_run)
            _push_memory(conn, hub, hid, machine, sharing, report, dry_run)
        if pull:
            # this archive's own rows are not pulled back; a name just taken over: the other archive's are
            own = "" if get_meta(conn, TAKEN_KEY + hid) == machine else machine
            _pull(conn, hub, hid, own, report, dry_run, progress)
            _pull_rows(conn, hub, hid, own, report, dry_run)
            if own != machine and not dry_run:
                with transaction(conn, immediate=True):
                    set_meta(conn, TAKEN_KEY + hid, None)
    if not dry_run:
        from ..insight import refresh

        if refresh.left_behind(conn):  # a bulk pull's (or a killed one's): its index, then its episodes
            refresh.catch_up(conn)


def _has_local_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sync_pulled'").fetchone() is not None


def _register(hub: psycopg.Connection[Any], machine: str, dry_run: bool) -> None:
    """This machine on the hub, owned by the role syncing (refused when another role owns the name)."""
    import psycopg

    row = hub.execute("SELECT owner FROM threadloom.machines WHERE name = %s", (machine,)).fetchone()
    me = hub.execute("SELECT session_user").fetchone()
    who = str(me[0]) if me else ""
    if row is None:
        if dry_run:
            return
        try:
            hub.execute(
                "INSERT INTO threadloom.machines (name) VALUES (%s) ON CONFLICT DO NOTHING", (machine,)
            )
            hub.commit()
        except psycopg.errors.InsufficientPrivilege:
            hub.rollback()
            raise SyncError(
                f"the role {who} may not add machines to this hub (a reader?): sync with --pull-only"
            ) from None
        row = hub.execute("SELECT owner FROM threadloom.machines WHERE name = %s", (machine,)).fetchone()
    if row is not None and str(row[0]) != who:
        raise SyncError(
            f"the machine name {machine!r} belongs to {row[0]} on this hub, not to {who}: "
            "pass --machine another name"
        )
    hub.commit()


def archive_id(conn: sqlite3.Connection) -> str:
    """This archive's own id, made (and kept in ledger_meta) the first time it is asked for."""
    found = get_meta(conn, ARCHIVE_KEY)
    if found:
        return found
    with transaction(conn, immediate=True):
        made = get_meta(conn, ARCHIVE_KEY) or str(uuid.uuid4())
        set_meta(conn, ARCHIVE_KEY, made)
    return made


def _claim(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    machine: str,
    *,
    push: bool,
    take_over: bool,
) -> None:
    """Refuse a sync from an archive other than the one the hub knows syncs as `machine`: under one
    name, each would skip the other's sessions as its own and push its files into the other's sources.
    A push records this archive as the machine's when none is (a machine named before this
    was recorded goes to the first archive that syncs it), or when it takes the name over: then what
    the other archive pushed under the name is pulled here, as another machine's."""
    mine = get_meta(conn, ARCHIVE_KEY)
    if push:
        mine = archive_id(conn)
        hub.execute("SELECT pg_advisory_xact_lock(%s)", (LAYOUT_LOCK,))  # two first pushes at once: one wins
    row = hub.execute(
        "SELECT row->>'archive' FROM threadloom.shared_rows WHERE machine = %s AND tbl = %s ORDER BY seq DESC LIMIT 1",
        (machine, CLAIM_TBL),
    ).fetchone()
    holder = str(row[0]) if row else None
    if holder is not None and holder != mine and not take_over:
        hub.rollback()
        raise SyncError(
            f"another archive syncs as {machine!r} on this hub (a machine of the same name: two archives "
            "under one name would hide and mix each other's sessions), so nothing was synced. Pass "
            f"--machine ANOTHER (remembered) to sync this one under a name of its own; or, if this archive "
            f"takes that one's place (a new machine), --take-over: that one is refused from then on"
        )
    if push and holder != mine:
        hub.execute(
            "INSERT INTO threadloom.shared_rows (machine, tbl, row_hash, row) VALUES (%s, %s, %s, %s)",
            (machine, CLAIM_TBL, uuid.uuid4().hex, orjson.dumps({"archive": mine}).decode()),
        )
        if holder is not None:
            with transaction(conn, immediate=True):
                set_meta(conn, TAKEN_KEY + hid, machine)
    hub.commit()


# ------------------------------------------------------------------------------------------ push


def _local_sources(conn: sqlite3.Connection, hid: str) -> list[tuple[Any, ...]]:
    """This machine's own sources whose stored state moved since their last push (or never pushed)."""
    kinds = ", ".join(f"'{k}'" for k in PUSHED_KINDS)
    return conn.execute(
        "SELECT f.id, f.path, f.agent, f.kind, f.project_key, f.content_hash, f.bytes_ingested, "
        "p.hub_source_id, p.generation, p.items, p.end_offset, p.digest, p.redacted "
        f"FROM source_files f LEFT JOIN sync_pushed p ON p.hub = ?1 AND p.source_file_id = f.id "
        f"WHERE f.kind IN ({kinds}) AND f.bytes_ingested > 0 "
        "AND f.id NOT IN (SELECT source_file_id FROM sync_pulled) "
        "AND (p.source_file_id IS NULL OR p.content_hash IS NOT f.content_hash "
        "OR p.bytes_ingested != f.bytes_ingested) ORDER BY f.id",
        (hid,),
    ).fetchall()


class _Projects:
    """The projects a source file belongs to, for the sharing rules and the hub's per-project grants:
    its folder key, the projects of the sessions its records are in, and (for a file holding no
    session's records, a side file say) those of the sessions read from files of the same folder."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.keyed: dict[tuple[str, str], list[str]] = {}

    def of(self, file_id: int, agent: str, project_key: str | None) -> set[str]:
        return set(self.ordered(file_id, agent, project_key))

    def ordered(self, file_id: int, agent: str, project_key: str | None) -> list[str]:
        found: list[str] = []
        for path, name in self.conn.execute(
            "SELECT DISTINCT s.project_path, s.project FROM agent_sessions s WHERE s.id IN "
            "(SELECT DISTINCT session_id FROM entries WHERE source_file_id = ? AND session_id IS NOT NULL)",
            (file_id,),
        ):
            found += [p for p in (path, name) if p]
        if project_key:
            key = (agent, project_key)
            if key not in self.keyed:
                self.keyed[key] = [
                    p
                    for path, name in self.conn.execute(
                        "SELECT DISTINCT s.project_path, s.project FROM agent_sessions s JOIN source_files g "
                        "ON g.id = s.source_file_id WHERE g.agent = ? AND g.project_key = ?",
                        key,
                    )
                    for p in (path, name)
                    if p
                ]
            found += self.keyed[key] + [project_key]
        return list(dict.fromkeys(found))

    def main(self, file_id: int, agent: str, project_key: str | None) -> str | None:
        """The one project the hub files the source under (its grants are per project): a path first."""
        found = self.ordered(file_id, agent, project_key)
        return next((p for p in found if p.startswith("/")), found[0] if found else None)


def _forgotten(conn: sqlite3.Connection, hub: psycopg.Connection[Any], hid: str, dry_run: bool) -> None:
    """What this archive pushed that the hub no longer holds (its owner ran `sync --forget`) is
    pushed again, whole, as a new source: its notes here are dropped. (Asked by the sources' ids,
    whatever machine name they were pushed under.)"""
    pushed = {
        int(source_id): int(file_id)
        for file_id, source_id in conn.execute(
            "SELECT source_file_id, hub_source_id FROM sync_pushed WHERE hub = ?", (hid,)
        )
    }
    if not pushed:
        return
    there = {
        int(r[0])
        for r in hub.execute("SELECT id FROM threadloom.sources WHERE id = ANY(%s)", (list(pushed),))
    }
    hub.commit()
    gone = [(hid, file_id) for source_id, file_id in pushed.items() if source_id not in there]
    if dry_run or not gone:
        return
    with transaction(conn, immediate=True):
        conn.executemany("DELETE FROM sync_pushed WHERE hub = ? AND source_file_id = ?", gone)


def _push(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    machine: str,
    sharing: Sharing,
    report: SyncReport,
    dry_run: bool,
    progress: Callable[[SyncProgress], None] | None,
) -> None:
    _forgotten(conn, hub, hid, dry_run)
    candidates = _local_sources(conn, hid)
    projects = _Projects(conn)
    for i, row in enumerate(candidates):
        file_id, path, agent, kind, project_key = row[:5]
        if progress is not None:
            progress(SyncProgress("push", i, len(candidates), path))
        if not sharing.takes(agent, projects.of(file_id, agent, project_key)):
            report.not_shared += 1
            continue
        _push_source(conn, hub, hid, machine, row, sharing.redact, report, dry_run, projects)
    if progress is not None:
        progress(SyncProgress("push", len(candidates), len(candidates)))


def _current_items(conn: sqlite3.Connection, file_id: int) -> list[tuple[_Item, int]]:
    return [
        (_Item(offset, line, bool(newline), digest), eid)
        for eid, offset, line, newline, digest in conn.execute(
            "SELECT id, byte_offset, line_number, newline, hash FROM entries "
            "WHERE source_file_id = ? AND byte_offset >= 0 ORDER BY byte_offset",
            (file_id,),
        )
    ]


def _push_source(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    machine: str,
    row: tuple[Any, ...],
    redact: bool,
    report: SyncReport,
    dry_run: bool,
    projects: _Projects,
) -> None:
    file_id, path, agent, kind, project_key, content_hash, bytes_ingested = row[:7]
    hub_source_id, generation, n_items, end_offset, digest = row[7:12]
    items = _current_items(conn, file_id)
    if not items:
        return
    # an append: the items pushed before are this file's first ones, unchanged. Masking turned on (or
    # off) since changes what is sent from now on, not what was: the hub already holds those records
    # as they were, and a masked copy beside them would take nothing off it (see `forget`)
    append = (
        hub_source_id is not None
        and len(items) >= n_items
        and _digest(it for it, _ in items[:n_items]).hexdigest() == digest
    )
    redactor = None
    if redact:
        from ..base.redact import Redactor

        redactor = Redactor()
    history = _history(conn, file_id) if hub_source_id is None else []
    if dry_run:
        report.pushed_sources += 1
        for pairs in [*history, items[n_items:] if append else items]:
            report.pushed_records += len(pairs)
            report.pushed_bytes += _bytes_of(conn, [eid for _, eid in pairs])
        return
    if hub_source_id is None:
        hub_source_id = _hub_source(
            hub, machine, path, agent, kind, project_key, projects.main(file_id, agent, project_key)
        )
    gen = 0 if generation is None else int(generation)
    # a file rewritten here before its first push: its earlier versions go first, each a generation
    for pairs in history:
        gen += 1
        last_item, last_eid = pairs[-1]
        end = last_item.offset + len(_raw_of(conn, last_eid)) + int(last_item.newline)
        _send_layout(conn, hub, machine, hub_source_id, gen, 0, end, pairs, redactor, redact, report)
    if append:
        new, start = items[n_items:], int(end_offset)
    else:
        new, start, gen = items, 0, gen + 1
    inserted = _send_layout(
        conn, hub, machine, hub_source_id, gen, start, int(bytes_ingested), new, redactor, redact, report
    )
    if not inserted:
        # pushed by a run that stopped before noting it here, or this state moved on since: the hub
        # says what it holds, and the next sync goes on from there
        _recover_pushed(conn, hub, hid, file_id, hub_source_id, content_hash, bytes_ingested, redact)
        return
    new_digest = _digest(it for it, _ in items).hexdigest()  # of the records here, masked or not
    with transaction(conn, immediate=True):
        row = (hid, file_id, hub_source_id, gen, len(items), int(bytes_ingested), new_digest, content_hash)
        _note_pushed(conn, (*row, bytes_ingested, int(redact)))
    report.pushed_sources += 1


def _raw_of(conn: sqlite3.Connection, eid: int) -> bytes:
    return bytes(conn.execute("SELECT raw FROM entries WHERE id = ?", (eid,)).fetchone()[0])


def _history(conn: sqlite3.Connection, file_id: int) -> list[list[tuple[_Item, int]]]:
    """The file's superseded versions, oldest first, each as its records in order with the offsets and
    lines they had then (rebuilt from their lengths, as `restore --as-of` writes them)."""
    out: list[list[tuple[_Item, int]]] = []
    for (blob,) in conn.execute(
        "SELECT entry_ids FROM source_versions WHERE source_file_id = ? ORDER BY superseded_at, version_file_id",
        (file_id,),
    ).fetchall():
        ids = [int.from_bytes(blob[i : i + 8], "little") for i in range(0, len(blob), 8)]
        facts: dict[int, tuple[str, int, bool]] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            for eid, digest, size, newline in conn.execute(
                f"SELECT id, hash, length(raw), newline FROM entries WHERE id IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                facts[eid] = (str(digest), int(size), bool(newline))
        pairs: list[tuple[_Item, int]] = []
        offset, line = 0, 1
        for eid in ids:
            if eid not in facts:
                continue
            digest, size, newline = facts[eid]
            pairs.append((_Item(offset, line, newline, digest), eid))
            offset += size + int(newline)
            line += int(newline)
        if pairs:
            out.append(pairs)
    return out


def _send_layout(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    machine: str,
    hub_source_id: int,
    gen: int,
    start: int,
    end: int,
    pairs: list[tuple[_Item, int]],
    redactor: Any,
    redact: bool,
    report: SyncReport,
) -> bool:
    """One layout row and the records it names that the hub lacks (masked first when asked). Returns
    False when the hub had that layout row already."""
    layout: list[_Item] = []
    raws: dict[str, tuple[int, bytes | None]] = {}  # hash sent -> (entry id, masked bytes or None)
    for it, eid in pairs:
        if redactor is not None:
            raw = _raw_of(conn, eid)
            masked = _masked(redactor, raw)
            if masked != raw:
                report.redacted_records += 1
                digest_sent = hashlib.sha256(masked).hexdigest()[:32]
                raws[digest_sent] = (eid, masked)
                layout.append(_Item(it.offset, it.line, it.newline, digest_sent))
                continue
        raws.setdefault(it.hash, (eid, None))
        layout.append(it)
    # the records the hub lacks, in batches (each commits: a record without a layout is invisible)
    have = {
        r[0]
        for r in hub.execute(
            "SELECT hash FROM threadloom.records WHERE source_id = %s AND hash = ANY(%s)",
            (hub_source_id, list(raws)),
        )
    }
    missing = [(h, eid, masked) for h, (eid, masked) in raws.items() if h not in have]
    sent = 0
    with hub.cursor() as cur:
        for batch in _raw_batches(conn, missing):
            cur.executemany(
                "INSERT INTO threadloom.records (source_id, hash, machine, raw, redacted) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(hub_source_id, h, machine, raw, masked) for h, raw, masked in batch],
            )
            sent += sum(len(raw) for _, raw, _ in batch)
    hub.execute("SELECT pg_advisory_xact_lock(%s)", (LAYOUT_LOCK,))
    inserted = hub.execute(
        "INSERT INTO threadloom.layouts (source_id, machine, generation, from_offset, end_offset, items, "
        "record_count, redacted) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING seq",
        (
            hub_source_id,
            machine,
            gen,
            start,
            end,
            orjson.dumps([it.as_list() for it in layout]),
            len(layout),
            redact,
        ),
    ).fetchone()
    hub.commit()
    if inserted is not None:
        report.pushed_records += len(layout)
        report.pushed_bytes += sent
    return inserted is not None


def _recover_pushed(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    file_id: int,
    hub_source_id: int,
    content_hash: str | None,
    bytes_ingested: int,
    redact: bool,
) -> None:
    """A layout row was there already: note the hub's last generation as pushed only when it is
    what this file holds now; else mark the file to be pushed whole, as a new generation."""
    row = hub.execute(
        "SELECT max(generation) FROM threadloom.layouts WHERE source_id = %s", (hub_source_id,)
    ).fetchone()
    gen = int(row[0]) if row and row[0] is not None else 0
    hub_items: list[_Item] = []
    end = 0
    for blob, end_offset in hub.execute(
        "SELECT items, end_offset FROM threadloom.layouts WHERE source_id = %s AND generation = %s ORDER BY from_offset",
        (hub_source_id, gen),
    ):
        hub_items += [_Item(*_check_item(v)) for v in orjson.loads(bytes(blob))]
        end = int(end_offset)
    hub.commit()
    items = [it for it, _ in _current_items(conn, file_id)]
    same = not redact and [it.as_list() for it in items[: len(hub_items)]] == [
        it.as_list() for it in hub_items
    ]
    whole = same and len(hub_items) == len(items)  # else pushed again next time
    with transaction(conn, immediate=True):
        _note_pushed(
            conn,
            (
                hid,
                file_id,
                hub_source_id,
                gen,
                len(hub_items) if same else 0,
                end if same else 0,
                _digest(hub_items).hexdigest() if same else "",
                content_hash if whole else None,
                bytes_ingested if whole else -1,
                int(redact),
            ),
        )


def _note_pushed(conn: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    """What the hub holds of a file, as this machine last pushed (or found) it: (hub, source_file_id,
    hub_source_id, generation, items, end_offset, digest, content_hash, bytes_ingested, redacted)."""
    conn.execute(
        "INSERT OR REPLACE INTO sync_pushed (hub, source_file_id, hub_source_id, generation, items, end_offset, "
        "digest, content_hash, bytes_ingested, redacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        row,
    )


def _masked(redactor: Any, raw: bytes) -> bytes:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
    masked = redactor.json_text(text)
    return raw if masked == text else str(masked).encode("utf-8")


def _bytes_of(conn: sqlite3.Connection, ids: list[int]) -> int:
    total = 0
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        row = conn.execute(
            f"SELECT COALESCE(sum(length(raw)), 0) FROM entries WHERE id IN ({','.join('?' * len(chunk))})",
            chunk,
        ).fetchone()
        total += int(row[0])
    return total


def _raw_batches(
    conn: sqlite3.Connection, missing: list[tuple[str, int, bytes | None]]
) -> Iterator[list[tuple[str, bytes, bool]]]:
    batch: list[tuple[str, bytes, bool]] = []
    size = 0
    for i in range(0, len(missing), 500):
        chunk = missing[i : i + 500]
        ids = [eid for _, eid, masked in chunk if masked is None]
        raw_of: dict[int, bytes] = {}
        if ids:
            raw_of = {
                eid: bytes(raw)
                for eid, raw in conn.execute(
                    f"SELECT id, raw FROM entries WHERE id IN ({','.join('?' * len(ids))})", ids
                )
            }
        for digest, eid, masked in chunk:
            raw = masked if masked is not None else raw_of[eid]
            batch.append((digest, raw, masked is not None))
            size += len(raw)
            if size >= RAW_BATCH_BYTES:
                yield batch
                batch, size = [], 0
    if batch:
        yield batch


def _hub_source(
    hub: psycopg.Connection[Any],
    machine: str,
    path: str,
    agent: str,
    kind: str,
    project_key: str | None,
    project: str | None,
) -> int:
    key = path.encode("utf-8", "surrogateescape")
    row = hub.execute(
        "INSERT INTO threadloom.sources (machine, path, agent, kind, project_key, project) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (machine, path) DO NOTHING RETURNING id",
        (machine, key, agent, kind, _no_nul(project_key), _no_nul(project)),
    ).fetchone()
    if row is None:
        row = hub.execute(
            "SELECT id FROM threadloom.sources WHERE machine = %s AND path = %s", (machine, key)
        ).fetchone()
    hub.commit()
    assert row is not None
    return int(row[0])


def _no_nul(text: str | None) -> str | None:
    return None if text is None else text.replace("\0", "\ufffd")


# jsonb takes no NUL character (`\u0000`): a row holding one (a note an agent wrote, a value from a
# log) made every push fail ("unsupported Unicode escape sequence") until it was deleted. Such a row
# travels as its JSON text in base64 under this one key, and is read back whole.
NUL_WRAPPED = "$json_b64"


def _hub_json(value: Any) -> str:
    """A shared row or memory item as the hub's jsonb takes it (see NUL_WRAPPED)."""
    text = orjson.dumps(value)
    if b"\\u0000" not in text:
        return text.decode()
    return orjson.dumps({NUL_WRAPPED: base64.b64encode(text).decode()}).decode()


def _from_hub_json(text: str) -> Any:
    """What `_hub_json` sent (raises orjson.JSONDecodeError or ValueError for what no push sends)."""
    value = orjson.loads(text)
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(NUL_WRAPPED), str):
        value = orjson.loads(base64.b64decode(value[NUL_WRAPPED], validate=True))
    return value


# ------------------------------------------------------------------------------------- user data


def _row_hash(table: str, values: Iterable[Any]) -> str:
    return hashlib.sha256(orjson.dumps([table, *values])).hexdigest()[:32]


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        is not None
    )


def _push_rows(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    machine: str,
    report: SyncReport,
    dry_run: bool,
) -> None:
    """The user-data rows (SHARED_TABLES) the hub has not had from this archive."""
    for table, columns in SHARED_TABLES.items():
        if not _has_table(conn, table):
            continue
        known = {
            r[0]
            for r in conn.execute("SELECT row_hash FROM sync_rows WHERE hub = ? AND tbl = ?", (hid, table))
        }
        new = []
        for values in conn.execute(f"SELECT {', '.join(columns)} FROM {table}"):
            digest = _row_hash(table, values)
            if digest not in known:
                new.append((digest, list(values)))
        report.pushed_rows += len(new)
        if dry_run or not new:
            continue
        hub.execute("SELECT pg_advisory_xact_lock(%s)", (LAYOUT_LOCK,))
        with hub.cursor() as cur:
            cur.executemany(
                "INSERT INTO threadloom.shared_rows (machine, tbl, row_hash, row) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [(machine, table, digest, _hub_json(values)) for digest, values in new],
            )
        hub.commit()
        with transaction(conn, immediate=True):
            conn.executemany(
                "INSERT OR IGNORE INTO sync_rows (hub, tbl, row_hash) VALUES (?, ?, ?)",
                [(hid, table, d) for d, _ in new],
            )


def _push_memory(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    machine: str,
    sharing: Sharing,
    report: SyncReport,
    dry_run: bool,
) -> None:
    """The memory items (core.ingest.memory_sync) the sharing rules take that the hub has not had from here."""
    from ..insight import memory
    from . import memory_sync

    if not _has_table(conn, "memory_versions"):
        return
    if not dry_run and conn.execute("SELECT 1 FROM memory_versions WHERE vid IS NULL LIMIT 1").fetchone():
        with transaction(conn, immediate=True):  # versions written before they had ids get theirs
            memory.ensure_version_ids(conn)
    known = {
        (str(t), str(k))
        for t, k in conn.execute(
            "SELECT tbl, row_hash FROM sync_rows WHERE hub = ? AND tbl LIKE 'memory.%'", (hid,)
        )
    }
    new = [
        item
        for item in memory_sync.outgoing(conn, sharing.takes, sharing.takes_everything)
        if (item.kind, item.key) not in known
    ]
    report.pushed_rows += len(new)
    for it in new:
        _count(report.memory_pushed, memory_sync.what(it.kind, it.payload))
    if dry_run or not new:
        return
    hub.execute("SELECT pg_advisory_xact_lock(%s)", (LAYOUT_LOCK,))
    with hub.cursor() as cur:
        cur.executemany(
            "INSERT INTO threadloom.shared_rows (machine, tbl, row_hash, row, project) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [(machine, it.kind, it.key, _hub_json(it.payload), _no_nul(it.project)) for it in new],
        )
    hub.commit()
    with transaction(conn, immediate=True):
        conn.executemany(
            "INSERT OR IGNORE INTO sync_rows (hub, tbl, row_hash) VALUES (?, ?, ?)",
            [(hid, it.kind, it.key) for it in new],
        )


def _pull_rows(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    machine: str,
    report: SyncReport,
    dry_run: bool,
) -> None:
    """Other machines' user-data rows, into the same tables here (a table or a row of another shape
    is refused, never created or forced in), and their memory items, merged (core.ingest.memory_sync)."""
    from . import memory_sync

    tables = [t for t in SHARED_TABLES if _has_table(conn, t)]
    if _has_table(conn, "memory_versions"):
        tables += memory_sync.KINDS
    key = ROWS_CURSOR_KEY + hid
    cursor = int(get_meta(conn, key) or 0)
    # what the role may read changed (a project granted since): rows older than the cursor may have
    # become readable, read again from the start (merging them twice changes nothing)
    seen, seen_key = _readable(hub, machine), READABLE_KEY + "rows:" + hid
    if get_meta(conn, seen_key) != seen:
        cursor = 0
    while True:
        rows = hub.execute(
            "SELECT seq, tbl, row_hash, row::text FROM threadloom.shared_rows WHERE seq > %s AND machine <> %s "
            "AND tbl = ANY(%s) ORDER BY seq LIMIT %s",
            (cursor, machine, tables, PULL_BATCH),
        ).fetchall()
        hub.commit()
        if not rows:
            if not dry_run and get_meta(conn, seen_key) != seen:
                with transaction(conn, immediate=True):
                    set_meta(conn, seen_key, seen)
            return
        if dry_run:
            report.pulled_rows += len(rows)
            for _seq, table, _digest, text in rows:
                if str(table) in memory_sync.KINDS:
                    _count(
                        report.memory_pulled, memory_sync.what(str(table), _from_hub_json_or_none(str(text)))
                    )
            cursor = int(rows[-1][0])
            continue
        with transaction(conn, immediate=True):
            for _seq, table, _digest, text in rows:
                if str(table) in memory_sync.KINDS:
                    _merge_memory(conn, hid, str(table), str(text), report)
                    continue
                columns = SHARED_TABLES[str(table)]
                try:
                    values = _from_hub_json(str(text))
                except ValueError:  # no JSON, or base64 of none
                    values = None
                if not (
                    isinstance(values, list)
                    and len(values) == len(columns)
                    and all(v is None or isinstance(v, (str, int, float)) for v in values)
                ):
                    report.refused.append(f"a {table} row of another shape")
                    continue
                done = conn.execute(
                    f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    values,
                )
                conn.execute(
                    "INSERT OR IGNORE INTO sync_rows (hub, tbl, row_hash) VALUES (?, ?, ?)",
                    (hid, table, _row_hash(str(table), values)),
                )
                report.pulled_rows += done.rowcount
            cursor = int(rows[-1][0])
            set_meta(conn, key, str(cursor))


def _count(counts: dict[str, int], what: str) -> None:
    counts[what] = counts.get(what, 0) + 1


def _from_hub_json_or_none(text: str) -> Any:
    try:
        return _from_hub_json(text)
    except ValueError:
        return None


def _merge_memory(conn: sqlite3.Connection, hid: str, kind: str, text: str, report: SyncReport) -> None:
    """One memory item of another machine's, merged here and noted as pulled (never pushed back)."""
    from . import memory_sync

    try:
        payload = _from_hub_json(text)
        outcome, key = memory_sync.merge(conn, kind, payload)
    except (ValueError, memory_sync.Refused) as exc:  # orjson.JSONDecodeError is a ValueError
        report.refused.append(f"a memory item: {exc}")
        return
    conn.execute("INSERT OR IGNORE INTO sync_rows (hub, tbl, row_hash) VALUES (?, ?, ?)", (hid, kind, key))
    if outcome != "known":
        report.pulled_rows += 1
        _count(report.memory_pulled, memory_sync.what(kind, payload))
    if outcome == "conflict":
        report.memory_conflicts += 1


# ------------------------------------------------------------------------------------------ pull


def _check_item(value: Any) -> tuple[int, int, bool, str]:
    """A layout item from the hub, refused unless it has the shape a push gives it."""
    if not (isinstance(value, list) and len(value) == 4):
        raise HubValueError("a layout item of another shape")
    offset, line, newline, digest = value
    if not (
        isinstance(offset, int) and 0 <= offset < 1 << 62 and isinstance(line, int) and 0 <= line < 1 << 62
    ):
        raise HubValueError("a layout item with an offset or line out of range")
    if newline not in (0, 1) or not (isinstance(digest, str) and HASH_RE.fullmatch(digest)):
        raise HubValueError("a layout item with a bad newline flag or hash")
    return offset, line, bool(newline), digest


def mirror_path(machine: str, origin: bytes) -> str:
    """Where a source of another machine is stored here (a stored name, see
    core.adapters.base.stored_name): under MIRROR_ROOT, its machine, then its path there with
    nothing that leaves that place (`..`, `.`, empty parts) and no NUL."""
    from ..adapters.base import NAME_BYTES, stored_name

    if not MACHINE_RE.fullmatch(machine):
        raise HubValueError(f"a machine name that is not usable here: {machine[:80]!r}")
    try:
        text = origin.decode("utf-8")
    except UnicodeDecodeError:
        raise HubValueError("a source path that is not UTF-8") from None
    if NAME_BYTES in text:  # a name stored with its bytes (not UTF-8 on its machine)
        _, _, hexed = text.partition(NAME_BYTES)
        try:
            text = os.fsdecode(bytes.fromhex(hexed))
        except ValueError:
            raise HubValueError("a source path with a damaged byte name") from None
    if re.match(r"^[A-Za-z]:[\\/]", text):  # a Windows path: C:\Users\… → /C/Users/…
        text = "/" + text[0] + "/" + text[3:].replace("\\", "/")
    if "\0" in text or not text.startswith("/") or len(text) > 4096:
        raise HubValueError("a source path that is not an absolute path")
    parts = text.split("/")[1:]
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise HubValueError(f"a source path with an empty, '.' or '..' part: {text[:200]!r}")
    return stored_name(f"{MIRROR_ROOT}/{machine}/" + "/".join(parts))


@dataclass
class _HubLayout:
    seq: int
    source_id: int
    generation: int
    from_offset: int
    end_offset: int
    items: bytes
    redacted: bool
    machine: str
    path: bytes
    agent: str
    kind: str
    project_key: str | None
    who: str


def _known_agents() -> set[str]:
    from ..adapters import ADAPTERS

    return set(ADAPTERS)


def _load_later(stored: str | None) -> dict[str, str]:
    try:
        value = orjson.loads(stored) if stored else {}
    except orjson.JSONDecodeError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _readable(hub: psycopg.Connection[Any], machine: str) -> str:
    """What the syncing role may read, as a short fingerprint: its grants and the other machines it
    owns (this one's rows are never pulled: registering it changes nothing read)."""
    grants = [
        str(r[0])
        for r in hub.execute("SELECT project FROM threadloom.grants WHERE role = session_user ORDER BY 1")
    ]
    owned = [
        str(r[0])
        for r in hub.execute(
            "SELECT name FROM threadloom.machines WHERE owner = session_user AND name <> %s ORDER BY 1",
            (machine,),
        )
    ]
    hub.commit()
    return hashlib.sha256(orjson.dumps([grants, owned])).hexdigest()[:16]


def _layout_row(r: tuple[Any, ...]) -> _HubLayout:
    (
        seq,
        source_id,
        generation,
        from_offset,
        end_offset,
        items,
        redacted,
        machine,
        path,
        agent,
        kind,
        key,
        who,
    ) = r
    return _HubLayout(
        int(seq),
        int(source_id),
        int(generation),
        int(from_offset),
        int(end_offset),
        bytes(items),
        bool(redacted),
        str(machine),
        bytes(path),
        str(agent),
        str(kind),
        None if key is None else str(key),
        str(who),
    )


def _pull(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    machine: str,
    report: SyncReport,
    dry_run: bool,
    progress: Callable[[SyncProgress], None] | None,
) -> None:
    cursor_key = CURSOR_KEY + hid
    cursor = int(get_meta(conn, cursor_key) or 0)
    # What this role may read: its grants and its machines. When that changed (a project granted
    # since), rows older than the cursor may have become readable: the layouts are read again from
    # the start (those placed already are passed over).
    seen = _readable(hub, machine)
    seen_key = READABLE_KEY + hid
    if get_meta(conn, seen_key) != seen:
        cursor = 0
    # sources of agents this threadloom did not read when they came: read now, once it reads them
    later_key = LATER_KEY + hid
    later = _load_later(get_meta(conn, later_key))
    if later and any(agent in _known_agents() for agent in later.values()):
        cursor = 0
    if dry_run:
        row = hub.execute(
            "SELECT count(DISTINCT l.source_id), COALESCE(sum(l.record_count), 0) FROM threadloom.layouts l "
            "WHERE l.seq > %s AND l.machine <> %s",
            (cursor, machine),
        ).fetchone()
        hub.commit()
        if row:
            report.pulled_sources, report.pulled_records = int(row[0]), int(row[1])
        return
    total_row = hub.execute(
        "SELECT count(*) FROM threadloom.layouts WHERE seq > %s AND machine <> %s", (cursor, machine)
    ).fetchone()
    total = int(total_row[0]) if total_row else 0
    hub.commit()
    if not total:
        if get_meta(conn, seen_key) != seen:
            with transaction(conn, immediate=True):
                set_meta(conn, seen_key, seen)
        return
    from ..store import search_index
    from .ledger import Ledger, finish_derived

    records_row = hub.execute(
        "SELECT COALESCE(sum(record_count), 0) FROM threadloom.layouts WHERE seq > %s AND machine <> %s",
        (cursor, machine),
    ).fetchone()
    hub.commit()
    if records_row and int(records_row[0]) >= BULK_RECORDS:
        # many records: indexed once after they are placed rather than file by file (as a first load
        # is); marked in the archive, so a stopped pull leaves it for the next run to catch up
        with transaction(conn, immediate=True):
            search_index.mark_behind(conn)
    ledger = Ledger(conn)
    done = 0
    pulled: set[int] = set()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # parsed records are short-lived; the cyclic GC costs 2.6x (as in core.ingest.pipeline)
    # placed as a first load places its records, with 16 MB of pages: 64 MB kept them all, for the
    # catch-up below to grow on (the peak of a 100 MB pull into an empty archive: 207 -> 157 MB)
    with page_cache(conn):
        try:
            while True:
                rows = [
                    _layout_row(r)
                    for r in hub.execute(
                        "SELECT l.seq, l.source_id, l.generation, l.from_offset, l.end_offset, l.items, l.redacted, "
                        "s.machine, s.path, s.agent, s.kind, s.project_key, l.pushed_by "
                        "FROM threadloom.layouts l JOIN threadloom.sources s ON s.id = l.source_id "
                        "WHERE l.seq > %s AND l.machine <> %s ORDER BY l.seq LIMIT %s",
                        (cursor, machine, PULL_BATCH),
                    )
                ]
                hub.commit()
                if not rows:
                    break
                by_source: dict[int, list[_HubLayout]] = {}
                for r in rows:
                    by_source.setdefault(r.source_id, []).append(r)
                # the files others are read beside (a subagent's .meta.json) before those that read them
                for source_rows in sorted(
                    by_source.values(), key=lambda rs: (rs[0].kind != "meta", rs[0].seq)
                ):
                    if progress is not None:
                        progress(
                            SyncProgress("pull", done, total, source_rows[0].path.decode("utf-8", "replace"))
                        )
                    try:
                        added = _place_source(conn, hub, hid, ledger, source_rows, report)
                    except UnknownAgent as exc:
                        later[str(exc.source_id)] = exc.agent
                        report.refused.append(f"{source_rows[0].machine}: source {exc.source_id}: {exc}")
                        added = 0
                    except HubValueError as exc:
                        first = source_rows[0]
                        report.refused.append(f"{first.machine}: source {first.source_id}: {exc}")
                        added = 0
                    if added:
                        pulled.add(source_rows[0].source_id)
                        later.pop(str(source_rows[0].source_id), None)
                    done += len(source_rows)
                cursor = rows[-1].seq
                with transaction(conn, immediate=True):
                    set_meta(conn, cursor_key, str(cursor))
                    set_meta(conn, seen_key, seen)
                    set_meta(conn, later_key, orjson.dumps(later).decode() if later else None)
        finally:
            if gc_was_enabled:
                gc.enable()
            report.sessions += len(finish_derived(conn, ledger.finalize()))
    report.pulled_sources += len(pulled)
    if progress is not None:
        progress(SyncProgress("pull", total, total))


def _place_source(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    ledger: Any,
    rows: list[_HubLayout],
    report: SyncReport,
) -> int:
    """Place one hub source's new layout rows here, as the ingest places a file's records: appended
    when they go on from what is here, else as the file read again whole (what it no longer holds is
    kept as a superseded version, as for a local file). Returns the records placed."""

    if conn.execute(
        "SELECT 1 FROM sync_pushed WHERE hub = ? AND hub_source_id = ?", (hid, rows[0].source_id)
    ).fetchone():
        return 0  # this archive's own file, pushed under another machine name before: it is here

    first = rows[0]
    if first.agent not in _known_agents():
        raise UnknownAgent(first.source_id, first.agent[:40])
    if first.kind not in PUSHED_KINDS:
        raise HubValueError(f"a source kind this threadloom does not take: {first.kind[:40]!r}")
    path = mirror_path(first.machine, first.path)
    placed = 0
    for generation in sorted({r.generation for r in rows}):
        placed += _place_generation(
            conn, hub, hid, ledger, path, [r for r in rows if r.generation == generation], report
        )
    return placed


def _place_generation(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    hid: str,
    ledger: Any,
    path: str,
    rows: list[_HubLayout],
    report: SyncReport,
) -> int:
    """One generation's new layout rows: appended to what is here, or (a newer generation) the
    file as it then was, whole."""
    first = rows[0]
    state = conn.execute(
        "SELECT source_file_id, generation, items, end_offset, digest, redacted FROM sync_pulled "
        "WHERE hub = ? AND hub_source_id = ?",
        (hid, first.source_id),
    ).fetchone()
    gen, n_items, end, digest, was_redacted = (
        (state[1], state[2], state[3], state[4], state[5]) if state else (0, 0, 0, "", 0)
    )
    # the file came here from a hub source since forgotten (core.ingest.sync.forget), pushed again as this
    # one: read again whole, what it held before kept as a superseded version
    replaced = (
        None
        if state is not None
        else conn.execute(
            "SELECT p.hub_source_id FROM sync_pulled p JOIN source_files f ON f.id = p.source_file_id "
            "WHERE p.hub = ? AND f.path = ?",
            (hid, path),
        ).fetchone()
    )
    if first.generation < gen:
        return 0  # older than what is here
    fresh = first.generation > gen
    wanted = rows if fresh else [r for r in rows if r.from_offset >= end]
    if not wanted:
        return 0  # placed already (by a run that stopped before its cursor moved)
    start = 0 if fresh else end
    if wanted[0].from_offset != start:  # begun before these rows, or a gap: the generation whole
        wanted = _hub_generation(hub, first, first.generation)
        fresh, start = True, 0
    items: list[_Item] = []
    for r in wanted:
        items += [_Item(*_check_item(v)) for v in _load_items(r.items)]
    if items and items[0].offset < start:
        raise HubValueError("a layout that goes back over what it appended to")
    for a, b in zip(items, items[1:], strict=False):
        if b.offset <= a.offset:
            raise HubValueError("a layout whose records are not in file order")
    new_end = wanted[-1].end_offset
    fetched = [0]
    records = _records(hub, first.source_id, items, fetched)  # read as they are stored
    last_line = items[-1].line if items else 0
    file_id = _store_pulled(
        conn,
        ledger,
        path,
        first,
        records,
        fresh and (state is not None or replaced is not None),
        start,
        new_end,
        last_line,
        partial(_whole_file, conn, hub, first.source_id, path, items, start),
    )
    count, nbytes = len(items), fetched[0]
    new_digest = _digest(items).hexdigest() if fresh else _digest(items, _resume(digest)).hexdigest()
    if replaced is not None:
        conn.execute("DELETE FROM sync_pulled WHERE hub = ? AND hub_source_id = ?", (hid, replaced[0]))
    conn.execute(
        "INSERT OR REPLACE INTO sync_pulled (hub, hub_source_id, source_file_id, machine, who, generation, items, "
        "end_offset, digest, redacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            hid,
            first.source_id,
            file_id,
            first.machine,
            first.who,
            first.generation,
            (0 if fresh else n_items) + len(items),
            new_end,
            new_digest,
            int(bool(was_redacted) or any(r.redacted for r in wanted)),
        ),
    )
    conn.execute("COMMIT")
    report.pulled_records += count
    report.pulled_bytes += nbytes
    return count


def _whole_file(
    conn: sqlite3.Connection,
    hub: psycopg.Connection[Any],
    source_id: int,
    path: str,
    items: list[_Item],
    start: int,
) -> bytes:
    """The file being placed as it is once placed: what is here before `start`, then `items`. Asked
    only by an adapter that reads the whole file beside its records (Aider: its blocks and session
    ids), which would otherwise find nothing, the file being on no disk here."""
    from ..read.archive import stored_file

    head = (stored_file(conn, path) or b"")[:start] if start else b""
    return head + b"".join(r.raw + b"\n" * r.newline for r in _records(hub, source_id, items, [0]))


def _resume(digest: str) -> Any:
    """Digests of pulled layouts are chained by hashing the previous digest first (a sha256 object
    cannot be rebuilt from its hex)."""
    h = hashlib.sha256()
    h.update(digest.encode())
    return h


def _load_items(blob: bytes) -> list[Any]:
    try:
        value = orjson.loads(blob)
    except orjson.JSONDecodeError:
        raise HubValueError("a layout that is not JSON") from None
    if not isinstance(value, list):
        raise HubValueError("a layout that is not a list")
    return value


def _hub_generation(hub: psycopg.Connection[Any], first: _HubLayout, generation: int) -> list[_HubLayout]:
    rows = [
        _HubLayout(
            int(seq),
            first.source_id,
            generation,
            int(fo),
            int(eo),
            bytes(items),
            bool(red),
            first.machine,
            first.path,
            first.agent,
            first.kind,
            first.project_key,
            first.who,
        )
        for seq, fo, eo, items, red in hub.execute(
            "SELECT seq, from_offset, end_offset, items, redacted FROM threadloom.layouts "
            "WHERE source_id = %s AND generation = %s ORDER BY from_offset",
            (first.source_id, generation),
        )
    ]
    hub.commit()
    expected = 0
    for r in rows:
        if r.from_offset != expected:
            raise HubValueError("a generation of a source with a gap in its layouts")
        expected = r.end_offset
    if not rows:
        raise HubValueError("a generation of a source with no layouts")
    return rows


def _records(
    hub: psycopg.Connection[Any], source_id: int, items: list[_Item], fetched: list[int]
) -> Iterator[Any]:
    """The records of `items`, their bytes fetched a batch at a time (a large file is never all in
    memory); `fetched[0]` counts the bytes."""
    from ..adapters.base import RawRecord

    for i in range(0, len(items), FETCH_BATCH):
        chunk = items[i : i + FETCH_BATCH]
        raws = _fetch_raws(hub, source_id, {it.hash for it in chunk})
        for it in chunk:
            raw = raws[it.hash]
            fetched[0] += len(raw)
            yield RawRecord(it.offset, it.line, raw, it.newline)


def _fetch_raws(hub: psycopg.Connection[Any], source_id: int, hashes: set[str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    wanted = sorted(hashes)
    for i in range(0, len(wanted), 1000):
        for digest, raw in hub.execute(
            "SELECT hash, raw FROM threadloom.records WHERE source_id = %s AND hash = ANY(%s)",
            (source_id, wanted[i : i + 1000]),
        ):
            raw = bytes(raw)
            if hashlib.sha256(raw).hexdigest()[:32] != digest:
                raise HubValueError("a record whose bytes are not those its hash names")
            out[str(digest)] = raw
    hub.commit()
    lacking = hashes - out.keys()
    if lacking:
        raise HubValueError(f"{len(lacking)} records its layout names are not on the hub (or not readable)")
    return out


def _store_pulled(
    conn: sqlite3.Connection,
    ledger: Any,
    path: str,
    first: _HubLayout,
    records: Iterable[Any],
    rewrite: bool,
    start: int,
    end: int,
    last_line: int,
    whole: Callable[[], bytes],
) -> int:
    """Store and place `records` as the ingest does a file's (core.ingest.pipeline._store), in a transaction
    left open for the caller to commit with its note of what was placed. Returns the file's id.
    A read of the file itself gives `whole()` (once); of a file beside it, the archive's."""
    from ..adapters import ADAPTERS
    from ..adapters.base import SourceRef, disk_name, reading_mirrors, shown_name
    from ..read.archive import stored_file
    from . import pipeline as ingest
    from .reading import FilePlan, FileRead

    adapter = ADAPTERS[first.agent]
    row = ingest._known_row(conn, disk_name(path))
    if row is not None and row.kind != first.kind:
        raise HubValueError("a source whose kind changed")
    st = os.stat_result((0o100400, 0, 0, 1, 0, 0, end, 0, 0, 0), {"st_mtime_ns": 0})
    label = None if first.project_key is None else shown_name(first.project_key)[:4096]
    ref = SourceRef(Path(disk_name(path)), first.agent, first.kind, label)
    plan = FilePlan(ref, adapter, st, row)
    read = FileRead(records, rewrite, start, 0, end, f"hub:{end}", end - start, lines_after=last_line)
    itself: list[bytes] = []

    def beside(name: str) -> bytes | None:
        if name != path:
            return stored_file(conn, name)
        if not itself:
            itself.append(whole())
        return itself[0]

    conn.execute("BEGIN IMMEDIATE")
    try:
        with reading_mirrors(beside):  # what it reads beside them: from the archive
            ingest._store(conn, ledger, plan, read, False)
    except BaseException:
        conn.execute("ROLLBACK")
        ledger.rollback()
        raise
    file_id = conn.execute("SELECT id FROM source_files WHERE path = ?", (path,)).fetchone()[0]
    return int(file_id)


# --------------------------------------------------------------------------------- what is where


def status(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """What `threadloom sources` says of sync: the hub (no password), this machine's name, the last
    sync, the files and memory items waiting to be pushed (what the sharing rules take), and what was
    pulled, by machine; read from the archive alone (`waiting_on_hub` asks the hub what waits there).
    None when this archive never synced."""
    url = get_meta(conn, URL_KEY)
    if not url or not _has_local_tables(conn):
        return None
    sharing = load_sharing(conn)
    waiting = 0
    projects = _Projects(conn)
    kinds = ", ".join(f"'{k}'" for k in PUSHED_KINDS)
    for file_id, agent, key in conn.execute(
        "SELECT f.id, f.agent, f.project_key FROM source_files f "
        f"WHERE f.kind IN ({kinds}) AND f.bytes_ingested > 0 "
        "AND f.id NOT IN (SELECT source_file_id FROM sync_pulled) AND NOT EXISTS (SELECT 1 FROM sync_pushed p "
        "WHERE p.source_file_id = f.id AND p.content_hash IS f.content_hash AND p.bytes_ingested = f.bytes_ingested)"
    ).fetchall():
        if sharing is not None and sharing.takes(agent, projects.of(file_id, agent, key)):
            waiting += 1
    last = get_meta(conn, LAST_KEY)
    items = 0
    if sharing is not None and _has_table(conn, "memory_versions"):
        from . import memory_sync

        known = {
            (str(t), str(k))
            for t, k in conn.execute("SELECT tbl, row_hash FROM sync_rows WHERE tbl LIKE 'memory.%'")
        }
        items = sum(
            1
            for it in memory_sync.outgoing(conn, sharing.takes, sharing.takes_everything)
            if (it.kind, it.key) not in known
        )
    return {
        "hub": safe_url(url),
        "machine": get_meta(conn, MACHINE_KEY),
        "who": get_meta(conn, WHO_KEY),
        "last_sync_ms": int(last) if last and last.isdigit() else None,
        "sharing": asdict(sharing) if sharing is not None else None,
        "waiting_files": waiting,
        "waiting_items": items,  # memory items the sharing rules take that the hub has not had from here
        "pulled": [
            {"machine": m, "who": w, "files": files, "records": records}
            for m, w, files, records in conn.execute(
                "SELECT p.machine, p.who, count(DISTINCT p.source_file_id), "
                "(SELECT count(*) FROM entries e WHERE e.source_file_id IN "
                "(SELECT source_file_id FROM sync_pulled q WHERE q.machine = p.machine)) "
                "FROM sync_pulled p GROUP BY p.machine ORDER BY p.machine"
            )
        ],
    }


def waiting_on_hub(conn: sqlite3.Connection, *, timeout: int = 5) -> dict[str, Any]:
    """What the hub holds for this machine past its last pull (what the next sync pulls, as far as
    its role may read): {"files", "records", "items"} (memory and user-data rows); or {"error"}, said
    without a password, when the hub cannot be asked (offline, say) within `timeout` seconds."""
    import psycopg

    url = get_meta(conn, URL_KEY)
    machine = get_meta(conn, MACHINE_KEY) or ""
    if not url:
        return {"error": "no hub yet"}
    try:
        with connect_hub(url, timeout=timeout) as hub:
            if hub_version(hub) is None:
                return {"error": "the hub has no threadloom schema"}
            hid = hub_id(hub)
            cursor = int(get_meta(conn, CURSOR_KEY + hid) or 0)
            rows_cursor = int(get_meta(conn, ROWS_CURSOR_KEY + hid) or 0)
            found = hub.execute(
                "SELECT count(DISTINCT source_id), COALESCE(sum(record_count), 0) FROM threadloom.layouts "
                "WHERE seq > %s AND machine <> %s",
                (cursor, machine),
            ).fetchone()
            rows = hub.execute(
                "SELECT count(*) FROM threadloom.shared_rows WHERE seq > %s AND machine <> %s AND tbl <> %s",
                (rows_cursor, machine, CLAIM_TBL),
            ).fetchone()
            hub.commit()
    except SyncError as exc:
        return {"error": str(exc)}
    except psycopg.Error as exc:
        return {"error": f"the hub failed: {mask_password(str(exc), url).strip()}"}
    return {
        "files": int(found[0]) if found else 0,
        "records": int(found[1]) if found else 0,
        "items": int(rows[0]) if rows else 0,
    }


def pushed_before(conn: sqlite3.Connection) -> bool:
    """Whether this archive pushed anything to a hub yet."""
    return (
        _has_local_tables(conn) and conn.execute("SELECT 1 FROM sync_pushed LIMIT 1").fetchone() is not None
    )


def session_origins(conn: sqlite3.Connection) -> dict[str, tuple[str, str | None]]:
    """(machine, who) of every session read from another machine's files, by session id."""
    if not _has_local_tables(conn):
        return {}
    return {
        sid: (machine, who)
        for sid, machine, who in conn.execute(
            "SELECT s.id, p.machine, p.who FROM agent_sessions s JOIN sync_pulled p ON p.source_file_id = s.source_file_id"
        )
    }


def machines_of(conn: sqlite3.Connection) -> dict[int, tuple[str, str | None]]:
    """(machine, who) of every pulled source file, by its id."""
    if not _has_local_tables(conn):
        return {}
    return {fid: (m, w) for fid, m, w in conn.execute("SELECT source_file_id, machine, who FROM sync_pulled")}
