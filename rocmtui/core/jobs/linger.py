"""Whether a detached build may still die when its operator logs out (logind's rule)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

__all__ = ["logout_risk"]


def logout_risk(
    user: str | None = None, etc: Path = Path("/etc"), var: Path = Path("/var")
) -> str | None:
    """Why a detached build might still die at logout, or None.

    Where logind has `KillUserProcesses=yes`, every process of a login session is killed at
    logout, `setsid` or not (HAZARDS.md); only a process in the user's systemd manager, kept
    after logout by linger, survives. Read from logind.conf (and its drop-ins, last wins).
    """
    files = [etc / "systemd" / "logind.conf"]
    files += sorted((etc / "systemd" / "logind.conf.d").glob("*.conf"))
    kill = False
    for conf in files:
        try:
            text = conf.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            name, sep, value = line.strip().partition("=")
            if sep and name.strip() == "KillUserProcesses":
                kill = value.strip().lower() in ("yes", "true", "1", "on")
    if not kill:
        return None
    name = user or pwd.getpwuid(os.geteuid()).pw_name
    linger = (var / "lib" / "systemd" / "linger" / name).exists()
    advice = "" if linger else f"`loginctl enable-linger {name}` and "
    return (
        "logind kills a session's processes at logout (KillUserProcesses=yes): this build may "
        f"die when the session ends; use {advice}start builds from a `systemd-run --user` shell"
    )
