"""Opening the ledger: file location, pragmas, schema version, clear errors.

The fast path (a database already at the current schema) uses only `sqlite3`; SQLModel and
SQLAlchemy are imported only when tables must be created or rebuilt, so a no-change launch
does not pay their ~0.6 s import.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import sqlite3
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

from . import derived, memory_tables
from .search_index import SEARCH_DDL
from .sql import get_meta, set_meta, transaction

if TYPE_CHECKING:
    from sqlalchemy.engine import Dialect  # imported where it is used: opening a ledger never loads it

T = TypeVar("T")

# Bump when the derived tables or their meaning change; entries and source_files survive a bump
# and the derived tables are rebuilt from `entries`.
SCHEMA_VERSION = (
    21  # 11: the stats' sums (core.insight.stats); 12: session_signals (core.insight.signals); 13: what the
)
# adapters read more of (Cursor's tool calls, Cline's opening prompt, Aider's thinking, Claude Code's
# markup: no turn starts at a command's output), placed again in every session; 14: Aider's session
# ids name the history, not its path (what people wrote on the old ones follows: RENAMED_SESSIONS);
# 15: Claude Code's queued prompts, Copilot CLI's errors and Crush's failed requests are messages, a
# Codex fork's copied token counts its source's, Cline's edits count their lines, a Windows folder is
# one project whatever the case of its drive letter; 16: what the adapters read more of (Codex's
# searches with no id, OpenCode's recorded costs and prompt times, Continue's models, cursor-agent's
# project and branch diffs, Cursor's bubble times, Cline's text results and absolutePath edits,
# Claude Code's teleported-from and its local commands in a row (no branches), Copilot CLI's titles),
# turns and episodes keyed by their session too, and a replay
# refreshes what a record is (its type, flags, role, time, model) as well as its text; 17: Cline 3.x's
# unanswered calls interrupted, its subagents' results, its cache counted apart per provider, its
# retries in words and its todo-list reminders no prompts, its SDK's compaction notices no prompt's
# words; a fork's times are its own; a prompt with no uuid (a Claude Code file with none) follows the
# turn before it; a Claude Code result only quoting an interruption completed; Codex's injected
# context no message, its calls named inside a function object; 18: Claude Code's cache writes kept an
# hour counted apart (priced at their own rate); 19: the web searches a message ran (priced apiece);
# 20: what the adapters read more of (Continue's usage in snake_case, OpenCode's parts' models, Codex's
# developer messages no message and a turn stopped a line, cursor-agent's project under a folder of
# punctuation, Gemini CLI's subagents' titles, Kimi Code's turns, compactions, undos and subagents'
# plans, pi's compaction, Claude Code's forked subagents); 21: what the adapters read more of (Copilot
# CLI's tokens once a session and model, each model's at its own rate, its cache writes apart, a reply
# priced at the model in use, its auto model, `!` commands and compactions, a file read in pieces as
# one read;
# Codex's rollback of every turn and Gemini CLI's rewind to the start as undos, Codex's
# token_usage_record; Gemini CLI's session context no message and no compaction, its Windows folder's
# casing and a folder from its context; cursor-agent's start times, its chat's meta.json kept; Aider's
# leading blank line no session; Cline's image count in words), and an undo's first withdrawn message
# refreshed by the replay
BUSY_TIMEOUT_MS = 5000
# Source files pulled from a sync hub (core.ingest.sync) are named under this root, then their machine: no
# file of this machine's own, never opened, never "gone" (their records are all the archive has)
MIRROR_ROOT = "/threadloom-sync"
MIRROR_LIKE = MIRROR_ROOT + "/%"
# Written in every threadloom database's header (PRAGMA application_id: "TLOM"), so that a file that
# is not one (another app's SQLite file, an agent's own database) is refused before anything is changed
APPLICATION_ID = 0x544C4F4D
# the tables by which a threadloom database written before it carried APPLICATION_ID is known
OWN_TABLES = {"entries", "source_files"}
PAGE_SIZE = 16384

# every derived table (core.store.derived keeps the list, with how each kind is kept up to date)
DERIVED_TABLES = derived.TABLES
# Set (to the schema version it came from) by an upgrade that emptied the derived tables, cleared
# once `core.ingest.pipeline.rebuild_pending` has replayed the stored records into them: the replay takes
# a minute at 1 GB, so opening a database never does it.
REBUILD_KEY = "derived_rebuild_from"

# agent_messages is a view over entries so message text is stored once (entries.content) while
# seed 000's queries (`SELECT * FROM agent_messages WHERE session_id = ? ORDER BY sequence`) work.
MESSAGES_VIEW = """
CREATE VIEW IF NOT EXISTS agent_messages AS
SELECT
    COALESCE(e.uuid, 'entry-' || e.id) AS id,
    e.session_id AS session_id,
    e.role AS role,
    COALESCE(e.content, '') AS content,
    e.seq AS sequence,
    e.timestamp AS timestamp,
    NULL AS checkpoint_id,
    CASE WHEN s.is_agentic THEN 1 ELSE 0 END AS is_agentic,
    0 AS is_plan_execution,
    NULL AS context_json,
    NULL AS cursor_rules_json,
    CAST(e.raw AS TEXT) AS metadata_json,
    e.id AS entry_id,
    e.entry_type AS entry_type,
    e.model AS model,
    e.turn_id AS turn_id,
    e.is_meta AS is_meta,
    e.thinking AS thinking
