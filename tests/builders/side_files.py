"""A Claude Code home whose session has side files: a tool's saved output, a file's copy, a plan."""

from __future__ import annotations

from pathlib import Path

from tests.builders.claude import Transcript, tool_use

SID = "51de0000-1111-4222-8333-000000000001"


SLUG = "brave-dancing-otter"  # the session's three random words: its plan file's name


PROJECT = "-home-dev-app"


# a tool output of 1.9 MB, with bytes that are not UTF-8 and lines ending in CR LF
# (and a coloured line, an escape sequence a terminal would act on)
BIG_OUTPUT = b"\x1b[31mFAILED\x1b[0m first try\x1b]0;owned\x07\r\n" + b"".join(
    b"line %d of the build log \xff\xfe\r\n" % i for i in range(60_000)
)


BACKUP = bytes(range(256)) * 40  # a binary file's copy before an edit


def claude_home(root: Path) -> dict[str, bytes]:
    """A Claude Code configuration folder with one session and every kind of side file; returns
    each file's path (relative to `root`) and bytes."""
    session_dir = root / "projects" / PROJECT / SID
    saved = session_dir / "tool-results" / "toolu_big.txt"
    t = Transcript(root / "projects" / PROJECT / f"{SID}.jsonl", SID, slug=SLUG)
    t.user("plan the release, then run the full build and show me the log")
    t.assistant(None, tools=[tool_use("plan1", "ExitPlanMode", plan="# Plan\n\n1. build\n2. ship\n")])
    t.tool_result("plan1", "User has approved your plan. You can now start coding.")
    t.assistant(None, tools=[tool_use("toolu_big", "Bash", command="make all")])
    preview = (
        "<persisted-output>\nOutput too large (1.9MB). Full output saved to: "
        f"{saved}\n\nPreview (first 2KB):\nline 0 of the build log\n...\n</persisted-output>"
    )
    t.tool_result("toolu_big", preview)
    t.assistant("The build passed.")
    t.write()
    sub = Transcript(session_dir / "subagents" / "agent-a1.jsonl", SID, isSidechain=True, agentId="a1")
    sub.user("check the lockfile", parent=False)
    sub.assistant("It is consistent.")
    sub.write()
    files = {
        saved: BIG_OUTPUT,
        session_dir / "subagents" / "agent-a1.meta.json": b'{"agentType": "general-purpose"}',
        root / "file-history" / SID / "3f2a9c@v1": BACKUP,
        root / "file-history" / SID / "3f2a9c@v2": BACKUP[::-1],
        root / "file-history" / SID / "77e0d1@v1": b"",  # a file that was empty before its edit
        root / "todos" / f"{SID}-agent-{SID}.json": b'[{"content": "build", "status": "completed"}]',
        root / "plans" / "brave-dancing-otter.md": b"# Plan\n\n1. build\n2. ship\n",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    every = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return {str(p.relative_to(root)): data for p, data in every.items()}
