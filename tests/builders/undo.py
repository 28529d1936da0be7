"""Claude Code edits made in a real folder (`ClaudeWork`), whose undo the tests replay."""

from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

from tests.builders.claude import Transcript, tool_use

SID = "c0de0000-0000-4000-8000-00000000d001"


GIT = shutil.which("git")


def structured_patch(before: str, after: str) -> list[dict]:
    """What Claude Code records as `toolUseResult.structuredPatch`: hunks with 3 lines of context,
    each line without its newline, a "\\ No newline at end of file" row after a last line that has none."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3):
        rows = []
        for tag, i1, i2, j1, j2 in group:
            pairs = (
                [(" ", line) for line in a[i1:i2]]
                if tag == "equal"
                else [("-", line) for line in a[i1:i2]] + [("+", line) for line in b[j1:j2]]
            )
            for op, line in pairs:
                rows.append(op + line.rstrip("\n"))
                if not line.endswith("\n"):
                    rows.append("\\ No newline at end of file")
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        hunks.append(
            {"oldStart": i1 + 1, "oldLines": i2 - i1, "newStart": j1 + 1, "newLines": j2 - j1, "lines": rows}
        )
    return hunks


class ClaudeWork:
    """A Claude Code session that edits files under `cwd`, with toolUseResult as Claude Code writes
    it; `files` follows what is on disk after each edit."""

    def __init__(self, tmp_path: Path, files: dict[str, str], sid: str = SID) -> None:
        self.cwd = tmp_path / "work"
        self.cwd.mkdir()
        self.files: dict[str, str | None] = dict(files)
        self.t = Transcript(tmp_path / "projects" / "-work" / f"{sid}.jsonl", sid, cwd=str(self.cwd))
        self.n = 0

    def _call(self, name: str, params: dict, result: object, text: str = "ok", is_error: bool = False) -> str:
        self.n += 1
        tid = f"toolu_{self.n:03d}"
        self.t.assistant(tools=[tool_use(tid, name, **params)])
        return self.t.tool_result(tid, text, tool_use_result=result, is_error=is_error)

    def edit(
        self, name: str, old: str, new: str, *, original: bool = True, patch: bool = True, result: bool = True
    ) -> None:
        path = str(self.cwd / name)
        before = self.files[name] or ""
        after = before.replace(old, new, 1)
        tur: dict = {
            "filePath": path,
            "oldString": old,
            "newString": new,
            "userModified": False,
            "replaceAll": False,
        }
        if original:
            tur["originalFile"] = before
        if patch:
            tur["structuredPatch"] = structured_patch(before, after)
        self._call("Edit", {"file_path": path, "old_string": old, "new_string": new}, tur if result else None)
        self.files[name] = after

    def multi_edit(self, name: str, edits: list[tuple[str, str]]) -> None:
        path = str(self.cwd / name)
        before = after = self.files[name] or ""
        for old, new in edits:
            after = after.replace(old, new, 1)
        params = {"file_path": path, "edits": [{"old_string": o, "new_string": n} for o, n in edits]}
        self._call(
            "MultiEdit",
            params,
            {
                "filePath": path,
                "edits": params["edits"],
                "originalFileContents": before,
                "structuredPatch": structured_patch(before, after),
                "userModified": False,
            },
        )
        self.files[name] = after

    def write(self, name: str, content: str, *, original: bool = True, patch: bool = True) -> None:
        path = str(self.cwd / name)
        before = self.files.get(name)
        tur: dict = {
            "type": "create" if before is None else "update",
            "filePath": path,
            "content": content,
            "structuredPatch": structured_patch(before, content) if before is not None and patch else [],
        }
        if before is not None and original:
            tur["originalFile"] = before
        self._call("Write", {"file_path": path, "content": content}, tur)
        self.files[name] = content

    def bash(self, command: str) -> None:
        self._call("Bash", {"command": command}, {"stdout": "", "stderr": "", "interrupted": False})

    def snapshot(self) -> dict[str, str | None]:
        return dict(self.files)

    def lay_out(self, files: dict[str, str | None]) -> None:
        """The working tree as the session left it, in a git repository."""
        for name, text in files.items():
            if text is not None:
                (self.cwd / name).parent.mkdir(parents=True, exist_ok=True)
                (self.cwd / name).write_text(text)
        git(self.cwd, "init", "-q")


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([GIT or "git", *args], cwd=cwd, capture_output=True, text=True, check=check)