FROM entries e LEFT JOIN agent_sessions s ON s.id = e.session_id
WHERE e.seq IS NOT NULL
"""


# The record types that name a session; the ledger finds them through the partial index below
# (a session of 20,000 records otherwise has every row read to find its one title).
TITLE_TYPES_SQL = "('custom-title', 'custom-title-file', 'ai-title', 'agent-name')"

# Indexes added after schema 8 without a rebuild: plain SQL, created when missing on every open
# for writing (a no-op once they exist; the first open of a large ledger builds them once).
LATE_INDEXES = (
    f"CREATE INDEX IF NOT EXISTS ix_entries_titles ON entries (session_id) WHERE entry_type IN {TITLE_TYPES_SQL}",
    # what the project list reads, so listing projects scans this (~0.8 MB at 7,000 sessions)
    # rather than the sessions table with its prompts (~8 MB): the first thing a launch draws
    "CREATE INDEX IF NOT EXISTS ix_sessions_listing ON agent_sessions "
    "(project_path, is_subagent, message_count, ended_at, created_at, source, project, "
    "input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd, unpriced_messages)",
    # a page of a session's messages finds its calls without scanning the session's (models.py)
    "CREATE INDEX IF NOT EXISTS ix_tool_calls_session_entry ON agent_tool_calls (session_id, entry_id)",
    # what an open of a session reads of its undos (`browse.withdrawn_seqs`): a few rows, where
    # the session's were all read to find none (Codex's and Gemini's too write them now)
    "CREATE INDEX IF NOT EXISTS ix_entries_undo ON entries (session_id) WHERE subtype = 'undo'",
)


# Added after schema 12 without a rebuild, created when missing on every open for writing.
# A file rewritten (edited, truncated, emptied, replaced) keeps what it held: its records that the
# new version no longer holds move to a source_files row of kind 'version' (status 'superseded'),
# and this table says which file it was a version of, when it was superseded, and the version's
# records in file order (entry ids, 8 bytes each: some still in the current file, unchanged).
SOURCE_VERSIONS_DDL = """CREATE TABLE IF NOT EXISTS source_versions (
	version_file_id INTEGER NOT NULL,
	source_file_id INTEGER NOT NULL,
	superseded_at INTEGER NOT NULL,
	records INTEGER NOT NULL,
	removed INTEGER NOT NULL,
	entry_ids BLOB NOT NULL,
	sessions VARCHAR NOT NULL,
	PRIMARY KEY (version_file_id),
	FOREIGN KEY(version_file_id) REFERENCES source_files (id),
	FOREIGN KEY(source_file_id) REFERENCES source_files (id)
)"""
# How far each ingest had read each file, and when: `restore --as-of` and `show --as-of` cut a file
# that only grew since at what the archive held then (a rewrite's versions say the rest). One row a
# file an ingest read; an archive from before it has none, and such a file is written whole.
SOURCE_READS_DDL = """CREATE TABLE IF NOT EXISTS source_reads (
	source_file_id INTEGER NOT NULL,
	read_at INTEGER NOT NULL,
	bytes INTEGER NOT NULL,
	PRIMARY KEY (source_file_id, read_at)
) WITHOUT ROWID"""
# Work on sessions that a run committed but had not finished when it stopped (a kill, a crash): the
# cross-file facts (`finalize`: titles, totals, links; `summaries`: a summary record came) and the
# signals. Marked in the transaction that changed the sessions, cleared in the one that finishes them,
# so the next run finishes what a killed one left (the stats keep their own, `stats_pending`).
DERIVED_PENDING_DDL = """CREATE TABLE IF NOT EXISTS derived_pending (
	kind VARCHAR NOT NULL,
	session_id VARCHAR NOT NULL,
	PRIMARY KEY (kind, session_id)
)"""
# Where the last signals pass could cut each session, and what it knew of the records before the cut
# (core.insight.signals): the next pass reads the session from there, so an append costs what it adds. A
# replay of a session re-places its records and drops its row (core.store.derived.CHECKPOINTS).
SIGNALS_STATE_DDL = """CREATE TABLE IF NOT EXISTS signals_state (
	session_id VARCHAR NOT NULL,
	cut INTEGER NOT NULL,
	cut_entry INTEGER NOT NULL,
	seen_id INTEGER NOT NULL,
	format VARCHAR NOT NULL,
	carry BLOB NOT NULL,
	PRIMARY KEY (session_id)
)"""
# The prompts before each session's cut that a repeat would join (core.insight.signals._PromptGroups), by
# the hash of their normalized text: a pass looks up the texts sent past the cut, not every prompt.
SIGNALS_PROMPTS_DDL = """CREATE TABLE IF NOT EXISTS signals_prompts (
	session_id VARCHAR NOT NULL,
	"key" INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	entry_id INTEGER NOT NULL,
	turn_id VARCHAR,
	replies INTEGER NOT NULL,
	PRIMARY KEY (session_id, "key", seq)
) WITHOUT ROWID"""
# The sessions and projects the user hid from the lists (core.actions.hidden): user data, not derived from
# the records, so a rebuild keeps it as it keeps the remembered --source folders (USER_DATA).
HIDDEN_DDL = """CREATE TABLE IF NOT EXISTS hidden (
	kind VARCHAR NOT NULL,
	"key" VARCHAR NOT NULL,
	hidden_at INTEGER,
	PRIMARY KEY (kind, "key")
)"""
# What this archive pushed to a sync hub and pulled from it (core.ingest.sync): its state, not derived from
# the records; a pulled source file's machine and person are read from sync_pulled.
SYNC_DDL = (
    """CREATE TABLE IF NOT EXISTS sync_pushed (
	hub VARCHAR NOT NULL,
	source_file_id INTEGER NOT NULL,
	hub_source_id INTEGER NOT NULL,
	generation INTEGER NOT NULL,
	items INTEGER NOT NULL,
	end_offset INTEGER NOT NULL,
	digest VARCHAR NOT NULL,
	content_hash VARCHAR,
	bytes_ingested INTEGER NOT NULL,
	redacted INTEGER NOT NULL,
	PRIMARY KEY (hub, source_file_id)
)""",
    """CREATE TABLE IF NOT EXISTS sync_pulled (
	hub VARCHAR NOT NULL,
	hub_source_id INTEGER NOT NULL,
	source_file_id INTEGER NOT NULL,
	machine VARCHAR NOT NULL,
	who VARCHAR,
	generation INTEGER NOT NULL,
	items INTEGER NOT NULL,
	end_offset INTEGER NOT NULL,
	digest VARCHAR NOT NULL,
	redacted INTEGER NOT NULL,
	PRIMARY KEY (hub, hub_source_id)
)""",
    "CREATE INDEX IF NOT EXISTS ix_sync_pulled_file ON sync_pulled (source_file_id)",
    # the user-data rows (SHARED_TABLES) this archive pushed or pulled, by the hash of their values
    """CREATE TABLE IF NOT EXISTS sync_rows (
	hub VARCHAR NOT NULL,
	tbl VARCHAR NOT NULL,
	row_hash VARCHAR NOT NULL,
	PRIMARY KEY (hub, tbl, row_hash)
) WITHOUT ROWID""",
)
# Each turn as an episode (core.insight.episodes): what it touched, where it sits, and its embedding
# (core.base.embed; NULL until computed: what an ingest leaves NULL, killed or after a model change, the
# next one embeds). Derived: a replay of a session drops its rows (core.store.derived.CHECKPOINTS).
EPISODES_DDL = """CREATE TABLE IF NOT EXISTS episodes (
	turn_id VARCHAR NOT NULL,
	session_id VARCHAR NOT NULL,
	first_seq INTEGER NOT NULL,
	last_seq INTEGER NOT NULL,
	started_at INTEGER,
	prompt_entry INTEGER,
	answer_entry INTEGER,
	files VARCHAR NOT NULL,
	commands VARCHAR NOT NULL,
	errors VARCHAR NOT NULL,
	tools VARCHAR NOT NULL,
	subagents VARCHAR NOT NULL,
	vector BLOB,
	PRIMARY KEY (turn_id, session_id)
)"""
LATE_TABLES = (
    DERIVED_PENDING_DDL,
    SIGNALS_STATE_DDL,
    SIGNALS_PROMPTS_DDL,
    SOURCE_VERSIONS_DDL,
    "CREATE INDEX IF NOT EXISTS ix_source_versions_file ON source_versions (source_file_id)",
    SOURCE_READS_DDL,
    HIDDEN_DDL,
    EPISODES_DDL,
    "CREATE INDEX IF NOT EXISTS ix_episodes_session ON episodes (session_id, first_seq)",
    "CREATE INDEX IF NOT EXISTS ix_episodes_unembedded ON episodes (session_id) WHERE vector IS NULL",
    # after: and before: in a search by meaning (the turns of a date range without reading them all)
    "CREATE INDEX IF NOT EXISTS ix_episodes_started ON episodes (started_at)",
    # what people and agents write (core.store.memory_tables): user data, kept by a rebuild as `hidden` is
    *memory_tables.DDL,
    *SYNC_DDL,
)
# (table, column, type): columns added after schema 12 without a rebuild
LATE_COLUMNS = (
    ("source_files", "ctime_ns", "INTEGER"),
    ("stats_pending", "since_bucket", "INTEGER"),
    *memory_tables.LATE_COLUMNS,
)
# indexes on those columns, made once they are there
LATE_COLUMN_INDEXES = memory_tables.LATE_INDEXES


def _mark_own(conn: sqlite3.Connection) -> None:
    if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # refuse_foreign let it in: it is ours


def _late_parts_due(conn: sqlite3.Connection) -> bool:
    """Whether the mark, a late table, column or index is missing (read only: a launch pays a few
    lookups, and writes, under the writer lock, only when something is due)."""
    if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        return True
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    wanted = {
        ddl.split(" IF NOT EXISTS ")[1].split()[0]
        for ddl in (*LATE_TABLES, *LATE_INDEXES, *LATE_COLUMN_INDEXES)
    }
    if not wanted <= names:
        return True
    return any(
        column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for table, column, _ in LATE_COLUMNS
    )


def _add_late_parts(conn: sqlite3.Connection) -> None:
    """The tables and columns newer than the schema version, where missing (cheap when present)."""
    for ddl in LATE_TABLES:
        conn.execute(ddl)
    for table, column, kind in LATE_COLUMNS:
        if column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    for ddl in LATE_COLUMN_INDEXES:
        conn.execute(ddl)


class LedgerError(RuntimeError):
    """A problem with the database that the user can act on; the message says how."""


def default_db_path() -> Path:
    """`$THREADLOOM_DB`, else `threadloom.db` in the platform's user data directory."""
    env = os.environ.get("THREADLOOM_DB")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("threadloom", appauthor=False)) / "threadloom.db"


