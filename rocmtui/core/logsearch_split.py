"""A big search split in two: this thread searches the first part of the file, a helper process
the rest, on another core.

`scan()` (logsearch.py) runs at the speed of a few passes of C over the bytes, one core at a
time (the regex engine holds the GIL): ~0.31 s of CPU for a 185 MB build log on this machine,
where `grep -c` takes ~0.07 s. `scan_split()` does the same search with the work cut in two at
a line start: the helper (`logsearch_helper.py`: the same `scan()` on the same open file,
through an inherited descriptor; the pattern on its stdin) searches the second
part and writes the matching line numbers, counted from its first line, and its line count;
this thread searches the first part meanwhile, then adds the helper's lines after its own. The
results are those of one `scan()` over the whole (the same code, on whole lines, numbered the
same way). Only searches of more than `SPLIT_BYTES` with more than one core to use are split;
the helper is killed when the search is cancelled, and when it fails its part is searched here.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from array import array

from rocmtui.core.logsearch import Cancelled, Progress, SearchState, scan
from rocmtui.core.logsearch_helper import HEADER

SPLIT_BYTES = 32 << 20  # smaller searches are over before a helper process has started
HELPER_SHARE = 0.45  # of the bytes, for the helper: it starts ~40 ms after this thread
EDGE = 64 << 10  # bytes read to find a line start near a cut
# The helper starts isolated (-I) and without site (-S): no .pth files, no editable-install
# finder, ~15-60 ms sooner on a busy machine; it needs the standard library and this package
# only, found through the folder that holds the package.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from rocmtui.core.logsearch_helper import main; raise SystemExit(main(sys.argv[2:]))"
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
    """As `scan(fd, state, end, cancelled, progress)`, with the second half of a big search in a
    helper process (see the module docstring)."""
    start = state.next_byte
    if end - start < SPLIT_BYTES or cores() < 2 or state.partial:
        return scan(fd, state, end, cancelled, progress)
    middle = _line_start_after(fd, end - int((end - start) * HELPER_SHARE), end)
    stop = _line_start_before(fd, end, middle)
    if middle is None or stop is None or stop <= middle:
        return scan(fd, state, end, cancelled, progress)
    helper = _Helper(fd, state, middle, stop)

    def both(done: int, total: int) -> None:  # the halves go at about the same speed
        if progress is not None:
            progress(min(end, start + (done - start) * (end - start) // (middle - start)), end)

    try:
        if not scan(fd, state, middle, cancelled, both):
            return False
        got = helper.result(cancelled)
        if got is None:
            if cancelled is not None and cancelled():
                return False
            return scan(fd, state, end, cancelled, progress)  # it failed: its half, here
        lines, found = got
        first = state.next_line
        state.lines.extend(first + n for n in found)
        state.next_byte, state.next_line = stop, first + lines
    finally:
        helper.close()
    if progress is not None:
        progress(stop, end)
    return scan(fd, state, end, cancelled, progress)  # what is left: a line still growing


def _line_start_after(fd: int, at: int, end: int) -> int | None:
    buf = os.pread(fd, min(EDGE, end - at), at)
    nl = buf.find(b"\n")
    return None if nl < 0 else at + nl + 1


def _line_start_before(fd: int, end: int, floor: int | None) -> int | None:
    lo = max(floor or 0, end - EDGE)
    nl = os.pread(fd, end - lo, lo).rfind(b"\n")
    return None if nl < 0 else lo + nl + 1


class _Helper:
    """The helper process searching bytes [start, stop) of `fd`."""

    def __init__(self, fd: int, state: SearchState, start: int, stop: int) -> None:
        ask = [str(n) for n in (fd, start, stop, state.pattern.flags, int(state.invert))]
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, _ROOT, *ask],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(fd,),
                close_fds=True,
            )
            assert self.proc.stdin is not None
            self.proc.stdin.write(state.pattern.pattern.encode("utf-8", "surrogatepass"))
            self.proc.stdin.close()
        except (OSError, ValueError):
            self.close()

    def result(self, cancelled: Cancelled | None) -> tuple[int, array[int]] | None:
        """(lines in its half, the matching ones counted from its first); None when it failed
        or the search was cancelled."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return None
        out = bytearray()
        fileno = proc.stdout.fileno()
        while True:
            if cancelled is not None and cancelled():
                return None
            ready, _, _ = select.select([fileno], [], [], 0.05)
            if not ready:
                continue
            piece = os.read(fileno, 1 << 20)
            if not piece:
                break
            out += piece
        if proc.wait() != 0 or len(out) < HEADER.size or len(out) % 8:
            return None
        (lines,) = HEADER.unpack_from(out)
        found = array("Q")
        found.frombytes(bytes(out[HEADER.size :]))
        return lines, found

    def close(self) -> None:
        """Stop the helper if it still runs, and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
