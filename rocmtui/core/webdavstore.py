"""The sccache store's size and its disk's free space, when its files are on this host.

Only with `[webdav] path` in the fleet file (the folder nginx serves): the files are walked
locally, under a deadline (a store of millions of objects gives a partial count, said so), and
the sample is kept under the state folder and taken again only when older than `MAX_AGE`. A
remote store is never walked: over WebDAV that would be a PROPFIND of every object.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from rocmtui.core.text.units import fmt_age, fmt_bytes

MAX_AGE = 600.0  # seconds a sample is reused
WALK_DEADLINE = 5.0


def walk_size(path: Path, deadline: float = WALK_DEADLINE) -> tuple[int, int, bool]:
    """(bytes, files, complete) of the files under `path` (symlinks not followed)."""
    stop = time.monotonic() + deadline
    total = files = 0
    todo = [str(path)]
    while todo:
        if time.monotonic() > stop:
            return total, files, False
        folder = todo.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            todo.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                            files += 1
                    except OSError:
                        continue
        except OSError:
            continue
    return total, files, True


def sample_store(
    path: Path, cache: Any | None = None, *, max_age: float = MAX_AGE, now: float | None = None
) -> dict[str, Any]:
    """The store's sample: `bytes`, `files`, `complete`, `disk_total`, `disk_free`,
    `sampled_at`, `age`; or `error` when the folder cannot be read."""
    now = time.time() if now is None else now
    key = f"webdav-store:{path}"
    if cache is not None:
        kept = cache.get(key, now)
        if kept is not None and isinstance(kept[0], dict) and kept[1] < max_age:
            return {**kept[0], "age": round(kept[1], 1)}
    if not path.is_dir():
        return {
            "path": str(path),
            "error": "not a folder on this host",
            "sampled_at": now,
            "age": 0.0,
        }
    size, files, complete = walk_size(path)
    disk: dict[str, Any]
    try:
        usage = shutil.disk_usage(path)
        disk = {"disk_total": usage.total, "disk_free": usage.free}
    except OSError as exc:
        disk = {"disk_total": None, "disk_free": None, "error": exc.strerror or str(exc)}
    sample = {
        "path": str(path),
        "bytes": size,
        "files": files,
        "complete": complete,
        **disk,
        "sampled_at": now,
    }
    if cache is not None:
        cache.put(key, sample)
    return {**sample, "age": 0.0}


def describe_store(sample: Any) -> str:
    """`sccache store 12.3G (45,000 objects), 120.0G free of 500.0G, sampled 4m ago`."""
    if not isinstance(sample, dict):
        return ""
    if sample.get("error") and sample.get("bytes") is None:
        return f"sccache store {sample.get('path')}: {sample['error']}"
    size = fmt_bytes(sample.get("bytes"))
    more = "" if sample.get("complete", True) else "≥"
    text = f"sccache store {more}{size} ({more}{sample.get('files', 0):,} objects)"
    if sample.get("disk_free") is not None:
        text += f", {fmt_bytes(sample['disk_free'])} free of {fmt_bytes(sample.get('disk_total'))}"
    return text + f", sampled {fmt_age(sample.get('age', 0.0))} ago"