def _apply_pragmas(conn: sqlite3.Connection, *, readonly: bool = False) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not readonly:  # a reader keeps the writer's journal mode (a first load runs without one)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        # checkpoint the WAL every 64 MB rather than every 4 MB: a bulk ingest spends a third of
        # its time in checkpoints otherwise (measured on 100 MB: 12.3 s -> 9.2 s)
        conn.execute("PRAGMA wal_autocheckpoint = 16384")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("PRAGMA temp_store = MEMORY")


def _secure_file(path: Path) -> None:
    """Transcripts hold secrets: the database and its WAL are readable by the owner only. A file
    the user made read-only (no write bit) is theirs to keep as it is: never changed."""
    for p in (path, Path(str(path) + "-wal"), Path(str(path) + "-shm")):
        try:
            mode = stat.S_IMODE(os.stat(p).st_mode)
            if mode & 0o222 and mode & 0o077:
                os.chmod(p, 0o600)
        except OSError:
            pass


def _is_read_only(path: Path, mode: int) -> bool:
    """Made read-only by its owner (no write bit, which root's writes would not notice) or not
    writable by this user."""
    return not mode & 0o222 or not os.access(path, os.W_OK)


def check_writable(db_path: Path) -> None:
    """Refuse, before anything is changed, a database that cannot be written: a read-only file,
    a folder that cannot be written (SQLite keeps its journal beside the database), a folder
    given as the file."""
    try:
        st = os.stat(db_path)
    except FileNotFoundError:
        return  # a new database: creating it says what is wrong with its folder
    except OSError as exc:
        raise LedgerError(cannot_use(db_path, exc)) from exc
    if stat.S_ISDIR(st.st_mode):
        raise LedgerError(_folder_given(db_path))
    if hasattr(os, "statvfs") and os.statvfs(db_path).f_flag & os.ST_RDONLY:
        raise LedgerError(
            f"The database {db_path} is on a read-only file system: it can be read (sessions, show, "
            "search, …) but not added to. To ingest, pass --db a file on a writable disk."
        )
    if _is_read_only(db_path, st.st_mode):
        raise LedgerError(
            f"The database {db_path} is read-only ({stat.filemode(st.st_mode)}), so threadloom leaves it as "
            f"it is. Reading it works as it is (sessions, show, search, …); to add to it, make it writable "
            f"(chmod u+w {shlex.quote(str(db_path))}) or pass --db another file."
        )
    for side in (Path(str(db_path) + "-wal"), Path(str(db_path) + "-shm")):
        if side.exists() and not os.access(side, os.W_OK):
            raise LedgerError(
                f"{side} (SQLite's file beside the database {db_path.name}) cannot be written: make it "
                f"writable (chmod u+w {shlex.quote(str(side))}) or pass --db another file."
            )
    folder = db_path.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise LedgerError(
            f"The folder {folder} cannot be written, and SQLite keeps the database's journal beside it: "
            f"{db_path} can be read (sessions, show, search, …) but not added to. Make the folder writable, "
            "or pass --db a file in a folder you can write."
        )


