"""Vitals for a one-shot command (`rocmtui jobs`, `status`): read once, for the nodes that
have a build silent past the stall threshold, each under a deadline.

A probe round's vitals carry no rates on their first reading (a CPU percentage needs two), so a
one-shot command samples the engine's process tree over a short interval itself. The local node
is read with psutil: the CPU of the engine's tree (a RUN step's processes descend from it) and
its busiest process, and the host's OOM count.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from rocmtui.core.verdicts.context import StallJudge, VitalsReader
from rocmtui.core.vitals.model import SOURCE_LOCAL, EngineProcess, NodeVitals

if TYPE_CHECKING:
    from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.jobs.store import JobStore

SAMPLE_SECONDS = 0.5
DEADLINE = 3.0


def _tree_times(pid: int) -> dict[int, tuple[str, float]]:
    """pid -> (name, user+system seconds) of `pid` and its descendants."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return {}
    out: dict[int, tuple[str, float]] = {}
    for proc in procs:
        try:
            times = proc.cpu_times()
            out[proc.pid] = (proc.name(), times.user + times.system)
        except psutil.Error:
            continue
    return out


def _oom_kills() -> int | None:
    try:
        with open("/proc/vmstat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def local_vitals(node: NodeConfig, interval: float = SAMPLE_SECONDS) -> NodeVitals | None:
    """The local node's engine tree CPU over `interval` seconds (None for a remote node)."""
    from rocmtui.core.jobs.evidence import engine_pid
    from rocmtui.core.text.sanitize import sanitize_line

    if not node.local:
        return None
    pid = engine_pid(node)
    if pid is None:
        return NodeVitals(
            node=node.name,
            source=SOURCE_LOCAL,
            taken_at=time.time(),
            oom_kills_total=_oom_kills(),
            missing=("engine cpu: the engine's process was not found on this host",),
        )
    before = _tree_times(pid)
    start = time.monotonic()
    time.sleep(interval)
    after = _tree_times(pid)
    gap = max(1e-3, time.monotonic() - start)
    # a process present in both readings: one that ended took its time with it
    rates = {p: (after[p][0], (after[p][1] - before[p][1]) / gap * 100.0) for p in after}
    rates = {p: v for p, v in rates.items() if p in before}
    total = max(0.0, sum(r for _, r in rates.values()))
    busiest = max(rates.values(), key=lambda v: v[1], default=None)
    return NodeVitals(
        node=node.name,
        source=SOURCE_LOCAL,
        taken_at=time.time(),
        engine_cpu_percent=total,
        engine_processes=len(after),
        busiest=(
            EngineProcess(name=sanitize_line(busiest[0])[:40], cpu_percent=max(0.0, busiest[1]))
            if busiest is not None
            else None
        ),
        oom_kills_total=_oom_kills(),
    )


def silent_nodes(records: Iterable[JobRecord], stall_after: float, now: float) -> set[str]:
    """Nodes with an unfinished build whose log has been silent for `stall_after` or more."""
    from rocmtui.core.jobs.control import silent_seconds

    found = set()
    for record in records:
        if record.ended_at is not None:
            continue
        silent = silent_seconds(record, now)
        if silent is not None and silent >= stall_after:
            found.add(record.node)
    return found


def read_silent_nodes(
    judge: StallJudge,
    config: FleetConfig,
    store: JobStore,
    reader: VitalsReader = local_vitals,
    deadline: float = DEADLINE,
) -> None:
    """Give `judge` one reading, read concurrently, of every node with a silent build (a node
    that does not answer in `deadline` seconds gives none)."""
    try:
        unfinished = store.list(limit=None, unfinished_only=True)
    except Exception:  # the job readers say why the store is unreadable
        return
    names = silent_nodes(unfinished, config.stall_after_seconds, time.time())
    nodes = [n for n in config.nodes if n.name in names]
    if not nodes:
        return
    pool = ThreadPoolExecutor(max_workers=min(8, len(nodes)), thread_name_prefix="vitals")
    try:
        futures = [pool.submit(judge.read_once, [node], reader) for node in nodes]
        wait(futures, timeout=deadline)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def one_shot_judge(
    config: FleetConfig,
    store: JobStore,
    reader: VitalsReader = local_vitals,
    deadline: float = DEADLINE,
) -> StallJudge:
    """A judge for a one-shot command, with one reading of each node with a silent build."""
    from rocmtui.core.history.usual import UsualTimes

    judge = StallJudge(config, UsualTimes(store).of)
    read_silent_nodes(judge, config, store, reader, deadline)
    return judge


__all__ = ["local_vitals", "one_shot_judge", "read_silent_nodes", "silent_nodes"]
