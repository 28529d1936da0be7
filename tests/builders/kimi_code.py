"""Kimi Code session folders: `state.json` and one `agents/<agent>/wire.jsonl` per agent."""

from __future__ import annotations

import json
from pathlib import Path

SID = "session_7d3e9a41-2c5b-4f8e-a1d6-9b0c3e5f7a21"
CWD = "/home/dev/shop"
KEY = "wd_shop_4f1a9c2e7b3d"
T0 = 1785600000000  # ms
SUB_TASK = "<git-context>\nWorking directory: /home/dev/shop\n</git-context>\nrun the tests"


def jsonl(path: Path, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))


def loop(event: dict, t: int) -> dict:
    return {"type": "context.append_loop_event", "event": event, "time": T0 + t}


def user(text: str, t: int, origin: str = "user") -> dict:
    message = {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "toolCalls": [],
        "origin": {"kind": origin},
    }
    return {"type": "context.append_message", "message": message, "time": T0 + t}


def usage(t: int, inp: int, out: int, cached: int, scope: str = "turn") -> dict:
    tokens = {"inputOther": inp, "output": out, "inputCacheRead": cached, "inputCacheCreation": 0}
    return {
        "type": "usage.record",
        "model": "moonshot-ai/kimi-k2.7",
        "usage": tokens,
        "usageScope": scope,
        "time": T0 + t,
    }


def request(t: int) -> dict:
    return {
        "type": "llm.request",
        "kind": "loop",
        "provider": "kimi",
        "model": "kimi-k2.7",
        "modelAlias": "moonshot-ai/kimi-k2.7",
        "messageCount": 1,
        "time": T0 + t,
    }


def kimi_code_session(root: Path) -> Path:
    """A session that edits a file, runs a command that fails, starts a subagent and compacts."""
    folder = root / ".kimi-code" / "sessions" / KEY / SID
    agents = {
        "main": {"homedir": str(folder / "agents" / "main"), "type": "main", "parentAgentId": None},
        "agent-0": {"homedir": str(folder / "agents" / "agent-0"), "type": "sub", "parentAgentId": "main"},
    }
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(
        json.dumps({"title": "Cart total", "isCustomTitle": True, "agents": agents, "workDir": CWD}, indent=2)
    )
    step, step2 = "5e0c1d2a-0000-4000-8000-000000000001", "5e0c1d2a-0000-4000-8000-000000000002"
    edit = {"path": "cart.py", "old_string": "total = None", "new_string": "total = 0"}
    spawn = {"description": "run tests", "subagent_type": "coder", "prompt": "run the tests"}
    jsonl(
        folder / "agents" / "main" / "wire.jsonl",
        [
            {"type": "metadata", "protocol_version": "1.4", "created_at": T0},
            {
                "type": "config.update",
                "modelAlias": "moonshot-ai/kimi-k2.7",
                "thinkingEffort": "on",
                "time": T0,
            },
            {
                "type": "turn.prompt",
                "input": [{"type": "text", "text": "fix the cart total"}],
                "origin": {"kind": "user"},
                "time": T0 + 1000,
            },
            user("fix the cart total", 1001),
            loop({"type": "step.begin", "uuid": step, "turnId": "0", "step": 1}, 1002),
            request(1003),
            loop(
                {
                    "type": "content.part",
                    "uuid": "p-1",
                    "turnId": "0",
                    "step": 1,
                    "stepUuid": step,
                    "part": {"type": "think", "think": "look at cart.py"},
                },
                2000,
            ),
            loop(
                {
                    "type": "content.part",
                    "uuid": "p-2",
                    "turnId": "0",
                    "step": 1,
                    "stepUuid": step,
                    "part": {"type": "text", "text": "Fixing it."},
                },
                2001,
            ),
            loop(
                {
                    "type": "tool.call",
                    "uuid": "Edit_0",
                    "turnId": "0",
                    "step": 1,
                    "stepUuid": step,
                    "toolCallId": "Edit_0",
                    "name": "Edit",
                    "args": edit,
                },
                2002,
            ),
            loop(
                {
                    "type": "tool.call",
                    "uuid": "Bash_1",
                    "turnId": "0",
                    "step": 1,
                    "stepUuid": step,
                    "toolCallId": "Bash_1",
                    "name": "Bash",
                    "args": {"command": "pytest -x"},
                },
                2003,
            ),
            loop(
                {
                    "type": "tool.result",
                    "parentUuid": "Edit_0",
                    "toolCallId": "Edit_0",
                    "result": {"output": "Replaced 1 occurrence in cart.py"},
                },
                3000,
            ),
            loop(
                {
                    "type": "tool.result",
                    "parentUuid": "Bash_1",
                    "toolCallId": "Bash_1",
                    "result": {"output": "1 failed", "isError": True},
                },
                3001,
            ),
            loop(
                {
                    "type": "step.end",
                    "uuid": step,
                    "turnId": "0",
                    "step": 1,
                    "usage": {
                        "inputOther": 200,
                        "output": 40,
                        "inputCacheRead": 1000,
                        "inputCacheCreation": 0,
                    },
                    "messageId": "chatcmpl-1",
                },
                3002,
            ),
            usage(3002, 200, 40, 1000),
            loop({"type": "step.begin", "uuid": step2, "turnId": "0", "step": 2}, 3003),
            loop(
                {
                    "type": "tool.call",
                    "uuid": "Agent_2",
                    "turnId": "0",
                    "step": 2,
                    "stepUuid": step2,
                    "toolCallId": "Agent_2",
                    "name": "Agent",
                    "args": spawn,
                },
                4000,
            ),
            loop(
                {
                    "type": "tool.result",
                    "parentUuid": "Agent_2",
                    "toolCallId": "Agent_2",
                    "result": {
                        "output": "agent_id: agent-0\nactual_subagent_type: coder\nstatus: completed\n\n[summary]\ntests pass"
                    },
                },
                9000,
            ),
            loop(
                {
                    "type": "content.part",
                    "uuid": "p-3",
                    "turnId": "0",
                    "step": 2,
                    "stepUuid": step2,
                    "part": {"type": "text", "text": "Done."},
                },
                9500,
            ),
            usage(9500, 300, 20, 1200),
            {"type": "full_compaction.begin", "source": "manual", "time": T0 + 10000},
            usage(10500, 50, 60, 0, scope="session"),
            {
                "type": "context.apply_compaction",
                "summary": "The cart total was fixed.",
                "compactedCount": 6,
                "time": T0 + 10600,
            },
            {"type": "some.future_record", "x": 1, "time": T0 + 11000},
        ],
    )
    jsonl(
        folder / "agents" / "agent-0" / "wire.jsonl",
        [
            {"type": "metadata", "protocol_version": "1.4", "created_at": T0 + 4001},
            {"type": "config.update", "cwd": CWD, "profileName": "coder", "time": T0 + 4001},
            user(SUB_TASK, 4002, origin="system_trigger"),
            request(4003),
            loop(
                {
                    "type": "content.part",
                    "uuid": "s-1",
                    "turnId": "0",
                    "step": 1,
                    "stepUuid": "sub-step",
                    "part": {"type": "text", "text": "tests pass"},
                },
                8000,
            ),
            usage(8000, 100, 10, 0),
        ],
    )
    return folder


