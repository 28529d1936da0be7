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


def binding_ids() -> set[str]:
    """The id of every binding a keymap can name: those of every screen and widget class of the
    TUI's modules (imported here: some load only when first used) and of Textual's own."""
    import importlib
    import pkgutil

    import threadloom.tui as tui
    from textual.binding import Binding
    from textual.dom import DOMNode

    for module in pkgutil.iter_modules(tui.__path__):
        importlib.import_module(f"{tui.__name__}.{module.name}")
    ids: set[str] = set()
    classes: list[type] = [DOMNode]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        ids.update(b.id for b in vars(cls).get("BINDINGS", []) if isinstance(b, Binding) and b.id)
    return ids


def unknown_ids(keymap: dict[str, str], path: Path) -> list[str]:
    """A problem for each id in the keymap that names no binding (a typo, or a binding renamed)."""
    known = binding_ids()
    return [
        f"{path}: no key has the id {binding_id!r} (F1 lists the ids of the focused pane's keys)"
        for binding_id in sorted(set(keymap) - known)
    ]
