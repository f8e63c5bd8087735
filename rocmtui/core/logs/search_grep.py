"""A big search for a literal, its scan done by grep (compiled, in a process of its own, not
holding this process's GIL), its answer made exact here.

`scan()` (search.py) costs several passes of C over the bytes, however few lines match: SGR
codes dropped, every byte translated (lowered, unusual bytes marked), newlines counted. On a
coloured 185 MB build log that is ~0.3-0.6 s of one core where `grep -c` takes ~0.08 s. Most
filters are a literal ("unused variable", "error:"), and for a literal grep can name every line
that *might* match, in one pass, and the few it names are then decided here as `scan()`
decides them (`_decide`), so the result is exactly `scan()`'s. So can it for a regex every
match of which holds a literal of 3 or more plain characters in a row (`error` of
`error: .*foo`) and which decides each line alone (`_required_literal`): the lines it names
for that literal are decided by `chunk_matches`, the code `scan()` runs.

Why the candidates hold every match. `scan()` searches a line's *shown* text: its raw bytes
decoded (UTF-8, invalid bytes as U+FFFD) with what `sanitize_line` removes removed (SGR and
other escape sequences, C0 but tab, DEL, C1, bidi controls, U+2028/9) and `\\r` laid over
the line's start. For a literal L of tab and printable ASCII (`_bytes_form`'s), a line whose
shown text holds L either
- holds L in its raw bytes too (grep: L itself; `-i` when the search ignores case: ASCII
  folding, as `scan` lowers ASCII text), or
- had something removed or moved inside L: then L's first piece is raw text directly before
  a removed thing, which starts with one of the bytes `_SUSPECT` lists: ESC (grep: each
  proper prefix of L followed by ESC), or another C0 control, DEL (the bracket below: any
  such byte on the line, CR included), or the UTF-8 of C1, U+061C, the bidi controls and
  U+2028/9 (those sequences anywhere on the line), or
- ignores case and holds a non-ASCII character that Python's `re.IGNORECASE` folds to an
  ASCII letter (U+0130, U+0131, U+017F, U+212A: that sequence anywhere on the line).
Invalid UTF-8 decodes to U+FFFD, never to ASCII. The one text the sanitiser adds, the mark
of a line cut at 8192 characters (" … [N bytes cut]"), is left to `scan()`: a literal made only
of its characters is not given to grep. So every line that matches is a candidate.

When it is not used (the caller then runs `scan_split`): no such literal, no grep, a search
smaller than `GREP_BYTES`, a last line too long to find its start; and grep is stopped (its
work dropped) when it fails, runs past its deadline, is cancelled, or names so many lines
that verifying them here would cost more than `scan()` (a literal on most lines).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import shutil
import subprocess
import time
from array import array
from bisect import bisect_right
from typing import Any

from rocmtui.core.logs.search import (
    _LOWER,
    _MARK,
    _SGR,
    Cancelled,
    Progress,
    SearchState,
    _bytes_form,
    _complement,
    _literal,
    chunk_matches,
)

_NOT_BYTES = re.IGNORECASE | re.UNICODE
_NUMBER = re.compile(rb"^([0-9]+):", re.MULTILINE)  # grep -n's "N:" before each line

GREP_BYTES = 16 << 20  # smaller searches are over in-process before grep has started
BATCH = 256 << 10  # bytes of grep's output verified at a time: while it runs, bounded
PIPE_BYTES = 1 << 20  # its pipe (Linux's default limit for an unprivileged process)
_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
WAIT = 0.05  # s between looks at `cancelled` while grep works
DEADLINE = 5.0  # s for grep, plus ...
PER_GB = 20.0  # ... s per GB searched (a loaded machine; grep alone does ~2 GB/s)
DENSE = 8  # more than 1 line in DENSE a candidate (after MIN_SEEN lines): stop, scan here
MIN_SEEN = 5_000
_ERE_SPECIAL = frozenset(b"\\.[]()*+?{}|^$")
# Lines holding a byte `sanitize_line` removes or acts on, other than ESC (a prefix of the
# literal before ESC is asked for instead) and newline: C0 but tab, DEL; and the UTF-8 of C1,
# U+061C, U+200E/F, U+2028-202E and U+2066-2069. Negated, so NUL needs no byte in the argument.
_UNUSUAL = (
    b"[^\t\x1b -~\x80-\xff]|\xc2[\x80-\x9f]|\xd8\x9c"
    b"|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
)
_FOLDS = b"\xc4[\xb0\xb1]|\xc5\xbf|\xe2\x84\xaa"  # U+0130, U+0131, U+017F, U+212A
_ENV = {"LC_ALL": "C", "PATH": os.defpath}  # bytes, not characters; no GREP_* from outside


def grep_form(pattern: re.Pattern[str]) -> tuple[bytes, bool] | None:
    """(the literal, whether case is ignored) when `pattern` is a literal grep can look for."""
    form = _bytes_form(pattern)
    if form is not None and form[2]:
        return _outside_marker(form[2], form[1])
    ignore = bool(pattern.flags & re.IGNORECASE)
    if ignore and pattern.pattern.isascii():
        # ignoring case with a capital in it ("ERROR"): grep -i of the same letters
        with contextlib.suppress(re.error):
            plain = re.compile(pattern.pattern.encode("ascii"), pattern.flags & ~_NOT_BYTES)
            literal = _literal(plain)
            if literal:
                return _outside_marker(literal, True)
    required = _required_literal(pattern)
    return _outside_marker(required, ignore) if required else None


def _required_literal(pattern: re.Pattern[str]) -> bytes | None:
    """The longest run of plain characters every match of a regex holds in a row (`error` of
    `error: .*foo`, `FAILED` of `\\bFAILED\\b`), when the regex decides each line on its own:
    no lookaround and no `\\A` or `\\Z`, which may look past a line, so that a candidate
    line decides the same with other lines around it. None when there is none of 3 or more."""
    try:
        from re import _parser  # in the try: a private module, free to change

        tree = _parser.parse(pattern.pattern, pattern.flags)
    except Exception:  # a private module: any change of it means "no"
        return None
    if _looks_past_a_line(tree) or not pattern.flags & re.MULTILINE:
        return None
    if _FLAGS_OFF.search(pattern.pattern):  # (?-m:^x): a ^ or $ of the chunk, not the line
        return None
    best: list[int] = []
    run: list[int] = []
    for op, arg in tree:
        if str(op) == "LITERAL" and arg in _PLAIN_CODES:
            run.append(arg)
            continue
        best, run = max(best, run, key=len), []
    best = max(best, run, key=len)
    return bytes(best) if len(best) >= 3 else None


def _looks_past_a_line(node: Any) -> bool:
    items = getattr(node, "data", node)  # a SubPattern's items, or a tuple's
    if isinstance(items, (list, tuple)):
        return any(_looks_past_a_line(item) for item in items)
    return str(node) in _LOOKS_PAST


_FLAGS_OFF = re.compile(r"\(\?[a-zA-Z]*-")
_LOOKS_PAST = frozenset({"ASSERT", "ASSERT_NOT", "AT_BEGINNING_STRING", "AT_END_STRING"})
_PLAIN_CODES = frozenset([9, *range(32, 127)])


# What the sanitiser's mark of a cut line (" … [N bytes cut]") holds besides "…": a literal
# made only of these may be found in that mark, on a line grep has no reason to name.
_MARKER_BYTES = frozenset(b" []0123456789bytescuBYTESCU")


def _outside_marker(literal: bytes, ignore: bool) -> tuple[bytes, bool] | None:
    return None if all(c in _MARKER_BYTES for c in literal) else (literal, ignore)


def _ere(literal: bytes) -> bytes:
    return b"".join(b"\\" + bytes([c]) if c in _ERE_SPECIAL else bytes([c]) for c in literal)


def candidates_pattern(literal: bytes, ignore_case: bool) -> bytes:
    """The extended regex of every line that may match (see the module docstring)."""
    parts = [_ere(literal)]
    parts += [_ere(literal[:k]) + b"\x1b" for k in range(1, len(literal))]
    parts.append(_UNUSUAL)
    if ignore_case:
        parts.append(_FOLDS)
    return b"|".join(parts)


def scan_grep_from_start(
    fd: int,
    state: SearchState,
    end: int,
    newlines: int,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
) -> bool | None:
    """`scan_grep` of a search from byte 0 over the whole lines of bytes [0, end), which hold
    `newlines` newlines (the line index knows); the line still growing after them is left."""
    run = start_from_start(fd, state, end, newlines)
    return run.finish(cancelled, progress) if run is not None else None


def start_from_start(fd: int, state: SearchState, end: int, newlines: int) -> GrepScan | None:
    """`scan_grep_from_start`'s grep, started (`GrepScan.finish` reads its answer), or None
    when grep is not used. Starting it costs a fork and an exec, no wait for the scan: the
    log view starts it as the key is handled, before the screen is painted."""
    if state.next_byte or state.lines or end < max(1, GREP_BYTES):
        return None
    stop = end
    if os.pread(fd, 1, end - 1) != b"\n":  # a last line still growing: up to its start
        tail = os.pread(fd, min(end, 1 << 16), max(0, end - (1 << 16)))
        if tail.rfind(b"\n") < 0:
            return None
        stop = end - len(tail) + tail.rfind(b"\n") + 1
    return start(fd, state, stop, newlines)


def scan_grep(
    fd: int,
    state: SearchState,
    stop: int,
    lines: int,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
) -> bool | None:
    """Search bytes [state.next_byte, stop) of `fd` (whole lines: `lines` of them) with grep
    and extend `state` as `scan()` would: True when done, False when cancelled, None when
    grep was not used or gave up (then `state` is as it was)."""
    run = start(fd, state, stop, lines)
    return run.finish(cancelled, progress) if run is not None else None


def start(fd: int, state: SearchState, stop: int, lines: int) -> GrepScan | None:
    """`scan_grep`'s grep, started; None when grep is not used for this search."""
    form = grep_form(state.pattern)
    grep = shutil.which("grep", path=os.defpath)
    if form is None or grep is None or stop - state.next_byte < GREP_BYTES or state.partial:
        return None
    literal, ignore = form
    argv: list[str | bytes] = [grep, "-a", "-n", "-E", "--color=never"]
    argv += ["-i"] if ignore else []
    argv += [b"-e", candidates_pattern(literal, ignore)]
    run = GrepScan(argv, fd, state.next_byte, stop - state.next_byte, lines, state)
    return run if run.started else None


