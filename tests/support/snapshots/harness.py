"""Drive the console on recorded data: no probes, a fixed clock, data posted as feeds would.

The feeds of a live console post their messages (`FleetUpdated`, `JobsUpdated`, `BakeLoaded`,
`PanelFailed`) to the screen at the bottom of the stack, the fleet screen; `post_feed` posts a
recorded one there the same way. Everything else a test does goes through keys and the screen
(tests/support/blackbox.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec.structs import replace
from textual.message import Message
from textual.pilot import Pilot

from rocmtui.console.app import RocmTui
from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.backend.views import BakePlan
from rocmtui.console.messages import BakeLoaded, FleetUpdated, JobsUpdated
from rocmtui.core.config.fleetfile import FleetConfig
from tests.support.snapshots import recorded


class RecordedPlans(FleetBackend):
    """A stand-in for `bake --print` in the bake dialog (snapshots): every choice resolves at
    once to the recorded `plan`, with the target, arch and node asked for."""

    def __init__(self, config: FleetConfig, plan: BakePlan) -> None:
        super().__init__(config)
        self.recorded = plan

    def plan(
        self,
        target: str,
        arch: str | None,
        node: str,
        push: bool,
        overrides: Mapping[str, str] | None = None,
    ) -> BakePlan:
        """The recorded plan, for what was asked (the push switch included)."""
        asked = {"target": target, "arch": arch or self.recorded.arch, "node": node}
        return replace(self.recorded, **asked, push=push, push_switch=push)


def recorded_app(
    read_only: bool = False,
    keys: dict[str, str] | None = None,
    *,
    clock: Callable[[], float] | None = None,
    plan: BakePlan | None = None,
) -> RocmTui:
    """The console on the recorded SNOC fleet, frozen at `recorded.NOW` (or at `clock()`);
    with `plan`, the bake dialog resolves every choice to it (`RecordedPlans`)."""
    config = recorded.config(read_only=read_only, keys=keys)
    backend = RecordedPlans(config, plan) if plan is not None else None
    return RocmTui(config, backend=backend, live=False, clock=clock or (lambda: recorded.NOW))


def post_feed(app: RocmTui, message: Message) -> None:
    """Post `message` where the console's feeds post theirs: the fleet screen, at the bottom
    of the screen stack."""
    app.screen_stack[0].post_message(message)


async def feed(
    app: RocmTui,
    pilot: Pilot[Any],
    *,
    stalled: bool = False,
    think_down: bool = False,
    hostile: bool = False,
    with_jobs: bool = True,
) -> None:
    """Post the recorded bake file, a latency history and the jobs, as the feeds do."""
    post_feed(app, BakeLoaded(recorded.bake(hostile=hostile)))
    for index, latency in enumerate(recorded.LATENCIES):
        snap = recorded.fleet(think_down=think_down)
        snap = replace(
            snap,
            registry=replace(snap.registry, latency=latency),
            webdav=replace(snap.webdav, latency=0.5 + latency * (index % 3)),
        )
        post_feed(app, FleetUpdated(snap))
        await pilot.pause()
    if with_jobs:
        post_feed(app, JobsUpdated(recorded.jobs(stalled=stalled)))
    await pilot.pause()