FORK = "session_2b8f0c17-9d4e-4a3b-8c61-5e7d2a9f1b04"
FORKED_AT = T0 + 60000


def forked_session(root: Path, source: Path, *, subagents: bool = False) -> Path:
    """A fork of `source` (a session folder) as kimi's `/fork` makes one: its main log copied whole
    with a `forked` record after the copy, state.json naming the source in `forkedFrom` (with a
    `Fork: …` title and the fork's own `createdAt`), then a prompt and reply of its own. With
    `subagents`, the source's subagents' logs are copied too, each ended by its `forked` record."""
    folder = source.parent / FORK
    (folder / "agents" / "main").mkdir(parents=True)
    state = json.loads((source / "state.json").read_text())
    agents = state["agents"] if subagents else {"main": state["agents"]["main"]}
    for agent in agents:
        if agent != "main":
            log = (source / "agents" / agent / "wire.jsonl").read_text()
            forked = {"type": "forked", "agentId": agent, "time": FORKED_AT + 5}
            (folder / "agents" / agent).mkdir(parents=True)
            (folder / "agents" / agent / "wire.jsonl").write_text(log + json.dumps(forked) + "\n")
    state.update(
        title=f"Fork: {state['title']}",
        isCustomTitle=False,
        forkedFrom=source.name,
        createdAt=FORKED_AT,
        agents=agents,
    )
    (folder / "state.json").write_text(json.dumps(state, indent=2))
    copied = (source / "agents" / "main" / "wire.jsonl").read_text()
    own = [
        {"type": "forked", "agentId": "main", "time": FORKED_AT + 5},
        user("now make it a decimal", 61000),
        loop(
            {
                "type": "content.part",
                "uuid": "f-1",
                "turnId": "1",
                "step": 1,
                "stepUuid": "fork-step",
                "part": {"type": "text", "text": "Using Decimal now."},
            },
            62000,
        ),
        usage(62000, 30, 7, 900),
    ]
    (folder / "agents" / "main" / "wire.jsonl").write_text(
        copied + "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in own)
    )
    return folder


