"""A line index over a log file on disk: the tail first, the rest in the background, kept small.

A build log can be hundreds of MB and millions of lines, and it keeps growing while it is shown.
`LineIndex` never holds the lines. It holds one *mark* (a byte offset) for every `MARK_EVERY`th
line start, in a few *segments*: `open()` reads only the last ~64 KB, so the last screen can be
shown at once; `scan_back()` (run it in a worker thread) prepends segments until it reaches byte 0;
`refresh()` indexes bytes appended since, and notices truncation, a rewrite or rotation. The exact
start of a line between two marks is found by reading that block of lines (a few KB) when it is
needed, and remembered in a small LRU. So 5,000,000 lines cost ~0.6 MB of marks, not 40 MB of
offsets, and memory stays flat however long a followed log grows.

The file is read with `os.pread`, never mmap: mapped pages count in the process's RSS, read pages
only in the kernel's page cache.

Line numbers are 0-based. Until `complete` is true they count from the first line indexed so far
(the backward scan is still prepending); after that they are the file's own line numbers. A line
is what lies between two `\\n` bytes; a final line without `\\n` counts (it may still be growing).
Thread-safety: one lock guards the segments; a scan or read does its I/O outside it.
"""

from __future__ import annotations

import enum
import os
import re
import threading
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from rocmtui.core.logs.tail import at_path, replaced

MARK_EVERY = 64  # lines per mark: 8 bytes of index per 64 lines
TAIL_BYTES = 64 * 1024  # what open() reads: enough for several screens of the last lines
CHUNK_BYTES = 1 << 20  # scan_back reads: peak RSS grows with it (2 MB: VmHWM +2 MB, same speed)
APPEND_CHUNK = 1 << 20  # refresh read size: appends come in small pieces; keep buffers small
BLOCK_CACHE = 128  # blocks (of MARK_EVERY lines) whose line starts are remembered
FINGERPRINT = 64  # bytes before the indexed end re-read on refresh to catch a rewrite

Cancelled = Callable[[], bool]
Progress = Callable[[int, int], None]


# exactly MARK_EVERY whole lines: finditer then steps a block per C-level match
_BLOCK_RE = re.compile(rb"(?:.*\n){%d}" % MARK_EVERY)


