"""User key remapping: a TOML file maps binding ids to keys (Textual's `App.set_keymap`).

    # ~/.config/threadloom/keymap.toml
    [keys]
    "messages.raw" = "R"
    "app.quit" = "q,ctrl+q"

`F1` lists every binding of the focused pane with its id.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/threadloom` (~/.config/threadloom by default): the keymap and settings."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "threadloom"


def keymap_path() -> Path:
    """`$THREADLOOM_KEYMAP`, else `keymap.toml` in the config folder (`config_dir`)."""
    env = os.environ.get("THREADLOOM_KEYMAP")
    if env:
        return Path(env).expanduser()
    return config_dir() / "keymap.toml"


def load_keymap(path: Path) -> tuple[dict[str, str], list[str]]:
    """The id → keys mapping in `path` and the problems found (a missing file is not one)."""
    if not path.exists():
        return {}, []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, [f"{path}: {exc}"]
    table = data.get("keys", data)
    keymap, problems = {}, []
    for binding_id, keys in table.items():
        if isinstance(keys, list):
            keys = ",".join(str(k) for k in keys)
        if not isinstance(keys, str) or not keys.strip():
            problems.append(f'{path}: {binding_id!r} needs a key such as "ctrl+r"')
            continue
        keymap[str(binding_id)] = keys.replace(" ", "")
    return keymap, problems
