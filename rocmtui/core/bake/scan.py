"""A small lexical scan of a bake file: what python-hcl2 cannot tell us.

python-hcl2 8.1.4 gives no line numbers (its `with_meta` option is a no-op), accepts a duplicate
`variable` block silently, reports an unterminated block at the end of the file rather than where
it opened, and dies with `RecursionError` on deep nesting. This scan walks the text once,
tracking strings, `${...}` templates, heredocs, comments and brackets, and records:

- every top-level block header (`target "pytorch" {`) with its line,
- the source text of each top-level block's `default = ...` attribute, exactly as written
  (python-hcl2 re-renders expressions: `JOBS / 2` comes back as `${JOBS / 2}`),
- the deepest bracket nesting and where it first passes a limit,
- the opener still unclosed at the end of the file (block, string or heredoc), if any,
- the first closing bracket that matches nothing (after which the scan stops trusting itself).

It never raises and never evaluates anything. The module also holds the helpers that read
python-hcl2's source-text values: `plain_string`, `literal` and `to_source`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from msgspec import Struct

#: Deeper bracket nesting than this is refused before the parser sees it (python-hcl2 hits
#: Python's recursion limit between 120 and 200 nested objects; a real bake file needs < 10).
MAX_NESTING = 64

# What ends a run of uninteresting characters, per mode.
_CODE_SPECIAL = re.compile(r'[#/"<{}\[\]()\n]')
_STRING_SPECIAL = re.compile(r'[\\"$%\n]')
_HEREDOC = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n")
_HEADER = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_-]*)((?:\s+(?:"[^"\n]*"|[A-Za-z_][\w-]*))*)\s*$')
_LABEL = re.compile(r'"([^"\n]*)"|([A-Za-z_][\w-]*)')
_PLAIN_STRING = re.compile(r'^"((?:[^"\\$%]|\\.|\$(?!\{)|%(?!\{))*)"$', re.DOTALL)
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
_DEFAULT = re.compile(r"^\s*default\s*=(.*)$", re.DOTALL)
_CLOSES = {"}": "{", "]": "[", ")": "("}


class BlockHeader(Struct, frozen=True):
    """A top-level block as written: `kind "label" {` on `line`."""

    kind: str
    labels: tuple[str, ...]
    line: int


@dataclass(slots=True)
class Scan:
    """What one pass over the text found (see the module doc)."""

    blocks: list[BlockHeader] = field(default_factory=list)
    max_depth: int = 0
    max_depth_line: int = 1
    too_deep_line: int | None = None
    unclosed: tuple[str, int] | None = None  # (what, line it opened on)
    stray_close: tuple[str, int] | None = None  # (character, line)
    defaults: dict[int, str] = field(default_factory=dict)  # block header line -> source text


def scan(text: str, max_nesting: int = MAX_NESTING) -> Scan:
    """Scan bake-file text once; see `Scan` for what comes back."""
    out = Scan()
    # Each entry: (opener, line). Openers: "{", "[", "(" (code), '"' (string), "${" (template
    # inside a string: code until its matching "}").
    stack: list[tuple[str, int]] = []
    stmt_start = 0  # where the current top-level statement began (after a depth-0 newline)
    body_start = 0  # where the current statement inside a top-level block began
    body_end: int | None = None  # where a trailing comment cut that statement short
    block_line: int | None = None  # header line of the top-level block being read
    line = 1
    i = 0
    n = len(text)
    while i < n:
        in_string = bool(stack) and stack[-1][0] == '"'
        m = (_STRING_SPECIAL if in_string else _CODE_SPECIAL).search(text, i)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == "\n":
            line += 1
            if in_string:  # HCL strings cannot span lines: report it, then carry on in code
                out.unclosed = out.unclosed or ("string", stack[-1][1])
                stack.pop()
            elif not stack:
                stmt_start = i + 1
            elif len(stack) == 1 and block_line is not None:
                _attribute(out, block_line, text[body_start : i if body_end is None else body_end])
                body_start, body_end = i + 1, None
            i += 1
            continue
        if in_string:
            if c == "\\":
                i += 2
            elif c == '"':
                stack.pop()
                i += 1
            elif text.startswith(("$${", "%%{"), i):
                i += 3
            elif text.startswith(("${", "%{"), i):
                stack.append(("${", line))
                i += 2
            else:
                i += 1
            continue
        # code
        if c == "#" or text.startswith("//", i):
            if len(stack) == 1 and body_end is None:
                body_end = i
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                out.unclosed = ("comment", line)
                return out
            line += text.count("\n", i, end)
            i = end + 2
        elif c == '"':
            stack.append(('"', line))
            i += 1
        elif c == "/":  # division, not a comment
            i += 1
        elif c == "<":
            hd = _HEREDOC.match(text, i)
            if hd is None:
                i += 1
                continue
            end_re = re.compile(rf"^[ \t]*{re.escape(hd.group(1))}[ \t]*\r?$", re.MULTILINE)
            closing = end_re.search(text, hd.end())
            if closing is None:
                out.unclosed = ("heredoc", line)
                return out
            line += text.count("\n", i, closing.end())
            i = closing.end()
        elif c in "{[(":
            if c == "{" and not stack:
                block_line = line if _header(out, text[stmt_start:i], line) else None
                body_start, body_end = i + 1, None
            stack.append((c, line))
            if len(stack) > out.max_depth:
                out.max_depth, out.max_depth_line = len(stack), line
            if len(stack) > max_nesting and out.too_deep_line is None:
                out.too_deep_line = line
            i += 1
        else:  # a closer
            top = stack[-1][0] if stack else None
            if top == _CLOSES[c] or (c == "}" and top == "${"):
                if len(stack) == 1 and block_line is not None:  # `variable "X" { default = 1 }`
                    cut = i if body_end is None else body_end
                    _attribute(out, block_line, text[body_start:cut])
                stack.pop()
                i += 1
            else:
                out.stray_close = (c, line)
                return out
    if stack:
        opener, opened = stack[-1] if stack[-1][0] in ('"', "${") else stack[0]
        what = {"{": "block", "[": "list", "(": "parenthesis", '"': "string", "${": "template"}
        out.unclosed = out.unclosed or (what[opener], opened)
    return out


def _attribute(out: Scan, block_line: int, statement: str) -> None:
    """Record `default = EXPR`, a complete statement inside the block opened on `block_line`."""
    m = _DEFAULT.match(statement)
    if m is not None:
        out.defaults.setdefault(block_line, m.group(1).strip())


def _header(out: Scan, head: str, line: int) -> bool:
    """Record a top-level block header if `head` (text before a depth-0 `{`) is one."""
    m = _HEADER.match(head)
    if m is None:
        return False
    labels = tuple(a if a or b == "" else b for a, b in _LABEL.findall(m.group(2)))
    out.blocks.append(BlockHeader(m.group(1), labels, line))
    return True


# --- HCL value text (python-hcl2's strings are source text) ------------------------------


def plain_string(source: Any) -> str | None:
    """The value of a string literal as python-hcl2 returns it (`'"a\\\\nb"'` -> "a\\nb"), or
    None when `source` is anything else (a template, heredoc, number, expression)."""
    if not isinstance(source, str):
        return None
    m = _PLAIN_STRING.match(source)
    if m is None or source.startswith('"<<'):  # a heredoc, kept as `"<<EOT\n...EOT"`
        return None

    def unescape(e: re.Match[str]) -> str:
        code = e.group(1) or e.group(2)
        if code:
            return chr(int(code, 16)) if int(code, 16) <= 0x10FFFF else "\ufffd"
        return _SIMPLE_ESCAPES.get(e.group(3), "\\" + e.group(3))

    return _ESCAPE.sub(unescape, m.group(1))


def _number(value: float | int) -> str:
    """A number the way bake prints it (integral values without a fraction)."""
    if (
        isinstance(value, float)
        and math.isfinite(value)
        and value.is_integer()
        and abs(value) < 1e21
    ):
        return str(int(value))
    return str(value)


def to_source(value: Any) -> str:
    """python-hcl2's value back into HCL text (strings are source text already)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, list):
        return "[" + ", ".join(to_source(v) for v in value) + "]"
    if isinstance(value, dict):
        items = [f"{k} = {to_source(v)}" for k, v in value.items() if k != "__is_block__"]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    return str(value)


def literal(value: Any) -> str | None:
    """The value bake gives a plain string, number or bool default; None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(value)
    return plain_string(value)
