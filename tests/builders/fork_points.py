"""A Claude Code session with parallel tool calls and a hook, where a fork can and cannot start."""

from __future__ import annotations

from pathlib import Path

from tests.builders.claude import Transcript, tool_use

SID = "a1600000-0000-4000-8000-000000000016"


HOOK = {
    "type": "attachment",
    "attachment": {"type": "hook_success", "hookName": "PostToolUse:Agent", "content": ""},
}


def parallel_session(root: Path, cwd: str) -> Transcript:
    """One prompt whose answer is one API message with three parallel calls, written as Claude Code
    2.1 writes it: a record per block, chained; each result hanging off its own call, in the order the
    calls ended, with a hook's attachment after each; then a text reply, a message of a text and a
    call, a last reply, and a second turn."""
    t = Transcript(root / "-anywhere" / f"{SID}.jsonl", SID, cwd=cwd)
    t.user("research three things")
    t.assistant(thinking="three agents at once", msg_id="m1")
    calls = [
        t.assistant(msg_id="m1", tools=[tool_use(f"t{n}", "Agent", description=f"topic {n}", prompt="go")])
        for n in (1, 2, 3)
    ]
    for n in (3, 1, 2):
        t.tool_result(f"t{n}", f"topic {n} done", parent=calls[n - 1], sourceToolAssistantUUID=calls[n - 1])
        t.add(dict(HOOK))
        t.raw({"type": "last-prompt", "lastPrompt": "research three things", "sessionId": SID})
    t.assistant("All three are done.", msg_id="m2")
    t.assistant("Checking the log.", msg_id="m3")
    t.assistant(msg_id="m3", tools=[tool_use("t4", "Bash", command="git log")])
    t.tool_result("t4", "3 commits")
    t.assistant("Here is the log.", msg_id="m4")
    t.user("thanks, now the summary")
    t.assistant("Summary: three topics.", msg_id="m5")
    t.write()
    return t
