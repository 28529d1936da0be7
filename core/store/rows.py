"""Rows by column name for the reading side (query, browse, search, the CLI).

A row read by position breaks silently when a SELECT gains, loses or reorders a column, and a
dataclass built with `Cls(*row)` must list its fields in the SELECT's order. Here a column is
found by its name (`AS` gives it the field's name), so the SELECT and the dataclass can change
apart. Two ways, by cost:

* `fetch` / `fetch_one`: `sqlite3.Row`s, for queries that return a few rows (a session, its
  turns, the projects). Each lookup by name scans the row's column names.
* `builder` / `getter`: for the per-message loops (a page of the viewer, `show` of a 20,000
  message session). The names are matched once per query; a row then costs one `itemgetter`
  and one call, about what the positional build did.

The connection's own row factory is left alone (ingest and the ledger share it and read tuples):
every `sqlite3.Row` here comes from a cursor of its own.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["builder", "fetch", "fetch_one", "getter", "named", "value", "values"]


def named(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor whose rows are `sqlite3.Row` (read by column name), the connection untouched."""
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    return cur


def fetch(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
    """Every row of `sql`, each read by column name."""
    return named(conn).execute(sql, params).fetchall()


def fetch_one(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
    """The first row of `sql` (read by column name), or None when there is none."""
    row: sqlite3.Row | None = named(conn).execute(sql, params).fetchone()
    return row


def values(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """The one column of every row of `sql` (a SELECT of more columns is an error, not a guess)."""
    return [v for (v,) in conn.execute(sql, params)]


def value(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The one column of the first row of `sql`; None when it returns no row."""
    row = conn.execute(sql, params).fetchone()
    if row is None:
        return None
    (v,) = row
    return v


def _columns(cursor: sqlite3.Cursor) -> list[str]:
    if cursor.description is None:
        raise ValueError("the statement returns no columns")
    return [d[0] for d in cursor.description]


def getter(cursor: sqlite3.Cursor, name: str) -> Callable[[Sequence[Any]], Any]:
    """Reads column `name` out of the rows of `cursor` (a plain tuple row, so fast in a loop)."""
    names = _columns(cursor)
    if name not in names:
        raise KeyError(f"the query has no column {name!r} (it has {', '.join(names)})")
    return itemgetter(names.index(name))


def builder(cursor: sqlite3.Cursor, cls: Callable[..., T]) -> Callable[[Sequence[Any]], T]:
    """Builds dataclass `cls` from a row of `cursor`, each field from the column of its name.

    The SELECT names the fields in any order and may hold other columns (read with `getter`);
    a field it leaves out keeps its default. A field without a default and without a column is
    an error here, once, not a wrong value in every row."""
    names = tuple(_columns(cursor))
    key = (cls, names)
    build = _BUILDERS.get(key)
    if build is None:
        build = _BUILDERS[key] = _builder(cls, names)
    return build


# one builder per dataclass and column list: the few queries of the read side ask again and again
_BUILDERS: dict[tuple[Any, tuple[str, ...]], Callable[[Sequence[Any]], Any]] = {}


def _builder(cls: Callable[..., T], names: tuple[str, ...]) -> Callable[[Sequence[Any]], T]:
    fields = [f for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    given = [f.name for f in fields if f.name in names]
    missing = [
        f.name
        for f in fields
        if f.name not in names
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise KeyError(f"the query gives no column for {', '.join(missing)} of {cls.__name__}")
    pick = itemgetter(*(names.index(name) for name in given))
    if len(given) == 1:
        only = given[0]
        return lambda row: cls(**{only: pick(row)})
    if given == [f.name for f in fields[: len(given)]]:
        # the columns are the first fields: positional, the cheapest call (order decided by name above)
        return lambda row: cls(*pick(row))
    return lambda row: cls(**dict(zip(given, pick(row), strict=True)))
