"""The bake file as written: variables, targets, groups and which targets push (static, no buildx).

Read with python-hcl2 8.x, which does not evaluate anything: values come back as source text
(`'"7.2.2"'`, `'${tag("pytorch", GFX_ARCH)}'`), block labels keep their quotes and every block
carries an `__is_block__` marker (tests/test_bake_reader.py pins that shape). Line numbers and
the mistakes python-hcl2 lets through or reports badly come from `bakescan`.

Every problem is one `BakeError` whose `str()` is `FILE:LINE: message` -- never a traceback:
missing or unreadable file, over `MAX_BAKE_BYTES` (checked before reading), a UTF-8 BOM, text
that is not UTF-8, nesting deeper than `bakescan.MAX_NESTING`, an unterminated block, string or
heredoc, any other syntax error, and a duplicate `variable` (bake would silently keep the last).

What bake will really use comes from buildx: see `rocmtui.core.bakeprint`.
`load_bake` is cheap (tens of milliseconds for rocm-bake.hcl) and safe from any thread.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmtui.core.bakescan import (
    MAX_NESTING,
    BlockHeader,
    Scan,
    literal,
    plain_string,
    scan,
    to_source,
)

#: Bake files larger than this are refused unread (python-hcl2 takes seconds on huge input).
MAX_BAKE_BYTES = 1 << 20
#: Variables that name the architectures (conventions of rocm-bake.hcl).
ARCH_VARIABLE = "GFX_ARCH"
SUPPORTED_ARCHES_VARIABLE = "SUPPORTED_GFX_ARCHES"

_BOM = b"\xef\xbb\xbf"
_PARSE_LOCK = threading.Lock()  # python-hcl2 shares one cached Lark parser between callers
_CACHE_LOCK = threading.Lock()
_CACHE: dict[Path, tuple[tuple[int, int, int], BakeFile]] = {}
_PUSH_OUTPUT = re.compile(r"(^|[\s,\"])(type=registry|push=true)\b")


class BakeError(Exception):
    """A bake file that cannot be used. `str()` is one line: `FILE:LINE: message`."""

    def __init__(self, message: str, path: Path | str, line: int | None = None) -> None:
        """`line` is 1-based, or None when the problem has no single line."""
        self.message = " ".join(str(message).split())  # one line, whatever came in
        self.path = Path(path)
        self.line = line
        where = f"{self.path}:{line}" if line else str(self.path)
        super().__init__(f"{where}: {self.message}")


@dataclass(frozen=True)
class BakeVariable:
    """One `variable` block.

    `default` is the literal value when the default is a plain string, number or bool (escapes
    decoded; an absent default is "", as bake treats it), else None (a template such as
    `"${REGISTRY}/x"`, a list, null, a heredoc): only buildx can say what that becomes.
    `default_source` is the default as written ("" when absent).
    """

    name: str
    default: str | None
    default_source: str
    line: int


@dataclass(frozen=True)
class BakeTarget:
    """One `target` block (several blocks with one name are merged, as bake does).

    `pushes`: its own or an inherited `output` is `type=registry` or has `push=true`.
    `contexts` values are the text inside the quotes (templates left as written).
    `matrix`: the block is a matrix; bake names the targets it makes from its `name` template.
    """

    name: str
    line: int
    inherits: tuple[str, ...]
    contexts: tuple[tuple[str, str], ...]
    pushes: bool
    description: str | None
    matrix: bool = False


@dataclass(frozen=True)
class BakeFile:
    """A whole bake file, as written."""

    path: Path
    variables: dict[str, BakeVariable]
    targets: dict[str, BakeTarget]
    groups: dict[str, tuple[str, ...]]

    @property
    def pushing_targets(self) -> frozenset[str]:
        """Targets that push to a registry (they need `--yes` and a registry login)."""
        return frozenset(name for name, t in self.targets.items() if t.pushes)

    @property
    def arches(self) -> tuple[str, ...]:
        """GFX_ARCH's default first, then SUPPORTED_GFX_ARCHES (comma list or list literal)."""
        found: list[str] = []
        arch = self.variables.get(ARCH_VARIABLE)
        if arch is not None and arch.default:
            found.append(arch.default.strip())
        listed = self.variables.get(SUPPORTED_ARCHES_VARIABLE)
        if listed is not None:
            if listed.default is not None:
                found.extend(listed.default.split(","))
            elif listed.default_source.lstrip().startswith("["):
                found.extend(re.findall(r'"([^"\\$]*)"', listed.default_source))
        return tuple(dict.fromkeys(a.strip() for a in found if a.strip()))

    def names(self) -> frozenset[str]:
        """Every target and group name written in the file (matrix targets by block label)."""
        return frozenset(self.targets) | frozenset(self.groups)


def load_bake(path: Path | str) -> BakeFile:
    """Read and check one bake file (raises BakeError; see the module doc for what is caught).

    The result is cached by path, size, inode and modification time, so polling costs one
    stat() while the file is unchanged; treat the returned BakeFile (and its dicts) as
    read-only, since every caller of an unchanged file shares it.
    """
    path = Path(path)
    try:
        st = path.stat()
        signature: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        signature = None  # _read_text reports it
    with _CACHE_LOCK:
        cached = _CACHE.get(path.absolute())
    if cached is not None and signature is not None and cached[0] == signature:
        return cached[1]
    bake = _load_uncached(path)
    if signature is not None:
        with _CACHE_LOCK:
            _CACHE[path.absolute()] = (signature, bake)
    return bake


def _load_uncached(path: Path) -> BakeFile:
    text = _read_text(path)
    found = scan(text)
    if found.too_deep_line is not None:
        raise BakeError(f"nested deeper than {MAX_NESTING} levels", path, found.too_deep_line)
    data = _parse(text, path, found)
    _check_duplicate_variables(found.blocks, path)
    return _build(path, data, found)


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


def _build(path: Path, data: dict[str, Any], found: Scan) -> BakeFile:
    lines: dict[tuple[str, str], int] = {}
    for h in found.blocks:
        if h.labels:
            lines.setdefault((h.kind, h.labels[0]), h.line)

    variables: dict[str, BakeVariable] = {}
    for name, body in _blocks(data, "variable"):
        line = lines.get(("variable", name), 0)
        if "default" in body:
            written = found.defaults.get(line)  # exact text; python-hcl2 re-renders expressions
            default = literal(body["default"])
            source = written if written is not None else to_source(body["default"])
        else:
            default, source = "", ""  # bake resolves a variable without a default to ""
        variables[name] = BakeVariable(name, default, source, line)

    bodies: dict[str, dict[str, Any]] = {}
    for name, body in _blocks(data, "target"):
        bodies.setdefault(name, {}).update(body)  # bake merges blocks with one name
    own_push = {name: _outputs_push(body.get("output")) for name, body in bodies.items()}
    targets: dict[str, BakeTarget] = {}
    for name, body in bodies.items():
        contexts = body.get("contexts")
        description = body.get("description")
        targets[name] = BakeTarget(
            name=name,
            line=lines.get(("target", name), 0),
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
        )

    groups: dict[str, tuple[str, ...]] = {}
    for name, body in _blocks(data, "group"):
        groups[name] = tuple(dict.fromkeys(groups.get(name, ()) + _strings(body.get("targets"))))
    return BakeFile(path, variables, targets, groups)


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
