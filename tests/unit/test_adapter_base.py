"""Every agent is one `Adapter` subclass that declares what it can do, and nothing outside the
adapters asks an agent's name or probes an adapter with getattr."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import orjson
import pytest
from threadloom.core.actions.fork import STYLES
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import Adapter, ForkError, ImageRef, MessageExtras, RawRecord, ResumeTarget

ROOT = Path(__file__).resolve().parents[2]
ADAPTER_MODULES = sorted((ROOT / "core" / "adapters").glob("*.py"))
UNDO_STYLES = {None, "file-history", "patch-events", "git-commits"}  # the readers core.actions.undo has


def overrides(adapter: Adapter, method: str) -> bool:
    return getattr(type(adapter), method) is not getattr(Adapter, method)


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_every_registered_adapter_implements_the_base(name):
    adapter = ADAPTERS[name]
    assert isinstance(adapter, Adapter) and not inspect.isabstract(type(adapter))
    assert adapter.name == name
    assert adapter.mode in ("lines", "document", "database")
    # what an adapter declares it can do, it implements
    assert (adapter.mode == "database") == overrides(adapter, "read_rows")
    assert adapter.decodes == overrides(adapter, "decode")
    assert adapter.forks_natively == overrides(adapter, "native_fork_commands")
    assert adapter.fork_style is None or adapter.fork_style in STYLES
    assert adapter.undo_style in UNDO_STYLES
    assert adapter.spawn_tools <= adapter.kept_inputs
    assert adapter.display_name and adapter.program


def test_an_agent_without_capabilities_gets_the_base_answers():
    class Plain(Adapter):
        name = "plain"
        mode = "document"

        def default_roots(self):
            return []

        def discover(self, root):
            return iter(())

        def claims(self, path):
            return False

        def normalize(self, rec, ctx):
            raise AssertionError("not read here")

    plain = Plain()
    assert plain.split(b"{}") == [RawRecord(0, 1, b"{}", newline=False)] and plain.split(b"") == []
    assert plain.stat_paths(Path("x")) == [] and plain.decode(Path("x"), b"") is None
    assert not plain.tool_io_in_record and plain.kept_inputs == frozenset()
    with pytest.raises(ForkError, match="threadloom has no resume command for plain sessions"):
        plain.resume_command(ResumeTarget("plain", "s1", "s1", "/tmp"))
    with pytest.raises(ForkError, match="is not made of letters, digits and"):
        plain.checked_id("$(touch pwned)")


def test_the_registry_holds_adapters_only():
    class Toy:  # the four reading methods, a name and a mode, but not the base class
        name = "toy"
        mode = "document"

    with pytest.raises(TypeError, match="Toy is not an Adapter: subclass"):
        ADAPTERS["toy"] = Toy()  # type: ignore[assignment]
    assert "toy" not in ADAPTERS


def test_no_adapter_imports_another_adapters_private_names():
    offenders = []
    for path in ADAPTER_MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "threadloom.core.adapters."
            ):
                offenders += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert offenders == []


def test_nothing_probes_an_adapter_with_getattr():
    offenders = []
    for path in sorted((ROOT / "core").rglob("*.py")) + sorted((ROOT / "tui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and isinstance(node.args[0], (ast.Name, ast.Attribute))  # not a module being imported
                and "adapter" in ast.unparse(node.args[0]).lower()
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_claude_code_records_give_the_viewer_their_events_and_images() -> None:
    claude = ADAPTERS["claude-code"]
    png = "iVBORw0KGgo" * 40  # 440 base64 characters: 330 bytes
    system = orjson.dumps(
        {"type": "system", "level": "error", "retryAttempt": 2, "maxRetries": 10, "uuid": "u1", "other": 1}
    )
    assert claude.message_extras(system, "system") == MessageExtras(
        event={"level": "error", "retryAttempt": 2, "maxRetries": 10}
    )
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    screenshot = orjson.dumps(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    image,
                    {"type": "tool_result", "tool_use_id": "t1", "content": [image, {"type": "text"}]},
                    {"type": "image", "source": "not a dict"},
                ],
            },
        }
    )
    extras = claude.message_extras(screenshot, "user")
    assert extras is not None and extras.images == [
        ImageRef("image/png", 330, "prompt", 0),
        ImageRef("image/png", 330, "tool result", 1, "t1"),
        ImageRef("image", 0, "prompt", 2),
    ]
    assert claude.image_data(screenshot, 1) == ("image/png", png)
    assert claude.image_data(screenshot, 3) is None
    # a user record without images or a compaction flag is not parsed at all; damaged bytes are none
    assert claude.message_extras(b'{"type":"user","message":{"content":"hi"}}', "user") is None
    assert claude.message_extras(b'{"type":"system", "level":', "system") is None
    assert claude.message_extras(b"[1, 2]", "system") is None


@pytest.mark.parametrize("name", [n for n in ADAPTERS if not n.startswith("claude")])
def test_other_agents_records_are_not_read_as_claude_codes(name: str) -> None:
    """A record of another agent that happens to hold Claude Code's field names shows no events."""
    record = b'{"type":"system","level":"error","isCompactSummary":true,"content":[{"type":"image"}]}'
    assert ADAPTERS[name].message_extras(record, "system") is None


def test_gemini_inline_data_images_in_a_prompt_and_a_tool_result() -> None:
    gemini = ADAPTERS["gemini"]
    part = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo" * 4}}
    record = orjson.dumps(
        {
            "id": "m1",
            "type": "gemini",
            "content": [{"text": "see"}, part],
            "toolCalls": [{"id": "call-1", "name": "read_file", "result": [{"text": "x"}, part]}],
        }
    )
    extras = gemini.message_extras(record, None)
    assert extras is not None and extras.images == [
        ImageRef("image/png", 33, "prompt", 0),
        ImageRef("image/png", 33, "tool result", 1, "call-1"),
    ]
    assert gemini.image_data(record, 1) == ("image/png", "iVBORw0KGgo" * 4)
    assert gemini.message_extras(b'{"type":"user","content":[{"text":"hi"}]}', "user") is None