def _folder_given(db_path: Path) -> str:
    return (
        f"{db_path} is a folder, not a database file: pass --db a file path "
        f"(such as {db_path / 'threadloom.db'})."
    )


def cannot_use(
    path: Path,
    exc: OSError,
    *,
    what: str = "the database",
    fix: str = "pass --db a path in a folder you can write (or set $THREADLOOM_DB)",
) -> str:
    """An OSError on `path` in one line: what happened, and what to do about it."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"No space left to write {what} {path} (the disk or your quota is full): free some space and run it again."
    if isinstance(exc, (FileExistsError, NotADirectoryError)) or exc.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = next(
            (p for p in (path, *path.parents) if p.exists() and not p.is_dir()), Path(exc.filename or path)
        )
        reason = f"{blocker} is a file, not a folder"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        reason = f"permission denied on {exc.filename or path}"
    elif exc.errno == errno.EROFS:
        reason = f"{exc.filename or path} is on a read-only file system"
    elif exc.errno == errno.EISDIR:
        return _folder_given(path)
    elif exc.errno == errno.ENOENT and path.parent.is_dir():
        reason = f"{path.parent} takes no new files ({exc.strerror})"
    else:
        reason = f"{exc.strerror or exc} ({exc.filename or path})"
    return f"Cannot write {what} {path}: {reason}. {fix[:1].upper()}{fix[1:]}."


def connect(path: Path | str | None = None, *, readonly: bool = False) -> sqlite3.Connection:
    """Open (creating if needed) the ledger at `path` with threadloom's pragmas and schema.

    `readonly`: open it as it is, never writing it (the TUI's reader during a first load; see
    `open_for_reading` for the commands that only read)."""
    db_path = Path(path) if path is not None else default_db_path()
    new = False
    if str(db_path) != ":memory:" and not readonly:
        check_writable(db_path)
        _recover_first_load(db_path, readonly=readonly)
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            if not db_path.exists():
                # O_EXCL: a file created meanwhile is never opened here (closing a descriptor of a
                # database drops this process's SQLite locks on it; see `stored_version`)
                try:
                    os.close(os.open(db_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                    new = True
                except FileExistsError:
                    pass
        except OSError as exc:
            raise LedgerError(cannot_use(db_path, exc)) from exc
    try:
        if readonly:
            options = "mode=ro&immutable=1" if _read_as_immutable(db_path) else "mode=ro"
            conn = sqlite3.connect(f"file:{quote(str(db_path))}?{options}", uri=True, check_same_thread=False)
        else:
            conn = sqlite3.connect(db_path, check_same_thread=False)
        conn.isolation_level = None  # explicit BEGIN/COMMIT: one transaction per source file
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        try:
            refuse_foreign(conn, db_path)  # before the first pragma that writes
        except LedgerError:
            conn.close()
            raise
        if new:
            # 16 KiB pages (set before the first table): records of a few KB pack into leaf pages
            # with less waste and fewer overflow pages; 100 MB archive: 255 -> 236 MB of database
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        _apply_pragmas(conn, readonly=readonly)
        if not readonly:
            ensure_schema(conn)
            _secure_file(db_path)
    except sqlite3.DatabaseError as exc:
        raise explain(exc, db_path) from exc
    return conn


def refuse_foreign(conn: sqlite3.Connection, db_path: Path) -> None:
    """Refuse a database that is not threadloom's, having only read it: its header says another
    application, or it holds tables and not threadloom's. An empty file is a new database."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        return
    tables = _table_names(conn)
    if app_id == 0 and (not tables or tables >= OWN_TABLES):
        return  # new, or written by a threadloom from before the mark (given it on its next write)
    what = f"application id {app_id:#x}" if app_id else f"tables such as {', '.join(sorted(tables)[:3])}"
    raise LedgerError(
        f"{db_path} is not a threadloom database ({what}), so threadloom leaves it as it is: pass --db "
        "a threadloom database, or a new file to start one."
    )


