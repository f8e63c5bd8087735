"""Builder state without one `docker buildx` process per node per refresh.

Design (one `docker buildx` process costs ~0.15 s of CPU here, an SDK call ~0.013 s):

* A node with no `builder` uses its engine's own docker-driver builder, which is BuildKit
  compiled into dockerd. Its state is the engine's: running exactly when the engine answers,
  which the SDK probe learns every refresh anyway. Its BuildKit version is a function of the
  engine version (the same table buildx uses for the docker driver, so `buildx ls` would print
  the same word; dockerd 20.10.24 -> `v0.8+unknown`) and its platform is the engine's
  os/arch. No subprocess at all.
* Only nodes naming a `builder` ask buildx: one `docker buildx ls --format json` lists every
  builder of one buildx configuration (`$DOCKER_CONFIG`) at once, so a refresh costs one
  process per distinct configuration, shared by every node of the round, and its answer is
  cached for `refresh_seconds` (30 s by default; one-shot `rocmtui status` runs it once).
  Each builder's `Status` and `Err` are read per node (buildx exits 0 with builders in
  error). `buildx ls` hangs on a dead remote, so it runs in a session of its own under a
  hard deadline and its process group is killed at the deadline; the lines it printed
  before hanging are still used.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.probes.endpoints import Endpoint, docker_config_dir
from rocmtui.core.snapshots import BuilderInfo
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

# dockerd 20.10 patch releases -> the BuildKit they embed (as the buildx docker driver names it)
_MOBY_2010: tuple[tuple[int, int, str], ...] = (
    (0, 2, "v0.8.1"),
    (3, 3, "v0.8.1+68bb095"),
    (4, 6, "v0.8.2"),
    (7, 10, "v0.8.2+244e8cde"),
    (11, 18, "v0.8.2+bc07b2b8"),
    (19, 19, "v0.8.2+3a1eeca5"),
    (20, 20, "v0.8.2+c0149372"),
    (21, 23, "v0.8.2+eeb7b65"),
)
# Engines since 24.0 report their BuildKit over gRPC only (and Debian's builds report
# `v0.0.0+unknown` there): the minor release each moby release vendors (its vendor.mod), shown
# as `v0.25.x`. Read off moby's release branches; an engine newer than the table shows nothing.
_MOBY_VENDORED: dict[tuple[int, int], str] = {
    (24, 0): "v0.11",
    (25, 0): "v0.12",
    (26, 0): "v0.13",
    (26, 1): "v0.13",
    (27, 0): "v0.14",
    (27, 1): "v0.15",
    (27, 2): "v0.15",
    (27, 3): "v0.16",
    (27, 4): "v0.17",
    (27, 5): "v0.18",
    (28, 0): "v0.20",
    (28, 1): "v0.21",
    (28, 2): "v0.22",
    (28, 3): "v0.23",
    (28, 4): "v0.24",
    (28, 5): "v0.25",
    (29, 0): "v0.26",
    (29, 1): "v0.26",
    (29, 2): "v0.27",
}
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")

# buildx's own words, plus two of ours: "missing" (no such builder) and "unknown" (no answer)
BROKEN_BUILDER_STATUSES = frozenset({"error", "missing"})


def buildkit_for_engine(engine_version: str | None) -> str | None:
    """The BuildKit built into dockerd `engine_version`, or None when not known offline."""
    m = _VERSION_RE.match(engine_version or "")
    if not m:
        return None
    major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if (major, minor) == (20, 10):
        for low, high, word in _MOBY_2010:
            if low <= patch <= high:
                return word
        return "v0.8+unknown"
    if (major, minor) == (22, 6):
        return "v0.10.3"
    if major == 23:
        return "v0.10.6" if patch <= 6 else "v0.10+unknown"
    vendored = _MOBY_VENDORED.get((major, minor))
    return f"{vendored}.x" if vendored else None


def engine_builder(name: str, engine_version: str | None, os_arch: str | None) -> BuilderInfo:
    """The docker-driver builder of an engine that just answered: running, no subprocess."""
    return BuilderInfo(
        name=name,
        driver="docker",
        status="running",
        buildkit_version=buildkit_for_engine(engine_version),
        platforms=(os_arch,) if os_arch else (),
    )


def parse_ls(text: str) -> dict[str, dict[str, Any]]:
    """`docker buildx ls --format json` lines -> builder name -> record (last one wins).

    buildx 0.13.1 prints some builders twice; a truncated last line (killed mid-write) is
    skipped.
    """
    records: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("Name"), str):
            records[record["Name"]] = record
    return records


def builder_from_record(
    record: Mapping[str, Any], node: NodeConfig, endpoint: Endpoint | None
) -> BuilderInfo:
    """The part of one buildx builder that serves `node` (its matching node, else a summary)."""
    name = one_line(record.get("Name", "?"), 80)
    driver = one_line(record.get("Driver") or "?", 40)
    if record.get("Err"):
        return BuilderInfo(name, driver, "error", one_line(record["Err"]))
    nodes = [n for n in record.get("Nodes") or [] if isinstance(n, dict)]
    wanted = {node.name, node.docker_host, node.context, endpoint.base_url if endpoint else None}
    wanted.discard(None)
    matches = [n for n in nodes if n.get("Endpoint") in wanted or n.get("Name") in wanted]
    chosen = matches if matches else nodes
    if not chosen:
        return BuilderInfo(name, driver, "error", "builder has no nodes")
    errors = [one_line(n["Err"]) for n in chosen if n.get("Err")]
    statuses = ["error" if n.get("Err") else str(n.get("Status") or "unknown") for n in chosen]
    status = (
        "running"
        if all(s == "running" for s in statuses)
        else next(s for s in statuses if s != "running")
    )
    platforms: list[str] = []
    for n in chosen:
        for p in n.get("Platforms") or []:
            if isinstance(p, str) and p not in platforms:
                platforms.append(one_line(p, 40))
    version = next((n.get("Version") for n in chosen if n.get("Version")), None)
    return BuilderInfo(
        name=name,
        driver=driver,
        status=one_line(status, 20),
        error=errors[0] if errors else None,
        buildkit_version=one_line(version, 40) if isinstance(version, str) else None,
        platforms=tuple(platforms),
    )


# What buildx 0.13.1 says about a builder it was still waiting for when it got our SIGTERM.
_CANCEL_MARKERS = ("context canceled", "SIGTERM", "SIGINT", "forcing shutdown")


def _cut_short(record: Mapping[str, Any]) -> bool:
    """True when buildx reported the builder only as cancelled (by our deadline)."""
    errors = [record.get("Err")] + [
        n.get("Err") for n in record.get("Nodes") or [] if isinstance(n, dict)
    ]
    return any(isinstance(e, str) and any(m in e for m in _CANCEL_MARKERS) for e in errors)


@dataclass
class _Listing:
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen_at: dict[str, float] = field(default_factory=dict)  # monotonic, per builder
    fetched_at: float = -1e18  # monotonic time of the last finished run
    error: str | None = None  # why the last run gave no (complete) answer
    task: asyncio.Task[None] | None = None
    loop: asyncio.AbstractEventLoop | None = None


class BuildxLs:
    """Cached `docker buildx ls --format json`, one run per buildx configuration at a time."""

    def __init__(
        self,
        refresh_seconds: float = 30.0,
        env: Mapping[str, str] | None = None,
        docker: str = "docker",
    ) -> None:
        self.refresh_seconds = refresh_seconds
        self.runs = 0  # how many `buildx ls` processes were started (for benches and tests)
        self._env = env
        self._docker = docker
        self._listings: dict[str, _Listing] = {}

    async def builder(
        self, name: str, node: NodeConfig, endpoint: Endpoint | None, deadline: float
    ) -> BuilderInfo:
        """The state of builder `name` as it serves `node`, within `deadline` seconds."""
        env = dict(os.environ if self._env is None else self._env)
        listing = self._listings.setdefault(str(docker_config_dir(env)), _Listing())
        loop = asyncio.get_running_loop()
        if time.monotonic() - listing.fetched_at >= self.refresh_seconds:
            if listing.task is None or listing.loop is not loop or listing.task.done():
                listing.loop = loop
                listing.task = loop.create_task(self._refresh(listing, env, deadline))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(listing.task), deadline)
        record = listing.records.get(name)
        fresh_enough = 3 * max(self.refresh_seconds, deadline)
        if record is not None and time.monotonic() - listing.seen_at[name] <= fresh_enough:
            return builder_from_record(record, node, endpoint)
        if listing.error:
            return BuilderInfo(name, "?", "unknown", listing.error)
        if listing.fetched_at < 0:
            return BuilderInfo(name, "?", "unknown", f"buildx ls: no answer in {deadline:g}s")
        return BuilderInfo(name, "?", "missing", f"no buildx builder named {name!r}")

    async def _refresh(self, listing: _Listing, env: dict[str, str], timeout: float) -> None:
        text, error = await self._run(env, timeout)
        now = time.monotonic()
        for name, record in parse_ls(text).items():
            if error and _cut_short(record):
                continue  # our own SIGTERM cancelled this one: it says nothing about the builder
            listing.records[name] = record
            listing.seen_at[name] = now
        listing.error = error
        listing.fetched_at = now

    async def _run(self, env: dict[str, str], timeout: float) -> tuple[str, str | None]:
        """Run `docker buildx ls --format json`; (stdout so far, error or None)."""
        self.runs += 1
        try:
            proc = await asyncio.create_subprocess_exec(
                self._docker,
                "buildx",
                "ls",
                "--format",
                "json",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,  # its own group: killing it takes the plugin too
            )
        except OSError as exc:
            return "", one_line(f"cannot run {self._docker} buildx: {exc.strerror}")
        try:
            return await self._collect(proc, timeout)
        finally:  # cancelled (the caller's loop ended): never leave buildx running
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)

    async def _collect(
        self, proc: asyncio.subprocess.Process, timeout: float
    ) -> tuple[str, str | None]:
        out = bytearray()
        err = bytearray()

        async def pump(stream: asyncio.StreamReader | None, into: bytearray) -> None:
            while stream is not None and (chunk := await stream.read(65536)):
                if len(into) < 4 << 20:
                    into.extend(chunk)

        pumps = asyncio.ensure_future(
            asyncio.gather(pump(proc.stdout, out), pump(proc.stderr, err), proc.wait())
        )
        # At the deadline buildx gets SIGTERM first: it then prints the builders it has
        # already heard from (within milliseconds), which SIGKILL would lose.
        term_after = max(timeout * 0.7, timeout - 0.3)
        timed_out = False
        for sig, wait in ((signal.SIGTERM, term_after), (signal.SIGKILL, timeout - term_after)):
            try:
                await asyncio.wait_for(asyncio.shield(pumps), wait)
                break
            except TimeoutError:
                timed_out = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
        if not pumps.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(pumps, 2)  # SIGKILLed: pipes close at once
        if timed_out:
            return out.decode("utf-8", "replace"), f"buildx ls: no answer in {fmt_seconds(timeout)}"
        if proc.returncode != 0 and not out.strip():
            said = err.decode("utf-8", "replace").strip().splitlines()
            return "", one_line(f"buildx ls failed: {said[-1] if said else proc.returncode}")
        return out.decode("utf-8", "replace"), None
