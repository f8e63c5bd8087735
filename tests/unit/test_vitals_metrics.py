"""The monitor's metrics of node vitals: units in the names, bounded labels, a figure a node
cannot give absent rather than 0."""

from __future__ import annotations

from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from rocmtui.core.hostmonitor.jobsview import JobsView
from rocmtui.core.hostmonitor.metrics import MetricsBook
from rocmtui.core.vitals.nodevitals import SOURCE_ENGINE, SOURCE_SSH, NodeVitals
from tests.support.exposition import FIGURES, samples, value
from tests.support.snapshots import recorded


def _exposition() -> bytes:
    snap = recorded.fleet()
    strix, think, gaming = snap.nodes
    busy = NodeVitals(
        node="snoc-think",
        source=SOURCE_SSH,
        taken_at=recorded.NOW - 1,
        cpu_count=32,
        host_cpu_percent=1580.0,
        engine_cpu_percent=1490.0,
        mem_used_percent=71.0,
        data_root_free_bytes=38 << 30,
        data_root_total_bytes=400 << 30,
        psi_io_some_avg10=12.5,
        oom_kills_total=3,
    )
    bare = NodeVitals(
        node="snoc-gaming", source=SOURCE_ENGINE, taken_at=recorded.NOW, build_cache_bytes=7
    )
    snap = replace(snap, nodes=(strix, replace(think, vitals=busy), replace(gaming, vitals=bare)))
    book = MetricsBook(recorded.config(), "test")
    book.update(snap, JobsView(read_at=recorded.NOW), FIGURES)
    return book.exposition(0, now=recorded.NOW)


def test_vitals_become_gauges_in_their_units() -> None:
    found = samples(_exposition())
    assert value(found, "rocmtui_node_host_cpu_cores", node="snoc-think") == 15.8
    assert value(found, "rocmtui_node_engine_cpu_cores", node="snoc-think") == 14.9
    assert value(found, "rocmtui_node_memory_used_ratio", node="snoc-think") == 0.71
    assert value(found, "rocmtui_node_data_root_free_bytes", node="snoc-think") == 38 << 30
    assert value(found, "rocmtui_node_pressure_ratio", node="snoc-think", resource="io",
                 kind="some") == 0.125  # fmt: skip
    assert value(found, "rocmtui_node_oom_kills_total", node="snoc-think") == 3.0
    assert value(found, "rocmtui_node_vitals_source", node="snoc-think", source="ssh") == 1.0
    assert value(found, "rocmtui_node_vitals_source", node="snoc-think", source="engine") == 0
    # the TLS node gives its build cache only: no CPU or disk sample, not a 0
    assert value(found, "rocmtui_node_build_cache_bytes", node="snoc-gaming") == 7.0
    assert value(found, "rocmtui_node_data_root_free_bytes", node="snoc-gaming") is None
    assert value(found, "rocmtui_node_host_cpu_cores", node="snoc-gaming") is None
    # a node with no vitals yet has none of these samples
    assert not [k for k in found if k[0].startswith("rocmtui_node_vitals") and
                ("node", "snoc-strix") in k[1]]  # fmt: skip


def test_vitals_labels_are_bounded_and_names_end_in_units() -> None:
    for family in text_string_to_metric_families(_exposition().decode()):
        if not family.name.startswith("rocmtui_node_") or family.name in (
            "rocmtui_node_state", "rocmtui_node_info", "rocmtui_node_engine_up",
        ):  # fmt: skip
            continue
        for s in family.samples:
            assert set(s.labels) <= {"node", "source", "resource", "kind"}, s
        assert family.name.endswith(
            ("_bytes", "_cores", "_ratio", "_seconds", "_total", "_second", "_processes",
             "_cpus", "_load1", "_source", "_oom_kills")
        ), family.name  # fmt: skip
