"""Network namespaces for the dev fleet's engines: made, and removed with every process still
inside them.

An extra node's dockerd runs in a namespace of its own (dockerd.py says why), and tests make
their own for what must be reached across one. Removing one stops what is left inside first,
and drops the host's bridge and guard rules once nothing uses them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from devfleet import processes
from devfleet.links import drop_guard_if_unused

NETNS_DIR = Path("/var/run/netns")


def unique_netns_name(node: str) -> str:
    """`rt-<pid>-<node>`, with a counter when a stale one of that name exists."""
    base = f"rt-{os.getpid()}-{node}"[:40]
    name, n = base, 1
    while (NETNS_DIR / name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def netns_add(name: str) -> None:
    """Create network namespace `name` with its loopback up."""
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, capture_output=True)


def drop_host_bridge_if_unused() -> None:
    """Remove `docker0` once no dockerd runs in the host namespace any more.

    A host-namespace engine creates the bridge and leaves it behind on exit; tests must leave
    nothing behind, but a bridge another live engine uses must stay.
    """
    host_ns = os.readlink("/proc/self/ns/net")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "dockerd":
                continue
            if os.readlink(entry / "ns" / "net") == host_ns:
                return
        except OSError:
            continue
    subprocess.run(["ip", "link", "del", "docker0"], capture_output=True, check=False)


def netns_del(name: str) -> None:
    """Remove network namespace `name` if it exists, and first every process still in it.

    A process left inside outlives the name: an sshd session whose parent was stopped by a
    test (sshd down, then up again) waited there for a peer that could no longer reach it,
    its namespace deleted around it."""
    if (NETNS_DIR / name).exists():
        listed = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        inside = [(int(pid), None) for pid in listed.stdout.split() if pid.isdigit()]
        if inside:
            processes.stop_pids(inside, grace=2.0)
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)
        drop_guard_if_unused()  # its veth went with it
