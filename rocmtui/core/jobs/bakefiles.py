"""bake's own files for a job: what its metadata file says (the image digest, the BuildKit
history refs)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["build_refs_from_metadata", "digest_from_metadata"]


def digest_from_metadata(path: Path, target: str) -> str | None:
    """The image digest bake wrote for `target` (`containerimage.digest`), if any.

    bake's metadata file maps each target to its build's metadata; a single-target file may
    also hold the keys at the top level, so both shapes are read.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    candidates = [data.get(target), data, *data.values()]
    for entry in candidates:
        if isinstance(entry, dict):
            digest = entry.get("containerimage.digest")
            if isinstance(digest, str) and digest.startswith("sha256:"):
                return digest
    return None


def build_refs_from_metadata(path: Path) -> list[str]:
    """The BuildKit history record ids bake wrote (`buildx.build.ref`, builder/node/id), one
    per target built: what ties this job to its history records."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    refs: list[str] = []
    for entry in [data, *data.values()]:
        if isinstance(entry, dict):
            ref = entry.get("buildx.build.ref")
            if isinstance(ref, str) and ref.strip():
                last = ref.strip().rsplit("/", 1)[-1]
                if last not in refs:
                    refs.append(last)
    return refs
