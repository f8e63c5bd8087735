"""The vitals snapshot of one node, shared by the probes that gather it and the verdicts that
read it.

Every figure carries its unit in its name and is None when this node cannot give it; `missing`
says, one short line each, which figures are absent and why ("psi: /proc/pressure not on this
kernel", "engine cpu: node_exporter has no per-process CPU"). `source` names where the figures
came from, the first that answered of: a node_exporter the fleet file names, the node's kept ssh
connection (a read of /proc and statvfs), the engine API (`/info`, `/system/df`), or psutil for
the local node. Rates (CPU percentages, swap and OOM deltas) need two readings: a probe keeps
the previous snapshot's `counters` and derives them; the first reading has None rates.
"""

from __future__ import annotations

from msgspec import Struct

#: where a node's vitals came from; the first that answers wins
SOURCE_NODE_EXPORTER = "node_exporter"
SOURCE_SSH = "ssh"
SOURCE_ENGINE = "engine"
SOURCE_LOCAL = "local"
SOURCES = (SOURCE_NODE_EXPORTER, SOURCE_SSH, SOURCE_ENGINE, SOURCE_LOCAL)


class VitalsCounters(Struct, frozen=True):
    """Cumulative counters kept from the last reading to derive the next reading's rates."""

    taken_at: float  # seconds since the epoch (wall clock of the reading)
    host_cpu_busy_seconds: float | None = None  # all CPUs, non-idle, since boot
    host_cpu_total_seconds: float | None = None  # all CPUs, since boot
    engine_cpu_seconds: float | None = None  # user+system of the engine's process tree
    swap_in_pages: int | None = None  # pswpin since boot
    oom_kills: int | None = None  # oom_kill since boot (vmstat) or the cgroup's count
    # node_exporter's PSI are cumulative seconds (node_pressure_*_seconds_total): their rates
    # over the refresh stand in for the kernel's avg10 that /proc/pressure gives directly
    psi_cpu_some_seconds: float | None = None
    psi_io_some_seconds: float | None = None
    psi_io_full_seconds: float | None = None
    psi_memory_some_seconds: float | None = None
    psi_memory_full_seconds: float | None = None
    # (pid, user+system+children's seconds) of each process in the engine's tree: a process
    # that exits takes its time with it, so the tree's rate is summed per process present in
    # both readings (the busiest one named from the same deltas)
    engine_pid_seconds: tuple[tuple[int, float], ...] = ()


class EngineProcess(Struct, frozen=True):
    """The busiest process in the engine's tree over the last interval (a RUN step's compiler,
    a linker): what a 'quiet but busy' verdict names."""

    name: str  # comm, sanitised
    cpu_percent: float  # 100 = one core


class NodeVitals(Struct, frozen=True):
    """One node's vitals at one moment (see the module docstring)."""

    node: str
    source: str  # one of SOURCES
    taken_at: float  # seconds since the epoch
    cpu_count: int | None = None
    host_cpu_percent: float | None = None  # 100 = one core busy; up to 100 * cpu_count
    engine_cpu_percent: float | None = None  # the engine's process tree, 100 = one core
    engine_processes: int | None = None  # processes in the engine's tree
    busiest: EngineProcess | None = None
    load1: float | None = None
    mem_used_percent: float | None = None
    mem_total_bytes: int | None = None
    swap_used_percent: float | None = None
    swap_in_pages_per_second: float | None = None  # > 0 for long: thrashing
    psi_cpu_some_avg10: float | None = None  # percent, /proc/pressure/cpu "some avg10"
    psi_io_some_avg10: float | None = None
    psi_io_full_avg10: float | None = None
    psi_memory_some_avg10: float | None = None
    psi_memory_full_avg10: float | None = None
    data_root: str | None = None  # the engine's data root path (docker info DockerRootDir)
    data_root_free_bytes: int | None = None
    data_root_total_bytes: int | None = None
    build_cache_bytes: int | None = None  # the builder's cache (engine /system/df)
    oom_kills_total: int | None = None  # cumulative; a verdict compares with the build's start
    # OOM kills counted by the memory cgroup of the engine's dockerd (cgroup v1 oom_control or
    # v2 memory.events): this node's own, where oom_kills_total is the whole kernel's (nodes
    # sharing one kernel, as on the dev fleet, all see each other's there); /proc readers only
    engine_oom_kills_total: int | None = None
    counters: VitalsCounters | None = None
    missing: tuple[str, ...] = ()  # "figure: why", one per figure this node cannot give
    error: str | None = None  # why the chosen source failed this time, one sanitised line

    @property
    def data_root_used_percent(self) -> float | None:
        """Percent of the data root's filesystem in use, or None when unknown."""
        if not self.data_root_total_bytes or self.data_root_free_bytes is None:
            return None
        used = self.data_root_total_bytes - self.data_root_free_bytes
        return 100.0 * used / self.data_root_total_bytes
