"""The whole dev fleet: three engines (two in their own netns), the registry and WebDAV.

`start_fleet` brings it up and writes `rocmtui.toml` (the brief's fleet-file format) and
`fleet.json` (every pid with its start time) into the work dir, so `stop_fleet(workdir)` can end
it from any other process.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet.engine import (
    EngineHandle,
    build_base_tar,
    import_base,
    launch_engine,
    netns_del,
)
from devfleet.forward import ForwardHandle, start_port_forward
from devfleet.services import ServiceHandle, start_registry, start_webdav

#: (node name, netns: None = host namespace / True = a fresh one / a name, gfx)
NodeSpec = tuple[str, "str | bool | None", "str | None"]
DEFAULT_NODES: tuple[NodeSpec, ...] = (
    ("snoc-strix", None, "gfx1151"),
    ("snoc-think", True, "gfx1201"),
    ("snoc-gaming", True, "gfx1201"),
)
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BAKE_FILE = REPO_ROOT / "bake" / "rocm-bake.hcl"
RECORD = "fleet.json"
CONFIG = "rocmtui.toml"


@dataclass
class DevFleet:
    """A running dev fleet. `stop()` ends every part; `config_path` is its rocmtui.toml."""

    workdir: Path
    engines: list[EngineHandle]
    registry: ServiceHandle | None
    webdav: ServiceHandle | None
    forwarders: list[ForwardHandle]
    config_path: Path
    started_seconds: float = 0.0  # wall time start_fleet took
    extra: dict[str, Any] = field(default_factory=dict)

    def engine(self, name: str) -> EngineHandle:
        """The engine of node `name` (KeyError when there is none)."""
        for e in self.engines:
            if e.name == name:
                return e
        raise KeyError(name)

    @property
    def local_engine(self) -> EngineHandle:
        """The engine in the host network namespace."""
        return next(e for e in self.engines if e.netns is None)

    @property
    def netns_engines(self) -> list[EngineHandle]:
        """The engines that run in a network namespace of their own."""
        return [e for e in self.engines if e.netns is not None]

    @property
    def pids(self) -> list[int]:
        """Every live pid of the fleet (main processes and their descendants)."""
        out: list[int] = []
        for part in self._parts():
            out.extend(part.pids)
        return out

    @property
    def netns_names(self) -> list[str]:
        """The network namespaces the fleet's engines run in."""
        return [e.netns for e in self.engines if e.netns]

    def _parts(self) -> list[Any]:
        services = [s for s in (self.registry, self.webdav) if s is not None]
        return [*self.forwarders, *self.engines, *services]

    def stop(self) -> None:
        """Stop every part, all at once (dockerd takes seconds to shut down); every part is
        attempted even if one fails, and the first failure is raised at the end."""
        parts = self._parts()
        with ThreadPoolExecutor(max_workers=max(1, len(parts))) as pool:
            futures = [pool.submit(part.stop) for part in parts]
        errors = [e for f in futures if (e := f.exception()) is not None]
        with contextlib.suppress(FileNotFoundError):
            (self.workdir / RECORD).unlink()
        if errors:
            raise errors[0]

    def to_record(self) -> dict[str, Any]:
        """The fleet.json content."""
        return {
            "version": 1,
            "owner_pid": os.getpid(),
            "config_path": str(self.config_path),
            "engines": [e.to_record() for e in self.engines],
            "registry": self.registry.to_record() if self.registry else None,
            "webdav": self.webdav.to_record() if self.webdav else None,
            "forwarders": [f.to_record() for f in self.forwarders],
        }

    def save(self) -> None:
        """Write fleet.json atomically."""
        path = self.workdir / RECORD
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_record(), indent=2) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, workdir: Path) -> DevFleet | None:
        """The fleet recorded in `workdir`, or None when there is no record."""
        workdir = Path(workdir)
        try:
            rec = json.loads((workdir / RECORD).read_text())
        except FileNotFoundError:
            return None
        reg, dav = rec.get("registry"), rec.get("webdav")
        return cls(
            workdir=workdir,
            engines=[EngineHandle.from_record(e) for e in rec.get("engines", [])],
            registry=ServiceHandle.from_record(reg) if reg else None,
            webdav=ServiceHandle.from_record(dav) if dav else None,
            forwarders=[ForwardHandle.from_record(f) for f in rec.get("forwarders", [])],
            config_path=Path(rec.get("config_path") or workdir / CONFIG),
        )


def _toml_str(value: str) -> str:
    # A JSON string is a valid TOML basic string for everything we write here.
    return json.dumps(value)


