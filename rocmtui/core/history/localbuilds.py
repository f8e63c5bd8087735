"""Signs of a new build on this host: `docker buildx bake|build` processes that appeared since
the last look, from /proc (only new pids are read), each with the engine it talks to.

`history.discover` asks a node's history at once when such a process names that node, so a
build started here by rocm-bake's Makefile or cron shows within one refresh instead of the
history interval.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.probes.endpoints import DEFAULT_SOCKET


class LocalBuilds:
    """New `docker buildx bake|build` processes on this host, from /proc (new pids only), each
    with the engine it talks to (its DOCKER_HOST or DOCKER_CONTEXT)."""

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self.proc = proc
        self._seen: set[int] = set()
        self._primed = False

    def new_builds(self) -> list[tuple[str | None, str | None]]:
        """(DOCKER_HOST, DOCKER_CONTEXT) of each build process that appeared since the last
        call (none on the first call)."""
        try:
            pids = {int(p) for p in os.listdir(self.proc) if p.isdigit()}
        except OSError:
            return []
        fresh = pids - self._seen
        self._seen = pids
        if not self._primed:
            self._primed = True
            return []
        found: list[tuple[str | None, str | None]] = []
        for pid in fresh:
            try:
                words = (self.proc / str(pid) / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            head = words[1:4]
            if words[0].endswith(b"docker-buildx") and (b"bake" in head or b"build" in head):
                found.append(self._engine(pid))
        return found

    def _engine(self, pid: int) -> tuple[str | None, str | None]:
        try:
            env = (self.proc / str(pid) / "environ").read_bytes().split(b"\0")
        except OSError:
            return (None, None)
        pairs = dict(e.split(b"=", 1) for e in env if b"=" in e)
        host, context = pairs.get(b"DOCKER_HOST"), pairs.get(b"DOCKER_CONTEXT")
        return (
            host.decode("utf-8", "replace") if host else None,
            context.decode("utf-8", "replace") if context else None,
        )


def build_reaches(node: NodeConfig, host: str | None, context: str | None) -> bool:
    """Whether a build process with this DOCKER_HOST / DOCKER_CONTEXT talks to `node`."""
    if host:
        return node.docker_host == host
    if context:
        return node.context == context
    return node.context is None and node.docker_host in (None, DEFAULT_SOCKET)


__all__ = ["LocalBuilds", "build_reaches"]
