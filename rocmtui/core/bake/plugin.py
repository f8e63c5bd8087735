"""Which docker-buildx binary `docker buildx` runs, found as the docker CLI finds its plugins.

The docker CLI looks in the config file's `cliPluginsExtraDirs`, then `$DOCKER_CONFIG/cli-plugins`
(default `~/.docker`), then the system folders, and runs the first `docker-buildx` there.
`doctor` names that binary; the history looks run it directly (`docker-buildx history ...`,
buildx's standalone form), which spares a docker CLI process each: half the CPU of a look.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: Where the docker CLI looks for plugins after `$DOCKER_CONFIG/cli-plugins` (docker's own list).
SYSTEM_PLUGIN_DIRS = (
    "/usr/local/lib/docker/cli-plugins",
    "/usr/local/libexec/docker/cli-plugins",
    "/usr/lib/docker/cli-plugins",
    "/usr/libexec/docker/cli-plugins",
)


def _extra_dirs(config: str) -> list[str]:
    try:
        with open(os.path.join(config, "config.json"), encoding="utf-8") as fh:
            extra = json.load(fh).get("cliPluginsExtraDirs") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [os.path.expanduser(d) for d in extra if isinstance(d, str)]


def buildx_plugin(env: Mapping[str, str]) -> Path | None:
    """The docker-buildx binary `docker buildx` runs under `env` (None: none installed)."""
    config = os.path.expanduser(
        env.get("DOCKER_CONFIG") or os.path.join(env.get("HOME", "~"), ".docker")
    )
    folders = (*_extra_dirs(config), os.path.join(config, "cli-plugins"), *SYSTEM_PLUGIN_DIRS)
    for folder in folders:
        candidate = Path(folder) / "docker-buildx"
        if os.access(candidate, os.X_OK):
            return candidate
    return None


_VERSIONS: dict[tuple[str, int], tuple[int, ...] | None] = {}
_VERSION = re.compile(r"\bv?(\d+)\.(\d+)(?:\.(\d+))?")


def plugin_version(env: Mapping[str, str], timeout: float = 10.0) -> tuple[int, ...] | None:
    """The version of the buildx `docker buildx` runs under `env`, as numbers ((0, 29, 1)),
    None when there is none or it does not say. Asked once per binary (by path and mtime):
    `docker-buildx version` answers in a few ms and needs no daemon."""
    plugin = buildx_plugin(env)
    if plugin is None:
        return None
    try:
        key = (str(plugin), plugin.stat().st_mtime_ns)
    except OSError:
        return None
    if key not in _VERSIONS:
        try:
            out = subprocess.run(
                [str(plugin), "version"],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=dict(env),
                stdin=subprocess.DEVNULL,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return None  # not remembered: asked again next time
        words = out.split()
        match = _VERSION.search(words[1] if len(words) > 1 else out)
        _VERSIONS[key] = tuple(int(g) for g in match.groups() if g) if match else None
    return _VERSIONS[key]


__all__ = ["SYSTEM_PLUGIN_DIRS", "buildx_plugin", "plugin_version"]
