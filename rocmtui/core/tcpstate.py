"""Is a TCP link answering? Read from the kernel's own view of the connections, no traffic sent.

A black-holed link (an interface down, a mesh node asleep) sends no reset: the sockets just
stop getting acknowledgements. The kernel's socket table says so: `/proc/net/tcp` (and `tcp6`)
holds, per socket, the bytes sent and not yet acknowledged (`tx_queue`), how many times the
retransmission timer has fired in a row (`retrnsmt`), and the keepalive probes unanswered.
A socket with unacknowledged data that has been retransmitted, or one stuck in SYN_SENT, is
talking into a link that does not answer; an established socket with nothing outstanding is
not. Which sockets count is decided by inode: those open in given processes (`/proc/PID/fd`).

Used where a deadline passed and the question is "the link or the far end?" (a probe that
timed out says `connect` rather than `engine` when its connection is the one not answering),
and by the job supervisor to see, every few seconds, whether its build's link is down. Linux
only; elsewhere every answer is "don't know" (None).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable

from msgspec import Struct

TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
SYN_SENT = 0x02
LISTEN = 0x0A
CLOSED_STATES = frozenset({0x06, 0x07, LISTEN})  # TIME_WAIT, CLOSE, LISTEN: no live link


class TcpSocket(Struct, frozen=True):
    """One row of the kernel's TCP table."""

    remote: tuple[str, int]
    state: int
    unacked: int  # bytes sent and not acknowledged
    retransmits: int  # retransmission timeouts in a row
    probes: int  # keepalive / window probes unanswered
    inode: int


def _address(hex_addr: str) -> tuple[str, int]:
    host, port = hex_addr.split(":")
    raw = bytes.fromhex(host)
    # the kernel prints each 32-bit word in host order (little-endian here)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    addr = ipaddress.ip_address(words)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return str(addr), int(port, 16)


def parse_table(text: str) -> list[TcpSocket]:
    """The rows of one `/proc/net/tcp[6]` text (malformed rows are skipped)."""
    rows = []
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) < 12:
            continue
        with contextlib.suppress(ValueError):
            tx = f[4].split(":")[0]
            rows.append(
                TcpSocket(
                    remote=_address(f[2]),
                    state=int(f[3], 16),
                    unacked=int(tx, 16),
                    retransmits=int(f[6], 16),
                    probes=int(f[8]),
                    inode=int(f[9]),
                )
            )
    return rows


def read_table(tables: Iterable[str] = TCP_TABLES) -> list[TcpSocket]:
    """Every TCP socket of this network namespace ([] where /proc is not Linux's)."""
    rows: list[TcpSocket] = []
    for path in tables:
        with contextlib.suppress(OSError), open(path, encoding="ascii", errors="replace") as fh:
            rows += parse_table(fh.read())
    return rows


def socket_inodes(pids: Iterable[int]) -> set[int]:
    """Inodes of the sockets open in these processes (those gone or not ours are skipped)."""
    found: set[int] = set()
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        with contextlib.suppress(OSError):
            for fd in os.listdir(fd_dir):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"{fd_dir}/{fd}")
                    if target.startswith("socket:["):
                        found.add(int(target[8:-1]))
    return found


class LinkView(Struct, frozen=True):
    """What the kernel says about a set of connections."""

    sockets: int  # open TCP connections counted
    stuck: int  # of them talking into silence
    retransmits: int  # the most retransmissions in a row of any of them

    @property
    def down(self) -> bool:
        """Some connection is stuck and none answers."""
        return self.stuck > 0


def link_view(
    pids: Iterable[int] | None,
    remote: tuple[str, int] | None = None,
    min_retransmits: int = 1,
    table: list[TcpSocket] | None = None,
) -> LinkView | None:
    """The TCP connections of `pids` (of anyone, orphans included, when None; to `remote`
    only, when given), or None when there are none (a unix socket node, between connections).
    A connection counts as stuck once its data has been retransmitted `min_retransmits` times
    in a row."""
    inodes = socket_inodes(pids) if pids is not None else None
    if inodes is not None and not inodes:
        return None
    rows = [
        s
        for s in (read_table() if table is None else table)
        if (inodes is None or s.inode in inodes)
        and s.state not in CLOSED_STATES
        and not ipaddress.ip_address(s.remote[0]).is_loopback
        and (remote is None or s.remote == remote)
    ]
    if not rows:
        return None
    stuck = [
        s
        for s in rows
        if s.state == SYN_SENT or s.probes > 0 or (s.unacked and s.retransmits >= min_retransmits)
    ]
    return LinkView(len(rows), len(stuck), max(s.retransmits for s in rows))
