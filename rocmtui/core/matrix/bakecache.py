"""The bake file as written, kept under the state folder by the hash of its bytes.

`rocmtui matrix` (and the console's child, every refresh) needs the file's names and variables
but not a fresh parse: python-hcl2 builds its parser and parses for ~0.17 s, more than the 24
HEAD requests of a whole SNOC matrix. The same bytes always parse to the same `BakeFile`, so a
parse is kept as JSON keyed by the file's path and SHA-256 and read back in a millisecond; any
change to the file is a new key (and a real parse, with its errors).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rocmtui.core.bake.file import BakeError, BakeFile, BakeTarget, BakeVariable, load_bake
from rocmtui.core.bake.find import bake_bytes, bake_files

VERSION = 1


def _to_json(bake: BakeFile) -> dict[str, Any]:
    return {
        "version": VERSION,
        "variables": [
            [v.name, v.default, v.default_source, v.line] for v in bake.variables.values()
        ],
        "targets": [
            [
                t.name,
                t.line,
                list(t.inherits),
                [list(c) for c in t.contexts],
                t.pushes,
                t.description,
                t.matrix,
            ]
            for t in bake.targets.values()
        ],
        "groups": {name: list(members) for name, members in bake.groups.items()},
    }


def _from_json(path: Path, data: Any) -> BakeFile | None:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    try:
        variables = {
            name: BakeVariable(name, default, source, int(line))
            for name, default, source, line in data["variables"]
        }
        targets = {
            name: BakeTarget(
                name=name,
                line=int(line),
                inherits=tuple(inherits),
                contexts=tuple((str(a), str(b)) for a, b in contexts),
                pushes=bool(pushes),
                description=description,
                matrix=bool(matrix),
            )
            for name, line, inherits, contexts, pushes, description, matrix in data["targets"]
        }
        groups = {str(k): tuple(v) for k, v in data["groups"].items()}
    except (KeyError, TypeError, ValueError):
        return None
    files = bake_files(path)
    return BakeFile(path=path, variables=variables, targets=targets, groups=groups, files=files)


def load_bake_kept(path: Path | str, cache: Any | None) -> BakeFile:
    """`load_bake(path)`, or the parse kept for exactly these bytes (`cache`: a JsonCache)."""
    path = Path(path)
    if cache is None:
        return load_bake(path)
    try:
        key = f"bakefile:{path.absolute()}:{hashlib.sha256(bake_bytes(path)).hexdigest()}"
    except OSError as exc:
        raise BakeError(f"cannot read: {exc.strerror}", path) from None
    kept = cache.get(key)
    bake = _from_json(path, kept[0]) if kept is not None else None
    if bake is None:
        bake = load_bake(path)
        cache.put(key, _to_json(bake))
    return bake
