"""A toy agent added the way a real one is: its adapter (this module) and one line in the registry
(`ADAPTERS["toy"] = ToyAdapter()`, which a test does with monkeypatch). Its tool names are its own
("toy.edit", "toy.run", "toy.spawn"), and so is its edit tool's input: nothing outside its adapter
knows them, so every screen that shows them asks the adapter.

`*.toylog`: one JSON record a line, `{"n": 1, "role": "user", "text": …, "cwd": …}`; an assistant
record may carry `calls` ({id, tool, input}) and a user record `results` ({id, output, ok}). The
file's stem is the session id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from threadloom.core.adapters.base import (
    Adapter,
    Command,
    FileContext,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
)
from threadloom.core.adapters.edits import FileEdit


class ToyAdapter(Adapter):
    name = "toy"
    mode = "lines"
    program = "toyagent"
    id_shape = (re.compile(r"toy-[0-9]+"), "toy- and digits")
    fork_style = "whole-session-resume"
    edit_tools = frozenset({"toy.edit"})
    shell_tools = frozenset({"toy.run"})
    spawn_tools = frozenset({"toy.spawn"})

    def default_roots(self) -> list[Path]:
        return []

    def claims(self, path: Path) -> bool:
        return path.suffix == ".toylog"

    def discover(self, root: Path) -> Iterator[SourceRef]:
        paths = [root] if root.is_file() else sorted(root.rglob("*.toylog"))
        for path in paths:
            if self.claims(path):
                yield SourceRef(path, self.name, "transcript", path.parent.name)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        obj = json.loads(rec.raw)
        sid = ctx.path.stem
        out = Record(
            entry_type=obj["role"],
            role=obj["role"],
            content=obj.get("text"),
            is_message=True,
            is_prompt=obj["role"] == "user" and not obj.get("results"),
            uuid=f"{sid}:{obj['n']}",
            parent_uuid=f"{sid}:{obj['n'] - 1}" if obj["n"] > 1 else None,
            session_id=sid,
            timestamp=1_770_000_000_000 + obj["n"] * 1000,
            cwd=obj.get("cwd"),
            session=SessionInfo(source=self.name, external_id=sid),
        )
        for number, call in enumerate(obj.get("calls", [])):
            out.tool_uses.append(ToolUse(call["id"], call["tool"], json.dumps(call["input"]), number))
        for result in obj.get("results", []):
            status = "completed" if result.get("ok", True) else "failed"
            out.tool_results.append(ToolResult(result["id"], json.dumps(result["output"]), status))
        return out

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """toy.edit gives the whole file before and after: the change is exact."""
        if name != "toy.edit":
            return super().file_edits(name, params, result)
        return [FileEdit(params["file"], name, before=params["was"], after=params["now"])]

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        return Command([self.program, "--continue", self.checked_id(target.external_id)])


def write_toy_session(folder: Path, stem: str, cwd: str) -> Path:
    """A toy session: a prompt, an edit of `app.py` with its result, a shell call, an answer."""
    folder.mkdir(parents=True, exist_ok=True)
    edit = {"file": f"{cwd}/app.py", "was": "x = 1\ny = 2\n", "now": "x = 1\ny = 3\n"}
    lines = [
        {"n": 1, "role": "user", "text": "make y three, the toyneedle", "cwd": cwd},
        {
            "n": 2,
            "role": "assistant",
            "text": "editing",
            "calls": [
                {"id": "c1", "tool": "toy.edit", "input": edit},
                {"id": "c2", "tool": "toy.run", "input": {"command": "pytest -q"}},
            ],
        },
        {
            "n": 3,
            "role": "user",
            "results": [{"id": "c1", "output": "ok"}, {"id": "c2", "output": "1 passed"}],
        },
        {"n": 4, "role": "assistant", "text": "y is three now"},
    ]
    path = folder / f"{stem}.toylog"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
