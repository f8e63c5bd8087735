"""Probes: engines and builders (docker SDK, buildx), the local host (psutil), the registry and
WebDAV (httpx). Each returns an immutable snapshot within a hard deadline and never raises;
`rocmtui.core.probes.round` runs them all concurrently.

Modules load their heavy dependencies (docker, httpx, psutil) on first use, so importing this
package is cheap.
"""

from __future__ import annotations

from rocmtui.core.probes._http import HttpClients
from rocmtui.core.probes.builders import BuildxLs, buildkit_for_engine
from rocmtui.core.probes.endpoints import Endpoint, EndpointError, resolve_endpoint
from rocmtui.core.probes.host import HostProber
from rocmtui.core.probes.node import DEFAULT_NODE_PROBER, NodeProber, probe_node
from rocmtui.core.probes.registry import probe_registry
from rocmtui.core.probes.webdav import probe_webdav

__all__ = [
    "DEFAULT_NODE_PROBER",
    "BuildxLs",
    "Endpoint",
    "EndpointError",
    "HostProber",
    "HttpClients",
    "NodeProber",
    "buildkit_for_engine",
    "probe_node",
    "probe_registry",
    "probe_webdav",
    "resolve_endpoint",
]
