"""The memory's tables (tags, notes, bookmarks, knowledge entries, their versions, relations and
conflicts) and the rules for what is stored in them; core.insight.memory reads and writes them."""

from __future__ import annotations

import sqlite3

from .sql import like_text

# What the tables hold: the kinds of marks and entries, their scopes, what a mark or relation
# points at, how two things relate
MARK_KINDS = ("tag", "note", "bookmark")
TARGET_TYPES = ("session", "turn", "message", "entry")
ENTRY_KINDS = ("decision", "fact", "guideline", "reference")
SCOPES = ("global", "project", "session")
RELATIONS = ("related_to", "continues", "supersedes", "forked_from")

# The tables (created when missing on every open for writing: core.store.db.LATE_TABLES)
MARKS_DDL = """CREATE TABLE IF NOT EXISTS memory_marks (
	kind VARCHAR NOT NULL,
	target_type VARCHAR NOT NULL,
	target_id VARCHAR NOT NULL,
	value VARCHAR NOT NULL,
	session_id VARCHAR,
	uuid VARCHAR,
	author VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (kind, target_type, target_id, value)
)"""


ENTRIES_DDL = """CREATE TABLE IF NOT EXISTS memory_entries (
	id VARCHAR NOT NULL,
	kind VARCHAR NOT NULL,
	scope VARCHAR NOT NULL,
	scope_key VARCHAR NOT NULL,
	title VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	created_by VARCHAR NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (scope, scope_key, title)
)"""


VERSIONS_DDL = """CREATE TABLE IF NOT EXISTS memory_versions (
	entry_id VARCHAR NOT NULL,
	version INTEGER NOT NULL,
	content VARCHAR NOT NULL,
	reason VARCHAR,
	author VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	conflict INTEGER NOT NULL DEFAULT 0,
	vid VARCHAR,
	PRIMARY KEY (entry_id, version)
)"""


RELATIONS_DDL = """CREATE TABLE IF NOT EXISTS memory_relations (
	source_type VARCHAR NOT NULL,
	source_id VARCHAR NOT NULL,
	relation VARCHAR NOT NULL,
	target_type VARCHAR NOT NULL,
	target_id VARCHAR NOT NULL,
	author VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (source_type, source_id, relation, target_type, target_id)
)"""


CONFLICTS_DDL = """CREATE TABLE IF NOT EXISTS memory_conflicts (
	entry_id VARCHAR NOT NULL,
	version_a INTEGER NOT NULL,
	version_b INTEGER NOT NULL,
	detected_at INTEGER NOT NULL,
	resolved_at INTEGER,
	resolved_by VARCHAR,
	resolution VARCHAR,
	PRIMARY KEY (entry_id, version_b)
)"""


DDL = (MARKS_DDL, ENTRIES_DDL, VERSIONS_DDL, RELATIONS_DDL, CONFLICTS_DDL)


# A version's id, the same on every machine (`version_id`): how a sync tells a version it has from
# one it lacks. Added to archives that had memory before sync moved it (core.store.db adds the column;
# `ensure_version_ids` fills it in).
LATE_COLUMNS = (("memory_versions", "vid", "VARCHAR"),)


LATE_INDEXES = ("CREATE UNIQUE INDEX IF NOT EXISTS ix_memory_versions_vid ON memory_versions (vid)",)


# table: its columns, for core.store.derived.USER_DATA (kept by a rebuild) and the JSON export
TABLES: dict[str, tuple[str, ...]] = {
    "memory_marks": (
        "kind",
        "target_type",
        "target_id",
        "value",
        "session_id",
        "uuid",
        "author",
        "created_at",
    ),
    "memory_entries": ("id", "kind", "scope", "scope_key", "title", "created_at", "created_by"),
    "memory_versions": (
        "entry_id",
        "version",
        "content",
        "reason",
        "author",
        "created_at",
        "conflict",
        "vid",
    ),
    "memory_relations": (
        "source_type",
        "source_id",
        "relation",
        "target_type",
        "target_id",
        "author",
        "created_at",
    ),
    "memory_conflicts": (
        "entry_id",
        "version_a",
        "version_b",
        "detected_at",
        "resolved_at",
        "resolved_by",
        "resolution",
    ),
}


class MemoryRefused(ValueError):
    """A memory request that cannot be done as asked; the message says why and what to give."""


def clean_tag(name: str) -> str:
    """A tag as stored: trimmed, lower case, inner spaces as '-' (what `tag:NAME` finds)."""
    cleaned = "-".join(name.strip().lower().split())
    if not cleaned:
        raise MemoryRefused("a tag needs a name")
    if len(cleaned) > 64:
        raise MemoryRefused(f"a tag is a word or two (64 characters at most), not {len(cleaned)}")
    return cleaned


# where user data names a session (its id, or `<id>#<seq>` for a place in it): table, column, and the
# condition that says the column holds one
_SESSION_COLUMNS = (
    ("memory_marks", "target_id", "target_type IN ('session', 'turn', 'message')"),
    ("memory_marks", "session_id", "1"),
    ("memory_marks", "uuid", "1"),  # a message's uuid, which Aider makes of its session's id
    ("memory_entries", "scope_key", "scope = 'session'"),
    ("memory_relations", "source_id", "source_type IN ('session', 'turn', 'message')"),
    ("memory_relations", "target_id", "target_type IN ('session', 'turn', 'message')"),
    ("hidden", '"key"', "kind = 'session'"),
)


def rename_sessions(conn: sqlite3.Connection, prefixes: dict[str, str]) -> int:
    """Make what people wrote on sessions follow their new ids (in the caller's transaction): each
    id starting with an old prefix gets the new one instead (an adapter that names its sessions
    otherwise now: Aider's, core.adapters.aider.renamed_tags). A row whose renamed twin is there
    already is the same mark twice: the old one goes. Returns the rows renamed."""
    renamed = 0
    for old, new in prefixes.items():
        pattern = like_text(old) + "%"
        for table, column, holds in _SESSION_COLUMNS:
            where = f"{column} LIKE ? ESCAPE '\\' AND {holds}"
            try:
                renamed += conn.execute(
                    f"UPDATE OR IGNORE {table} SET {column} = ? || substr({column}, ?) WHERE {where}",
                    (new, len(old) + 1, pattern),
                ).rowcount
            except sqlite3.OperationalError as exc:
                if missing_table(exc):
                    continue
                raise
            if table != "memory_entries":  # an entry of that title there already keeps its own id
                conn.execute(f"DELETE FROM {table} WHERE {where}", (pattern,))
    return renamed


def missing_table(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)
