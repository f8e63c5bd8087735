"""Builds started elsewhere (plain `docker buildx bake`, no rocmtui anywhere) and rocmtui's
discovery of them: a fleet file naming engines of the test's own, the bake as rocm-bake's
Makefile runs it, one discovery round as a one-shot `status` makes it, the outside jobs found."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from devfleet import EngineHandle, processes
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.history.discover import HistoryWatch
from rocmtui.core.jobs.control import list_jobs
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.probes.round import Probers, probe_fleet
from rocmtui.core.snapshots import FleetSnapshot

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "bake" / "demo.hcl"


def write_fleet(
    tmp_path: Path, nodes: dict[str, str], stall: float = 900, link_timeout: float = 120
) -> Path:
    """A fleet file naming `nodes` (name -> DOCKER_HOST), the demo bake file, no services."""
    lines = [
        f'bake_file = "{DEMO}"',
        "refresh_seconds = 2.0",
        f"stall_after_seconds = {stall}",
        f"link_timeout_seconds = {link_timeout}",
        '[registry]\nurl = "http://127.0.0.1:9"',
        '[webdav]\nurl = "http://127.0.0.1:9/"',
    ]
    for name, host in nodes.items():
        lines.append(f'[[nodes]]\nname = "{name}"\ndocker_host = "{host}"\ngfx = "gfx1201"')
    path = tmp_path / "rocmtui.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def plain_bake(
    engine: EngineHandle,
    tmp_path: Path,
    target: str = "demo-pytorch",
    sets: tuple[str, ...] = (),
    **env: str,
) -> subprocess.Popen[bytes]:
    """`docker buildx bake` as rocm-bake's Makefile runs it: no rocmtui anywhere."""
    child = processes.child_env(
        {
            "DOCKER_HOST": engine.docker_host,
            "GFX_ARCH": "gfx1201",
            "DEMO_NONCE": str(time.time_ns()),
            **env,
        }
    )
    return processes.spawn(
        [
            "docker",
            "buildx",
            "bake",
            "-f",
            str(DEMO),
            "--progress=plain",
            *(w for s in sets for w in ("--set", s)),
            "--",
            target,
        ],
        tmp_path / f"bake-{target}.log",
        env=child,
        cwd=DEMO.parent,
    )


NOTES: dict[str, str | None] = {}


def discover(config: FleetConfig) -> None:
    """One round of discovery as a one-shot `status` makes it (each node's state and history
    note kept in NOTES, for a failure's message)."""
    watch = HistoryWatch(config, interval=0, local=None)
    probers = Probers(history=watch, history_now=True)

    async def round_and_settle() -> FleetSnapshot:
        snap = await probe_fleet(config, probers=probers)
        await watch.settle(15.0)
        return snap

    snap = asyncio.run(round_and_settle())
    NOTES.update({n.name: f"{n.state} {n.reason} {n.history_note}" for n in snap.nodes})


def outside_jobs(config: FleetConfig) -> list[JobRecord]:
    return [j for j in list_jobs(config, limit=None) if j.started_elsewhere]
