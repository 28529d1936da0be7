"""OpenHands conversations: `events/` one JSON event a file, beside `base_state.json`."""

from __future__ import annotations

import json
from pathlib import Path

SID = "5d2f0c9e8a7b4c1d9e3f2a1b0c9d8e7f"


CWD = "/home/dev/shop"


def _call(n: int, tool: str, call_id: str, args: dict, thought: str = "") -> dict:
    return {
        "kind": "ActionEvent",
        "id": f"00000000-0000-4000-8000-00000000000{n}",
        "timestamp": f"2026-03-02T10:00:0{n}.000000",
        "source": "agent",
        "thought": [{"type": "text", "text": thought}] if thought else [],
        "action": {"kind": "X", **args},
        "tool_name": tool,
        "tool_call_id": call_id,
        "tool_call": {"id": call_id, "name": tool, "arguments": json.dumps(args), "origin": "completion"},
        "llm_response_id": "chatcmpl-1",
        "security_risk": "LOW",
    }


def openhands_conversation(root: Path) -> Path:
    folder = root / ".openhands" / "conversations" / SID
    (folder / "events").mkdir(parents=True)
    (folder / "base_state.json").write_text(
        json.dumps(
            {
                "id": "5d2f0c9e-8a7b-4c1d-9e3f-2a1b0c9d8e7f",
                "agent": {"kind": "Agent", "llm": {"model": "litellm_proxy/claude-sonnet-4-5"}},
                "workspace": {"kind": "LocalWorkspace", "working_dir": CWD},
                "persistence_dir": str(folder),
                "execution_status": "finished",
                "stats": {
                    "usage_to_metrics": {
                        "agent": {
                            "model_name": "litellm_proxy/claude-sonnet-4-5",
                            "accumulated_cost": 0.25,
                            "accumulated_token_usage": {
                                "prompt_tokens": 1200,
                                "completion_tokens": 80,
                                "cache_read_tokens": 900,
                                "cache_write_tokens": 30,
                            },
                        }
                    }
                },
            }
        )
    )
    edit = {
        "command": "str_replace",
        "path": f"{CWD}/cart.py",
        "old_str": "total = None",
        "new_str": "total = 0",
    }
    events = [
        {
            "kind": "SystemPromptEvent",
            "id": "00000000-0000-4000-8000-000000000000",
            "timestamp": "2026-03-02T10:00:00.000000",
            "source": "agent",
            "system_prompt": {"type": "text", "text": "You are OpenHands agent"},
            "tools": [],
        },
        {
            "kind": "MessageEvent",
            "id": "00000000-0000-4000-8000-000000000001",
            "timestamp": "2026-03-02T10:00:01.000000",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "fix the cart total"}]},
            "activated_skills": [],
        },
        _call(2, "file_editor", "toolu_1", edit, "Fixing it."),
        _call(3, "terminal", "toolu_2", {"command": "rm -rf build"}),
        _call(4, "file_editor", "toolu_3", {"command": "view", "path": f"{CWD}/x.py"}),
        {
            "kind": "ObservationEvent",
            "id": "00000000-0000-4000-8000-000000000005",
            "timestamp": "2026-03-02T10:00:05.000000",
            "source": "environment",
            "tool_name": "file_editor",
            "tool_call_id": "toolu_1",
            "observation": {
                "kind": "FileEditorObservation",
                "content": [{"type": "text", "text": "The file was edited"}],
                "is_error": False,
            },
            "action_id": "00000000-0000-4000-8000-000000000002",
        },
        {
            "kind": "UserRejectObservation",
            "id": "00000000-0000-4000-8000-000000000006",
            "timestamp": "2026-03-02T10:00:06.000000",
            "source": "environment",
            "tool_name": "terminal",
            "tool_call_id": "toolu_2",
            "rejection_reason": "not that",
            "action_id": "00000000-0000-4000-8000-000000000003",
        },
        {
            "kind": "AgentErrorEvent",
            "id": "00000000-0000-4000-8000-000000000007",
            "timestamp": "2026-03-02T10:00:07.000000",
            "source": "agent",
            "tool_name": "file_editor",
            "tool_call_id": "toolu_3",
            "error": "no such file",
        },
        {
            "kind": "MessageEvent",
            "id": "00000000-0000-4000-8000-000000000008",
            "timestamp": "2026-03-02T10:00:08.000000",
            "source": "agent",
            "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            "llm_response_id": "chatcmpl-2",
        },
        {
            "kind": "SomethingNewEvent",
            "id": "00000000-0000-4000-8000-000000000009",
            "timestamp": "2026-03-02T10:00:09.000000",
            "source": "environment",
        },
    ]
    for index, event in enumerate(events):
        name = f"event-{index:05d}-{event['id']}.json"
        (folder / "events" / name).write_text(json.dumps(event, separators=(",", ":")))
    (folder / "events" / ".eventlog.lock").write_text("")
    return folder


