"""Where the fleet file is: the documented lookup order, and which step found it.

`--config PATH`, `$ROCMTUI_CONFIG`, `./rocmtui.toml`, the user's
`$XDG_CONFIG_HOME/rocmtui/config.toml`, then the system-wide `rocmtui/config.toml` of each
`$XDG_CONFIG_DIRS` folder (default `/etc/xdg`, for a shared host); none: the built-in default.
The first file found is the one read; `Lookup.shadowed` lists those further down that exist,
so `rocmtui config` and `rocmtui doctor` can say they are not read (and name one that would
not parse).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from msgspec import Struct

from rocmtui.core.config.validate import ConfigError


class Lookup(Struct, frozen=True):
    """Where the fleet file was found: `path` (None: the built-in default), the step that
    found it, and the candidates further down the order that exist but are not read."""

    path: Path | None
    step: str
    shadowed: tuple[tuple[Path, str], ...] = ()


def candidates(env: Mapping[str, str], cwd: Path) -> list[tuple[Path, str]]:
    """The implicit steps of the lookup, in order: ./rocmtui.toml, the user's file, then the
    system-wide file of each $XDG_CONFIG_DIRS folder (default /etc/xdg)."""
    home = Path(env.get("HOME") or "~").expanduser()
    xdg = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    out = [
        (cwd / "rocmtui.toml", "./rocmtui.toml (the current folder)"),
        (
            Path(xdg) / "rocmtui" / "config.toml",
            "$XDG_CONFIG_HOME/rocmtui/config.toml (the user's)",
        ),
    ]
    for folder in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":"):
        if folder and Path(folder).is_absolute():  # the spec ignores relative entries
            out.append(
                (
                    Path(folder) / "rocmtui" / "config.toml",
                    f"$XDG_CONFIG_DIRS: {folder} (system-wide)",
                )
            )
    return out


def lookup(
    explicit: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Lookup:
    """The fleet file to read, in the documented order, and why.

    An explicit path or `$ROCMTUI_CONFIG` that does not exist is an error, not a fall-through:
    the operator asked for that file.
    """
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    for chosen, step in (
        (explicit, "--config"),
        (env.get("ROCMTUI_CONFIG") or None, "$ROCMTUI_CONFIG"),
    ):
        if chosen:
            path = Path(chosen)
            path = path if path.is_absolute() else cwd / path
            if not path.is_file():
                raise ConfigError("no such fleet file", path)
            return Lookup(path, step)
    found = [(path, step) for path, step in candidates(env, cwd) if path.is_file()]
    if not found:
        return Lookup(None, "built-in default (no fleet file found)")
    return Lookup(found[0][0], found[0][1], tuple(found[1:]))
