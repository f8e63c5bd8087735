"""A node's vitals in a probe round (`probes.round.probe_fleet`): gathered in a task of their
own beside the node's probe, and attached to its snapshot at the round's end.

A task of their own, so that a probe overrunning the round loses its snapshot, never the
vitals the verdicts read; vitals not in by the round's end leave the node its last ones,
saying so. A hung source gives up at `SHARE` of the probe deadline, before the probe does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.snapshots import NodeSnapshot, ServiceSnapshot
from rocmtui.core.vitals.nodevitals import NodeVitals

if TYPE_CHECKING:
    from rocmtui.core.vitals.gather import VitalsProber

SHARE = 0.85  # of the probe deadline a node's vitals may take
MIN_LEFT = 0.3  # seconds: less than this left after a first probe, no vitals this round

log = logging.getLogger(__name__)


async def gather(
    prober: VitalsProber,
    node: NodeConfig,
    old: NodeSnapshot | None,
    deadline: float,
    after: asyncio.Task[NodeSnapshot] | asyncio.Task[ServiceSnapshot] | None,
) -> NodeVitals | None:
    """The node's vitals within `SHARE` of the probe `deadline`, started once `after` (its
    probe, on a monitor's first round) is done."""
    deadline *= SHARE
    started = time.monotonic()
    if after is not None:
        await asyncio.wait([after], timeout=deadline)
    left = deadline - (time.monotonic() - started)
    if left < MIN_LEFT:
        return None  # the previous vitals stay (none on a first round)
    api_used = old.api_used if old else None
    if after is not None and after.done() and not after.cancelled() and not after.exception():
        probed = after.result()
        api_used = getattr(probed, "api_used", None) or api_used
    return await prober.vitals(node, old.vitals if old else None, left, api_used)


def attach(
    snap: NodeSnapshot,
    task: asyncio.Task[NodeVitals | None] | None,
    old: NodeSnapshot | None,
    waiting: bool,
) -> NodeSnapshot:
    """`snap` with the vitals gathered this round; else (still gathering in an interim
    snapshot, or given up at the round's end) its last ones, their time showing their age."""
    vitals = old.vitals if old is not None else None
    if task is None or (waiting and not task.done()):
        pass
    elif not task.done() or task.cancelled():
        if vitals is not None:
            vitals = replace(vitals, error="vitals: no answer by the round's end")
    elif task.exception() is None:
        vitals = task.result() or vitals
    else:
        log.error("vitals of %s", snap.name, exc_info=task.exception())
    return replace(snap, vitals=vitals) if vitals is not snap.vitals else snap
