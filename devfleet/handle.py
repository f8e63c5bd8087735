"""A running dev fleet as one handle: its parts, where its files are, and its record.

`start_fleet` (assembly.py) makes a `DevFleet` and saves its record, `fleet.json` (every pid
with its start time), into the work dir; `DevFleet.load` reads it back in any other process, so
that `stop_fleet` and `python -m devfleet down|status` reach a fleet they did not start.
"""

from __future__ import annotations

import contextlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet.dockerd import EngineHandle
from devfleet.exporters import ExporterHandle
from devfleet.forward import ForwardHandle
from devfleet.remote import RemoteNode, stop_remotes
from devfleet.services import ServiceHandle
from devfleet.sshhost import SshClientFiles
from devfleet.tls import ClientCert, TestCA

RECORD = "fleet.json"
CONFIG = "rocmtui.toml"
UNIX_CONFIG = "unix.toml"


@dataclass
class DevFleet:
    """A running dev fleet. `stop()` ends every part; `config_path` is its rocmtui.toml."""

    workdir: Path
    engines: list[EngineHandle]
    registry: ServiceHandle | None
    webdav: ServiceHandle | None
    forwarders: list[ForwardHandle]
    config_path: Path  # the real fleet's shape: local, ssh and TLS nodes
    started_seconds: float = 0.0  # wall time start_fleet took
    extra: dict[str, Any] = field(default_factory=dict)
    remotes: list[RemoteNode] = field(default_factory=list)
    # a node_exporter per node (when installed): the host node's on loopback, each remote
    # node's in its namespace on its link address
    exporters: list[ExporterHandle] = field(default_factory=list)

    def exporter(self, name: str) -> ExporterHandle:
        """Node `name`'s node_exporter (KeyError when it has none)."""
        for x in self.exporters:
            if x.name == name:
                return x
        raise KeyError(name)

    @property
    def unix_config_path(self) -> Path:
        """The fleet file reaching every engine through its unix socket."""
        return self.workdir / UNIX_CONFIG

    @property
    def ssh(self) -> SshClientFiles:
        """The ssh client's files (key, known_hosts, config, `bin/ssh`)."""
        return SshClientFiles(self.workdir / "ssh")

    @property
    def tls_client(self) -> ClientCert:
        """The TLS client's certificate, key and CA (one folder, as DOCKER_CERT_PATH wants)."""
        folder = self.workdir / "tls" / "client"
        return ClientCert(folder / "ca.pem", folder / "cert.pem", folder / "key.pem")

    @property
    def docker_config(self) -> Path:
        """A docker config folder with a `docker context` per remote node (and nothing else)."""
        return self.workdir / "docker"

    @property
    def ca(self) -> TestCA:
        """The fleet's certificate authority (to make more certificates in tests)."""
        return TestCA(self.workdir / "tls" / "ca")

    def remote(self, name: str) -> RemoteNode:
        """The remote access of node `name` (KeyError for the local node)."""
        for r in self.remotes:
            if r.name == name:
                return r
        raise KeyError(name)

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
        sshds = [r.sshd for r in self.remotes if r.sshd is not None]
        return [*self.exporters, *sshds, *self.forwarders, *self.engines, *services]

    def stop(self) -> None:
        """Stop every part, all at once (dockerd takes seconds to shut down); every part is
        attempted even if one fails, and the first failure is raised at the end."""
        parts = self._parts()
        with ThreadPoolExecutor(max_workers=max(1, len(parts))) as pool:
            futures = [pool.submit(part.stop) for part in parts]
        errors = [e for f in futures if (e := f.exception()) is not None]
        try:
            stop_remotes(self.remotes)
        except Exception as exc:
            errors.append(exc)
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
            "remotes": [r.to_record() for r in self.remotes],
            "exporters": [x.to_record() for x in self.exporters],
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
            remotes=[RemoteNode.from_record(r) for r in rec.get("remotes", [])],
            exporters=[ExporterHandle.from_record(x) for x in rec.get("exporters", [])],
        )