REWOUND = "session_5c1e7a90-3f2d-4b6e-9a08-d4c3b2a1f0e9"


def reply(text: str, step: str, t: int) -> dict:
    part = {"type": "content.part", "uuid": f"{step}-p", "turnId": "0", "step": 1, "stepUuid": step}
    return loop({**part, "part": {"type": "text", "text": text}}, t)


def rewound_session(root: Path) -> Path:
    """A session whose first prompt was withdrawn with `/undo` and asked again, then whose context
    was cleared before a last prompt."""
    folder = root / ".kimi-code" / "sessions" / KEY / REWOUND
    folder.mkdir(parents=True)
    agents = {"main": {"type": "main", "parentAgentId": None}}
    (folder / "state.json").write_text(json.dumps({"title": "Totals", "agents": agents, "workDir": CWD}))
    jsonl(
        folder / "agents" / "main" / "wire.jsonl",
        [
            {"type": "metadata", "protocol_version": "1.5", "created_at": T0},
            user("sum the carts in floats", 1000),
            reply("Summed in floats.", "r-1", 2000),
            {"type": "context.undo", "agentId": "main", "count": 1, "time": T0 + 3000},
            user("sum the carts in Decimal", 4000),
            reply("Summed in Decimal.", "r-2", 5000),
            {"type": "context.clear", "agentId": "main", "time": T0 + 6000},
            user("what is left to do?", 7000),
            reply("Nothing I know of.", "r-3", 8000),
        ],
    )
    return folder


SWARM = "session_9e4d2c61-7a3b-4f80-b5c9-1d2e3f4a5b6c"
ITEMS = ["cart.py", "tax.py"]


def swarm_session(root: Path) -> Path:
    """A session whose reply starts a swarm of two subagents at once (`AgentSwarm`, one per item),
    whose result names each: agent-0 for cart.py, agent-1 for tax.py."""
    folder = root / ".kimi-code" / "sessions" / KEY / SWARM
    folder.mkdir(parents=True)
    agents = {"main": {"type": "main", "parentAgentId": None}}
    for n, item in enumerate(ITEMS):
        labels = {"swarmItem": item}
        agents[f"agent-{n}"] = {"type": "sub", "parentAgentId": "main", "labels": labels, "swarmItem": item}
    (folder / "state.json").write_text(json.dumps({"title": "Review", "agents": agents, "workDir": CWD}))
    args = {
        "description": "review modules",
        "prompt_template": "review {{item}} for rounding bugs",
        "items": ITEMS,
        "subagent_type": "explore",
    }
    result = "\n".join(
        [
            "<agent_swarm_result>",
            "<summary>completed: 2</summary>",
            '<subagent agent_id="agent-0" item="cart.py" outcome="completed">cart.py rounds once</subagent>',
            '<subagent agent_id="agent-1" item="tax.py" outcome="completed">tax.py rounds twice</subagent>',
            "</agent_swarm_result>",
        ]
    )
    call = {"type": "tool.call", "uuid": "AgentSwarm_0", "turnId": "0", "step": 1, "stepUuid": "w-1"}
    jsonl(
        folder / "agents" / "main" / "wire.jsonl",
        [
            {"type": "metadata", "protocol_version": "1.5", "created_at": T0},
            user("review the money code", 1000),
            loop({**call, "toolCallId": "AgentSwarm_0", "name": "AgentSwarm", "args": args}, 2000),
            loop(
                {
                    "type": "tool.result",
                    "parentUuid": "AgentSwarm_0",
                    "toolCallId": "AgentSwarm_0",
                    "result": {"output": result},
                },
                9000,
            ),
            reply("tax.py rounds twice.", "w-2", 9500),
        ],
    )
    for n, item in enumerate(ITEMS):
        jsonl(
            folder / "agents" / f"agent-{n}" / "wire.jsonl",
            [
                {"type": "metadata", "protocol_version": "1.5", "created_at": T0 + 2001 + n},
                user(f"review {item} for rounding bugs", 2002 + n, origin="system_trigger"),
                reply(f"{item} rounds {'once' if n == 0 else 'twice'}", f"s-{n}", 5000 + n),
            ],
        )
    return folder


