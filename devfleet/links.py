"""A network link from the host into a node's namespace: the dev fleet's stand-in for the mesh.

Each remote node gets a veth pair: one end in the host namespace, the other moved into the
node's namespace, and a /29 of `198.18.0.0/15` (the range set aside for network test labs,
RFC 2544) between them (host .1, node .2, .3 spare for a second address: a TLS certificate's
"wrong name" test dials it). ssh and TLS traffic to the node then really crosses an interface
the tests can take down: `down()` is a black hole (no reset, no netem needed), `up()` brings
it back.

It is the namespace's end that goes down, never the host's: with the host end down the kernel
drops the link's route, and packets for the node take the default route out of the machine
(tried: a host somewhere outside answered a TLS handshake for a 10.x address). With the far
end down the host end only loses its carrier, its route stays, and packets vanish into it.

The pool itself is a blackhole route on the host while any link exists: a node whose namespace
is gone (a fleet stopped under a console still probing it) has no route of its own any more,
and without the guard its packets would take the default route out of the machine too. The
links' own /29 routes are more specific, so they win while they exist; the guard goes with
the last link.

Several fleets run on one machine at once (parallel test sessions, `make fleet-up`), so the
block is chosen under a lock file, among those no interface on the host holds. The pair goes
away with the namespace (deleting a namespace destroys the devices in it); `remove()` deletes it
explicitly too.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devfleet.processes import FleetError, wait_for

POOL = ipaddress.IPv4Network("198.18.0.0/15")
BLOCK_PREFIX = 29
LOCK_FILE = Path("/tmp/rocmtui-devfleet-links.lock")


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FleetError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")


def _used_blocks() -> set[int]:
    """Indexes of the pool's blocks an address on any host interface falls in."""
    out = subprocess.run(
        ["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False
    ).stdout
    used: set[int] = set()
    for line in out.splitlines():
        words = line.split()
        if "inet" not in words:
            continue
        addr = ipaddress.IPv4Interface(words[words.index("inet") + 1]).ip
        if addr in POOL:
            used.add((int(addr) - int(POOL.network_address)) >> (32 - BLOCK_PREFIX))
    return used


@dataclass
class VethLink:
    """One veth pair between the host and `netns`, with an address on each end."""

    netns: str
    index: int  # the block in POOL; names and addresses follow from it

    @property
    def host_if(self) -> str:
        """The host end's interface name."""
        return f"rth{self.index}"

    @property
    def node_if(self) -> str:
        """The end inside the node's namespace (what `down()` takes down)."""
        return f"rtn{self.index}"

    def _addr(self, offset: int) -> str:
        base = int(POOL.network_address) + (self.index << (32 - BLOCK_PREFIX))
        return str(ipaddress.IPv4Address(base + offset))

    @property
    def host_address(self) -> str:
        """The host's address on the link."""
        return self._addr(1)

    @property
    def node_address(self) -> str:
        """The node's address: what ssh and TLS clients dial."""
        return self._addr(2)

    @property
    def spare_address(self) -> str:
        """A second address of the node, added by `add_spare()` (in no certificate)."""
        return self._addr(3)

    def down(self) -> None:
        """Black-hole the link: packets vanish, nobody gets a reset (the namespace's end goes
        down; the host's keeps its route, see the module docstring)."""
        _ip("-n", self.netns, "link", "set", self.node_if, "down")

    def up(self) -> None:
        """Bring the link back, ready to carry a connection when this returns: the carrier is
        up on both ends, and the host forgets the neighbours it failed to reach while the link
        was down (the kernel keeps such an entry FAILED for a while, and a connect meanwhile
        fails at once with "host unreachable", which a test after this one would read as the
        node being down)."""
        _ip("-n", self.netns, "link", "set", self.node_if, "up")
        _ip("neigh", "flush", "dev", self.host_if)
        _ip("-n", self.netns, "neigh", "flush", "dev", self.node_if)

        def carrier() -> bool:
            host = Path(f"/sys/class/net/{self.host_if}/operstate")
            try:
                return host.read_text().strip() == "up" and self.is_up()
            except OSError:
                return False

        wait_for(carrier, 10, f"the link to {self.netns} back up")

    def is_up(self) -> bool:
        """Whether the namespace's end is administratively up."""
        out = subprocess.run(
            ["ip", "-n", self.netns, "-o", "link", "show", self.node_if],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        return "<" in out and "UP" in out.split("<", 1)[1].split(">", 1)[0].split(",")

    def add_spare(self) -> str:
        """Give the node its spare address too; returns it."""
        with contextlib.suppress(FleetError):  # already there
            _ip(
                "-n",
                self.netns,
                "addr",
                "add",
                f"{self.spare_address}/{BLOCK_PREFIX}",
                "dev",
                self.node_if,
            )
        return self.spare_address

    def remove(self) -> None:
        """Delete the pair (it also goes when the namespace is deleted)."""
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True, check=False)
        drop_guard_if_unused()

    def to_record(self) -> dict[str, Any]:
        """A JSON-able record."""
        return {"netns": self.netns, "index": self.index}

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> VethLink:
        """The link a `to_record` dict describes."""
        return cls(str(rec["netns"]), int(rec["index"]))


def add_veth(netns: str) -> VethLink:
    """Connect `netns` to the host with a fresh veth pair and a free /29; both ends up."""
    blocks = 1 << (BLOCK_PREFIX - POOL.prefixlen)
    with open(LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        used = _used_blocks()
        free = [i for i in range(1, blocks) if i not in used]
        if not free:
            raise FleetError(f"no free /{BLOCK_PREFIX} left in {POOL}")
        link = VethLink(netns, random.choice(free))
        _ip("route", "replace", "blackhole", str(POOL))
        _ip("link", "add", link.host_if, "type", "veth", "peer", "name", link.node_if)
        try:
            _ip("link", "set", link.node_if, "netns", netns)
            _ip("addr", "add", f"{link.host_address}/{BLOCK_PREFIX}", "dev", link.host_if)
            _ip("link", "set", link.host_if, "up")
            _ip(
                "-n",
                netns,
                "addr",
                "add",
                f"{link.node_address}/{BLOCK_PREFIX}",
                "dev",
                link.node_if,
            )
            _ip("-n", netns, "link", "set", link.node_if, "up")
        except BaseException:
            link.remove()
            raise
    return link


def guard_present() -> bool:
    """Whether the pool's blackhole route is on the host."""
    out = subprocess.run(
        ["ip", "-4", "route", "show", "type", "blackhole", str(POOL)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return str(POOL) in out


def drop_guard_if_unused() -> None:
    """Remove the pool's blackhole route once no link of any fleet holds a block of it."""
    with open(LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _used_blocks():
            subprocess.run(
                ["ip", "route", "del", "blackhole", str(POOL)], capture_output=True, check=False
            )
