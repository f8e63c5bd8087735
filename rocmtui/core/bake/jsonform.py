"""bake's JSON form (`docker-bake.json`), read into the shape python-hcl2 gives for HCL.

buildx reads a `.json` bake file as HCL's JSON syntax: the same blocks (`variable`, `group`,
`target`, `function`), each block type an object keyed by label (or a list of such objects),
and every JSON string a template, so `"${BASE}/app:${TAG}"` interpolates as in HCL. Converting
each value to the source text python-hcl2 would return for the same HCL (strings re-quoted,
numbers and bools as they are) lets one builder (`bakefile`) read both forms alike.

A property named `//` is a comment in HCL's JSON syntax and is dropped. Line numbers come from
a scan of the (already valid) JSON text: the line of each block's label key.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Block types bake knows; any other top-level key is left to buildx to judge.
BLOCK_KINDS = ("variable", "group", "target", "function")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,\n]')


class JsonBakeError(ValueError):
    """Invalid JSON: `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def hcl_string(text: str) -> str:
    """A JSON string as the HCL string literal python-hcl2 returns (quotes kept, escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return hcl_string(value)
    if isinstance(value, list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items() if k != "//"}
    return value  # numbers, bools, null: python-hcl2 returns these as they are


def _bodies(value: Any) -> list[dict[str, Any]]:
    """A label's body, or a list of bodies (HCL JSON allows both)."""
    items = value if isinstance(value, list) else [value]
    return [{**_value(b), "__is_block__": True} for b in items if isinstance(b, dict)]


def parse_json(text: str) -> dict[str, Any]:
    """`text` (a JSON bake file) as python-hcl2's dict for the same blocks. Raises
    JsonBakeError for text that is not JSON, or not an object at the top."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonBakeError(exc.msg, exc.lineno, exc.colno) from None
    if not isinstance(data, dict):
        raise JsonBakeError("a JSON bake file must be an object of blocks", 1, 1)
    out: dict[str, Any] = {}
    for kind in BLOCK_KINDS:
        entries = data.get(kind)
        groups = entries if isinstance(entries, list) else [entries]
        blocks: list[dict[str, Any]] = []
        for labelled in groups:
            if not isinstance(labelled, dict):
                continue
            for label, body in labelled.items():
                if label != "//":
                    blocks += [{f'"{label}"': b} for b in _bodies(body)]
        if blocks:
            out[kind] = blocks
    return out


def label_lines(text: str) -> dict[tuple[str, str], int]:
    """(block kind, label) -> line of the label's key, first occurrence, for valid JSON."""
    lines: dict[tuple[str, str], int] = {}
    frames: list[list[Any]] = []  # per open container: [is an object, the key being read]
    key: tuple[str, int] | None = None  # the last string and its line: a key if ":" follows
    line = 1
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok == "\n":
            line += 1
            continue
        if tok.startswith('"'):
            key = (json.loads(tok), line)
            continue
        if tok in "{[":
            frames.append([tok == "{", None])
        elif tok in "}]":
            if frames:
                frames.pop()
        elif tok == ":" and key is not None and frames and frames[-1][0]:
            frames[-1][1] = key[0]
            parents = [f[1] for f in frames[:-1] if f[0]]
            if len(parents) == 1 and parents[0] in BLOCK_KINDS:
                lines.setdefault((parents[0], key[0]), key[1])
        key = None
    return lines


def json_error_text(exc: JsonBakeError) -> str:
    """One line for invalid JSON, the column beside the message (the line is the error's)."""
    return f"not valid JSON (column {exc.column}): {exc.message}"