PLANNED = "session_0a7b3c5d-8e9f-4a1b-9c2d-3e4f5a6b7c8d"
PLAN = "# Plan\n\n1. Store money as Decimal\n2. Round once, at the end\n"
TASK_OUTPUT = "collected 12 items\n12 passed\n"


SUB_PLAN = "# Tax plan\n\n1. Read tax.py\n"


def planned_session(root: Path, *, subagent: bool = False) -> Path:
    """A session that plans in Plan mode (its plan file beside its log, a `plan.revision` record,
    `ExitPlanMode` ending it) and runs the tests as a background task (its state and output in
    `tasks/`). With `subagent`, a subagent (agent-0) plans too, into its own folder as kimi writes a
    subagent's plan (`agents/agent-0/plans/`)."""
    folder = root / ".kimi-code" / "sessions" / KEY / PLANNED
    main = folder / "agents" / "main"
    (main / "plans").mkdir(parents=True)
    agents = {"main": {"type": "main"}}
    if subagent:
        agents["agent-0"] = {"type": "sub", "parentAgentId": "main"}
        sub = folder / "agents" / "agent-0"
        (sub / "plans").mkdir(parents=True)
        (sub / "plans" / "plan-9c1d.md").write_text(SUB_PLAN)
        call = {"type": "tool.call", "uuid": "ExitPlanMode_1", "turnId": "0", "step": 1, "stepUuid": "sp-1"}
        jsonl(
            sub / "wire.jsonl",
            [
                {"type": "metadata", "protocol_version": "1.5", "created_at": T0 + 1500},
                user("plan the tax part", 1501, origin="system_trigger"),
                {"type": "plan_mode.enter", "agentId": "agent-0", "id": "plan-9c1d", "time": T0 + 1502},
                loop({**call, "toolCallId": "ExitPlanMode_1", "name": "ExitPlanMode", "args": {}}, 1600),
                loop(
                    {
                        "type": "tool.result",
                        "toolCallId": "ExitPlanMode_1",
                        "result": {"output": "Plan approved"},
                    },
                    1700,
                ),
            ],
        )
    (folder / "state.json").write_text(json.dumps({"title": "Plan", "agents": agents, "workDir": CWD}))
    (main / "plans" / "plan-7f3a.md").write_text(PLAN)
    task = "bash-4c2e9a1f"
    (folder / "tasks" / task).mkdir(parents=True)
    (folder / "tasks" / f"{task}.json").write_text(
        json.dumps({"id": task, "kind": "bash", "status": "completed", "exitCode": 0, "command": "pytest"})
    )
    (folder / "tasks" / task / "output.log").write_text(TASK_OUTPUT)
    step = {"type": "tool.call", "uuid": "ExitPlanMode_0", "turnId": "0", "step": 1, "stepUuid": "pl-1"}
    jsonl(
        main / "wire.jsonl",
        [
            {"type": "metadata", "protocol_version": "1.5", "created_at": T0},
            user("plan the money fix", 1000),
            {"type": "plan_mode.enter", "agentId": "main", "id": "plan-7f3a", "time": T0 + 1001},
            {
                "type": "plan.revision",
                "agentId": "main",
                "id": "plan-7f3a",
                "version": 1,
                "path": str(main / "plans" / "plan-7f3a.md"),
                "sha256": "0" * 64,
                "bytes": len(PLAN),
                "time": T0 + 2000,
            },
            loop({**step, "toolCallId": "ExitPlanMode_0", "name": "ExitPlanMode", "args": {}}, 2500),
            loop(
                {
                    "type": "tool.result",
                    "toolCallId": "ExitPlanMode_0",
                    "result": {"output": "Plan approved"},
                },
                3000,
            ),
            {"type": "plan_mode.exit", "agentId": "main", "id": "plan-7f3a", "time": T0 + 3001},
        ],
    )
    return folder


def session_index(root: Path, *folders: Path, deleted: tuple[str, ...] = ()) -> Path:
    """`~/.kimi-code/session_index.jsonl` as kimi appends it: a line a session made, one a deletion."""
    lines = [{"sessionId": f.name, "sessionDir": str(f), "workDir": CWD} for f in folders]
    lines += [{"sessionId": sid, "deleted": True} for sid in deleted]
    path = root / ".kimi-code" / "session_index.jsonl"
    jsonl(path, lines)
    return path


def kimi_code_sessions(root: Path) -> Path:
    """Every builder's session in one home: the session with a subagent, its fork, the rewound one
    and the swarm."""
    source = kimi_code_session(root)
    folders = [source, forked_session(root, source), rewound_session(root), swarm_session(root)]
    session_index(root, *folders, planned_session(root), deleted=("session_gone",))
    return root