class GrepScan:
    """One grep over one range, its candidates verified in batches as they arrive."""

    def __init__(
        self,
        argv: list[str | bytes],
        fd: int,
        start: int,
        size: int,
        lines: int,
        state: SearchState,
    ) -> None:
        self.size, self.lines, self.state = size, lines, state
        self.found: array[int] = array("Q")
        self.seen = 0  # candidates verified
        self.last = 0  # the 1-based number (in the range) of the last candidate verified
        self._out = bytearray()  # grep's output not verified yet (appended in place)
        self.past = False  # grep read past the range (the file grew): its answer is complete
        self.proc: subprocess.Popen[bytes] | None = None
        self.deadline = time.monotonic() + DEADLINE + PER_GB * size / 1e9
        try:
            # an open file of its own: grep's reads move its offset, not the index's
            src = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
        except OSError:
            return
        try:
            os.lseek(src, start, os.SEEK_SET)
            self.proc = subprocess.Popen(
                argv, stdin=src, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=_ENV, close_fds=True,
            )  # fmt: skip
        except (OSError, ValueError):
            self.proc = None
        finally:
            os.close(src)
        if self.proc is not None and self.proc.stdout is not None:
            # room for grep to run on while this thread waits for the GIL (64 KB by default)
            with contextlib.suppress(OSError):
                fcntl.fcntl(self.proc.stdout.fileno(), _SETPIPE_SZ, PIPE_BYTES)

    @property
    def started(self) -> bool:
        return self.proc is not None

    def finish(self, cancelled: Cancelled | None, progress: Progress | None) -> bool | None:
        """Read and verify grep's output to its end, then stop it; see `scan_grep` for the
        answer."""
        try:
            return self._collect(cancelled, progress)
        finally:
            self.close()

    def _collect(self, cancelled: Cancelled | None, progress: Progress | None) -> bool | None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        out, end = proc.stdout.fileno(), self.state.next_byte + self.size
        while not self.past:
            if cancelled is not None and cancelled():
                return False
            if time.monotonic() > self.deadline:
                return None
            if not select.select([out], [], [], WAIT)[0]:
                continue
            data = os.read(out, BATCH)
            if not data:
                if proc.wait() not in (0, 1):  # 1: no line selected; 2 or a signal: trouble
                    return None
                break
            self._out += data
            whole = b"\n" in data  # (a line longer than a batch is not looked at again)
            if whole and len(self._out) >= BATCH and not self._verify(final=False):
                return None  # so many candidates that scan() is quicker
            if progress is not None and self.last:
                progress(end - self.size + self.size * self.last // self.lines, end)
        self._verify(final=True)
        state = self.state
        if state.invert:
            self.found = _complement(self.found, state.next_line, self.lines)
        state.lines.extend(self.found)
        state.next_byte = end
        state.next_line += self.lines
        return True

    def _verify(self, *, final: bool) -> bool:
        """Decide the complete records in the output so far; False: too many candidates."""
        cut = len(self._out) if final else self._out.rfind(b"\n") + 1
        records = bytes(self._out[:cut])
        del self._out[:cut]
        if self.past or not records:
            return True
        if not records.endswith(b"\n"):
            records += b"\n"
        rows = records.count(b"\n")
        last = _number(records, records.rfind(b"\n", 0, len(records) - 1) + 1)
        if last > self.lines:  # the file grew past the range: the rest is scan()'s
            self.past = True
            numbers = [int(n) for n in _NUMBER.findall(records)]
            keep = bisect_right(numbers, self.lines)
            if not keep:
                return True
            at = 0
            for _ in range(keep):
                at = records.index(b"\n", at) + 1
            records, rows, last = records[:at], keep, numbers[keep - 1]
        seen = self.seen + rows
        if not final and last >= MIN_SEEN and seen * DENSE > last:
            return False  # before deciding them: that work would be thrown away
        first = self.state.next_line - 1  # numbers are 1-based from the range's start
        self.found.extend(first + n for n in _decide(records, self.state.pattern))
        self.seen, self.last = seen, last
        return True

    def close(self) -> None:
        """Stop grep if it still runs, and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            with contextlib.suppress(OSError):
                proc.stdout.close()


def _number(records: bytes, at: int) -> int:
    """The number of grep -n's record starting at `at`."""
    return int(records[at : records.index(b":", at)])


def _decide(records: bytes, pattern: re.Pattern[str]) -> list[int]:
    """The numbers of grep -n's records ("N:line\\n" each) whose line's shown text `pattern`
    matches, decided as `chunk_matches` decides them: the plain lines (as shown, nothing but
    tab and printable ASCII) by the literal's presence, one `in` each, the others by
    `chunk_matches` itself. All of the records at once where that is exact: an SGR code starts
    with ESC and holds none of "\\n", so dropping them from the records drops them from each
    line and never touches a record's "N:"; bytes translated one by one stay where they are."""
    form = _bytes_form(pattern)
    literal = form[2] if form is not None else None
    if form is None or not literal:  # a regex: its candidates' lines, all in one call
        numbers = [int(n) for n in _NUMBER.findall(records)]
        return [numbers[i] for i in chunk_matches(_NUMBER.sub(b"", records), pattern, 0)[0]]
    text = _SGR.sub(b"", records) if b"\x1b[" in records else records
    marked = text.translate(_LOWER if form[1] else _MARK)  # a byte no plain line holds: NUL
    hay = marked.split(b"\n")
    hay.pop()  # after the last record's newline
    if b"\0" not in marked and not _NUMERAL.intersection(literal):
        # every line plain, and the literal cannot be found in (or across) an "N:": the
        # common case, at C speed but for one `in` a record
        return [_number(row, 0) for row in hay if literal in row]
    raw = records.split(b"\n")
    found = []
    for i, row in enumerate(hay):
        start = row.index(b":") + 1
        if b"\0" in row:
            hit = bool(chunk_matches(raw[i][start:], pattern, 0)[0])
        else:
            hit = row.find(literal, start) >= 0
        if hit:
            found.append(int(row[: start - 1]))
    return found


_NUMERAL = frozenset(b"0123456789:")
