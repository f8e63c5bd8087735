"""A big search shared with a helper process on the other core: this thread takes pieces of the
file from the front, the helper takes them from the back, until they meet.

`scan()` (logsearch.py) runs at the speed of a few passes of C over the bytes, one core at a
time (the regex engine holds the GIL): ~0.3 s of CPU for a 185 MB coloured build log on this
machine, where `grep -c` takes ~0.07 s. `scan_split()` does the same search with the file cut
into pieces of `PIECE` bytes at line starts. The helper (`logsearch_helper.py`: the same
`scan()` on the same open file, through an inherited descriptor) is handed the last piece not
yet taken, searches it and writes its line count and matching lines (counted from the piece's
first line); this thread hands it the next one between two of its own chunks, and searches
pieces from the front meanwhile. Whoever gets more of a core does more of the work: a helper
starved by a busy machine costs at most the piece it holds. The results are those of one
`scan()` over the whole (the same code, on whole lines, numbered the same way). Only searches of
more than `SPLIT_BYTES` with more than one core to use are shared; the helper is killed when
the search is cancelled, and the pieces it did not finish are searched here.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from array import array
from collections.abc import Callable

from rocmtui.core.logs.search import Cancelled, Progress, SearchState, scan
from rocmtui.core.logs.search_helper import PIECE_DONE, PIECE_SPAN, encode_pattern

SPLIT_BYTES = 32 << 20  # smaller searches are over before a helper process has started
PIECE = 4 << 20  # bytes: ~6 ms of search; the most this thread may wait for the helper
EDGE = 64 << 10  # bytes read to find a line start near a cut
WAIT = 0.05  # s between looks at `cancelled` while waiting for the helper's last piece
PATIENCE = 2.0  # s this thread waits for that piece (~6 ms of work) before doing it itself
# The helper starts isolated (-I) and without site (-S): no .pth files, no editable-install
# finder, ~15-60 ms sooner on a busy machine; it needs the standard library and this package
# only, found through the folder that holds the package.
_ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from rocmtui.core.logs.search_helper import main; raise SystemExit(main(sys.argv[2:]))"
)


def cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def scan_split(
    fd: int,
    state: SearchState,
    end: int,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
) -> bool:
    """As `scan(fd, state, end, cancelled, progress)`, with pieces of a big search done by a
    helper process (see the module docstring)."""
    start = state.next_byte
    if end - start < SPLIT_BYTES or cores() < 2 or state.partial:
        return scan(fd, state, end, cancelled, progress)
    stop = _line_start_before(fd, end, start)
    if stop is None or stop <= start:
        return scan(fd, state, end, cancelled, progress)
    shared = _Shared(fd, state, _cuts(fd, start, stop), cancelled, progress, end)
    try:
        if not shared.run():
            return False
    finally:
        shared.helper.close()
    return scan(fd, state, end, cancelled, progress)  # what is left: a line still growing


def _cuts(fd: int, start: int, stop: int) -> list[int]:
    """Line starts about `PIECE` apart from `start` to `stop` (both included)."""
    cuts = [start]
    while stop - cuts[-1] > PIECE + PIECE // 2:
        at = _line_start_after(fd, cuts[-1] + PIECE, stop)
        if at is None or at >= stop:
            break
        cuts.append(at)
    cuts.append(stop)
    return cuts


class _Shared:
    """One shared search: who has which piece, and what the helper found in its pieces."""

    def __init__(
        self,
        fd: int,
        state: SearchState,
        cuts: list[int],
        cancelled: Cancelled | None,
        progress: Progress | None,
        end: int,
    ) -> None:
        self.fd, self.state, self.cuts, self.end = fd, state, cuts, end
        self._cancelled, self._progress = cancelled, progress
        self.next = 0  # the next piece this thread takes
        self.back = len(cuts) - 1  # pieces from here on are the helper's
        self.given: list[int] = []  # handed to the helper, not yet answered (oldest first)
        self.found: dict[int, tuple[int, array[int]]] = {}  # piece -> (lines, matching lines)
        self.helper_bytes = 0  # bytes of the pieces the helper answered
        self.helper = _Helper(fd, state)
        self._give()

    def run(self) -> bool:
        """Search every piece; False when cancelled."""
        while True:
            self.helper.poll(self._answered)
            self._give()
            if self.next >= self.back:
                break
            piece, self.next = self.next, self.next + 1
            if not scan(self.fd, self.state, self.cuts[piece + 1], self._hook, self._moved):
                return False
        patience = time.monotonic() + PATIENCE
        while self.given and self.helper.alive():  # its last piece
            if self._cancelled is not None and self._cancelled():
                return False
            if time.monotonic() > patience:
                self.helper.close()  # stuck: its piece is searched here
                break
            self.helper.poll(self._answered, WAIT)
        return self._join()

    def _join(self) -> bool:
        """Put the helper's pieces after this thread's, searching here any it did not answer."""
        state = self.state
        for piece in range(self.back, len(self.cuts) - 1):
            got = self.found.get(piece)
            if got is None:  # the helper failed or was too slow to start
                if not scan(self.fd, state, self.cuts[piece + 1], self._cancelled, self._moved):
                    return False
                continue
            lines, found = got
            first = state.next_line
            state.lines.extend(found if not first else array("Q", [first + n for n in found]))
            state.next_byte, state.next_line = self.cuts[piece + 1], first + lines
        return True

    def _give(self) -> None:
        """Keep the helper one piece busy, taking from the back while pieces are left."""
        if not self.given and self.next < self.back and self.helper.alive():
            self.back -= 1
            if self.helper.ask(self.cuts[self.back], self.cuts[self.back + 1]):
                self.given.append(self.back)
            else:
                self.back += 1  # it is gone: this thread searches everything

    def _answered(self, lines: int, found: array[int]) -> None:
        piece = self.given.pop(0)
        self.found[piece] = (lines, found)
        self.helper_bytes += self.cuts[piece + 1] - self.cuts[piece]

    def _hook(self) -> bool:
        """Between two of this thread's chunks: take the helper's answer, give it more."""
        self.helper.poll(self._answered)
        self._give()
        return self._cancelled is not None and self._cancelled()

    def _moved(self, done: int, total: int) -> None:
        if self._progress is not None:
            here = done - self.cuts[0] + self.helper_bytes
            self._progress(min(self.end, self.cuts[0] + here), self.end)


def _line_start_after(fd: int, at: int, end: int) -> int | None:
    buf = os.pread(fd, min(EDGE, end - at), at)
    nl = buf.find(b"\n")
    return None if nl < 0 else at + nl + 1


def _line_start_before(fd: int, end: int, floor: int | None) -> int | None:
    lo = max(floor or 0, end - EDGE)
    nl = os.pread(fd, end - lo, lo).rfind(b"\n")
    return None if nl < 0 else lo + nl + 1


class _Helper:
    """The helper process: pieces asked on its stdin, answers read from its stdout."""

    def __init__(self, fd: int, state: SearchState) -> None:
        ask = [str(n) for n in (fd, state.pattern.flags, int(state.invert))]
        self.proc: subprocess.Popen[bytes] | None = None
        self._out = bytearray()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, _ROOT, *ask],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(fd,),
                close_fds=True,
            )
            assert self.proc.stdin is not None and self.proc.stdout is not None
            os.set_blocking(self.proc.stdout.fileno(), False)
            self.proc.stdin.write(encode_pattern(state.pattern.pattern))
            self.proc.stdin.flush()
        except (OSError, ValueError):
            self.close()

    def alive(self) -> bool:
        """Whether it can still be asked (it started and has not failed)."""
        return self.proc is not None

    def ask(self, start: int, stop: int) -> bool:
        """Ask it to search bytes [start, stop); False when it is gone."""
        if self.proc is None or self.proc.stdin is None:
            return False
        try:
            self.proc.stdin.write(PIECE_SPAN.pack(start, stop))
            self.proc.stdin.flush()
        except (OSError, ValueError):
            self.close()
            return False
        return True

    def poll(self, answered: Callable[[int, array[int]], None], wait: float = 0.0) -> None:
        """Hand each complete answer to `answered` (waiting up to `wait` s for output)."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return
        fileno = proc.stdout.fileno()
        if wait and not select.select([fileno], [], [], wait)[0]:
            return
        while True:
            try:
                piece = os.read(fileno, 1 << 20)
            except BlockingIOError:
                break
            except OSError:
                piece = b""
            if not piece:  # it exited, or failed: what it did not answer is searched here
                self.close()
                break
            self._out += piece
        out = self._out
        while len(out) >= PIECE_DONE.size:
            lines, count = PIECE_DONE.unpack_from(out)
            size = PIECE_DONE.size + 8 * count
            if len(out) < size:
                break
            found = array("Q")
            found.frombytes(bytes(out[PIECE_DONE.size : size]))
            del out[:size]
            answered(lines, found)

    def close(self) -> None:
        """Stop it if it still runs, and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
