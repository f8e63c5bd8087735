"""The whole dev fleet: three engines (two in their own netns, reached as remote hosts over a
link of their own: ssh and mutual TLS), the registry and WebDAV.

`start_fleet` brings it up and writes `rocmtui.toml` (the brief's fleet-file format, in the real
fleet's shape: one local node, one over ssh, one over TLS), `unix.toml` (every engine through
its unix socket) and `fleet.json` (every pid with its start time) into the work dir, so
`stop_fleet(workdir)` can end it from any other process.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from devfleet.baseimage import build_base_tar
from devfleet.dockerd import (
    CURRENT_CONTAINERD_STORE,
    CURRENT_MIN_144,
    ENGINE_KINDS,
    OLD_ENGINE,
    EngineHandle,
    EngineKind,
    import_base,
    launch_engine,
)
from devfleet.exporters import available as exporter_available
from devfleet.exporters import start_node_exporter
from devfleet.forward import start_port_forward
from devfleet.handle import CONFIG, DevFleet
from devfleet.links import add_veth
from devfleet.netns import netns_add, netns_del, unique_netns_name
from devfleet.remote import (
    DEFAULT_REACH,
    TLS_PORT,
    RemoteNode,
    create_contexts,
    write_fleet_file,
)
from devfleet.services import start_registry, start_webdav
from devfleet.sshhost import CI_UID, start_sshd
from devfleet.tls import TestCA

#: (node name, netns: None = host namespace / True = a fresh one / a name, gfx)
NodeSpec = tuple[str, "str | bool | None", "str | None"]
DEFAULT_NODES: tuple[NodeSpec, ...] = (
    ("snoc-strix", None, "gfx1151"),
    ("snoc-think", True, "gfx1201"),
    ("snoc-gaming", True, "gfx1201"),
)
#: The fleet mid-upgrade: snoc-strix on today's engine with the containerd image store (pushes
#: carry attestation manifests), snoc-think on today's engine with Docker 29's minimum API 1.44
#: (reached over ssh), snoc-gaming kept on 20.10 (no build history; reached over TLS).
DEFAULT_ENGINE_KINDS: Mapping[str, EngineKind] = {
    "snoc-strix": CURRENT_CONTAINERD_STORE,
    "snoc-think": CURRENT_MIN_144,
    "snoc-gaming": OLD_ENGINE,
}
#: `ROCMTUI_FLEET_ENGINES="snoc-strix=20.10,snoc-think=current"` (or one kind name for every
#: node) overrides the kinds, e.g. for a bench run on one engine age only.
ENGINES_ENV = "ROCMTUI_FLEET_ENGINES"
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BAKE_FILE = REPO_ROOT / "bake" / "rocm-bake.hcl"


def write_config(
    fleet: DevFleet,
    bake_file: Path,
    refresh_seconds: float,
    stall_after_seconds: float,
) -> Path:
    """Write the fleet's two fleet files; returns the real-shape one (`config_path`).

    The real-shape one names the host node's node_exporter only, so that each vitals source
    runs: node_exporter (snoc-strix), ssh (snoc-think) and the engine API (the TLS node); a
    test that wants another node's exporter names it in a fleet file of its own."""
    assert fleet.registry is not None and fleet.webdav is not None
    by_name = {r.name: r for r in fleet.remotes}
    common = (fleet.engines, by_name, fleet.registry, fleet.webdav, bake_file)
    write_fleet_file(fleet.unix_config_path, *common, refresh_seconds, stall_after_seconds)
    remote = bool(fleet.remotes)
    return write_fleet_file(
        fleet.config_path,
        *common,
        refresh_seconds,
        stall_after_seconds,
        ssh=fleet.ssh if remote else None,
        client=fleet.tls_client if remote else None,
        node_exporters={x.name: x.url for x in fleet.exporters if x.netns is None},
    )


def engine_kinds(
    names: Sequence[str], given: Mapping[str, EngineKind] | None = None
) -> dict[str, EngineKind]:
    """Each node's engine kind: `given`, else $ROCMTUI_FLEET_ENGINES, else the defaults (a
    node not named there runs today's engine)."""
    kinds = {n: DEFAULT_ENGINE_KINDS.get(n, CURRENT_MIN_144) for n in names}
    spec = os.environ.get(ENGINES_ENV, "").strip()
    if given is None and spec:
        for part in spec.split(","):
            node, sep, kind = part.strip().rpartition("=")
            if kind not in ENGINE_KINDS:
                raise ValueError(f"{ENGINES_ENV}: unknown engine kind {kind!r}")
            for n in names if not sep else [node]:
                kinds[n] = ENGINE_KINDS[kind]
    kinds.update(given or {})
    return kinds


