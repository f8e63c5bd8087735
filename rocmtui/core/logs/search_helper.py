"""The search helper process of `logsearch_split`: `scan()` of the pieces of an open file it is
asked for.

Run as `python -I -S -c BOOT ROOT FD FLAGS INVERT` (see `logsearch_split`). On stdin: the
pattern (`encode_pattern`), then one `PIECE_SPAN` (start, stop) per piece, each at a line start;
for each it writes a `PIECE_DONE` (lines in the piece, matching lines) and the numbers of the
matching lines counted from the piece's first, as little-endian 64-bit integers. It ends at the
end of its stdin. It imports only what the search needs: it starts while the console's own part
of the search is already running.
"""

from __future__ import annotations

import re
import struct
import sys
from typing import TYPE_CHECKING

from rocmtui.core.logs.search import SearchState, scan

if TYPE_CHECKING:
    from typing import BinaryIO

PIECE_SPAN = struct.Struct("<QQ")  # asked: bytes [start, stop)
PIECE_DONE = struct.Struct("<QQ")  # answered: lines in the piece, matching lines that follow
_LENGTH = struct.Struct("<Q")


def encode_pattern(pattern: str) -> bytes:
    """The pattern as the helper reads it first."""
    raw = pattern.encode("utf-8", "surrogatepass")
    return _LENGTH.pack(len(raw)) + raw


def _read(stream: BinaryIO, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            break
        data += more
    return data


def main(args: list[str]) -> int:
    """Search the pieces asked on stdin with `FD FLAGS INVERT`; answer each on stdout."""
    fd, flags, invert = (int(arg) for arg in args[:3])
    stdin, out = sys.stdin.buffer, sys.stdout.buffer
    (length,) = _LENGTH.unpack(_read(stdin, _LENGTH.size))
    pattern = re.compile(_read(stdin, length).decode("utf-8", "surrogatepass"), flags)
    while True:
        span = _read(stdin, PIECE_SPAN.size)
        if len(span) < PIECE_SPAN.size:
            return 0
        start, stop = PIECE_SPAN.unpack(span)
        state = SearchState(pattern, bool(invert))
        state.next_byte = start
        scan(fd, state, stop)
        out.write(PIECE_DONE.pack(state.next_line, len(state.lines)))
        out.write(state.lines.tobytes())
        out.flush()