def write_config(
    fleet: DevFleet,
    bake_file: Path,
    refresh_seconds: float,
    stall_after_seconds: float,
) -> Path:
    """Write the fleet's rocmtui.toml in the brief's format and return its path."""
    assert fleet.registry is not None and fleet.webdav is not None
    lines = [
        "# The dev fleet on this machine (devfleet); removed by `devfleet down`.",
        f"bake_file = {_toml_str(str(bake_file))}",
        f"refresh_seconds = {float(refresh_seconds)}",
        f"stall_after_seconds = {float(stall_after_seconds)}",
        "",
        "[registry]",
        f"url = {_toml_str(fleet.registry.url)}",
        "",
        "[webdav]",
        f"url = {_toml_str(fleet.webdav.url)}",
        f"path = {_toml_str(str(fleet.webdav.workdir / 'dav'))}",
        "",
        "# Tags name this fleet's registry, so a push from the console lands in it (every node",
        "# reaches it as 127.0.0.1: the netns nodes through their forwarders).",
        "[variables]",
        f"REGISTRY = {_toml_str(fleet.registry.address)}",
        f"SCCACHE_WEBDAV_ENDPOINT = {_toml_str(fleet.webdav.url)}",
    ]
    for e in fleet.engines:
        lines += ["", "[[nodes]]", f"name = {_toml_str(e.name)}"]
        lines.append(f"docker_host = {_toml_str(e.docker_host)}")
        if e.gfx:
            lines.append(f"gfx = {_toml_str(e.gfx)}")
        # The loader takes any unix:// node for the local machine; only the host-namespace
        # node is "this machine" (host CPU, memory, disk), the others stand for remote nodes.
        lines.append(f"local = {'true' if e.netns is None else 'false'}")
    fleet.config_path.write_text("\n".join(lines) + "\n")
    return fleet.config_path


def start_fleet(
    workdir: Path,
    nodes: Sequence[NodeSpec] = DEFAULT_NODES,
    *,
    bake_file: Path | None = None,
    refresh_seconds: float = 2.0,
    stall_after_seconds: float = 900.0,
    timeout: float = 90.0,
) -> DevFleet:
    """Bring up engines, registry, WebDAV and forwarders; write rocmtui.toml and fleet.json.

    Engines start concurrently. Each netns engine gets a forwarder so that 127.0.0.1:REGISTRY
    and 127.0.0.1:WEBDAV inside its namespace reach the host's. On any failure everything
    started so far is stopped again and the error is raised.
    """
    t0 = time.monotonic()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    fleet = DevFleet(workdir, [], None, None, [], workdir / CONFIG)
    try:
        tar = build_base_tar(workdir)  # once, before the engines race for it
        # dockerd takes the longest: launch all first, start the services while they boot.
        for name, netns, gfx in nodes:
            fleet.engines.append(launch_engine(workdir, name, netns, gfx))
            fleet.save()
        fleet.registry = start_registry(workdir / "registry")
        fleet.save()
        fleet.webdav = start_webdav(workdir / "webdav")
        fleet.save()
        for e in fleet.netns_engines:
            assert e.netns is not None
            fleet.forwarders.append(
                start_port_forward(
                    e.netns,
                    fleet.registry.port,
                    extra_ports=(fleet.webdav.port,),
                    log=workdir / "engines" / e.name / "forward.log",
                )
            )
            fleet.save()

        def ready(e: EngineHandle) -> None:
            e.wait_ready(timeout)
            import_base(e.socket, tar)

        with ThreadPoolExecutor(max_workers=len(fleet.engines) or 1) as pool:
            for fut in [pool.submit(ready, e) for e in fleet.engines]:
                fut.result()
        write_config(
            fleet, Path(bake_file or DEFAULT_BAKE_FILE), refresh_seconds, stall_after_seconds
        )
        fleet.started_seconds = time.monotonic() - t0
        fleet.save()
        return fleet
    except BaseException:
        with contextlib.suppress(Exception):
            fleet.stop()
        raise


def stop_fleet(workdir: Path) -> bool:
    """Stop the fleet recorded in `workdir` (from any process). False when none was recorded."""
    fleet = DevFleet.load(workdir)
    if fleet is None:
        return False
    try:
        fleet.stop()
    finally:
        # stop() drops a namespace only if the engine made it; the fleet made them all.
        for name in fleet.netns_names:
            netns_del(name)
        with contextlib.suppress(FileNotFoundError):
            fleet.config_path.unlink()
    return True


def fleet_status(workdir: Path) -> dict[str, Any] | None:
    """What the record says and whether each part still runs and answers; None when none."""
    fleet = DevFleet.load(workdir)
    if fleet is None:
        return None
    out: dict[str, Any] = {"config_path": str(fleet.config_path), "parts": []}
    for e in fleet.engines:
        where = f"netns {e.netns}" if e.netns else "host netns"
        state = "ok" if e.ping() else ("running" if e.alive() else "down")
        out["parts"].append(("engine", e.name, e.pid, state, f"{e.docker_host} ({where})"))
    for s in (fleet.registry, fleet.webdav):
        if s is not None:
            state = "ok" if s.alive() else "down"
            out["parts"].append((s.kind, s.kind, s.pid, state, s.url))
    for f in fleet.forwarders:
        state = "ok" if f.alive() else "down"
        ports = ", ".join(str(p[0]) for p in f.ports)
        out["parts"].append(("forward", f.netns, f.pid, state, f"ports {ports}"))
    return out
