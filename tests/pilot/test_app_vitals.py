"""The nodes panel's Host column from each node's vitals (rocmtui.core.vitals), on the
recorded fleet: one node per source, and a node whose source hung showing its figures' age."""

from __future__ import annotations

import time

import pytest
from msgspec.structs import replace

from rocmtui.console.messages import FleetUpdated
from rocmtui.core.vitals.nodevitals import (
    SOURCE_ENGINE,
    SOURCE_NODE_EXPORTER,
    SOURCE_SSH,
    NodeVitals,
)
from tests.support.blackbox import cell, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app

G = 1 << 30


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def _with_vitals(stale: bool = False) -> object:
    snap = recorded.fleet()
    strix, think, gaming = snap.nodes
    busy = NodeVitals(
        node="snoc-think",
        source=SOURCE_SSH,
        taken_at=think.probed_at - (60 if stale else 0),
        cpu_count=32,
        host_cpu_percent=1580.4,
        engine_cpu_percent=1490.0,
        mem_used_percent=71.2,
        data_root_free_bytes=38 * G,
        data_root_total_bytes=100 * G,
        psi_io_some_avg10=12.0,
        error="ssh vitals: no complete answer in 3.0s (link hung?)" if stale else None,
    )
    full = NodeVitals(
        node="snoc-strix",
        source=SOURCE_NODE_EXPORTER,
        taken_at=strix.probed_at,
        cpu_count=16,
        host_cpu_percent=15.0,
        mem_used_percent=95.0,
        data_root_free_bytes=2 * G,
        data_root_total_bytes=400 * G,
    )
    engine_only = NodeVitals(
        node="snoc-gaming",
        source=SOURCE_ENGINE,
        taken_at=gaming.probed_at,
        build_cache_bytes=12 * G,
        missing=("host cpu, memory, pressure, disk: an engine over TLS tells only ...",),
    )
    return replace(
        snap,
        nodes=(
            replace(strix, vitals=full),
            replace(think, vitals=busy),
            replace(gaming, vitals=engine_only),
        ),
    )


async def test_the_host_column_shows_every_node_s_vitals() -> None:
    app = recorded_app()
    async with app.run_test(size=(240, 40)) as pilot:
        await feed(app, pilot)
        post_feed(app, FleetUpdated(_with_vitals()))  # type: ignore[arg-type]
        shown = await until_text(pilot, r"cpu 1580%")
        assert cell(shown, "Nodes", "snoc-think", "Host") == (
            "cpu 1580% eng 1490% mem 71% 38.0G free io 12%"
        )
        # 99.5% of the data root used: loud
        assert cell(shown, "Nodes", "snoc-strix", "Host") == "cpu 15% mem 95% 2.0G free ‼"
        # a TLS node with no node_exporter: what its engine API tells
        assert cell(shown, "Nodes", "snoc-gaming", "Host") == "cache 12.0G"


async def test_vitals_from_a_hung_source_show_their_age() -> None:
    app = recorded_app()
    async with app.run_test(size=(240, 40)) as pilot:
        await feed(app, pilot)
        post_feed(app, FleetUpdated(_with_vitals(stale=True)))  # type: ignore[arg-type]
        shown = await until_text(pilot, r"cpu 1580%")
        assert cell(shown, "Nodes", "snoc-think", "Host").endswith("io 12% (1m00s old)")
