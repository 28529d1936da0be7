"""`threadloom signals`: the sessions with the most signals, and one session's signals with the
records they point at, as text (escaped for the terminal) and as JSON; `signal:` in search."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.builders.claude import Transcript, tool_use
from tests.support import run

LOOPING = "5a9e0001-1111-4222-8333-000000000001"
REFUSED = "5a9e0002-1111-4222-8333-000000000002"
CALM = "5a9e0003-1111-4222-8333-000000000003"


def archive(root: Path) -> Path:
    projects = root / "projects" / "-home-dev-app"
    t = Transcript(projects / f"{LOOPING}.jsonl", LOOPING)
    t.user("run the migration script")
    for i in range(4):
        t.assistant(None, tools=[tool_use(f"m{i}", "Bash", command="./migrate.sh \x1b]0;owned\x07")])
        t.tool_result(f"m{i}", "\x1b[31mError:\x1b[0m database is locked", is_error=True)
    t.user("[Request interrupted by user]")
    t.write()
    t = Transcript(projects / f"{REFUSED}.jsonl", REFUSED)
    t.user("clean the build folder")
    t.assistant(None, tools=[tool_use("r1", "Bash", command="rm -rf build")])
    t.tool_result("r1", "The user doesn't want to proceed with this tool use.", is_error=True)
    t.write()
    t = Transcript(projects / f"{CALM}.jsonl", CALM)
    t.user("what time is it in Tokyo?")
    t.assistant("It is evening there.")
    t.write()
    return root / "projects"


def ingested(tmp_path: Path) -> str:
    db = str(tmp_path / "t.db")
    assert run("--db", db, "ingest", "--only", "--source", str(archive(tmp_path))).returncode == 0
    return db


def test_signals_lists_the_sessions_with_the_most_signals_first(tmp_path):
    db = ingested(tmp_path)
    out = run("--db", db, "signals")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:3] == ["id", "when", "n"]
    rows = [line.split() for line in lines[1:]]
    assert [r[0] for r in rows] == [LOOPING[:13], REFUSED[:13]]  # the calm session has none
    assert "interrupted 1, retry-loop 1" in lines[1]  # most first, then by name and "rejected 1" in lines[2]
    # dated as `sessions` dates them: day, month and time this year (not "01 Mar" or "3m ago")
    assert all(re.fullmatch(r"\d\d [A-Z][a-z]{2} \d\d:\d\d", line[15:27]) for line in lines[1:]), lines

    listed = json.loads(run("--db", db, "signals", "--json").stdout)
    assert [(s["id"], s["signal_count"], s["signals"]) for s in listed] == [
        (LOOPING, 2, {"retry-loop": 1, "interrupted": 1}),
        (REFUSED, 1, {"rejected": 1}),
    ]


def test_signals_of_a_session_show_each_piece_of_evidence_escaped(tmp_path):
    db = ingested(tmp_path)
    out = run("--db", db, "signals", LOOPING[:13])
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "\x1b" not in text and "\x07" not in text
    assert "retry-loop  [medium]  #1  Bash failed 4 times in a row with near-identical input" in text
    evidence = [line.split() for line in text.splitlines() if line.startswith("    #")]
    assert [e[0] for e in evidence] == ["#1", "#3", "#5", "#7", "#9"]  # four calls, then the interruption
    assert all(e[1:3] == ["Bash", "./migrate.sh"] for e in evidence[:4])
    assert "database is locked" in text and "[Request interrupted by user]" in text

    calm = run("--db", db, "signals", CALM[:13])
    assert calm.returncode == 0 and calm.stdout.splitlines()[-1] == "no signals"
    missing = run("--db", db, "signals", "ffffffff")
    assert missing.returncode == 1 and "no session matches" in missing.stderr


def test_signals_json_carries_the_evidence_ids_and_excerpts(tmp_path):
    db = ingested(tmp_path)
    data = json.loads(run("--db", db, "signals", LOOPING, "--json").stdout)
    assert data["id"] == LOOPING
    loop, interrupted = data["signals"]
    assert (loop["name"], interrupted["name"]) == ("retry-loop", "interrupted")
    assert [e["tool_call_id"] for e in loop["evidence"]] == ["m0", "m1", "m2", "m3"]
    assert [e["seq"] for e in loop["evidence"]] == [1, 3, 5, 7]
    assert [e["result_seq"] for e in loop["evidence"]] == [2, 4, 6, 8]
    assert all("database is locked" in e["excerpt"] and "\x1b" not in e["excerpt"] for e in loop["evidence"])
    assert interrupted["evidence"] == [
        {
            "entry_id": interrupted["evidence"][0]["entry_id"],
            "seq": 9,
            "tool_call_id": None,
            "tool": None,
            "result_entry_id": None,
            "result_seq": None,
            "excerpt": "[Request interrupted by user]",
        }
    ]
    shown = json.loads(run("--db", db, "show", LOOPING, "--json").stdout)
    by_seq = {i: m["entry_id"] for i, m in enumerate(shown["messages"])}
    assert [e["entry_id"] for e in loop["evidence"]] == [by_seq[s] for s in (1, 3, 5, 7)]


def test_search_signal_filter_narrows_to_sessions_having_it(tmp_path):
    db = ingested(tmp_path)
    hits = json.loads(run("--db", db, "search", "signal:retry-loop", "--json").stdout)
    assert hits and {h["session_id"] for h in hits} == {LOOPING}
    hits = json.loads(run("--db", db, "search", "signal:rejected", "clean", "--json").stdout)
    assert [h["session_id"] for h in hits] == [REFUSED]
    assert json.loads(run("--db", db, "search", "signal:rejected", "migration", "--json").stdout) == []
    assert json.loads(run("--db", db, "search", "signal:long-pause", "--json").stdout) == []