def _read_as_immutable(db_path: Path) -> bool:
    """Whether a reader opens this database as an unchanging file (SQLite's `immutable`).

    A reader of a WAL database needs the -wal and -shm files beside it and creates them when
    missing: in a folder it cannot write it fails ("attempt to write a readonly database"), and
    beside a read-only file it leaves them behind, read-only too, in the way of a later ingest.
    When they are missing the file is the whole database, and when it or its folder cannot be
    written nothing changes it (threadloom writes only a writable one): reading it as immutable
    is exact and leaves nothing behind, whatever its journal mode. A -wal holding changes that
    cannot be read is said.

    Decided from stat() alone: the file itself is never opened here (see `stored_version`)."""
    wal, shm = Path(str(db_path) + "-wal"), Path(str(db_path) + "-shm")
    try:
        if shm.exists() or Path(str(db_path) + "-journal").exists():
            return False  # in use (or a hot journal to roll back): SQLite's own locking reads it
        mode = os.stat(db_path).st_mode
    except OSError:
        return False  # SQLite's own open says what is wrong
    folder_writable = os.access(db_path.parent, os.W_OK | os.X_OK)
    if folder_writable and not _is_read_only(db_path, mode):
        return False
    if wal.exists() and wal.stat().st_size > 0:
        if folder_writable:
            return False  # SQLite indexes the changes (a -shm is created) and reads them
        raise LedgerError(
            f"The database {db_path} has changes in {wal.name} not yet merged into it, and its folder "
            f"cannot be written, so they cannot be read. Make the folder writable and run "
            f"`threadloom index --db {shlex.quote(str(db_path))}` once (it merges them and adds nothing), "
            "or copy both files into a folder you can write."
        )
    return True


def open_for_reading(path: Path | str | None = None) -> sqlite3.Connection:
    """The connection of a command that only reads: read-only, so the database is never written
    and its mode never changed, and a read-only file or folder works.

    Falls back to `connect` (which writes) only where a read needs a write first: no database
    yet (it is created, empty), a schema to upgrade or derived tables to rebuild (the caller
    then runs `core.ingest.pipeline.rebuild_pending`), or a first load's marker to look after."""
    db_path = Path(path) if path is not None else default_db_path()
    if str(db_path) == ":memory:" or not db_path.is_file() or Path(str(db_path) + FIRST_LOAD_SUFFIX).exists():
        return connect(db_path)
    conn = connect(db_path, readonly=True)
    try:
        version = user_version(conn)
        due = rebuild_due(conn) if version == SCHEMA_VERSION else None
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise explain(exc, db_path) from exc
    if version == SCHEMA_VERSION and due is None:
        return conn
    conn.close()
    if _is_read_only(db_path, os.stat(db_path).st_mode) or not os.access(db_path.parent, os.W_OK | os.X_OK):
        if version == SCHEMA_VERSION:
            raise LedgerError(
                f"The sessions of the database {db_path} are still to be rebuilt from its stored records "
                "(an upgrade of its layout was not finished). That writes to it, and it is read-only: make it "
                "and its folder writable for one run."
            )
        raise LedgerError(
            f"The database {db_path} has the layout of another threadloom version ({version}; this one "
            f"reads {SCHEMA_VERSION}). Adapting it writes to it, and it is read-only: make it and its "
            "folder writable for one run, or read it with the threadloom version that wrote it."
        )
    return connect(db_path)


FIRST_LOAD_SUFFIX = ".first-load"  # core.ingest.pipeline writes it while a first load runs without a journal
# the markers of the first loads running in this process now (real paths; core.ingest.pipeline keeps it)
LIVE_FIRST_LOADS: set[str] = set()


def _recover_first_load(db_path: Path, *, readonly: bool = False) -> None:
    """A first load that died half-way (its marker outlived it) left a database that may be
    damaged and held nothing else: start it afresh, keeping the remembered --source folders.

    A first load holds the writer lock (core.store.writer_lock) while its marker exists, so a marker
    whose lock is free belongs to a load that is over, whatever became of its process (a pid alone
    could be reused by another program). A reader is let in while a first load runs: the load has
    no journal, but SQLite's locks still show a reader whole transactions only (the TUI browses
    what is in while the rest loads). A reader never starts a database afresh."""
    if readonly:
        return
    marker = Path(str(db_path) + FIRST_LOAD_SUFFIX)
    if not marker.exists():
        return
    from .writer_lock import holder, is_busy

    # A lock held by this very thread (`threadloom ingest` takes it before opening the database)
    # means no one else is loading: the marker is a dead load's, unless it is this process's own.
    if os.path.realpath(marker) in LIVE_FIRST_LOADS or is_busy(db_path):
        raise LedgerError(
            f"The database {db_path} is being filled for the first time by {holder(db_path)}. "
            "Try again when that load has finished (it shows its progress where it was started)."
        )
    kept: dict[str, list[tuple[object, ...]]] = {}
    try:
        old = sqlite3.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True)  # `?`, `#`, `%` in a path
        kept = read_user_data(old)
        old.close()
    except sqlite3.DatabaseError:
        pass
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    marker.unlink(missing_ok=True)
    if any(kept.values()):
        fresh = connect(db_path)
        write_user_data(fresh, kept)
        fresh.close()


