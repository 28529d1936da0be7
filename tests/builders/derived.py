"""Sessions with every kind of derived data (titles, costs, the stats' sums, signals, changed lines,
episodes), and the derived tables read for comparing: a run killed midway and finished by the next
one against a clean run (tests/store/test_crash.py, tests/cli/test_sync_cli.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.builders.claude import Transcript, tool_use


def sessions_into(projects: Path, first: int, count: int) -> None:
    """Sessions with what the derived data is made of: a title record, prompts, usage, a failing
    tool call retried (a signal), an edit (changed lines)."""
    for n in range(first, first + count):
        sid = f"cccccccc-1111-4222-8333-{n:012d}"
        t = Transcript(projects / f"-srv-app{n % 3}" / f"{sid}.jsonl", sid, cwd=f"/srv/app{n % 3}")
        t.user(f"fix the flaky test number {n}")
        for attempt in range(3):
            t.assistant(
                "running it",
                tools=[tool_use(f"tb{n}-{attempt}", "Bash", command="pytest -x tests/test_flaky.py")],
                msg_id=f"msg_{n}_{attempt}",
                usage={"input_tokens": 100 + n, "output_tokens": 20 + attempt},
            )
            t.tool_result(f"tb{n}-{attempt}", "FAILED tests/test_flaky.py::test_it", is_error=True)
        t.assistant(
            "editing",
            tools=[tool_use(f"te{n}", "Edit", file_path="/srv/app/x.py", old_string="a\nb", new_string="c")],
            msg_id=f"msg_{n}_edit",
            usage={"input_tokens": 300, "output_tokens": 40},
        )
        t.tool_result(f"te{n}", "ok")
        t.add({"type": "custom-title", "customTitle": f"Session {n} titled"})
        t.write()


DERIVED = {
    "sessions": "SELECT id, title, title_source, message_count, turn_count, tool_call_count, branch_count, "
    "input_tokens, output_tokens, round(cost_usd, 9), unpriced_messages FROM agent_sessions ORDER BY id",
    "stats": "SELECT session_id, bucket, model, messages, api_messages, input_tokens, output_tokens, "
    "round(cost_usd, 9), tool_calls, failed_tool_calls, lines_added, lines_removed FROM stats_rollup "
    "ORDER BY session_id, bucket, model",
    "signals": "SELECT session_id, name, severity, seq FROM session_signals ORDER BY session_id, name, seq",
    "file changes": "SELECT session_id, call_id, path, lines_added, lines_removed FROM agent_file_changes "
    "ORDER BY session_id, call_id, path",
    # each turn's facets and its vector (a killed run's turns are embedded by the next one)
    "episodes": "SELECT turn_id, session_id, first_seq, last_seq, files, commands, errors, tools, vector "
    "FROM episodes ORDER BY turn_id",
}


def derived(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {name: conn.execute(sql).fetchall() for name, sql in DERIVED.items()}
    finally:
        conn.close()
