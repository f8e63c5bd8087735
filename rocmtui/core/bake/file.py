"""The bake file as written: variables, targets, groups and which targets push (static, no buildx).

A bake path is one file or a folder standing for the files bake reads there with no `-f`
(`bakefind.bake_files`); several files are merged as buildx 0.13.1 merges them (`bakemerge`).
A `.json` file is bake's JSON form, read by `bakejson` into the same shape as HCL.

HCL is read with python-hcl2 8.x, which does not evaluate anything: values come back as source
text (`'"7.2.2"'`, `'${tag("pytorch", GFX_ARCH)}'`), block labels keep their quotes and every block
carries an `__is_block__` marker (tests/unit/test_bake_reader.py pins that shape). Line numbers and
the mistakes python-hcl2 lets through or reports badly come from `bakescan`.

Every problem is one `BakeError` whose `str()` is `FILE:LINE: message` -- never a traceback:
missing or unreadable file, over `MAX_BAKE_BYTES` (checked before reading), a UTF-8 BOM, text
that is not UTF-8, nesting deeper than `bakescan.MAX_NESTING`, an unterminated block, string or
heredoc, any other syntax error, a duplicate `variable` in one file (bake would silently keep
the last), and JSON that does not parse (its line, and its column in the message).

What bake will really use comes from buildx: see `rocmtui.core.bake.resolve`.
`load_bake` is cheap (tens of milliseconds for rocm-bake.hcl) and safe from any thread.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rocmtui.core.bake.find import BAKE_DEFAULT_FILES, bake_files
from rocmtui.core.bake.jsonform import JsonBakeError, json_error_text, label_lines, parse_json
from rocmtui.core.bake.merge import BakePart, build
from rocmtui.core.bake.scan import MAX_NESTING, BlockHeader, Scan, scan
from rocmtui.core.bake.targets import (
    ARCH_VARIABLE,
    SUPPORTED_ARCHES_VARIABLE,
    BakeError,
    BakeFile,
    BakeTarget,
    BakeVariable,
)

__all__ = [
    "ARCH_VARIABLE",
    "MAX_BAKE_BYTES",
    "SUPPORTED_ARCHES_VARIABLE",
    "BakeError",
    "BakeFile",
    "BakeTarget",
    "BakeVariable",
    "load_bake",
]

#: Bake files larger than this are refused unread (python-hcl2 takes seconds on huge input).
MAX_BAKE_BYTES = 1 << 20

_BOM = b"\xef\xbb\xbf"
_PARSE_LOCK = threading.Lock()  # python-hcl2 shares one cached Lark parser between callers
_CACHE_LOCK = threading.Lock()
_CACHE: dict[Path, tuple[tuple[tuple[str, int, int, int], ...], BakeFile]] = {}


def load_bake(path: Path | str) -> BakeFile:
    """Read and check a bake path: one file, or a folder's default files merged (raises
    BakeError; see the module doc for what is caught).

    The result is cached by path and each file's name, size, inode and modification time, so
    polling costs a few stat() calls while nothing changed; treat the returned BakeFile (and
    its dicts) as read-only, since every caller of unchanged files shares it.
    """
    path = Path(path)
    files = bake_files(path)
    if not files:
        raise BakeError(
            f"a directory with no bake file (none of {', '.join(BAKE_DEFAULT_FILES)})", path
        )
    try:
        signature: tuple[tuple[str, int, int, int], ...] | None = tuple(
            (str(f), st.st_mtime_ns, st.st_size, st.st_ino) for f in files for st in [f.stat()]
        )
    except OSError:
        signature = None  # _read_text reports it
    with _CACHE_LOCK:
        cached = _CACHE.get(path.absolute())
    if cached is not None and signature is not None and cached[0] == signature:
        return cached[1]
    bake = build(path, [_read_part(f) for f in files])
    if signature is not None:
        with _CACHE_LOCK:
            _CACHE[path.absolute()] = (signature, bake)
    return bake


def _read_part(path: Path) -> BakePart:
    text = _read_text(path)
    if path.suffix == ".json":
        try:
            data = parse_json(text)
        except JsonBakeError as exc:
            raise BakeError(json_error_text(exc), path, exc.line) from None
        return BakePart(path, data, label_lines(text), {})
    found = scan(text)
    if found.too_deep_line is not None:
        raise BakeError(f"nested deeper than {MAX_NESTING} levels", path, found.too_deep_line)
    data = _parse(text, path, found)
    _check_duplicate_variables(found.blocks, path)
    lines: dict[tuple[str, str], int] = {}
    for h in found.blocks:
        if h.labels:
            lines.setdefault((h.kind, h.labels[0]), h.line)
    defaults = {  # exact text; python-hcl2 re-renders expressions
        h.labels[0]: found.defaults[h.line]
        for h in found.blocks
        if h.kind == "variable" and h.labels and h.line in found.defaults
    }
    return BakePart(path, data, lines, defaults)


def _read_text(path: Path) -> str:
    """The file's text, refusing what is missing, huge, BOM-prefixed or not UTF-8."""
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise BakeError("is a directory, not a bake file", path)
        if size > MAX_BAKE_BYTES:
            raise BakeError(
                f"{size} bytes: bake files over {MAX_BAKE_BYTES} bytes are refused", path
            )
        with path.open("rb") as f:
            raw = f.read(MAX_BAKE_BYTES + 1)  # the file may have grown since stat()
    except FileNotFoundError:
        raise BakeError("no such bake file", path) from None
    except OSError as exc:
        raise BakeError(f"cannot read: {exc.strerror or exc}", path) from None
    if len(raw) > MAX_BAKE_BYTES:
        raise BakeError(f"bake files over {MAX_BAKE_BYTES} bytes are refused", path)
    if raw.startswith(_BOM):
        raise BakeError("starts with a UTF-8 byte-order mark (BOM); save it without one", path, 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise BakeError(f"not UTF-8 (byte 0x{raw[exc.start]:02x})", path, line) from None


def _parse(text: str, path: Path, found: Scan) -> dict[str, Any]:
    """python-hcl2's dict for `text`, every failure turned into one BakeError."""
    import hcl2  # imported here: ~0.1 s, and only callers that read bake files pay it
    from hcl2.utils import SerializationOptions
    from lark.exceptions import UnexpectedInput, VisitError

    options = SerializationOptions(with_comments=False)
    try:
        with _PARSE_LOCK:
            data = hcl2.loads(text, serialization_options=options)
    except RecursionError:
        raise BakeError("nested too deeply to parse", path, _deep_line(text, found)) from None
    except VisitError as exc:
        if isinstance(exc.orig_exc, RecursionError):
            raise BakeError("nested too deeply to parse", path, _deep_line(text, found)) from None
        raise BakeError(f"cannot read: {exc.orig_exc}", path) from None
    except UnexpectedInput as exc:
        raise _syntax_error(exc, path, found) from None
    except Exception as exc:  # python-hcl2 raises assorted types on odd input
        raise BakeError(f"cannot parse: {type(exc).__name__}: {exc}", path) from None
    if not isinstance(data, dict):
        raise BakeError("not a bake file (no blocks)", path)
    return data


def _deep_line(text: str, found: Scan) -> int:
    """Where a parser recursion most likely came from: the deepest brackets, or else (a long
    operator chain has no brackets) the longest line."""
    if found.max_depth > 4:
        return found.max_depth_line
    lengths = [len(line) for line in text.split("\n")]
    return lengths.index(max(lengths)) + 1


def _syntax_error(exc: Any, path: Path, found: Scan) -> BakeError:
    """Turn a Lark error into one line, preferring the scan's diagnosis of unclosed things."""
    if found.unclosed is not None:
        what, line = found.unclosed
        closer = {"block": "}", "list": "]", "parenthesis": ")", "template": "}"}.get(what)
        hint = f": no closing {closer!r} before the end of the file" if closer else ""
        return BakeError(f"unterminated {what}{hint}", path, line)
    if found.stray_close is not None:
        stray, stray_line = found.stray_close
        return BakeError(f"syntax error: {stray!r} closes nothing", path, stray_line)
    token = getattr(exc, "token", None)
    char = getattr(exc, "char", None)
    if token is not None and getattr(token, "type", "") == "$END":
        detail = "unexpected end of file"
    elif token is not None:
        detail = f"unexpected {str(token)[:40]!r}"
    elif char is not None:
        detail = f"unexpected character {char!r}"
    else:
        detail = "unexpected input"
    at = getattr(exc, "line", None)
    return BakeError(f"syntax error: {detail}", path, at if isinstance(at, int) else None)


def _check_duplicate_variables(blocks: list[BlockHeader], path: Path) -> None:
    first: dict[str, int] = {}
    for block in blocks:
        if block.kind != "variable" or not block.labels:
            continue
        name = block.labels[0]
        if name in first:
            raise BakeError(
                f'variable "{name}" is declared again (first at line {first[name]}); '
                "bake would silently use the last one",
                path,
                block.line,
            )
        first[name] = block.line
