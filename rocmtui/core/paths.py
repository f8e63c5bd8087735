"""Where the console keeps its state (job records, logs): one folder shared by all consoles."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rocmtui.core.config.fleetfile import FleetConfig


def state_dir(config: FleetConfig | None = None, env: Mapping[str, str] | None = None) -> Path:
    """`$ROCMTUI_STATE_DIR`, else the fleet file's `state_dir`, else `$XDG_STATE_HOME/rocmtui`."""
    env = os.environ if env is None else env
    if env.get("ROCMTUI_STATE_DIR"):
        return Path(env["ROCMTUI_STATE_DIR"])
    if config is not None and config.state_dir is not None:
        return config.state_dir
    xdg = env.get("XDG_STATE_HOME") or str(
        Path(env.get("HOME", "~")).expanduser() / ".local" / "state"
    )
    return Path(xdg) / "rocmtui"
