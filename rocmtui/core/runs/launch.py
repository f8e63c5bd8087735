"""`launch_run`: one target or group on every chosen node at once, under one run id.

Each node builds at its own GFX arch (its GPU's, when the bake file accepts it there; else the
bake file's default), as rocm-bake's fleet runs do. Each build is an ordinary job
(`jobs.launch.launch_job`: its slots, record, supervisor), started from a thread of its own so
the nodes start together. A node the fleet snapshot says is down, unknown or stalled is not
started, and the run records why; so is a node whose launch was refused (already building,
push not confirmed ...). The run is recorded before any build starts, so a run in flight is
visible at once.
"""

from __future__ import annotations

import getpass
import os
import socket
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from msgspec import Struct

from rocmtui.core.bake.file import BakeError, BakeFile
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.jobs.checks import (
    check_overrides,
    launch_arches,
    resolve_target,
    static_names,
)
from rocmtui.core.jobs.launch import launch_job
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.redaction import redact_mapping
from rocmtui.core.jobs.refusals import LaunchError, refuse_if_read_only
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.book import RunBook
from rocmtui.core.runs.run import ORIGIN_ROCMTUI, Run, new_run_id
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.text.sanitize import one_line

#: Node states a run starts a build on.
STARTABLE = ("ok", "building")


class NodeStart(Struct, frozen=True):
    """What happened on one node: its job, or why it did not start."""

    node: str
    arch: str
    job: JobRecord | None
    why_not: str | None = None


def node_arch(bake: BakeFile, node: NodeConfig, gfx: str | None) -> str | None:
    """The node's own arch when the bake file builds it there, else None (the default)."""
    own = gfx or node.gfx
    return own if own and own in launch_arches(bake, own) else None


def pick_nodes(config: FleetConfig, names: Sequence[str] | None) -> list[NodeConfig]:
    """The named nodes (LaunchError naming an unknown one), else every node."""
    if not config.nodes:
        raise LaunchError(f"no node to build on: {config.source or 'the built-in default'}")
    if not names:
        return list(config.nodes)
    out = []
    for name in names:
        node = config.node(name)
        if node is None:
            known = ", ".join(n.name for n in config.nodes)
            raise LaunchError(f"no node {name!r} in the fleet file (nodes: {known})")
        out.append(node)
    return out


def launch_run(
    config: FleetConfig,
    bake: BakeFile,
    target: str,
    nodes: Sequence[str] | None = None,
    overrides: Mapping[str, str] | None = None,
    push: bool = False,
    yes: bool = False,
    env: Mapping[str, str] | None = None,
    snapshot: FleetSnapshot | None = None,
    store: JobStore | None = None,
) -> tuple[Run, list[NodeStart]]:
    """Start `target` on every chosen node at once (see the module doc); the run and what
    happened on each node. Raises LaunchError for an unknown node or name before anything
    starts, ReadOnlyRefused on a read-only fleet."""
    refuse_if_read_only(config, "starting a run")
    env = os.environ if env is None else env
    chosen = pick_nodes(config, nodes)
    check_overrides(bake, overrides or {})
    if target not in static_names(bake):  # a matrix name: bake says whether it knows it
        resolve_target(bake, target, dict(env))
    store = store or JobStore.for_config(config, env)
    book = RunBook(store, config.stall_after_seconds)
    run = Run(
        id=new_run_id(),
        target=target,
        started_at=time.time(),
        origin=ORIGIN_ROCMTUI,
        started_by=f"{getpass.getuser()}@{socket.gethostname()}",
        nodes=tuple(n.name for n in chosen),
        overrides=redact_mapping(dict(overrides or {})),
    )
    book.create(run)

    def start(node: NodeConfig) -> NodeStart:
        snap = snapshot.node(node.name) if snapshot is not None else None
        arch = node_arch(bake, node, snap.gfx if snap else None)
        if snap is not None and str(snap.state) not in STARTABLE:
            why = str(snap.state) + (f" ({one_line(snap.reason)})" if snap.reason else "")
            return NodeStart(node.name, arch or "", None, why)
        try:
            record = launch_job(
                config, bake, target, arch, node.name, push, yes, env, overrides, store
            )
        except (LaunchError, BakeError) as exc:  # refused, already building, bad input
            return NodeStart(node.name, arch or "", None, one_line(str(exc)))
        return NodeStart(node.name, record.arch, record)

    with ThreadPoolExecutor(max_workers=max(1, len(chosen)), thread_name_prefix="run") as pool:
        started = list(pool.map(start, chosen))
    book.add_jobs(run.id, [(s.job.id, s.node) for s in started if s.job is not None])
    for s in started:
        if s.why_not is not None:
            book.note(run.id, s.node, s.why_not)
    return book.get(run.id), started


__all__ = ["STARTABLE", "NodeStart", "launch_run", "node_arch", "pick_nodes"]