def _add_remote(
    fleet: DevFleet, name: str, gfx: str | None, reach: str, ca: TestCA, kind: EngineKind
) -> EngineHandle:
    """A node in a fresh namespace with a link to the host, dockerd listening on its unix
    socket and on ADDR:2376 with mutual TLS (its sshd comes once the engine's socket is known)."""
    netns = unique_netns_name(name)
    netns_add(netns)
    try:
        link = add_veth(netns)
    except BaseException:
        netns_del(netns)
        raise
    fleet.remotes.append(RemoteNode(name, reach, link))
    cert = ca.server(fleet.workdir / "tls" / name, name, (link.node_address,))
    engine = launch_engine(
        fleet.workdir,
        name,
        netns,
        gfx,
        # every address of the namespace: a test dials the spare one, in no certificate
        tls_listen=(f"0.0.0.0:{TLS_PORT}", cert),
        socket_group=CI_UID,
        kind=kind,
    )
    engine.tcp_host = f"tcp://{link.node_address}:{TLS_PORT}"
    engine.owns_netns = True  # made here for this engine: it goes when the engine stops
    return engine


def start_fleet(
    workdir: Path,
    nodes: Sequence[NodeSpec] = DEFAULT_NODES,
    *,
    bake_file: Path | None = None,
    refresh_seconds: float = 2.0,
    stall_after_seconds: float = 900.0,
    timeout: float = 90.0,
    remote: bool = True,
    reach: Mapping[str, str] = DEFAULT_REACH,
    engines: Mapping[str, EngineKind] | None = None,
) -> DevFleet:
    """Bring up engines, registry, WebDAV and forwarders; write the fleet files and fleet.json.

    Engines start concurrently. Each netns engine gets a forwarder so that 127.0.0.1:REGISTRY
    and 127.0.0.1:WEBDAV inside its namespace reach the host's. With `remote` (the default),
    each netns engine is also a remote host: a link, sshd and a TLS listener (see
    `devfleet.remote`); `reach` says whether the fleet file reaches it by "ssh" (the
    default) or "tls". `engines`: each node's `EngineKind` (default `engine_kinds`). On any
    failure everything started so far is stopped again and the error is raised.
    """
    t0 = time.monotonic()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    fleet = DevFleet(workdir, [], None, None, [], workdir / CONFIG)
    try:
        tar = build_base_tar(workdir)  # once, before the engines race for it
        ca = TestCA(workdir / "tls" / "ca") if remote else None
        kinds = engine_kinds([n for n, _, _ in nodes], engines)
        # dockerd takes the longest: launch all first, start the services while they boot.
        for name, netns, gfx in nodes:
            if ca is not None and netns is True:
                engine = _add_remote(fleet, name, gfx, reach.get(name, "ssh"), ca, kinds[name])
            else:
                engine = launch_engine(workdir, name, netns, gfx, kind=kinds[name])
            fleet.engines.append(engine)
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
        if ca is not None:
            client_key = fleet.ssh.public_key()
            for r in fleet.remotes:
                engine = fleet.engine(r.name)
                r.sshd = start_sshd(
                    workdir / "ssh" / r.name,
                    r.name,
                    r.link.netns,
                    r.address,
                    engine.docker_host,
                    client_key,
                )
                fleet.save()
            fleet.ssh.write([r.sshd for r in fleet.remotes if r.sshd is not None])
            ca.client(fleet.tls_client.cert.parent)
            create_contexts(fleet.docker_config, fleet.remotes, fleet.tls_client)
        _start_exporters(fleet)

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


def _start_exporters(fleet: DevFleet) -> None:
    """node_exporter for the host node and each remote node, when Debian's is installed."""
    if not exporter_available():
        return
    for e in fleet.engines:
        folder = fleet.workdir / "engines" / e.name
        if e.netns is None:
            fleet.exporters.append(start_node_exporter(folder, e.name))
        elif any(r.name == e.name for r in fleet.remotes):
            address = fleet.remote(e.name).address
            fleet.exporters.append(start_node_exporter(folder, e.name, e.netns, address))
        fleet.save()


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
        for path in (fleet.config_path, fleet.unix_config_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
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
    for r in fleet.remotes:
        if r.sshd is not None:
            state = "ok" if r.sshd.alive() else "down"
            where = f"ssh://{r.sshd.user}@{r.address} ({r.link.host_if})"
            out["parts"].append(("sshd", r.name, r.sshd.pid, state, where))
    for x in fleet.exporters:
        state = "ok" if x.alive() else "down"
        where = f"{x.url} (netns {x.netns})" if x.netns else x.url
        out["parts"].append(("node_exporter", x.name, x.pid, state, where))
    return out
