"""Costs that follow the change, not the archive (issue 33): what the faster paths give is what the
whole computation gives."""

from __future__ import annotations

import random
import sqlite3

from threadloom.core.browse import abandoned_turns, branches


def _tree(conn: sqlite3.Connection, session_id: str, rng: random.Random, turns: int, rewinds: float) -> None:
    """A turn tree as the ledger stores it: each turn continues the one before, or (a rewind)
    an earlier one."""
    ids: list[str] = []
    for i in range(turns):
        parent = (rng.choice(ids[-8:]) if rng.random() < rewinds else ids[-1]) if ids else None
        tid = f"{session_id}-t{i}"
        conn.execute(
            "INSERT INTO agent_turns (id, session_id, parent_turn_id, query_message_ids, sequence) "
            "VALUES (?, ?, ?, '[]', ?)",
            (tid, session_id, parent, i),
        )
        ids.append(tid)


def _from_branches(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, list[str]]]:
    """The abandoned turns as the dead ends found them from every branch listed whole."""
    found = branches(conn, session_id)
    if not found:
        return []
    kept = set(next(b for b in found if b.active).turn_ids)
    seen: set[str] = set()
    out = []
    for branch in found:
        if branch.active:
            continue
        turns = [t for t in branch.turn_ids if t not in kept and t not in seen]
        seen.update(turns)
        if turns:
            out.append((branch.number, turns))
    return out


def test_abandoned_turns_are_those_the_whole_branches_give(conn):
    rng = random.Random(33)
    for n, (turns, rewinds) in enumerate([(1, 0.0), (5, 0.0), (40, 0.2), (300, 0.05), (200, 0.6)]):
        session_id = f"s{n}"
        _tree(conn, session_id, rng, turns, rewinds)
        assert abandoned_turns(conn, session_id) == _from_branches(conn, session_id), session_id
    assert abandoned_turns(conn, "s3")  # the random trees did fork
