"""A tool call whose input is text to read (Claude Code's ExitPlanMode plan, AskUserQuestion's
question) is summarized by its first line and expanded as Markdown, not as a JSON string with
literal `\\n`; Amazon Q's `use_aws` is summarized by its label and `fs_write` by its file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rich.console import Console
from threadloom.core.read.query import messages
from threadloom.tui import render as tui_render

from tests.builders import amazon_q
from tests.builders.claude import Transcript, tool_use
from tests.support import run

PLANNED = "c1000000-0000-4000-8000-0000000000c1"
PLAN = "## Plan: Make Project Installable\n\n### Changes\n1. **Switch to Hatchling**\n2. Fix the entry point"


def ingest(tmp_path: Path) -> str:
    claude = Transcript(tmp_path / "projects" / "-srv-app" / f"{PLANNED}.jsonl", PLANNED, cwd="/srv/app")
    claude.user("Make it installable")
    claude.assistant(
        "A question first.",
        tools=[tool_use("q1", "AskUserQuestion", question="Which way?\n\n1. **A tool**\n2. A library")],
    )
    claude.tool_result("q1", "not available")
    claude.assistant("The plan:", tools=[tool_use("p1", "ExitPlanMode", plan=PLAN)])
    claude.tool_result("p1", "approved")
    claude.write()
    history = [
        [
            amazon_q.prompt("fix the template"),
            amazon_q.tool_use(
                "m1",
                "Looking.",
                ("t1", "use_aws", {"label": "List the Lambda functions", "service_name": "lambda"}),
                (
                    "t2",
                    "fs_write",
                    {"command": "str_replace", "path": "/srv/q/template.yaml", "new_str": "x"},
                ),
            ),
        ],
        [
            amazon_q.results(("t1", "[]", "Success"), ("t2", "ok", "Success")),
            amazon_q.response("m2", "Done."),
        ],
    ]
    amazon_q.save(tmp_path / "q" / "fix.json", amazon_q.state(history))
    db = str(tmp_path / "t.db")
    sources = ("--source", str(tmp_path / "projects"), "--source", str(tmp_path / "q"))
    res = run("ingest", "--db", db, *sources, "--only", "-q")
    assert res.returncode == 0, res.stderr
    return db


def test_a_plan_or_a_question_reads_as_text_and_amazon_q_calls_by_what_they_are(tmp_path: Path) -> None:
    db = ingest(tmp_path)
    shown = run("show", "--db", db, PLANNED[:8])
    assert shown.returncode == 0, shown.stderr
    assert "▸ AskUserQuestion  Which way?  " in shown.stdout
    assert "▸ ExitPlanMode  ## Plan: Make Project Installable  " in shown.stdout
    assert "\\n" not in shown.stdout
    q = run("show", "--db", db, amazon_q.CONV[:8])
    assert "▸ use_aws  List the Lambda functions  " in q.stdout
    assert "▸ fs_write  /srv/q/template.yaml  " in q.stdout and "str_replace" not in q.stdout

    with sqlite3.connect(db) as conn:
        calls = {c.name: c for m in messages(conn, PLANNED) for c in m.tool_calls}
    console = Console(width=80, record=True)
    console.print(tui_render.call_body(calls["ExitPlanMode"], None))
    console.print(tui_render.call_body(calls["AskUserQuestion"], None))
    expanded = console.export_text()
    assert "Plan: Make Project Installable" in expanded and "Switch to Hatchling" in expanded
    assert "Which way?" in expanded and "A tool" in expanded
    assert "\\n" not in expanded and '"plan"' not in expanded and "**" not in expanded  # Markdown drawn
