"""Drive the console on recorded data: no probes, a fixed clock, data posted as feeds would."""

from __future__ import annotations

from dataclasses import replace

from textual.pilot import Pilot

from rocmtui.app.app import RocmTui
from rocmtui.app.messages import BakeLoaded, FleetUpdated, JobsUpdated
from tests.snapshots import recorded


def recorded_app(read_only: bool = False, keys: dict[str, str] | None = None) -> RocmTui:
    """The console on the recorded SNOC fleet, frozen at `recorded.NOW`."""
    config = recorded.config(read_only=read_only, keys=keys)
    return RocmTui(config, live=False, clock=lambda: recorded.NOW)


async def feed(
    app: RocmTui,
    pilot: Pilot[object],
    *,
    stalled: bool = False,
    think_down: bool = False,
    hostile: bool = False,
    with_jobs: bool = True,
) -> None:
    """Post the recorded bake file, a latency history and the jobs, as the feeds do."""
    screen = app.fleet_screen
    screen.post_message(BakeLoaded(recorded.bake(hostile=hostile)))
    for index, latency in enumerate(recorded.LATENCIES):
        snap = recorded.fleet(think_down=think_down)
        snap = replace(
            snap,
            registry=replace(snap.registry, latency=latency),
            webdav=replace(snap.webdav, latency=0.5 + latency * (index % 3)),
        )
        screen.post_message(FleetUpdated(snap))
        await pilot.pause()
    if with_jobs:
        screen.post_message(JobsUpdated(recorded.jobs(stalled=stalled)))
    await pilot.pause()
