"""The monitor's metrics of every node's vitals (rocmtui.core.vitals).

Labels are bounded: `node` (the fleet file's), `source` (four words), `resource` and `kind`
(PSI's three and two). Names end in their unit: CPU in cores busy (`_cores`: 15.8 for
"1580%"), shares as `_ratio` (0 to 1), room in `_bytes`. A figure the node could not give is
absent, not 0 (absent is not 0 in PromQL): the data-root alert never fires on a node with no
disk figure. `rocmtui_node_vitals_source` says where each node's figures came from.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.vitals.nodevitals import SOURCES, NodeVitals


def _gauge(name: str, doc: str, labels: tuple[str, ...] = ("node",)) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


def vitals_families(snapshot: FleetSnapshot) -> list[Metric]:
    """One family per vital; a sample per node that gave it."""
    source = _gauge(
        "rocmtui_node_vitals_source",
        "Where the node's vitals came from (1 for the current one): node_exporter, ssh, "
        "engine, local",
        ("node", "source"),
    )
    taken = _gauge(
        "rocmtui_node_vitals_timestamp_seconds",
        "When the node's vitals were read (Unix time); older than the snapshot when the "
        "source hung",
    )
    gauges: list[tuple[GaugeMetricFamily, str, float]] = [
        (_gauge("rocmtui_node_cpus", "CPUs of the node's host"), "cpu_count", 1.0),
        (
            _gauge("rocmtui_node_host_cpu_cores", "CPU cores busy on the node's host"),
            "host_cpu_percent",
            0.01,
        ),
        (
            _gauge(
                "rocmtui_node_engine_cpu_cores",
                "CPU cores busy in the engine's process tree (its builds' RUN steps)",
            ),
            "engine_cpu_percent",
            0.01,
        ),
        (
            _gauge("rocmtui_node_engine_processes", "Processes in the engine's tree"),
            "engine_processes",
            1.0,
        ),
        (_gauge("rocmtui_node_load1", "The host's 1-minute load average"), "load1", 1.0),
        (
            _gauge("rocmtui_node_memory_used_ratio", "Share of the host's memory in use"),
            "mem_used_percent",
            0.01,
        ),
        (
            _gauge("rocmtui_node_memory_bytes", "The host's memory"),
            "mem_total_bytes",
            1.0,
        ),
        (
            _gauge("rocmtui_node_swap_used_ratio", "Share of the host's swap in use"),
            "swap_used_percent",
            0.01,
        ),
        (
            _gauge("rocmtui_node_swap_in_pages_per_second", "Pages swapped in per second"),
            "swap_in_pages_per_second",
            1.0,
        ),
        (
            _gauge(
                "rocmtui_node_data_root_free_bytes",
                "Room left for unprivileged use on the filesystem of the engine's data root",
            ),
            "data_root_free_bytes",
            1.0,
        ),
        (
            _gauge(
                "rocmtui_node_data_root_size_bytes",
                "Size of the filesystem of the engine's data root",
            ),
            "data_root_total_bytes",
            1.0,
        ),
        (
            _gauge("rocmtui_node_build_cache_bytes", "The engine's BuildKit cache"),
            "build_cache_bytes",
            1.0,
        ),
    ]
    pressure = _gauge(
        "rocmtui_node_pressure_ratio",
        "Pressure stall information over the last ~10 s: share of time some (or all) tasks "
        "waited for the resource",
        ("node", "resource", "kind"),
    )
    ooms = CounterMetricFamily(
        "rocmtui_node_oom_kills",
        "Processes the host's kernel OOM killer ended since boot",
        labels=["node"],
    )
    engine_ooms = CounterMetricFamily(
        "rocmtui_node_engine_oom_kills",
        "Processes the OOM killer ended in the memory cgroup of the node's engine",
        labels=["node"],
    )
    for node in snapshot.nodes:
        vitals = node.vitals
        if vitals is None:
            continue
        for word in SOURCES:
            source.add_metric([node.name, word], 1.0 if word == vitals.source else 0.0)
        taken.add_metric([node.name], vitals.taken_at)
        for family, field, scale in gauges:
            value = getattr(vitals, field)
            if value is not None:
                family.add_metric([node.name], float(value) * scale)
        for (resource, kind), value in _pressure(vitals):
            if value is not None:
                pressure.add_metric([node.name, resource, kind], value / 100.0)
        if vitals.oom_kills_total is not None:
            ooms.add_metric([node.name], float(vitals.oom_kills_total))
        if vitals.engine_oom_kills_total is not None:
            engine_ooms.add_metric([node.name], float(vitals.engine_oom_kills_total))
    families = (family for family, _, _ in gauges)
    return [source, taken, *families, pressure, ooms, engine_ooms]


def _pressure(v: NodeVitals) -> list[tuple[tuple[str, str], float | None]]:
    return [
        (("cpu", "some"), v.psi_cpu_some_avg10),
        (("io", "some"), v.psi_io_some_avg10),
        (("io", "full"), v.psi_io_full_avg10),
        (("memory", "some"), v.psi_memory_some_avg10),
        (("memory", "full"), v.psi_memory_full_avg10),
    ]
