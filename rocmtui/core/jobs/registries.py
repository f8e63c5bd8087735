"""The registries a pushing build reaches, and whether the docker config can log in to each.

`push_hosts` asks `bake --print` (under the job's environment) for the tags a target pushes and
takes their hosts; `docker_config_hosts` reads only the keys of the docker config's `auths` and
`credHelpers`: no credential is read or kept. A launch refuses a pushing build that would reach
a registry with no login entry, before anything starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rocmtui.core.bake.file import BakeFile
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.checks import printed_view
from rocmtui.core.jobs.printed import printed_pushes, printed_targets

__all__ = ["docker_config_hosts", "push_hosts"]


def docker_config_hosts(env: Mapping[str, str]) -> set[str]:
    """Registry hosts with a login entry in the docker config (`auths` and `credHelpers`
    keys). Only the keys are looked at; no value is kept or shown."""
    folder = env.get("DOCKER_CONFIG") or os.path.join(env.get("HOME", "~"), ".docker")
    path = Path(os.path.expanduser(folder)) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    hosts: set[str] = set()
    if isinstance(data, dict):
        for section in ("auths", "credHelpers"):
            entries = data.get(section)
            if isinstance(entries, dict):
                hosts.update(_registry_host(str(key)) for key in entries)
    return hosts


def _registry_host(ref: str) -> str:
    """`https://host:port/v1/` or `host:port` -> `host:port` (docker.io's aliases folded)."""
    if "://" in ref:
        ref = urlsplit(ref).netloc
    host = ref.split("/", 1)[0].lower()
    return "docker.io" if host in ("index.docker.io", "registry-1.docker.io") else host


def _tag_host(tag: str) -> str:
    first, sep, _ = tag.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first.lower()
    return "docker.io"


def push_hosts(
    config: FleetConfig,
    bake: BakeFile,
    target: str,
    child_env: Mapping[str, str],
    printed: Mapping[str, Any] | None = None,
) -> set[str]:
    """The registries `target` pushes to: the hosts of its tags as `bake --print` resolves
    them with the job's environment (`printed`, when the caller already has that print), else
    the REGISTRY variable, else the fleet's registry."""
    try:
        if printed is None:
            printed = printed_view(bake, target, child_env)
        bodies = printed_targets(printed)
        if target in bodies:
            tags = bodies[target].get("tags") or []
        else:  # a group or matrix name: the pushing targets' tags (all of them under --push)
            chosen = [b for b in bodies.values() if printed_pushes(b)] or list(bodies.values())
            tags = [t for body in chosen for t in body.get("tags") or []]
        hosts = {_tag_host(str(t)) for t in tags}
        if hosts:
            return hosts
    except Exception:  # fall back to the static view below
        pass
    declared = bake.variables.get("REGISTRY")
    registry = child_env.get("REGISTRY") or (declared.default if declared else None)
    if registry and "${" not in registry:
        return {_registry_host(registry)}
    return {_registry_host(config.registry.url)}
