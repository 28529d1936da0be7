"""Costs that follow the change, not the archive (issue 33): what the faster paths give is what the
whole computation gives."""

from __future__ import annotations

import random
import sqlite3

from threadloom.core.read.browse import abandoned_turns, branches


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


def _rich_lines(columns, rows, width: int) -> list[str]:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=width, markup=False, emoji=False, highlight=False, color_system=None)
    table = Table(box=None, pad_edge=False)
    for c in columns:
        table.add_column(
            c.name,
            overflow="ellipsis",
            no_wrap=True,
            min_width=c.min_width,
            max_width=c.max_width,
            justify="right" if c.right else "left",
        )
    for row in rows:
        table.add_row(*row)
    with console.capture() as captured:
        console.print(table)
    return [line.rstrip() for line in captured.get().splitlines()]


def test_the_sessions_table_is_drawn_as_rich_draws_it():
    from threadloom.core.base.text import TableColumn, text_table

    rng = random.Random(7)
    alphabet = "abc def ghi-_/.0123456789" + "éü" + "漢字カナ" + "…"
    columns = [
        TableColumn("id", min_width=6),
        TableColumn("when", min_width=4),
        TableColumn("title", max_width=30),
        TableColumn("msgs", right=True, min_width=5),
        TableColumn("model", max_width=12),
    ]
    longest = (13, 12, 45, 5, 20)  # what each column's cells run to
    rows = [
        tuple("".join(rng.choice(alphabet) for _ in range(rng.randint(0, n))) for n in longest)
        for _ in range(60)
    ]
    for width in (120, 1000):
        assert text_table(columns, rows, width) == _rich_lines(columns, rows, width), width
    assert text_table(columns, rows, 40) is None  # too narrow: Rich squeezes the columns, the caller asks it


def test_trimmed_lines_are_those_of_the_whole_output_however_it_is_written():
    import io

    from threadloom.core.cli.show import _TrimmedLines

    rng = random.Random(3)
    pieces = ["ab  ", "\n", "\r", "\r\n", "  x", "\x0c", "é ", "\u2028", " ", "\n\n", "tail  "]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        out = io.StringIO()
        lines = _TrimmedLines(out)
        at = 0
        while at < len(text):  # written in chunks that cut anywhere, "\r\n" too
            step = rng.randint(1, 5)
            lines.write(text[at : at + step])
            at += step
        lines.close()
        assert out.getvalue() == "".join(line.rstrip() + "\n" for line in text.splitlines()), repr(text)


def test_show_reads_a_long_session_a_page_at_a_time_and_prints_the_same(conn, tmp_path, monkeypatch):
    import io

    from rich.console import Console
    from threadloom.core.present.render import render_session
    from threadloom.core.read import query
    from threadloom.core.read.query import resolve_session

    from tests.builders.claude import Transcript, tool_use
    from tests.support import ingest

    sid = "33333333-aaaa-4bbb-8ccc-000000000033"
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    for i in range(40):
        t.user(f"step {i}: **fix** the `thing`")
        t.assistant(None, tools=[tool_use(f"b{i}", "Bash", command=f"make test{i}")])
        t.tool_result(f"b{i}", "ok" if i % 3 else "Error: failed", is_error=not i % 3)
        t.assistant(f"Done with step {i}.\n\n```python\nprint({i})\n```")
    t.write()
    ingest(conn, tmp_path / "projects")
    session = resolve_session(conn, sid)

    def shown() -> str:
        console = Console(width=80, file=io.StringIO(), highlight=False, color_system=None)
        with console.capture() as captured:
            render_session(console, conn, session)
        return captured.get()

    whole = shown()
    monkeypatch.setattr(query, "FIRST_PAGE", 3)
    paged = list(query.message_pages(conn, sid, size=7))
    assert len(paged) > 10 and [m.seq for p in paged for m in p] == [m.seq for m in query.messages(conn, sid)]
    monkeypatch.setattr(query, "SHOWN_PAGE", 7)
    assert shown() == whole and "print(39)" in whole


def test_dead_ends_of_a_session_rewound_often_grown_a_line_at_a_time_are_those_of_one_read(conn, tmp_path):
    """Branches rewound from at several depths, one inside another, each costly: after every
    append the signals and the stats' sums are what a database that read the same bytes at once has."""
    from tests.builders.signals import EXPENSIVE, SID, read_at_once, relative_to_root, stored, transcript
    from tests.support import ingest

    t = transcript(tmp_path)
    forks = []
    for i in range(12):
        t.user(f"try approach {i}", **({"parent": forks[-3]} if i % 4 == 3 and len(forks) >= 3 else {}))
        forks.append(t.assistant(f"Approach {i} done.", usage=EXPENSIVE, msg_id=f"msg_{i}"))
    t.write()
    root = tmp_path / "projects"
    main = next(root.rglob(f"{SID}.jsonl"))
    lines = main.read_bytes().splitlines(keepends=True)
    whole = read_at_once(tmp_path, {main.relative_to(root): b"".join(lines)}, "once-whole")
    assert sum(s[0] == "abandoned-branch" for s in whole[SID][:-4]) >= 2
    for count in range(1, len(lines) + 1):
        main.write_bytes(b"".join(lines[:count]))
        ingest(conn, root)
        once = read_at_once(tmp_path, {main.relative_to(root): b"".join(lines[:count])}, f"once-{count}")
        assert relative_to_root(stored(conn), root) == once, count


