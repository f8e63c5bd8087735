"""Vitals for a one-shot command (`rocmtui jobs`, `status`): the nodes that have a build silent
past the stall threshold are read twice, `GAP` seconds apart, each reading under a deadline.

A CPU percentage is a rate: a node's first reading has none (`vitals.reading.derive`), so a
command that lives for one round reads the silent nodes once more, through the same sources and
the same kept ssh connection (`vitals.gather.VitalsProber`), and judges with the second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rocmtui.core.verdicts.context import StallJudge
from rocmtui.core.verdicts.verdict import Reading

if TYPE_CHECKING:
    from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.jobs.store import JobStore
    from rocmtui.core.vitals.gather import VitalsProber
    from rocmtui.core.vitals.nodevitals import NodeVitals

GAP = 1.0  # seconds between a node's two readings: the CPU rate's window
DEADLINE = 3.0


def silent_nodes(records: Iterable[JobRecord], stall_after: float, now: float) -> set[str]:
    """Nodes with an unfinished build whose log has been silent for `stall_after` or more."""
    # on first use: jobs.control brings the job store (sqlite3) and psutil
    from rocmtui.core.jobs.control import silent_seconds

    found = set()
    for record in records:
        if record.ended_at is not None:
            continue
        silent = silent_seconds(record, now)
        if silent is not None and silent >= stall_after:
            found.add(record.node)
    return found


async def read_again(
    prober: VitalsProber,
    node: NodeConfig,
    first: NodeVitals | None,
    deadline: float = DEADLINE,
    gap: float = GAP,
) -> NodeVitals | None:
    """The node's next reading, `gap` seconds after `first` (read now when there is none), so
    that its rates are there. A first reading from another source than the next (the round's
    ssh read ran out of time and the engine API answered) gives no rates: then once more."""
    if first is None:
        first = await prober.vitals(node, None, deadline)
    reading = first
    for _ in range(2):
        if reading is None:
            return None
        wait = gap - (time.time() - reading.taken_at)
        if wait > 0:
            await asyncio.sleep(wait)
        before = reading
        reading = await prober.vitals(node, before, deadline, None)
        if reading is None or reading.engine_cpu_percent is not None:
            break
        if reading.source == before.source and reading.taken_at > before.taken_at:
            break  # a source that gives no CPU figure: asking again would not help
    return reading


async def read_nodes(
    nodes: Sequence[NodeConfig], deadline: float = DEADLINE, gap: float = GAP
) -> list[NodeVitals]:
    """Two readings of each of `nodes`, concurrently, with a prober of their own (its ssh
    connections ended after)."""
    # on first use: the probers bring httpx and the docker SDK
    from rocmtui.core.probes.engine_prober import EngineProber
    from rocmtui.core.vitals.gather import VitalsProber

    engines = EngineProber(count_containers=False)
    prober = VitalsProber(engines)
    try:
        found = await asyncio.gather(*(read_again(prober, n, None, deadline, gap) for n in nodes))
    finally:
        await prober.aclose()
        await asyncio.to_thread(engines.close)
    return [v for v in found if v is not None]


def one_shot_judge(config: FleetConfig, store: JobStore) -> StallJudge:
    """A judge for a one-shot command that reads jobs without a probe round (`rocmtui jobs`):
    the nodes with a silent build are read twice first."""
    # on first use: the cost book brings the job store (sqlite3)
    from rocmtui.core.costbook.usual import UsualTimes

    judge = StallJudge(config, UsualTimes(store).of)
    try:
        unfinished = store.list(limit=None, unfinished_only=True)
    except Exception:  # the job readers say why the store is unreadable
        return judge
    names = silent_nodes(unfinished, config.stall_after_seconds, time.time())
    nodes = [n for n in config.nodes if n.name in names]
    if nodes:
        for vitals in asyncio.run(read_nodes(nodes)):
            judge.window.add(vitals.node, Reading(vitals.taken_at, vitals))
    return judge


__all__ = ["DEADLINE", "GAP", "one_shot_judge", "read_again", "read_nodes", "silent_nodes"]
