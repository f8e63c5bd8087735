"""Debian's prometheus-node-exporter for the dev fleet's nodes: one in each netns node's
namespace (listening on the node's link address, as snoc-think's would on the mesh), and one
for the host node on loopback.

Only the collectors the vitals read run (cpu, loadavg, meminfo, vmstat, pressure,
filesystem), without the exporter's own Go metrics: it stays light on a loaded machine.
Started with `nsenter --net=` (not `ip netns exec`, which remounts /sys), stopped by pid with
the fleet; each is in the ledger while it runs.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet import ledger, processes
from devfleet.processes import FleetError
from devfleet.services import http_status

BINARY = "prometheus-node-exporter"
NETNS_PORT = 9100
COLLECTORS = ("cpu", "loadavg", "meminfo", "vmstat", "pressure", "filesystem")
START_TIMEOUT = 20.0


@dataclass
class ExporterHandle:
    """A running node_exporter for node `name`."""

    name: str
    host: str
    port: int
    pid: int
    start_time: int | None
    netns: str | None
    log: Path
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def url(self) -> str:
        """Its /metrics, as a fleet file names it."""
        return f"http://{self.host}:{self.port}/metrics"

    @property
    def pids(self) -> list[int]:
        """The main pid while it runs."""
        return [self.pid] if self.alive() else []

    def alive(self) -> bool:
        """Whether it still runs."""
        return processes.alive(self.pid, self.start_time)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after `grace`."""
        try:
            processes.stop_pids([(self.pid, self.start_time)], grace=grace, popen=self._popen)
        finally:
            ledger.forget(self)

    def to_record(self) -> dict[str, Any]:
        """A JSON-able record for fleet.json."""
        rec = {k: getattr(self, k) for k in ("name", "host", "port", "pid", "start_time", "netns")}
        rec["log"] = str(self.log)
        return rec

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> ExporterHandle:
        """The handle a `to_record` dict describes."""
        rec = dict(rec)
        rec["log"] = Path(rec["log"])
        return cls(**rec)


def available() -> bool:
    """Whether Debian's node_exporter is installed."""
    return shutil.which(BINARY) is not None


def start_node_exporter(
    workdir: Path,
    name: str,
    netns: str | None = None,
    address: str = "127.0.0.1",
    port: int | None = None,
) -> ExporterHandle:
    """node_exporter for node `name`: in `netns` on `address`:9100 (or `port`), or (no netns)
    on loopback on a free port. Raises FleetError when it does not answer within
    `START_TIMEOUT`."""
    port = port or (NETNS_PORT if netns else processes.free_port())
    argv = [
        BINARY,
        f"--web.listen-address={address}:{port}",
        "--collector.disable-defaults",
        *(f"--collector.{c}" for c in COLLECTORS),
        "--web.disable-exporter-metrics",
    ]
    if netns:
        argv = ["nsenter", f"--net=/var/run/netns/{netns}", *argv]
    log = Path(workdir) / f"node_exporter-{port}.log"
    popen = processes.spawn(argv, log, env=processes.child_env(), cwd=Path(workdir))
    handle = ExporterHandle(
        name, address, port, popen.pid, processes.start_time(popen.pid), netns, log, popen
    )
    ledger.remember(handle, "node_exporter")

    def died() -> str | None:
        if popen.poll() is None:
            return None
        return f"exited {popen.returncode}: {processes.log_tail(log)}"

    try:
        processes.wait_for(
            lambda: http_status(address, port, "GET", "/metrics") == 200,
            START_TIMEOUT,
            f"node_exporter of {name} on {address}:{port}",
            failed=died,
        )
    except BaseException:
        with contextlib.suppress(Exception):
            handle.stop(grace=2.0)
        raise
    return handle


def stop_exporters(exporters: list[ExporterHandle]) -> None:
    """Stop each; the first failure is raised after all were tried."""
    errors: list[BaseException] = []
    for handle in exporters:
        try:
            handle.stop()
        except FleetError as exc:
            errors.append(exc)
    if errors:
        raise errors[0]