def test_code_left_unlexed_for_a_pipe_reads_as_the_lexed_code():
    """`show` piped shows no colours, so its code is not lexed: the text must be the lexer's."""
    from threadloom.core.present.markdown import highlight

    codes = [
        "def f(x):\r\n    return x  # done\r\n",
        '\ufefffn main() {\r    println!("hi");\r}\n\n\n',
        "SELECT *\tFROM t WHERE a = 'it''s';  \n",
        "  indented\n\n  lines\n",
        "",
        "x = 1\n" * 30,
    ]
    for language in ("python", "rust", "sql", "bash", "json", "nosuchlanguage", ""):
        for code in codes:
            for lines in (None, 3):
                coloured = highlight(code, language, "monokai", lines)
                assert highlight(code, language, None, lines).plain == coloured.plain, (language, code, lines)


BUILT = """
import sys
from pathlib import Path
from threadloom.core.adapters import ADAPTERS
from threadloom.core.ingest.update import update
report = update(Path(sys.argv[1]), [Path(sys.argv[2])], include_defaults=False, remember=False, index=False)
print(report.records_added, " ".join(sorted(ADAPTERS._built)))
"""


def test_an_append_and_a_run_with_nothing_new_build_only_their_agents_adapter(tmp_path):
    """Each agent's adapter is a module to import (all of them: 17 ms, a sixth of one appended
    line): a run that walks no folder, and whose derived data is only its sessions' agents', builds
    no other agent's. A first walk asks every agent whose files they are."""
    import subprocess
    import sys

    from tests.builders.claude import Transcript

    sid = "c0575111-1111-4222-8333-000000000c01"
    transcript = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    transcript.user("add the retry")
    transcript.assistant("done", usage={"input_tokens": 10, "output_tokens": 5})
    transcript.write()

    def built() -> tuple[int, list[str]]:
        argv = [sys.executable, "-c", BUILT, str(tmp_path / "t.db"), str(tmp_path / "projects")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        added, *names = done.stdout.split()
        return int(added), names

    added, names = built()
    assert added == 2 and len(names) > 10  # the first walk: every agent is asked whose the files are
    assert built() == (0, ["claude-code"])  # nothing new
    transcript.user("and log it")
    transcript.assistant("logged", usage={"input_tokens": 12, "output_tokens": 6})
    transcript.write()  # appended to: the folder's listing is unchanged
    assert built() == (2, ["claude-code"])


LOADED = """
import sys
from threadloom.tui.entry import main
sys.argv = ["threadloom", *sys.argv[1:]]
try:
    main()
finally:
    watched = ("threadloom.core.insight.memory", "threadloom.core.base.markup", "difflib", "textual", "rich")
    print("\\nloaded:", " ".join(m for m in watched if m in sys.modules), file=sys.stderr)
"""


def test_a_run_with_nothing_new_imports_nothing_it_does_not_use(tmp_path):
    """Each `threadloom` run pays for the modules it imports (the memory's: 8 ms; the markup's
    parser: 6 ms, a tenth of a run with nothing new together): those load where they are used."""
    import subprocess
    import sys

    from tests.builders.claude import Transcript, tool_use

    sid = "c0575111-1111-4222-8333-000000000c02"
    transcript = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    transcript.user("add the retry")
    edit = tool_use("tu1", "Edit", file_path="/srv/app/retry.py", old_string="a = 1", new_string="a = 2")
    transcript.assistant("changing it", tools=[edit])
    transcript.tool_result("tu1", "The file /srv/app/retry.py has been updated.")
    transcript.write()
    db = str(tmp_path / "t.db")

    def loaded(*words: str) -> set[str]:
        done = subprocess.run(
            [sys.executable, "-c", LOADED, *words], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return set(done.stderr.rsplit("loaded:", 1)[1].split())

    ingest = ("--db", db, "ingest", "--only", "--source", str(tmp_path / "projects"))
    assert "threadloom.core.base.markup" in loaded(*ingest)  # the first run reads the prompt's text
    assert loaded(*ingest) == set()  # nothing new
    assert loaded("--db", db, "memory", "list") == {"threadloom.core.insight.memory"}
