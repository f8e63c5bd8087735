"""The search helper process of `logsearch_split`: one `scan()` of a part of an open file.

Run as `python -I -S -c BOOT ROOT FD START STOP FLAGS INVERT` (see `logsearch_split`), the
pattern on stdin; it writes its line count, then the numbers of its matching lines counted from
its first, as little-endian 64-bit integers. It imports only what the search needs: it starts
while the console's own half of the search is already running.
"""

from __future__ import annotations

import re
import struct
import sys

from rocmtui.core.logsearch import SearchState, scan

HEADER = struct.Struct("<Q")  # the helper's line count, before its matching lines


def main(args: list[str]) -> int:
    """Search `FD START STOP FLAGS INVERT` with the pattern read from stdin; write the result
    to stdout."""
    fd, start, stop, flags, invert = (int(arg) for arg in args[:5])
    pattern = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
    state = SearchState(re.compile(pattern, flags), bool(invert))
    state.next_byte = start
    scan(fd, state, stop)
    out = sys.stdout.buffer
    out.write(HEADER.pack(state.next_line))
    out.write(state.lines.tobytes())
    out.flush()
    return 0
