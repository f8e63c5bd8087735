"""Several files' blocks merged into one model, as buildx 0.13.1 merges them.

A later file's variable replaces the earlier's whole (a redeclaration with no default resets it
to ""), a later group replaces the earlier's members, and a later target block's attributes
override the earlier's: maps (`args`, `contexts`, ...) key by key, `inherits` appended, the rest
replaced. Blocks with one name in one file merge the same way. tests/fleet/test_bake_files.py checks
each rule against real `docker buildx bake --print`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct

from rocmtui.core.bake.scan import literal, plain_string, to_source
from rocmtui.core.bake.targets import BakeFile, BakeTarget, BakeVariable

_PUSH_OUTPUT = re.compile(r"(^|[\s,\"])(type=registry|push=true)\b")


class BakePart(Struct, frozen=True):
    """One file's blocks in python-hcl2's shape, with what the builder needs beside them."""

    path: Path
    data: dict[str, Any]
    lines: dict[tuple[str, str], int]  # (kind, first label) -> line
    defaults: dict[str, str]  # variable -> its default's source text, where known exactly


def _label(key: str) -> str:
    """python-hcl2 keeps the quotes of block labels and quoted map keys."""
    return key[1:-1] if len(key) >= 2 and key[0] == key[-1] == '"' else key


def _blocks(data: dict[str, Any], kind: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, body) for each block of `kind`, in file order."""
    out: list[tuple[str, dict[str, Any]]] = []
    for entry in data.get(kind) or []:
        if isinstance(entry, dict):
            for key, body in entry.items():
                if isinstance(body, dict):
                    out.append((_label(key), body))
    return out


def _unquote(source: Any) -> str:
    """Text inside a string's quotes (decoded when plain, as written when a template)."""
    plain = plain_string(source)
    if plain is not None:
        return plain
    return _label(source) if isinstance(source, str) else to_source(source)


def _strings(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [] if value is None else [value]
    return tuple(_unquote(v) for v in items)


def _merge_body(into: dict[str, Any], body: dict[str, Any]) -> None:
    """A later target block over an earlier one, as bake merges them: maps key by key,
    `inherits` appended, any other attribute replaced."""
    for key, value in body.items():
        before = into.get(key)
        if key == "inherits":
            into[key] = list(dict.fromkeys([*_strings(before), *_strings(value)]))
        elif isinstance(value, dict) and isinstance(before, dict):
            into[key] = {**before, **value}
        else:
            into[key] = value


def build(path: Path, parts: list[BakePart]) -> BakeFile:
    """The merged model of `parts` (one per file, in bake's order) read from `path`."""
    variables: dict[str, BakeVariable] = {}
    bodies: dict[str, dict[str, Any]] = {}
    target_at: dict[str, tuple[Path, int]] = {}
    groups: dict[str, tuple[str, ...]] = {}
    for part in parts:
        for name, body in _blocks(part.data, "variable"):
            line = part.lines.get(("variable", name), 0)
            if "default" in body:
                default = literal(body["default"])
                source = part.defaults.get(name)
                source = source if source is not None else to_source(body["default"])
            else:
                default, source = "", ""  # bake resolves a variable without a default to ""
            # a later declaration replaces the earlier one in its place (file order kept)
            variables[name] = BakeVariable(name, default, source, line, part.path)
        for name, body in _blocks(part.data, "target"):
            _merge_body(bodies.setdefault(name, {}), body)
            target_at.setdefault(name, (part.path, part.lines.get(("target", name), 0)))
        for name, body in _blocks(part.data, "group"):
            groups[name] = tuple(dict.fromkeys(_strings(body.get("targets"))))  # later wins
    own_push = {name: _outputs_push(body.get("output")) for name, body in bodies.items()}
    targets: dict[str, BakeTarget] = {}
    for name, body in bodies.items():
        contexts = body.get("contexts")
        description = body.get("description")
        targets[name] = BakeTarget(
            name=name,
            line=target_at[name][1],
            inherits=_strings(body.get("inherits")),
            contexts=tuple(
                (_label(str(k)), _unquote(v))
                for k, v in (contexts or {}).items()
                if k != "__is_block__"
            )
            if isinstance(contexts, dict)
            else (),
            pushes=_pushes(name, bodies, own_push),
            description=_unquote(description) if description is not None else None,
            matrix="matrix" in body,
            path=target_at[name][0],
        )
    return BakeFile(path, variables, targets, groups, tuple(p.path for p in parts))


def _outputs_push(output: Any) -> bool:
    items = output if isinstance(output, list) else [output] if output is not None else []
    return any(_PUSH_OUTPUT.search(to_source(item)) for item in items)


def _pushes(name: str, bodies: dict[str, dict[str, Any]], own: dict[str, bool]) -> bool:
    """Whether `name` pushes: its own output, else the nearest inherited one that sets output
    (bake's inherits are applied in order, later parents and the child winning)."""
    seen: set[str] = set()

    def walk(n: str) -> bool | None:  # None: no output anywhere up this chain
        if n in seen or n not in bodies:
            return None
        seen.add(n)
        body = bodies[n]
        if body.get("output") is not None:
            return own[n]
        result: bool | None = None
        for parent in _strings(body.get("inherits")):
            got = walk(parent)
            if got is not None:
                result = got
        return result

    return bool(walk(name))
