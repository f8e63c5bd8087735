"""The real local fleet for tests and demos: dockerd engines, registry, WebDAV, forwarders.

Not part of the console's core: it starts real processes (as root) on this machine. Every part
returns a handle with its pid(s) and `stop()`; `start_fleet`/`stop_fleet` manage the whole
three-node fleet, and `python -m devfleet up|down|status --dir DIR` does it from a shell.
"""

from devfleet.assembly import DEFAULT_NODES, fleet_status, start_fleet, stop_fleet
from devfleet.baseimage import BASE_IMAGE, build_base_tar
from devfleet.counting import CountingProxy
from devfleet.dockerd import (
    CURRENT_CONTAINERD_STORE,
    CURRENT_ENGINE,
    CURRENT_MIN_144,
    ENGINE_KINDS,
    OLD_ENGINE,
    EngineHandle,
    EngineKind,
    import_base,
    launch_engine,
    ping,
    start_engine,
)
from devfleet.forward import ForwardHandle, start_port_forward
from devfleet.handle import DevFleet
from devfleet.hostile import DripServer, HungTcpListener, HungUnixSocket
from devfleet.ledger import close_ledger, stop_all_started, use_ledger
from devfleet.netns import netns_add, netns_del, unique_netns_name
from devfleet.observe import start_alertmanager, start_monitor, start_prometheus
from devfleet.processes import FleetError
from devfleet.reaper import reap
from devfleet.services import ServiceHandle, start_registry, start_webdav

__all__ = [
    "BASE_IMAGE",
    "CURRENT_CONTAINERD_STORE",
    "CURRENT_ENGINE",
    "CURRENT_MIN_144",
    "DEFAULT_NODES",
    "ENGINE_KINDS",
    "OLD_ENGINE",
    "CountingProxy",
    "DevFleet",
    "DripServer",
    "EngineHandle",
    "EngineKind",
    "FleetError",
    "ForwardHandle",
    "HungTcpListener",
    "HungUnixSocket",
    "ServiceHandle",
    "build_base_tar",
    "close_ledger",
    "fleet_status",
    "import_base",
    "launch_engine",
    "netns_add",
    "netns_del",
    "ping",
    "reap",
    "start_alertmanager",
    "start_engine",
    "start_fleet",
    "start_monitor",
    "start_port_forward",
    "start_prometheus",
    "start_registry",
    "start_webdav",
    "stop_all_started",
    "stop_fleet",
    "unique_netns_name",
    "use_ledger",
]
