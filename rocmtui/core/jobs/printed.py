"""What `docker buildx bake --print` says a launch will build: pure functions over its JSON.

`checks.printed_view` asks bake (under the job's own environment); everything here only reads the
answer, and survives odd JSON (a group that loops, members that are not names, no groups at
all): a launch falls back to the name as typed rather than fail on bake's output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rocmtui.core.bake.file import ARCH_VARIABLE

_PUSH_OUTPUT = re.compile(r"(^|[\s,])(type=registry|push=true)\b")


def pinned_arch(printed: Mapping[str, Any]) -> str | None:
    """The one `GFX_ARCH` arg all targets bake resolved build with, else None (mixed, absent):
    gfx1201 for `pytorch-gfx1201` or group `gfx1201` whatever GFX_ARCH says (the matrix's)."""
    values = set()
    for body in printed_targets(printed).values():
        args = body.get("args")
        values.add(args.get(ARCH_VARIABLE) if isinstance(args, Mapping) else None)
    only = values.pop() if len(values) == 1 else None
    return only if isinstance(only, str) and only else None


def image_keys(printed: Mapping[str, Any], target: str, arch: str) -> list[str]:
    """The slot keys of a launch of `target` for `arch` (see `plan.images`): each image tag of
    every target the name asked for (`tag:...`), `target:NAME@ARCH` for a target without tags,
    `target:TARGET@ARCH` when bake printed nothing."""
    keys: set[str] = set()
    for name, body in requested_targets(printed).items():
        tags = body.get("tags")
        tagged = [t for t in tags if isinstance(t, str) and t] if isinstance(tags, list) else []
        keys.update(f"tag:{tag}" for tag in tagged)
        if not tagged:
            keys.add(f"target:{name}@{arch}")
    return sorted(keys) or [f"target:{target}@{arch}"]


def requested_targets(printed: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The printed targets the name asked for: bake's `default` group expanded through its
    groups (a target that is only another's context is left out); all of them when bake
    printed no groups."""
    targets = printed_targets(printed)
    groups = printed.get("group")
    if not isinstance(groups, Mapping) or not isinstance(groups.get("default"), Mapping):
        return targets
    wanted: dict[str, Mapping[str, Any]] = {}
    seen: set[str] = set()
    todo = ["default"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        group = groups.get(name)
        if name in targets:
            wanted[name] = targets[name]
        elif isinstance(group, Mapping) and isinstance(group.get("targets"), list):
            todo.extend(m for m in group["targets"] if isinstance(m, str))
    return wanted or targets


def printed_targets(printed: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """`bake --print`'s targets, keeping only well-formed entries."""
    targets = printed.get("target")
    if not isinstance(targets, Mapping):
        return {}
    return {str(k): v for k, v in targets.items() if isinstance(v, Mapping)}


def printed_pushes(body: Mapping[str, Any]) -> bool:
    """Whether a printed target's output is `type=registry` or carries `push=true`."""
    outputs = body.get("output")
    items = outputs if isinstance(outputs, list) else [outputs] if outputs else []
    return any(_PUSH_OUTPUT.search(str(item)) for item in items)