APP_SID = "2a4c6e8f0b1d3f5a7c9e1b3d5f7a9c0e"


APP_CWD = "/workspace/shop"


def _app_call(n: int, action: str, function: str, args: dict, response: str) -> dict:
    return {
        "id": n,
        "timestamp": f"2025-10-06T21:34:0{n}.000000",
        "source": "agent",
        "message": f"Running {action}",
        "action": action,
        "tool_call_metadata": {
            "function_name": function,
            "tool_call_id": "toolu_01",  # the model's ids repeat from one reply to the next
            "model_response": {"id": response, "model": "deepseek/deepseek-v3.2-exp", "usage": {}},
            "total_calls_in_response": 1,
        },
        "args": args,
    }


def _app_observation(n: int, cause: int, observation: str, content: str, **extra) -> dict:
    return {
        "id": n,
        "timestamp": f"2025-10-06T21:34:0{n}.500000",
        "source": "agent",
        "message": content,
        "cause": cause,
        "observation": observation,
        "content": content,
        **extra,
    }


def openhands_app_session(root: Path) -> Path:
    """A conversation of the 0.x app's file store (`sessions/<id>/`), as its GUI kept them in 2025."""
    folder = root / ".openhands" / "sessions" / APP_SID
    (folder / "events").mkdir(parents=True)
    (folder / "event_cache").mkdir()
    metadata = {
        "conversation_id": APP_SID,
        "selected_repository": "dev/shop",
        "selected_branch": "main",
        "git_provider": "github",
        "title": "Cart total fix",
        "last_updated_at": "2025-10-06T21:35:00.000000Z",
        "trigger": "gui",
        "created_at": "2025-10-06T21:33:00.000000Z",
        "llm_model": None,
        "accumulated_cost": 0.0,
        "prompt_tokens": 5000,
        "completion_tokens": 300,
        "total_tokens": 5300,
    }
    (folder / "metadata.json").write_text(json.dumps(metadata))
    state = {"agent_state": "running", "reason": ""}
    edit = {
        "command": "str_replace",
        "path": f"{APP_CWD}/cart.py",
        "old_str": "total = None",
        "new_str": "total = 0",
    }
    events = [
        {
            "id": 0,
            "timestamp": "2025-10-06T21:33:00.1",
            "source": "environment",
            "message": "",
            "observation": "agent_state_changed",
            "content": "",
            "extras": state,
        },
        # a system prompt of many kilobytes: its `action` comes after the first 4 KB of the file
        {
            "id": 1,
            "timestamp": "2025-10-06T21:33:01.0",
            "source": "agent",
            "message": "You are OpenHands agent. " * 300,
            "action": "system",
            "args": {"content": "You are OpenHands agent.", "tools": []},
        },
        {
            "id": 2,
            "timestamp": "2025-10-06T21:33:02.0",
            "source": "user",
            "message": "fix the cart total",
            "action": "message",
            "args": {"content": "fix the cart total", "image_urls": [], "wait_for_response": False},
        },
        {
            "id": 3,
            "timestamp": "2025-10-06T21:33:03.0",
            "source": "user",
            "message": "Retrieving content",
            "action": "recall",
            "args": {"recall_type": "workspace_context", "query": "fix the cart total"},
        },
        {
            "id": 4,
            "timestamp": "2025-10-06T21:33:04.0",
            "source": "agent",
            "message": "Missing required parameters",
            "observation": "error",
            "content": "Missing required parameters for function 'execute_bash'",
            "extras": {},
        },
        _app_call(
            5, "run", "execute_bash", {"command": "pytest -q", "thought": "Running the tests first."}, "r1"
        ),
        _app_observation(
            6, 5, "run", "1 failed", extras={"metadata": {"exit_code": 1, "working_dir": APP_CWD}}
        ),
        _app_call(7, "edit", "str_replace_editor", {**edit, "thought": ""}, "r2"),
        _app_observation(8, 7, "edit", "The file was edited", extras={"path": f"{APP_CWD}/cart.py"}),
        {
            "id": 9,
            "timestamp": "2025-10-06T21:34:09.0",
            "source": "agent",
            "message": "All done.",
            "action": "finish",
            "args": {"final_thought": "Fixed the total.", "outputs": {}},
        },
    ]
    for event in events:
        (folder / "events" / f"{event['id']}.json").write_text(json.dumps(event))
    (folder / "event_cache" / "0-25.json").write_text(json.dumps(events))
    return folder
