"""Rows by column name (core.store.rows): dataclasses built from a SELECT by the names of its columns,
never by their order, and single-column reads that refuse a SELECT of more."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import pytest
from threadloom.core.store import rows


@dataclass
class _Pair:
    first: str
    second: int
    third: str = "default"


def test_a_builder_reads_fields_by_column_name_in_any_order() -> None:
    conn = sqlite3.connect(":memory:")
    cursor = conn.execute("SELECT 2 AS second, 'extra' AS other, 'a' AS first")
    build, other = rows.builder(cursor, _Pair), rows.getter(cursor, "other")
    row = cursor.fetchone()
    assert build(row) == _Pair("a", 2) and other(row) == "extra"
    # fields given out of the dataclass's order, one before it left out: by keyword
    cursor = conn.execute("SELECT 'c' AS third, 'a' AS first, 5 AS second")
    assert rows.builder(cursor, _Pair)(cursor.fetchone()) == _Pair("a", 5, "c")


def test_a_builder_refuses_a_query_without_a_required_field() -> None:
    conn = sqlite3.connect(":memory:")
    with pytest.raises(KeyError, match="second"):
        rows.builder(conn.execute("SELECT 'a' AS first"), _Pair)
    with pytest.raises(KeyError, match="nope"):
        rows.getter(conn.execute("SELECT 'a' AS first"), "nope")


def test_values_and_value_take_one_column_only() -> None:
    conn = sqlite3.connect(":memory:")
    assert rows.values(conn, "SELECT 1 UNION SELECT 2") == [1, 2]
    assert rows.value(conn, "SELECT 7") == 7
    assert rows.value(conn, "SELECT 7 WHERE 0") is None
    with pytest.raises(ValueError):
        rows.values(conn, "SELECT 1, 2")
    with pytest.raises(ValueError):
        rows.value(conn, "SELECT 1, 2")
    # the connection's own rows stay tuples: ingest and the ledger read them by position
    assert rows.fetch_one(conn, "SELECT 3 AS n")["n"] == 3
    assert conn.execute("SELECT 3 AS n").fetchone() == (3,)
