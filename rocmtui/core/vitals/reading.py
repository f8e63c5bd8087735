"""One source's raw reading of a node, and the `NodeVitals` derived from it.

Every source (node_exporter, /proc over ssh, the engine API, psutil) fills a `Reading` with
what it saw: gauges as they are, counters as cumulative values. `derive` turns a reading into
a `NodeVitals`, taking rates (CPU percent, swap-in pages per second, PSI from cumulative
seconds) against the previous snapshot's `counters`, so that every source's figures mean the
same thing and the first reading of a node has None rates rather than a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocmtui.core.vitals.nodevitals import EngineProcess, NodeVitals, VitalsCounters

#: a reading further apart than this from the previous one gives no rates (a node that was
#: away for minutes has no "current" CPU figure from two such readings)
MAX_RATE_GAP = 120.0
MIN_RATE_GAP = 0.2  # seconds: closer readings give no rates (the kernel ticks at 100 Hz)


@dataclass
class TreeProcess:
    """One process of the engine's tree: its name and its cumulative CPU seconds."""

    pid: int
    name: str  # sanitised by whoever fills it
    seconds: float  # utime + stime + cutime + cstime


@dataclass
class Reading:
    """What one source saw, before rates: None wherever it saw nothing."""

    cpu_count: int | None = None
    cpu_busy_seconds: float | None = None
    cpu_total_seconds: float | None = None
    host_cpu_percent: float | None = None  # a source that gives the rate itself (psutil)
    load1: float | None = None
    mem_total_bytes: int | None = None
    mem_available_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_free_bytes: int | None = None
    swap_in_pages: int | None = None
    oom_kills: int | None = None
    engine_oom_kills: int | None = None  # counted by the engine's memory cgroup
    # /proc/pressure's own avg10 (percent) ...
    psi_cpu_some_avg10: float | None = None
    psi_io_some_avg10: float | None = None
    psi_io_full_avg10: float | None = None
    psi_memory_some_avg10: float | None = None
    psi_memory_full_avg10: float | None = None
    # ... or node_exporter's cumulative seconds
    psi_cpu_some_seconds: float | None = None
    psi_io_some_seconds: float | None = None
    psi_io_full_seconds: float | None = None
    psi_memory_some_seconds: float | None = None
    psi_memory_full_seconds: float | None = None
    data_root: str | None = None
    data_root_free_bytes: int | None = None
    data_root_total_bytes: int | None = None
    build_cache_bytes: int | None = None
    tree: list[TreeProcess] | None = None  # None: the engine's tree was not seen
    missing: list[str] = field(default_factory=list)


def _rate(now: float | None, before: float | None, seconds: float | None) -> float | None:
    if now is None or before is None or seconds is None:
        return None
    return max(0.0, (now - before) / seconds)


def _psi(
    avg10: float | None, now: float | None, before: float | None, gap: float | None
) -> float | None:
    if avg10 is not None:
        return avg10
    rate = _rate(now, before, gap)
    return None if rate is None else min(100.0, 100.0 * rate)


def _tree(
    tree: list[TreeProcess], before: VitalsCounters | None, gap: float | None
) -> tuple[float | None, EngineProcess | None]:
    """The tree's CPU percent over `gap` and its busiest process, from per-process deltas:
    a process new since the last reading counts from 0 (it started in between)."""
    if before is None or gap is None:
        return None, None
    old = dict(before.engine_pid_seconds)
    total = 0.0
    busiest: tuple[float, str] | None = None
    for proc in tree:
        delta = max(0.0, proc.seconds - old.get(proc.pid, 0.0))
        total += delta
        if busiest is None or delta > busiest[0]:
            busiest = (delta, proc.name)
    top = None
    if busiest is not None and busiest[0] > 0:
        top = EngineProcess(busiest[1], round(100.0 * busiest[0] / gap, 1))
    return round(100.0 * total / gap, 1), top