def _marks_in(buf: bytes, base: int, nl_before: int, out: array[int], start: int = 0) -> int:
    """Append to `out` the offsets of line starts in `buf[start:]` whose local number is a
    multiple of MARK_EVERY (`nl_before` newlines precede it in its segment; `buf[0]` is at file
    offset `base`); return the newlines in `buf[start:]`. (An offset, not a slice: a slice of a
    2 MB read was a copy, and the peak memory of indexing a big log.)
    """
    n = buf.count(b"\n", start)
    first = MARK_EVERY - nl_before % MARK_EVERY
    if n < first:
        return n
    # at most MARK_EVERY lines to the first mark: a few finds, no pattern per count (a cache
    # of compiled patterns kept filling, one per remainder seen, while a log was followed)
    pos = start
    for _ in range(first):
        pos = buf.index(b"\n", pos) + 1
    out.append(base + pos)
    # stop after the last whole block: a failing search over the remainder would be quadratic
    blocks = _BLOCK_RE.finditer(buf, pos)
    out.extend(base + x.end() for x in islice(blocks, (n - first) // MARK_EVERY))
    return n


@dataclass(slots=True)
class _Segment:
    """Bytes [start, end) of the file, starting at a line start; only the last may end mid-line."""

    start: int
    end: int
    newlines: int = 0
    marks: array[int] = field(default_factory=lambda: array("Q"))
    ends_with_nl: bool = True

    @property
    def lines(self) -> int:
        """Lines that start in this segment."""
        if self.end == self.start:
            return 0
        return self.newlines + (0 if self.ends_with_nl else 1)


class Change(enum.Enum):
    """What `LineIndex.refresh()` found."""

    NONE = "none"  # nothing new
    GREW = "grew"  # bytes were appended and indexed
    RESET = "reset"  # truncated, rewritten or rotated: the index was rebuilt from the tail
    MISSING = "missing"  # the path is gone and the open file did not grow: nothing new


def _window_before(fd: int, end: int, want: int) -> tuple[int, int, bytes]:
    """The bytes before `end` from a line start on: `(lo, cut, buf)` with `buf` read from `lo`
    and its first whole line at `buf[cut:]`. About `want` bytes, widened (×4 at a time) while the
    window holds no line start but the newline at `end - 1` (a line longer than the window)."""
    while True:
        lo = max(0, end - want)
        buf = os.pread(fd, end - lo, lo)
        # a line start inside the window: a newline before the last byte, which may end a line
        cut = 0 if lo == 0 else buf.find(b"\n", 0, len(buf) - 1) + 1
        if lo == 0 or cut > 0:
            return lo, cut, buf
        want *= 4


class LineIndex:
    """Sparse, file-backed index of line starts. See the module docstring."""

    def __init__(self, path: Path | str) -> None:
        """Index `path` (nothing is read until `open()`)."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._ident: tuple[int, int] = (0, 0)
        self._segments: list[_Segment] = []
        self._first_line: list[int] = []  # line number of each segment's first line
        # block start offset -> (end, lines, line starts); a block that grew replaces its entry
        self._blocks: OrderedDict[int, tuple[int, int, array[int]]] = OrderedDict()
        self._fingerprint = b""
        self.generation = 0  # bumped on every reset; a consumer drops what it cached before
        self.prepended = 0  # lines the backward scan added in front since the last open()
        self.removed = False  # the path was gone at the last refresh(): the open file is read

    # -- opening and scanning ------------------------------------------------------------------
    def open(self) -> None:
        """Open the file and index its last ~64 KB (more only if the last line is longer)."""
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        st = os.fstat(fd)
        size = st.st_size
        lo, cut, buf = _window_before(fd, size, TAIL_BYTES)
        seg = _Segment(lo + cut, lo + cut, ends_with_nl=True)
        seg.marks.append(seg.start)
        self._extend(seg, buf, cut)
        with self._lock:
            old, self._fd = self._fd, fd
            self._ident = (st.st_dev, st.st_ino)
            self._segments = [seg]
            self._first_line = [0]
            self._blocks.clear()
            self._fingerprint = buf[-FINGERPRINT:]
            self.generation += 1
            self.prepended = 0
        if old is not None:
            os.close(old)

    def close(self) -> None:
        """Release the file descriptor."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    @staticmethod
    def _extend(seg: _Segment, buf: bytes, start: int = 0) -> None:
        """Index `buf[start:]`, which follows `seg.end` directly, into `seg` (which must be
        unpublished or guarded by the caller)."""
        if len(buf) <= start:
            return
        seg.newlines += _marks_in(buf, seg.end - start, seg.newlines, seg.marks, start)
        seg.end += len(buf) - start
        seg.ends_with_nl = buf.endswith(b"\n")

    def scan_back(
        self,
        cancelled: Cancelled | None = None,
        progress: Progress | None = None,
        chunk: int = CHUNK_BYTES,
    ) -> bool:
        """Prepend segments until byte 0 is indexed; True when complete, False when cancelled or
        when the file was reset meanwhile (run it again then)."""
        while True:
            with self._lock:
                if not self._segments or self._fd is None:
                    return False
                fd, gen, top = self._fd, self.generation, self._segments[0].start
                total = self._segments[-1].end
            if progress is not None:
                progress(total - top, total)
            if top == 0:
                return True
            if cancelled is not None and cancelled():
                return False
            lo, cut, buf = _window_before(fd, top, chunk)
            seg = _Segment(lo + cut, lo + cut)
            seg.marks.append(seg.start)
            self._extend(seg, buf, cut)
            if seg.marks[-1] >= seg.end:  # the mark after our last newline is the next segment's
                seg.marks.pop()
            with self._lock:
                if gen != self.generation:
                    return False
                self._segments.insert(0, seg)
                self.prepended += seg.lines
                self._reindex()

    def _reindex(self) -> None:
        """Recompute each segment's first line number (caller holds the lock)."""
        n, firsts = 0, []
        for seg in self._segments:
            firsts.append(n)
            n += seg.lines
        self._first_line = firsts

    def refresh(self, cancelled: Cancelled | None = None) -> Change:
        """Index what was appended since the last call; rebuild from the tail when the file was
        truncated, rewritten (the bytes before our end changed) or replaced at its path.

        While the path is gone (the file removed, or renamed away by a rotation) the open file
        is still read as it grows, as `tail -f` does: its writer may still be writing to it.
        `removed` says so; a new file at the path is opened in its place (RESET)."""
        try:
            st, self.removed = self.stat()
        except FileNotFoundError:
            return Change.MISSING
        with self._lock:
            fd = self._fd
            seg = self._segments[-1] if self._segments else None
            ident, fp = self._ident, self._fingerprint
        if fd is None or seg is None:
            self.open()
            return Change.RESET
        end = seg.end
        if (
            replaced(st, ident)
            or st.st_size < end
            or (fp and os.pread(fd, len(fp), end - len(fp)) != fp)
        ):
            self.open()
            return Change.RESET
        if st.st_size == end:
            return Change.MISSING if self.removed else Change.NONE
        while True:
            size = os.fstat(fd).st_size
            if size <= end or (cancelled is not None and cancelled()):
                break
            n = min(APPEND_CHUNK, size - end)
            buf = os.pread(fd, n, end)
            if not buf:
                break
            if len(buf) == APPEND_CHUNK and b"\n" in buf:  # keep chunk boundaries on line ends
                buf = buf[: buf.rfind(b"\n") + 1]
            with self._lock:
                if self._fd != fd:
                    return Change.RESET
                self._extend(seg, buf)
                self._fingerprint = (self._fingerprint + buf)[-FINGERPRINT:]
                self._reindex()
            end += len(buf)
        return Change.GREW

    def stat(self) -> tuple[os.stat_result, bool]:
        """The file at the path, or the open file while the path is gone, and whether it is
        gone (FileNotFoundError: gone, and nothing open): `logs.tail.at_path`."""
        return at_path(self.path, self.fileno())

    def fileno(self) -> int | None:
        """The descriptor the index reads (a search of the same bytes uses it too)."""
        with self._lock:
            return self._fd

    # -- state ---------------------------------------------------------------------------------
    @property
    def complete(self) -> bool:
        """True once line numbers are the file's own (the scan reached byte 0)."""
        with self._lock:
            return bool(self._segments) and self._segments[0].start == 0

    @property
    def line_count(self) -> int:
        """Lines indexed so far (a final line without newline counts)."""
        with self._lock:
            if not self._segments:
                return 0
            return self._first_line[-1] + self._segments[-1].lines

    @property
    def size(self) -> int:
        """Bytes of the file indexed so far (the end of the last segment)."""
        with self._lock:
            return self._segments[-1].end if self._segments else 0

    def extent(self) -> tuple[int, int]:
        """(bytes indexed, the newlines among them), read together."""
        with self._lock:
            if not self._segments:
                return 0, 0
            return self._segments[-1].end, self._first_line[-1] + self._segments[-1].newlines

    @property
    def covered(self) -> tuple[int, int]:
        """(first byte indexed, last byte indexed): progress of the backward scan."""
        with self._lock:
            if not self._segments:
                return (0, 0)
            return (self._segments[0].start, self._segments[-1].end)

    # -- reading -------------------------------------------------------------------------------
    def _block(self, line: int, max_read: int | None) -> tuple[int, array[int]] | None:
        """(first line of the block holding `line`, starts of its lines + the end of its last
        line's bytes, newline included); None when reading it would exceed `max_read` bytes."""
        with self._lock:
            si = bisect_right(self._first_line, line) - 1
            if line < 0 or si < 0:
                raise IndexError(line)
            seg = self._segments[si]
            local = line - self._first_line[si]
            if local >= seg.lines:
                raise IndexError(line)
            c = local // MARK_EVERY
            first = line - local % MARK_EVERY
            lo = seg.marks[c]
            hi = seg.marks[c + 1] if c + 1 < len(seg.marks) else seg.end
            hi = min(hi, seg.end)
            nlines = min(MARK_EVERY, seg.lines - c * MARK_EVERY)
            # keyed by start only: the last block grows on every append, and keying by its range
            # left a dead entry per append while following
            cached = self._blocks.get(lo)
            if cached is not None and cached[0] == hi and cached[1] == nlines:
                self._blocks.move_to_end(lo)
                return first, cached[2]
            fd = self._fd
            gen = self.generation
        if max_read is not None and hi - lo > max_read:
            return None
        assert fd is not None
        buf = os.pread(fd, hi - lo, lo)
        starts = array("Q", [lo])
        pos = 0
        for _ in range(nlines - 1):
            pos = buf.index(b"\n", pos) + 1
            starts.append(lo + pos)
        starts.append(lo + len(buf))
        with self._lock:
            if gen == self.generation:
                self._blocks[lo] = (hi, nlines, starts)
                self._blocks.move_to_end(lo)
                if len(self._blocks) > BLOCK_CACHE:
                    self._blocks.popitem(last=False)
        return first, starts

    def forget_blocks(self) -> None:
        """Drop the remembered line starts (a followed log's screen moved past all of them)."""
        with self._lock:
            self._blocks.clear()

    def spans(
        self, first: int, stop: int, max_read: int | None = None
    ) -> list[tuple[int, int]] | None:
        """Byte spans (start, end without the newline) of lines [first, stop); None when a block
        not yet cached is bigger than `max_read` (read it in a worker with max_read=None)."""
        out: list[tuple[int, int]] = []
        line = first
        stop = min(stop, self.line_count)
        while line < stop:
            got = self._block(line, max_read)
            if got is None:
                return None
            bfirst, starts = got
            nlines = len(starts) - 1
            for j in range(line - bfirst, nlines):
                if line >= stop:
                    break
                s, e = starts[j], starts[j + 1]
                if j == nlines - 1 and not self._ends_line(e):
                    out.append((s, e))  # the final line, not yet ended by a newline
                else:
                    out.append((s, e - 1))
                line += 1
        return out

    def _ends_line(self, end: int) -> bool:
        """Whether the byte before `end` is a newline (only asked at block ends)."""
        with self._lock:
            seg = self._segments[-1]
            if end != seg.end:
                return True
            return seg.ends_with_nl

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file."""
        with self._lock:
            fd = self._fd
        if fd is None or end <= start:
            return b""
        return os.pread(fd, end - start, start)

    def read_lines(
        self, first: int, stop: int, cap: int | None = None, max_read: int | None = None
    ) -> list[tuple[bytes, int]] | None:
        """Lines [first, stop) as (bytes without newline, full length); each is cut to `cap`
        bytes. None when `max_read` forbids reading a block (see `spans`)."""
        spans = self.spans(first, stop, max_read)
        if spans is None:
            return None
        out: list[tuple[bytes, int]] = []
        if spans and spans[-1][1] - spans[0][0] < (1 << 20):
            lo = spans[0][0]  # one read for the whole screen when its lines are short
            buf = self.read(lo, spans[-1][1])
            for s, e in spans:
                cut = e if cap is None else min(e, s + cap)
                out.append((buf[s - lo : cut - lo], e - s))
            return out
        for s, e in spans:
            cut = e if cap is None else min(e, s + cap)
            out.append((self.read(s, cut), e - s))
        return out
