"""Regex search over a whole log file: the numbers of the lines that match, fast and cancellable.

A line matches when the pattern is found in its *shown* text, the text `rocmtui.core.text.sanitize`
makes of it: SGR colour codes are dropped in bulk (a coloured `\\x1b[31merror\\x1b[0m:` still
matches `error:`), and the rare lines holding any other control go through `sanitize_line`
itself. (One difference: the sanitiser cuts shown lines at 8192 characters; the search sees the
whole line.) Line numbers are 0-based and count `\\n` bytes, the same numbering as `LineIndex`.

The file is read in chunks cut at line ends (a UTF-8 sequence never contains `\\n`, so cutting
at line ends never splits one). Most lines of a build log are *plain* once SGR colours are
dropped: tab and printable ASCII, shown exactly as they are. For those the pattern, compiled for
bytes, finds exactly what it finds in the text (the same ASCII characters, the same classes), so
a chunk is searched as raw bytes in one `re` pass (`bytes.find` when the pattern is a plain
literal), a match skips to the next line (a line counts once, as with `grep -c`), and the
newlines between matches are counted to number them. The few other lines (other controls, C1,
bidi, non-ASCII, invalid UTF-8) are decoded and sanitised one by one and searched as text; so
is everything when the pattern cannot be compiled for bytes (it is not ASCII) or a chunk is
mostly such lines. `scan()` resumes where it stopped (`SearchState`), so a followed log is
searched only in what was appended.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Callable
from functools import lru_cache

# Bytes read (and decoded, and lowercased) at a time. Small chunks stay in the CPU's caches and
# come from the heap: 128 KiB searched a 185 MB log in 0.60 s where 4 MiB took 0.95 s, and
# 1.22 s in a log view, whose fixed mmap threshold (app/performance.py) made every 4 MiB buffer a
# fresh mapping to fault in.
CHUNK = 128 << 10
# SGR colour codes: the sanitiser keeps them as styles, so the shown text is what is left.
_SGR = re.compile(rb"\x1b\[[0-9;:]{0,64}m")
# Bytes that may start something the sanitiser changes (C0 but tab and newline, ESC, DEL, and the
# UTF-8 lead bytes of C1, U+061C and the bidi and line-separator range). bytes.translate finds
# them ~10x faster than a regex; only the lines holding one are given to the real sanitiser.
_SUSPECT_BYTES = bytes([*range(0, 9), *range(11, 32), 0x7F, 0xC2, 0xD8, 0xE2])
_NOT_SUSPECT = bytes(b for b in range(256) if b not in _SUSPECT_BYTES)
_SUSPECT = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f\xc2\xd8\xe2]")


def _sanitize(line: str) -> str:
    # imported on first use: the search helper (logsearch_split) then starts without Rich,
    # ~25 ms sooner, and most chunks of a build log never need it
    from rocmtui.core.text.sanitize import sanitize_line

    return sanitize_line(line)


def clean_chunk(buf: bytes) -> str:
    """Whole lines of raw log bytes as the text a reader sees: SGR codes dropped, any line
    holding another control, C1 or bidi character (or a CR) passed through `sanitize_line`.
    Line ends are kept, so line numbers do not move."""
    raw = buf
    if b"\x1b[" in buf:
        buf = _SGR.sub(b"", buf)
    if not buf.translate(None, _NOT_SUSPECT):
        return buf.decode("utf-8", "replace")
    raw_lines = raw.split(b"\n") if buf is not raw else None
    out: list[str] = []
    pos = line_no = 0
    for m in _SUSPECT.finditer(buf):
        if m.start() < pos:
            continue  # in a line already done
        ls = buf.rfind(b"\n", 0, m.start()) + 1
        le = buf.find(b"\n", m.start())
        le = len(buf) if le < 0 else le
        line = buf[ls:le].decode("utf-8", "replace")
        out.append(buf[pos:ls].decode("utf-8", "replace"))
        line_no += buf.count(b"\n", pos, ls)
        if raw_lines is not None and "\x1b" in line:
            # dropping SGR codes left an escape: the sanitiser reads the line as it was (a
            # code cut in two by another is not rejoined as the bulk drop would)
            out.append(_sanitize(raw_lines[line_no].decode("utf-8", "replace")))
        else:
            out.append(_sanitize(line) if _UNSAFE_TEXT.search(line) else line)
        pos = le
    out.append(buf[pos:].decode("utf-8", "replace"))
    return "".join(out)


# What sanitize_line changes, as text (a lead byte alone, e.g. of "é", changes nothing).
_UNSAFE_TEXT = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)

Cancelled = Callable[[], bool]
Progress = Callable[[int, int], None]


@lru_cache(maxsize=8)
def _lowered_form(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """For a case-insensitive ASCII pattern with no capital letter outside escapes (`\\S` is
    an escape): the same pattern, case-sensitive, to run on lowercased ASCII text, where it
    finds the same. `re.IGNORECASE` defeats the engine's literal-prefix scan and is ~6x slower
    on a big log."""
    if not pattern.flags & re.IGNORECASE or not pattern.pattern.isascii():
        return None  # a non-ASCII letter may fold in ways lowering does not (ſ is s)
    if _CODE_ESCAPE.search(pattern.pattern):
        return None  # \\x41 is "A", which no lowercased text holds
    if any(ch.isupper() for ch in re.sub(r"\\.", "", pattern.pattern)):
        return None
    return re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)


# Escapes that name a character by its code (or refer back to a group): see `_lowered_form`.
_CODE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\[0-9xuUN]")


def compile_query(text: str, *, regex: bool = True, case: bool | None = None) -> re.Pattern[str]:
    """The pattern for what the user typed: a regex (or a literal), case-sensitive when `case`
    is True, insensitive when False, and "smart" when None (sensitive iff it has a capital).
    Raises `re.error` for a bad regex."""
    body = text if regex else re.escape(text)
    if case is None:  # capitals in escapes (\\S, \\W) are not the user asking for case
        case = any(ch.isupper() for ch in (re.sub(r"\\.", "", text) if regex else text))
    flags = re.MULTILINE | (0 if case else re.IGNORECASE)
    return re.compile(body, flags)


class SearchState:
    """A search in progress over one file: where it got to and what it found. (A plain class:
    `dataclasses` imports `inspect`, ~15 ms of the search helper's start.)"""

    __slots__ = ("invert", "lines", "next_byte", "next_line", "partial", "pattern")

    def __init__(self, pattern: re.Pattern[str], invert: bool = False) -> None:
        """A search of `pattern` (with `invert`, of the lines it does not match) from byte 0."""
        self.pattern = pattern
        self.invert = invert
        self.lines: array[int] = array("Q")
        self.next_byte = 0  # where to resume: a line start
        self.next_line = 0  # the number of the line starting at next_byte
        self.partial = False  # lines[-1] may be the growing last line (dropped and redone)


# For the bytes search, one pass over a chunk makes what the pattern runs on: every byte a plain
# line cannot hold (see the module docstring) becomes NUL, which marks the lines to search as
# text; with `_LOWER` capitals become small letters too (the case-insensitive search).
_PLAIN_OR_NL = frozenset([9, 10, *range(32, 127)])
_MARK = bytes(b if b in _PLAIN_OR_NL else 0 for b in range(256))
_LOWER = _MARK.lower()


@lru_cache(maxsize=8)
def _bytes_form(pattern: re.Pattern[str]) -> tuple[re.Pattern[bytes], bool, bytes | None] | None:
    """The pattern for raw bytes, whether to run it on lowercased bytes (as `scan` runs
    `_lowered_form` on lowercased text), and the bytes it stands for when it is a plain literal
    (then `bytes.find` runs instead: ~1.4x faster than the engine's literal scan); None when it
    is not ASCII or not a bytes pattern."""
    lowered = _lowered_form(pattern)
    source = lowered or pattern
    try:
        raw = source.pattern.encode("ascii")
        compiled = re.compile(raw, source.flags & ~re.UNICODE)
    except (UnicodeEncodeError, re.error, ValueError):
        return None
    return compiled, lowered is not None, _literal(compiled)


# A regex that stands for itself: no special character unless escaped, no escape of a letter
# or digit (those are classes, codes or back-references).
_LITERAL = re.compile(rb"(?:[^.^$*+?{}\[\]\\|()]|\\[^A-Za-z0-9])+")
_PLAIN = frozenset([9, *range(32, 127)])


def _literal(pattern: re.Pattern[bytes]) -> bytes | None:
    """The bytes a bytes pattern matches when it is a literal of plain line bytes (tab and
    printable ASCII: what a plain line holds), else None."""
    if pattern.flags & (re.IGNORECASE | re.VERBOSE) or not _LITERAL.fullmatch(pattern.pattern):
        return None
    text = re.sub(rb"\\(.)", rb"\1", pattern.pattern, flags=re.DOTALL)
    return text if all(b in _PLAIN for b in text) else None


def _newlines(buf: bytes, start: int, end: int) -> int:
    """The newlines in buf[start:end]. `bytes.count` of one byte tests every byte in a loop;
    `replace` finds each newline with memchr, ~2.3x faster over the ~200-byte lines of a build
    log, which pays for its copy on a long span."""
    if end - start < 4096:
        return buf.count(b"\n", start, end)
    part = buf[start:end]
    return len(part) - len(part.replace(b"\n", b""))


def _other_lines(hay: bytes) -> dict[int, int] | None:
    """Start -> end (its newline, or the end of `hay`) of each line holding a NUL (a byte a
    plain line cannot hold); None when they are more than a few."""
    spans: dict[int, int] = {}
    at = hay.find(b"\0")
    while at >= 0:
        start = hay.rfind(b"\n", 0, at) + 1
        end = hay.find(b"\n", at)
        end = len(hay) if end < 0 else end
        spans[start] = end
        if len(spans) * 2048 > len(hay):
            return None
        at = hay.find(b"\0", end)
    return spans


def _found_plain(
    chunk: bytes, pattern: re.Pattern[str], first_line: int
) -> tuple[array[int], int] | None:
    """The numbers of the lines of `chunk` (whole lines; its first is `first_line`) that match,
    and its newline count; None when it should be searched as text (see the module
    docstring)."""
    form = _bytes_form(pattern)
    if form is None:
        return None
    bpattern, lower, literal = form
    text = _SGR.sub(b"", chunk) if b"\x1b[" in chunk else chunk  # as shown: no SGR codes
    hay = text.translate(_LOWER if lower else _MARK)  # every "\n" stays where it is
    others = _other_lines(hay) if b"\0" in hay else {}
    if others is None:
        return None  # mostly lines that are not plain
    found: array[int] = array("Q")
    # pos is a line start, numbered line; only the newlines between matches are counted
    pos, line, n = 0, first_line, len(hay)
    find, rfind = hay.find, hay.rfind
    if literal is not None:  # one line per match, nothing to check again
        s = find(literal)
        while s >= 0:
            ls = rfind(b"\n", 0, s) + 1
            line += _newlines(hay, pos, ls)
            if ls not in others:
                found.append(line)
            le = find(b"\n", s)
            if le < 0:
                pos = n
                break
            pos, line = le + 1, line + 1
            s = find(literal, pos)
    else:
        search = bpattern.search
        while pos < n:
            m = search(hay, pos)
            if m is None:
                break
            s = m.start()
            ls = rfind(b"\n", 0, s) + 1
            line += _newlines(hay, pos, ls)
            le = find(b"\n", s)
            if le < 0:
                le = n
            if ls not in others and (m.end() <= le or search(hay[ls:le]) is not None):
                found.append(line)
            pos = le + 1
            line += le < n
    newlines = line - first_line + (_newlines(hay, pos, n) if pos < n else 0)
    if others:
        found = _with_others(chunk, text, others, pattern, first_line, found)
    return found, newlines


def _with_others(
    chunk: bytes,
    text: bytes,
    others: dict[int, int],
    pattern: re.Pattern[str],
    first_line: int,
    found: array[int],
) -> array[int]:
    """`found` and the lines of `others` (spans in `text`, which is `chunk` less its SGR codes)
    whose shown text matches, each decoded and sanitised from its raw bytes in `chunk`."""
    lowered = _lowered_form(pattern)
    raw_lines = chunk.split(b"\n") if text is not chunk else None
    matched: list[int] = []
    line, pos = first_line, 0
    for start, end in sorted(others.items()):
        line += text.count(b"\n", pos, start)
        pos = start
        raw = raw_lines[line - first_line] if raw_lines is not None else text[start:end]
        shown = clean_chunk(raw)
        if lowered is not None and shown.isascii():
            hit = lowered.search(shown.lower()) is not None
        else:
            hit = pattern.search(shown) is not None
        if hit:
            matched.append(line)
    return array("Q", sorted([*found, *matched])) if matched else found


def _line_matches(pattern: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """Check one line on its own (a match that ran over a line end, or a line with a CR)."""
    line = text[start:end]
    return pattern.search(line) is not None


def _matches_in(pattern: re.Pattern[str], text: str, first_line: int, out: array[int]) -> None:
    """Append the numbers of the lines of `text` (its first is `first_line`) where `pattern`
    matches; one regex search per matching line, plain counting in between."""
    pos, line, n = 0, first_line, len(text)
    search, count, find = pattern.search, text.count, text.find
    while pos < n:  # a line starts before the end (after a final "\n" is the next chunk)
        m = search(text, pos)
        if m is None:
            return
        s = m.start()
        line += count("\n", pos, s)
        ls = text.rfind("\n", 0, s) + 1
        le = find("\n", s)
        if le < 0:
            le = n
        if m.end() <= le or _line_matches(pattern, text, ls, le):
            out.append(line)
        pos = le + 1
        line += 1


def chunk_matches(
    chunk: bytes, pattern: re.Pattern[str], first_line: int
) -> tuple[array[int], int]:
    """The numbers of the lines of `chunk` (whole lines, or a last one without its newline;
    its first is `first_line`) whose shown text `pattern` matches, and its newline count."""
    plain = _found_plain(chunk, pattern, first_line)
    if plain is not None:
        return plain
    text = clean_chunk(chunk)
    found: array[int] = array("Q")
    lowered = _lowered_form(pattern)
    if lowered is not None and text.isascii():  # lower() keeps every "\n" there
        _matches_in(lowered, text.lower(), first_line, found)
    else:
        _matches_in(pattern, text, first_line, found)
    return found, chunk.count(b"\n")


def scan(
    fd: int,
    state: SearchState,
    end: int,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
    limit: int | None = None,
) -> bool:
    """Search bytes [state.next_byte, end) of the open file `fd`, extending `state`; True when
    `end` was reached, False when cancelled or `limit` matches were found."""
    if state.partial and state.lines and state.lines[-1] == state.next_line:
        state.lines.pop()  # the growing line is searched again, whole this time
    state.partial = False
    pattern = state.pattern
    while state.next_byte < end:
        if cancelled is not None and cancelled():
            return False
        pos = state.next_byte
        buf = os.pread(fd, min(CHUNK, end - pos), pos)
        if not buf:
            break
        cut = buf.rfind(b"\n") + 1
        while cut == 0 and pos + len(buf) < end:  # one line longer than the chunk: read on
            step = max(CHUNK * 4, len(buf))  # doubling: a 10 MB line is read in a few steps
            more = os.pread(fd, min(step, end - pos - len(buf)), pos + len(buf))
            if not more:
                break
            nl = more.find(b"\n")
            buf += more if nl < 0 else more[: nl + 1]
            cut = len(buf) if nl >= 0 else 0
        whole = cut > 0
        if not whole:
            cut = len(buf)  # the final line, not ended yet
        chunk = buf[:cut] if cut < len(buf) else buf
        found, newlines = chunk_matches(chunk, pattern, state.next_line)
        nlines = newlines + (0 if whole else 1)
        if state.invert:
            found = _complement(found, state.next_line, nlines)
        state.lines.extend(found)
        if whole:
            state.next_byte = pos + cut
            state.next_line += nlines
        else:
            state.partial = True
            break
        if progress is not None:
            progress(state.next_byte, end)
        if limit is not None and len(state.lines) >= limit:
            del state.lines[limit:]
            return False
    return True


def _complement(found: array[int], first: int, count: int) -> array[int]:
    """Line numbers in [first, first+count) that are not in `found` (sorted)."""
    out: array[int] = array("Q")
    prev = first
    for n in found:
        out.extend(range(prev, n))
        prev = n + 1
    out.extend(range(prev, first + count))
    return out


def search_file(
    path: str | os.PathLike[str],
    pattern: re.Pattern[str],
    invert: bool = False,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
    limit: int | None = None,
) -> array[int]:
    """Numbers of the lines of the file at `path` that match (or, with `invert`, do not)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        state = SearchState(pattern, invert)
        scan(fd, state, os.fstat(fd).st_size, cancelled, progress, limit)
        return state.lines
    finally:
        os.close(fd)
