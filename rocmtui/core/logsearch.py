"""Regex search over a whole log file: the numbers of the lines that match, fast and cancellable.

A line matches when the pattern is found in its *shown* text, the text `rocmtui.core.sanitize`
makes of it: SGR colour codes are dropped in bulk (a coloured `\\x1b[31merror\\x1b[0m:` still
matches `error:`), and the rare lines holding any other control go through `sanitize_line`
itself. (One difference: the sanitiser cuts shown lines at 8192 characters; the search sees the
whole line.) Line numbers are 0-based and count `\\n` bytes, the same numbering as `LineIndex`.

The file is read in chunks cut at line ends, decoded (invalid UTF-8 becomes U+FFFD; a UTF-8
sequence never contains `\\n`, so cutting at line ends never splits one) and searched with one
`re` pass per chunk, so the cost is close to the regex engine's own speed. `scan()` resumes where
it stopped (`SearchState`), so a followed log is searched only in what was appended.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from rocmtui.core.sanitize import sanitize_line

# Bytes read (and decoded, and lowercased) at a time. Small chunks stay in the CPU's caches and
# come from the heap: 128 KiB searched a 185 MB log in 0.60 s where 4 MiB took 0.95 s, and
# 1.22 s in a log view, whose fixed mmap threshold (logview_tail) made every 4 MiB buffer a
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


def clean_chunk(buf: bytes) -> str:
    """Whole lines of raw log bytes as the text a reader sees: SGR codes dropped, any line
    holding another control, C1 or bidi character (or a CR) passed through `sanitize_line`.
    Line ends are kept, so line numbers do not move."""
    if b"\x1b[" in buf:
        buf = _SGR.sub(b"", buf)
    if not buf.translate(None, _NOT_SUSPECT):
        return buf.decode("utf-8", "replace")
    out: list[str] = []
    pos = 0
    for m in _SUSPECT.finditer(buf):
        if m.start() < pos:
            continue  # in a line already done
        ls = buf.rfind(b"\n", 0, m.start()) + 1
        le = buf.find(b"\n", m.start())
        le = len(buf) if le < 0 else le
        line = buf[ls:le].decode("utf-8", "replace")
        out.append(buf[pos:ls].decode("utf-8", "replace"))
        out.append(sanitize_line(line) if _UNSAFE_TEXT.search(line) else line)
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
    """For a case-insensitive pattern with no capital letter outside escapes (`\\S` is an
    escape): the same pattern, case-sensitive, to run on lowercased text. `re.IGNORECASE`
    defeats the engine's literal-prefix scan and is ~6x slower on a big log."""
    if not pattern.flags & re.IGNORECASE:
        return None
    if any(ch.isupper() for ch in re.sub(r"\\.", "", pattern.pattern)):
        return None
    return re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)


def compile_query(text: str, *, regex: bool = True, case: bool | None = None) -> re.Pattern[str]:
    """The pattern for what the user typed: a regex (or a literal), case-sensitive when `case`
    is True, insensitive when False, and "smart" when None (sensitive iff it has a capital).
    Raises `re.error` for a bad regex."""
    body = text if regex else re.escape(text)
    if case is None:  # capitals in escapes (\\S, \\W) are not the user asking for case
        case = any(ch.isupper() for ch in (re.sub(r"\\.", "", text) if regex else text))
    flags = re.MULTILINE | (0 if case else re.IGNORECASE)
    return re.compile(body, flags)


@dataclass
class SearchState:
    """A search in progress over one file: where it got to and what it found."""

    pattern: re.Pattern[str]
    invert: bool = False
    lines: array[int] = field(default_factory=lambda: array("Q"))
    next_byte: int = 0  # where to resume: a line start
    next_line: int = 0  # the number of the line starting at next_byte
    partial: bool = False  # lines[-1] may be the growing last line (dropped and redone)


def _line_matches(pattern: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """Check one line on its own (a match that ran over a line end, or a line with a CR)."""
    line = text[start:end]
    return pattern.search(line) is not None


def _matches_in(pattern: re.Pattern[str], text: str, first_line: int, out: array[int]) -> None:
    """Append the numbers of the lines of `text` (its first is `first_line`) where `pattern`
    matches; one regex search per matching line, plain counting in between."""
    pos, line, n = 0, first_line, len(text)
    search, count, find = pattern.search, text.count, text.find
    while pos <= n:
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
    lowered = _lowered_form(pattern)
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
        nlines = buf.count(b"\n", 0, cut) + (0 if whole else 1)
        text = clean_chunk(buf[:cut] if cut < len(buf) else buf)
        found: array[int] = array("Q")
        if lowered is not None:  # str.lower() keeps every "\n", so line numbers hold
            _matches_in(lowered, text.lower(), state.next_line, found)
        else:
            _matches_in(pattern, text, state.next_line, found)
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
