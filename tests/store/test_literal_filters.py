"""What a person types in a filter is matched as written: a project, session or agent named with
SQL's LIKE wildcards (`%`, `_`) or its escape (`\\`) finds itself, not every name that pattern fits."""

from __future__ import annotations

from pathlib import Path

from threadloom.core.insight import stats
from threadloom.core.read.query import list_sessions
from threadloom.core.read.search import search

from tests.builders.claude import Transcript
from tests.support import ingest

PROJECTS = ("p%x", "pABx", "p_y", "pZy", "b\\s", "bXs")


def archive(root: Path) -> Path:
    for n, name in enumerate(PROJECTS):
        sid = f"11111111-2222-4333-8444-{n:012d}"
        t = Transcript(root / "projects" / f"-srv-{n}" / f"{sid}.jsonl", sid, cwd=f"/srv/{name}")
        t.user(f"wombat number {n}")
        t.assistant("done", usage={"input_tokens": 10, "output_tokens": 5})
        t.write()
    return root / "projects"


def test_project_filters_match_the_name_as_written(conn, tmp_path):
    ingest(conn, archive(tmp_path))
    for name in PROJECTS:
        assert [s.project for s in list_sessions(conn, project=name)] == [name], name
        found = {hit.project for hit in search(conn, f"wombat project:{name}").hits}
        assert found == {name}, name
        assert [row.sessions for row in stats.report(conn, "total", project=name)] == [1], name
    # a part of a path still finds what holds it
    assert {s.project for s in list_sessions(conn, project="srv/p")} == {"p%x", "pABx", "p_y", "pZy"}


def test_session_and_agent_filters_match_prefixes_as_written(conn, tmp_path):
    ingest(conn, archive(tmp_path))
    assert {h.session_id[-1] for h in search(conn, "wombat session:11111111-2222-4333-8444-00000000000").hits} == {
        "0", "1", "2", "3", "4", "5"
    }  # fmt: skip
    assert search(conn, "wombat session:11111111_2222").hits == []  # `_` is no wildcard
    assert len(search(conn, "wombat agent:claude").hits) == 6
    assert search(conn, "wombat agent:cl_ude").hits == []


def test_machine_and_person_filters_match_names_with_wildcard_characters(conn, tmp_path):
    """This archive's own sessions are its machine's and its person's: a name holding `_` (a login
    like `john_doe`) finds them, and the `_` is no wildcard."""
    from threadloom.core.store.db import MACHINE_KEY, WHO_KEY
    from threadloom.core.store.sql import set_meta

    ingest(conn, archive(tmp_path))
    set_meta(conn, WHO_KEY, "john_doe")
    set_meta(conn, MACHINE_KEY, "lap_top")
    assert len(list_sessions(conn, who="john_doe")) == len(PROJECTS)
    assert len(list_sessions(conn, who="john_")) == len(PROJECTS)  # a prefix
    assert list_sessions(conn, who="johnXdoe") == []
    assert len(list_sessions(conn, machine="lap_top")) == len(PROJECTS)
    assert list_sessions(conn, machine="lapXtop") == []
