"""Pure parts of the stats: an edit's changed lines per file, a day typed on the command line, and
the Claude adapter's cheap read of a call's input (the same input normalize reads)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from threadloom.core.adapters.base import FileContext, RawRecord
from threadloom.core.adapters.claude import ClaudeAdapter
from threadloom.core.insight import stats


def test_a_patch_that_moves_a_file_counts_under_its_new_name():
    patch = (
        "*** Begin Patch\n*** Update File: old/name.py\n*** Move to: new/name.py\n@@\n-a\n+b\n+c\n"
        "*** Delete File: gone.py\n*** End Patch"
    )
    assert stats.call_line_counts("apply_patch", {"input": patch}, agent="codex") == [
        ("new/name.py", 2, 1),
        ("gone.py", 0, 0),
    ]


def test_a_notebook_edit_and_a_multi_edit():
    assert stats.call_line_counts(
        "NotebookEdit",
        {"notebook_path": "n.ipynb", "old_string": "x", "new_string": "y\nz"},
        agent="claude-code",
    ) == [("n.ipynb", 2, 1)]
    edits = [{"old_string": "a\nb", "new_string": "a\nB"}, {"old_string": "", "new_string": "new"}]
    assert stats.call_line_counts(
        "MultiEdit", {"file_path": "m.py", "edits": edits}, agent="claude-code"
    ) == [("m.py", 2, 1)]
    # a call of no known agent is read by no adapter: a tool's name alone does not say what it does
    assert stats.call_line_counts("MultiEdit", {"file_path": "m.py", "edits": edits}) == []


def test_days_are_local_days():
    now = datetime(2026, 3, 10, 15, 0).timestamp()
    assert stats.parse_day("2026-03-01") == int(datetime(2026, 3, 1).timestamp() * 1000)
    assert stats.parse_day("2026-03-01", end=True) == int(datetime(2026, 3, 2).timestamp() * 1000)
    assert stats.parse_day("yesterday", now=now) == int(datetime(2026, 3, 9).timestamp() * 1000)
    assert stats.parse_day("7d", now=now) == int(datetime(2026, 3, 3).timestamp() * 1000)
    assert stats.parse_day("2w", now=now) == int(datetime(2026, 2, 24).timestamp() * 1000)
    with pytest.raises(ValueError, match="is not a day"):
        stats.parse_day("last tuesday")


def test_claude_reads_a_call_s_input_as_normalize_does():
    record = {
        "type": "assistant",
        "uuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "claude-opus-4-5",
            "content": [
                {"type": "text", "text": "editing"},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}},
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "Edit",
                    "input": {"file_path": "b", "old_string": "x"},
                },
            ],
        },
    }
    adapter = ClaudeAdapter()
    raw = json.dumps(record).encode()
    normalized = adapter.normalize(
        RawRecord(0, 1, raw, True), FileContext(Path("/p/s1.jsonl"), "transcript", None)
    )
    for use in normalized.tool_uses:
        assert adapter.tool_input(record, use.id) == json.loads(use.input_json)
    assert adapter.tool_input(record, "missing") is None