def read_user_data(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """The rows of each user-data table (derived.USER_DATA) `conn` holds: what a database started
    afresh (a rebuild, a first load begun again) is given back. A table an older database lacks,
    or cannot read, gives none."""
    out: dict[str, list[tuple[object, ...]]] = {}
    for table, columns in derived.USER_DATA.items():
        try:
            have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            # a column added since (a memory version's global id) reads as NULL, filled in later
            names = ", ".join(f'"{c}"' if c in have else "NULL" for c in columns)
            out[table] = conn.execute(f"SELECT {names} FROM {table}").fetchall() if have else []
        except sqlite3.OperationalError:
            out[table] = []
    try:  # the archive's id: the same archive, started afresh, is the same one to a sync hub
        out["ledger_meta"] = conn.execute(
            "SELECT key, value FROM ledger_meta WHERE key = ?", (ARCHIVE_KEY,)
        ).fetchall()
    except sqlite3.OperationalError:
        out["ledger_meta"] = []
    return out


def write_user_data(conn: sqlite3.Connection, data: dict[str, list[tuple[object, ...]]]) -> None:
    """Put `read_user_data`'s rows into a new database (a row already there is kept)."""
    for table, rows in data.items():
        columns = ("key", "value") if table == "ledger_meta" else derived.USER_DATA.get(table)
        if not columns or not rows:
            continue
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        conn.executemany(f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks})", rows)


# SQLite's primary result codes this module tells apart (exc.sqlite_errorcode & 0xFF)
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR, SQLITE_CORRUPT = 5, 6, 8, 10, 11
SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_FORMAT, SQLITE_NOTADB = 13, 14, 24, 26
DAMAGE_WORDS = ("malformed", "not a database", "corrupt", "could not decode", "disk i/o error")


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _full_disk(exc: BaseException) -> BaseException | None:
    """The full disk in the chain, if any: what went wrong after it (a rollback with no journal,
    a savepoint gone, a page left half-written) is its consequence, not the cause to tell."""
    return next(
        (
            e
            for e in _chain(exc)
            if _code(e) == SQLITE_FULL
            or "database or disk is full" in str(e)
            or (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT))
        ),
        None,
    )


def is_disk_full(exc: BaseException) -> bool:
    return _full_disk(exc) is not None


def is_damage(exc: BaseException) -> bool:
    """A read that failed because the file's bytes are not what SQLite (or UTF-8) expects."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    text = str(exc).lower()
    return _code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_FORMAT, SQLITE_IOERR) or any(
        word in text for word in DAMAGE_WORDS
    )


def _said(exc: BaseException) -> str:
    """SQLite's message, short and printable: a text that failed to decode is left out (it is
    the damaged bytes themselves)."""
    text = re.sub(r" with text '.*", "", str(exc), flags=re.S)
    if isinstance(exc, UnicodeDecodeError):
        text = f"stored text is not valid UTF-8 ({exc.reason})"
    from ..base.text import printable

    text = printable(" ".join(text.split()))
    return text if len(text) <= 160 else text[:159] + "…"


def not_a_database(db_path: Path) -> LedgerError | None:
    """A note or a log given as --db, said as such (not as damage, with no rebuild that would move
    it aside); None when the file is not text (damage leaves binary bytes)."""
    start = _text_start(db_path)
    if start is None:
        return None
    return LedgerError(
        f"{db_path} is not a threadloom database (a text file: {start!r}), so threadloom leaves it as it "
        "is: pass --db a threadloom database, or a new file to start one."
    )


def _text_start(db_path: Path) -> str | None:
    """The first words of a file SQLite found no database in, when it is text (UTF-8, no NUL) and
    so never was one; None for anything else. Read only once SQLite has said it is no database:
    nothing of SQLite's holds a lock on it then."""
    try:
        with open(db_path, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    if not head or b"\0" in head or head.startswith(b"SQLite format 3"):
        return None
    try:
        words = head.decode("utf-8", errors="strict" if len(head) < 512 else "ignore")
    except UnicodeDecodeError:
        return None
    from ..base.text import printable

    return printable(" ".join(words.split()))[:40]


def damaged(db_path: Path, detail: str) -> LedgerError:
    rebuild = f"threadloom ingest --rebuild --db {shlex.quote(str(db_path))}"
    return LedgerError(
        f"The database {db_path} is damaged ({detail}). Your agents' own files are untouched: run "
        f"`{rebuild}` to rebuild it from them and from what it can still read."
    )


def damage_found(db_path: Path) -> str | None:
    """What SQLite's own check finds wrong with the database, or None when it finds nothing.

    For an error no reading code expects (a number read back as text, a row an index names but
    the table lacks): run then, on that rare path, it tells damage from a bug in threadloom."""
    try:
        conn = connect(db_path, readonly=True)
        try:
            found = conn.execute("PRAGMA quick_check(1)").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return _said(exc)
    except LedgerError:
        return None
    from ..base.text import printable

    return None if found is None or found[0] == "ok" else printable(" ".join(str(found[0]).split()))[:160]


def explain(exc: BaseException, db_path: Path) -> LedgerError:
    """A database error (at any point of a command, not only when opening) as what the user can
    do about it."""
    text = _said(exc)
    rebuild = f"threadloom ingest --rebuild --db {shlex.quote(str(db_path))}"
    full = _full_disk(exc)
    if full is not None:
        return LedgerError(
            f"The disk holding the database {db_path} is full ({_said(full)}). Free some space and run the "
            "command again: what was stored before is kept, and a first load starts over."
        )
    code = _code(exc)
    if code in (SQLITE_BUSY, SQLITE_LOCKED) or "locked" in text or "busy" in text:
        return LedgerError(
            f"The database {db_path} is locked by another process (waited {BUSY_TIMEOUT_MS / 1000:.0f} s). "
            "Close the other threadloom, or pass --db to use another file."
        )
    if code == SQLITE_READONLY or "readonly database" in text:
        return LedgerError(
            f"The database {db_path} cannot be written ({text}): make it and its folder writable, "
            "or pass --db another file."
        )
    if is_damage(exc):
        text_file = not_a_database(db_path) if "not a database" in text else None
        return text_file or damaged(db_path, text)
    if code == SQLITE_CANTOPEN:
        return LedgerError(
            f"Cannot open the database {db_path} ({text}): check that it, its folder and the -wal and -shm "
            "files beside it can be read, or pass --db another file."
        )
    return LedgerError(
        f"The database {db_path} could not be used ({text}). If this keeps happening it may be damaged: "
        f"`{rebuild}` rebuilds it from your agents' own files and what it can still read."
    )


def user_version(conn: sqlite3.Connection) -> int:
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    return version


def _table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}