def derive(
    node: str,
    source: str,
    reading: Reading,
    taken_at: float,
    previous: NodeVitals | None,
    error: str | None = None,
) -> NodeVitals:
    """The vitals of `reading`, rates taken against `previous.counters` (see the module doc)."""
    before = previous.counters if previous is not None else None
    gap: float | None = None
    if before is not None:
        gap = taken_at - before.taken_at
        if not MIN_RATE_GAP <= gap <= MAX_RATE_GAP:
            gap, before = None, None
    tree = reading.tree
    counters = VitalsCounters(
        taken_at=taken_at,
        host_cpu_busy_seconds=reading.cpu_busy_seconds,
        host_cpu_total_seconds=reading.cpu_total_seconds,
        engine_cpu_seconds=sum(p.seconds for p in tree) if tree is not None else None,
        swap_in_pages=reading.swap_in_pages,
        oom_kills=reading.oom_kills,
        psi_cpu_some_seconds=reading.psi_cpu_some_seconds,
        psi_io_some_seconds=reading.psi_io_some_seconds,
        psi_io_full_seconds=reading.psi_io_full_seconds,
        psi_memory_some_seconds=reading.psi_memory_some_seconds,
        psi_memory_full_seconds=reading.psi_memory_full_seconds,
        engine_pid_seconds=tuple((p.pid, p.seconds) for p in tree or ()),
    )
    b = before or VitalsCounters(taken_at=taken_at)
    host_cpu = reading.host_cpu_percent
    if host_cpu is None and reading.cpu_count:
        busy = _rate(reading.cpu_busy_seconds, b.host_cpu_busy_seconds, 1.0)
        total = _rate(reading.cpu_total_seconds, b.host_cpu_total_seconds, 1.0)
        if busy is not None and total:
            host_cpu = round(100.0 * reading.cpu_count * min(1.0, busy / total), 1)
    engine_cpu, busiest = _tree(tree, before, gap) if tree is not None else (None, None)
    mem_used = swap_used = None
    if reading.mem_total_bytes and reading.mem_available_bytes is not None:
        used = reading.mem_total_bytes - reading.mem_available_bytes
        mem_used = round(100.0 * used / reading.mem_total_bytes, 1)
    if reading.swap_total_bytes is not None and reading.swap_free_bytes is not None:
        swap_used = (
            round(
                100.0
                * (reading.swap_total_bytes - reading.swap_free_bytes)
                / reading.swap_total_bytes,
                1,
            )
            if reading.swap_total_bytes
            else 0.0
        )
    swap_in = _rate(
        float(reading.swap_in_pages) if reading.swap_in_pages is not None else None,
        float(b.swap_in_pages) if b.swap_in_pages is not None else None,
        gap,
    )
    return NodeVitals(
        node=node,
        source=source,
        taken_at=taken_at,
        cpu_count=reading.cpu_count,
        host_cpu_percent=host_cpu,
        engine_cpu_percent=engine_cpu,
        engine_processes=len(tree) if tree is not None else None,
        busiest=busiest,
        load1=reading.load1,
        mem_used_percent=mem_used,
        mem_total_bytes=reading.mem_total_bytes,
        swap_used_percent=swap_used,
        swap_in_pages_per_second=None if swap_in is None else round(swap_in, 2),
        psi_cpu_some_avg10=_psi(
            reading.psi_cpu_some_avg10, reading.psi_cpu_some_seconds, b.psi_cpu_some_seconds, gap
        ),
        psi_io_some_avg10=_psi(
            reading.psi_io_some_avg10, reading.psi_io_some_seconds, b.psi_io_some_seconds, gap
        ),
        psi_io_full_avg10=_psi(
            reading.psi_io_full_avg10, reading.psi_io_full_seconds, b.psi_io_full_seconds, gap
        ),
        psi_memory_some_avg10=_psi(
            reading.psi_memory_some_avg10,
            reading.psi_memory_some_seconds,
            b.psi_memory_some_seconds,
            gap,
        ),
        psi_memory_full_avg10=_psi(
            reading.psi_memory_full_avg10,
            reading.psi_memory_full_seconds,
            b.psi_memory_full_seconds,
            gap,
        ),
        data_root=reading.data_root,
        data_root_free_bytes=reading.data_root_free_bytes,
        data_root_total_bytes=reading.data_root_total_bytes,
        build_cache_bytes=reading.build_cache_bytes,
        oom_kills_total=reading.oom_kills,
        engine_oom_kills_total=reading.engine_oom_kills,
        counters=counters,
        missing=tuple(dict.fromkeys(reading.missing)),
        error=error,
    )
