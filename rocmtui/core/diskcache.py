"""A small JSON cache under the state folder: answers kept with their age.

Used for what is costly to ask again and either never changes (an image's labels, by digest;
what `bake --print` says for exactly the same file and environment) or may be reused while
young (an upstream's newest release). One file per key, replaced atomically; a cache that
cannot be written (read-only or full disk) is simply not kept, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any


class JsonCache:
    """Values by key in `folder`, at most `keep` files (the oldest go first)."""

    def __init__(self, folder: Path, keep: int = 2000) -> None:
        self.folder = Path(folder)
        self.keep = keep
        self._writes = 0

    def _path(self, key: str) -> Path:
        return self.folder / (hashlib.sha256(key.encode()).hexdigest()[:40] + ".json")

    def get(self, key: str, now: float | None = None) -> tuple[Any, float] | None:
        """The value kept for `key` and its age in seconds; None when there is none."""
        path = self._path(key)
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
                mtime = os.fstat(fh.fileno()).st_mtime
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != key:
            return None  # a hash collision, or someone else's file
        return data.get("value"), max(0.0, (time.time() if now is None else now) - mtime)

    def put(self, key: str, value: Any) -> None:
        """Keep `value` (JSON-able) for `key`; silently not kept when the disk says no."""
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"key": key, "value": value}, fh)
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError):
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        self._writes += 1
        if self._writes % 100 == 1:
            self.prune()

    def prune(self) -> None:
        """Drop the oldest files past `keep`."""
        try:
            entries = [
                (e.stat().st_mtime, e.path)
                for e in os.scandir(self.folder)
                if e.name.endswith(".json")
            ]
        except OSError:
            return
        if len(entries) <= self.keep:
            return
        entries.sort()
        for _, path in entries[: len(entries) - self.keep]:
            with contextlib.suppress(OSError):
                os.unlink(path)