def stored_version(path: Path | str) -> int | None:
    """The schema version of the database at `path`, read without writing (None: no database
    yet, or not one threadloom can read). A version other than SCHEMA_VERSION means the next
    writable `connect` upgrades the tables and leaves the derived ones to be rebuilt (see
    `upgrade_due`).

    Read through SQLite, never with open(): POSIX locks belong to the process, so closing any
    descriptor of the database file drops the locks every connection of this process holds on it
    (another process then checkpoints, or writes, under a reader or writer here: the database is
    destroyed). SQLite keeps such descriptors open until its last connection to the file closes.
    With no WAL content the file is read as immutable, which creates nothing beside it."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        conn = peek(path)
    except (OSError, sqlite3.DatabaseError):
        return None
    try:
        return user_version(conn)
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def peek(path: Path) -> sqlite3.Connection:
    """A connection that reads the database at `path` and leaves nothing beside it: as immutable
    when no WAL holds changes (a reader of a WAL database otherwise creates -wal and -shm files,
    which it cannot remove), else read-only."""
    wal = Path(f"{path}-wal")
    options = "mode=ro" if wal.exists() and wal.stat().st_size > 0 else "mode=ro&immutable=1"
    return sqlite3.connect(f"file:{quote(str(path))}?{options}", uri=True)


def rebuild_due(conn: sqlite3.Connection) -> int | None:
    """The schema version whose upgrade left the derived tables empty, waiting for
    `core.ingest.pipeline.rebuild_pending` (None: they are current)."""
    try:
        value = get_meta(conn, REBUILD_KEY)
    except sqlite3.OperationalError:  # no ledger_meta: a database no upgrade has touched
        return None
    if value is None:
        return None
    return int(value) if value.isdigit() else 0


def upgrade_due(path: Path | str) -> int | None:
    """Whether opening the database at `path` leaves its sessions to be rebuilt from its stored
    records (a minute at 1 GB): the version it was written at, else None. Read without writing,
    so a caller can say so, or hand the work to a worker, before it opens the database."""
    version = stored_version(path)
    if not version:
        return None
    if version != SCHEMA_VERSION:
        return version
    try:
        conn = connect(path, readonly=True)
    except (LedgerError, sqlite3.DatabaseError):
        return None
    try:
        return rebuild_due(conn)
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def ensure_schema(conn: sqlite3.Connection) -> str | None:
    """Create or upgrade the schema, quickly: an upgrade empties the derived tables and records
    that they must be rebuilt (`rebuild_due`), which `core.ingest.pipeline.rebuild_pending` does later,
    with progress, rather than this on whatever thread opened the database. Returns a message
    when a rebuild is due."""
    version = user_version(conn)
    if version == SCHEMA_VERSION:
        if not _late_parts_due(conn):
            return None
        from .writer_lock import WriterBusy, writer_lock

        try:  # the one writer does it; a connection opened while another writes leaves it to that one
            with writer_lock(conn, wait=False):
                _mark_own(conn)
                _add_late_parts(conn)
                for ddl in LATE_INDEXES:
                    conn.execute(ddl)
        except WriterBusy:
            pass
        return None
    _mark_own(conn)
    existing = _table_names(conn)
    if version == 0 and not existing:
        _create_fresh(conn)
        return None
    had_entries = "entries" in existing and version != 0
    _create_tables(conn, drop_derived=had_entries, rebuild_from=version if had_entries else None)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    if had_entries:
        return (
            f"The database schema changed (version {version} → {SCHEMA_VERSION}); "
            "sessions, turns and tool calls are to be rebuilt from the stored records."
        )
    return None


# A new ledger is created from this file rather than from the SQLModel classes: importing
# SQLModel and SQLAlchemy to compile the same DDL cost a first launch ~0.5 s. The file is generated
# from the classes (`python -m threadloom.core.store.db`) and a test fails when the two disagree.
SCHEMA_FILE = Path(__file__).with_name("schema.sql")
SCHEMA_HEADER = "-- threadloom ledger schema {version}, generated from core/store/models.py by `python -m threadloom.core.store.db`; do not edit\n"


def fresh_schema() -> str:
    """Every statement that creates a new ledger, compiled from the SQLModel classes."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect
    from sqlalchemy.schema import CreateIndex, CreateTable
    from sqlmodel import SQLModel

    from . import models

    dialect = sqlite_dialect.dialect()
    statements = []
    for table in SQLModel.metadata.sorted_tables:
        statements.append(str(CreateTable(table).compile(dialect=dialect)).strip())
        for index in sorted(table.indexes, key=lambda i: i.name or ""):
            statements.append(str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
    for index in models.SECONDARY_INDEXES:
        statements.append(str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
    statements += [*LATE_TABLES, *LATE_COLUMN_INDEXES, *LATE_INDEXES, MESSAGES_VIEW.strip(), *SEARCH_DDL]
    text = "".join(f"\n{s};\n" for s in statements)
    return SCHEMA_HEADER.format(version=SCHEMA_VERSION) + "\n".join(
        line.rstrip() for line in text.split("\n")
    )


def _create_fresh(conn: sqlite3.Connection) -> None:
    """An empty database gets the schema from schema.sql in one transaction."""
    script = SCHEMA_FILE.read_text()
    if not script.startswith(SCHEMA_HEADER.format(version=SCHEMA_VERSION)):
        script = fresh_schema()  # a stale file (a checkout that bumped the schema): compile it
    conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;")


def _create_tables(conn: sqlite3.Connection, *, drop_derived: bool, rebuild_from: int | None = None) -> None:
    """Emit SQLModel's DDL through sqlite3 (no engine needed) plus the view and indexes.

    `rebuild_from`: the version being upgraded from, recorded (with the new version) in the same
    transaction as the emptied derived tables, so a crash never leaves them empty unnoticed."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect
    from sqlalchemy.schema import CreateIndex, CreateTable
    from sqlmodel import SQLModel

    from . import models, search_index

    dialect = sqlite_dialect.dialect()
    with transaction(conn):
        conn.execute("DROP VIEW IF EXISTS agent_messages")
        existing = _table_names(conn)
        for (old_index,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'ix_%'"
        ).fetchall():
            conn.execute(f"DROP INDEX IF EXISTS {old_index}")  # recreated below from the current schema
        if drop_derived:
            for name in DERIVED_TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {name}")
            existing -= set(DERIVED_TABLES)
        if "entries" in existing:
            columns = [r[1] for r in conn.execute("PRAGMA table_info(entries)")]
            if columns and columns[-1] != "raw":
                _move_raw_last(conn, models, dialect)
        for table in SQLModel.metadata.sorted_tables:
            if table.name in existing:
                # entries/source_files survive; add columns a newer schema introduced
                have = {r[1] for r in conn.execute(f"PRAGMA table_info({table.name})")}
                for col in table.columns:
                    if col.name not in have:
                        coltype = col.type.compile(dialect=dialect)
                        conn.execute(f"ALTER TABLE {table.name} ADD COLUMN {col.name} {coltype}")
                continue
            conn.execute(str(CreateTable(table).compile(dialect=dialect)))
            for index in table.indexes:
                conn.execute(str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
        for index in models.SECONDARY_INDEXES:
            conn.execute(str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
        _add_late_parts(conn)
        for ddl in LATE_INDEXES:
            conn.execute(ddl)
        conn.execute(MESSAGES_VIEW)
        search_index.recreate(conn)
        if rebuild_from is not None:
            _rename_sessions(conn, rebuild_from)
            set_meta(conn, REBUILD_KEY, str(rebuild_from))
            # a folder unchanged since its snapshot offers only the files read before: a newer
            # version's readers may take files an older one passed over (kept now, not before), so
            # each root is walked whole once more
            conn.execute("DELETE FROM ledger_meta WHERE key LIKE 'roots:%'")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _renamed_aider(conn: sqlite3.Connection) -> dict[str, str]:
    from ..adapters.aider import renamed_tags

    return renamed_tags(conn)


# schema version: what gives the session-id prefixes renamed by the upgrade to it, old to new (the
# sessions themselves are derived, and rebuilt; what people wrote on them is not, and follows)
RENAMED_SESSIONS: dict[int, Callable[[sqlite3.Connection], dict[str, str]]] = {14: _renamed_aider}


def _rename_sessions(conn: sqlite3.Connection, upgraded_from: int) -> None:
    """The user data written on sessions whose ids an upgrade from `upgraded_from` changes, renamed
    in the upgrade's own transaction (from the stored records: the derived tables are empty now)."""
    for version, renamed in sorted(RENAMED_SESSIONS.items()):
        if upgraded_from < version:
            memory_tables.rename_sessions(conn, renamed(conn))


def _move_raw_last(conn: sqlite3.Connection, models: ModuleType, dialect: Dialect) -> None:
    """Rebuild `entries` with `raw` as its last column (same ids, so the search index stays valid)."""
    from sqlalchemy.schema import CreateTable

    old_columns = {r[1] for r in conn.execute("PRAGMA table_info(entries)")}
    table = models.Entry.__table__
    keep = [c.name for c in table.columns if c.name in old_columns]
    conn.execute("ALTER TABLE entries RENAME TO entries_old")
    conn.execute(str(CreateTable(table).compile(dialect=dialect)))
    names = ", ".join(keep)
    conn.execute(f"INSERT INTO entries ({names}) SELECT {names} FROM entries_old")
    conn.execute("DROP TABLE entries_old")


def chunked(items: list[T], size: int = 500) -> Iterable[list[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


if __name__ == "__main__":
    SCHEMA_FILE.write_text(fresh_schema())
    print(f"wrote {SCHEMA_FILE}")


MACHINE_KEY = "sync:machine"


WHO_KEY = "sync:who"  # the hub role this archive syncs as
# this archive's own id (random, made at its first sync): a hub tells two archives syncing under one
# machine name apart by it. A copy of the archive (a backup restored) and a rebuild keep it.
ARCHIVE_KEY = "sync:archive"
