"""The nodes panel's Host column from each node's vitals (rocmtui.core.vitals), on the
recorded fleet: one node per source, and a node whose source hung showing its figures' age."""

from __future__ import annotations

import time

import pytest
from msgspec.structs import replace

from rocmtui.console.backend.views import JobView
from rocmtui.console.messages import FleetUpdated, JobsUpdated
from rocmtui.core.states import JobState
from rocmtui.core.vitals.nodevitals import (
    SOURCE_ENGINE,
    SOURCE_NODE_EXPORTER,
    SOURCE_SSH,
    NodeVitals,
)
from tests.support.blackbox import cell, panel, row, until_text
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


OLD_NOTE = (
    "builds started elsewhere are not visible here: dockerd 20.10.24+dfsg1, BuildKit v0.8 "
    "(needs dockerd 24+ for build history); only builds this console starts are followed"
)
VERDICT = "idle: 0% CPU for 16m40s of silence"


def _old_engine_and_a_stall() -> tuple[object, tuple[JobView, ...]]:
    """The vitals fleet with the 20.10 node's long history note, and the pytorch build on
    snoc-think stalled with its verdict."""
    snap = _with_vitals()
    strix, think, gaming = snap.nodes  # type: ignore[attr-defined]
    fleet = replace(snap, nodes=(strix, think, replace(gaming, history_note=OLD_NOTE)))
    pytorch, *rest = recorded.jobs(stalled=True)
    pytorch = recorded.changed(
        pytorch, state=JobState.STALLED, verdict="idle", verdict_line=VERDICT, evidence=VERDICT
    )
    return fleet, (pytorch, *rest)


async def test_host_vitals_fit_120_columns_beside_a_long_idle_note() -> None:
    """At 120 columns the Host column is on screen for every node; the old engine's note
    costs no column; the stalled job still says what runs (the widest vitals leave no room
    for its verdict here: the Jobs panel under it has the verdict's start)."""
    app = recorded_app()
    fleet, jobs = _old_engine_and_a_stall()
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot, with_jobs=False)
        post_feed(app, FleetUpdated(fleet))  # type: ignore[arg-type]
        post_feed(app, JobsUpdated(jobs))
        shown = await until_text(pilot, r"‼ stalled +snoc-think")
        shown = await until_text(pilot, r"idle · outside builds not")
        nodes = panel(shown, "Nodes")
        assert nodes[0].split() == ["State", "Node", "Output", "Job", "Host"], shown
        assert nodes[1].split()[:3] == ["‼", "stalled", "snoc-think"], shown  # first and loud
        assert cell(shown, "Nodes", "snoc-think", "Host") == (
            "cpu 1580% eng 1490% mem 71% 38.0G free io 12%"
        )
        assert cell(shown, "Nodes", "snoc-strix", "Host") == "cpu 15% mem 95% 2.0G free ‼"
        assert cell(shown, "Nodes", "snoc-gaming", "Host") == "cache 12.0G"
        assert cell(shown, "Nodes", "snoc-gaming", "Job").startswith("idle · outside builds not")
        job = cell(shown, "Nodes", "snoc-think", "Job")
        assert job.startswith("demo-pytorch gfx1201 [12345/23"), shown
        assert "idle: 0% CPU" in row(shown, "Jobs", "demo-pytorch")
        assert job.endswith("…"), shown  # cut, and says so
        assert cell(shown, "Nodes", "snoc-think", "Output") == "silent 16m40s"
        assert all(len(line) <= 120 for line in nodes)


async def test_at_80_columns_state_node_silence_and_job_stay() -> None:
    """At 80 columns the stall is first and loud with its silence and what runs there; the
    vitals and versions give way, no column is cut off at the screen's edge."""
    app = recorded_app()
    fleet, jobs = _old_engine_and_a_stall()
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, pilot, with_jobs=False)
        post_feed(app, FleetUpdated(fleet))  # type: ignore[arg-type]
        post_feed(app, JobsUpdated(jobs))
        shown = await until_text(pilot, r"‼ stalled +snoc-think")
        shown = await until_text(pilot, r"outside builds not")
        nodes = panel(shown, "Nodes")
        assert nodes[0].split() == ["State", "Node", "Output", "Job"], shown
        assert nodes[1].split()[:3] == ["‼", "stalled", "snoc-think"], shown
        assert cell(shown, "Nodes", "snoc-think", "Output") == "silent 16m40s"
        job = cell(shown, "Nodes", "snoc-think", "Job")
        assert job.startswith("demo-pytorch gfx1201 [12345/23456]"), shown
        assert cell(shown, "Nodes", "snoc-gaming", "Job").startswith("idle · outside builds")
