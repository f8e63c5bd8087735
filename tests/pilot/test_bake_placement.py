"""The bake dialog's node estimates (issue 39) on the recorded fleet, with a cost history
written into this test's own job store: `r` on pytorch built on snoc-think preselects
snoc-gaming, which built it last (hot), says why, and shows the very estimates `rocmtui bake
--node auto` computes (`core.placement`) for the same snapshot and store."""

from __future__ import annotations

import time

from textual.widgets import Select

from rocmtui.console.dialogs.bake import BakeDialog
from rocmtui.console.dialogs.bake_nodes import NodeEstimates, placement_text
from rocmtui.core.costbook.book import CostBook, CostRow
from rocmtui.core.costbook.cost import BuildEvidence
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.placement.gather import placement_for
from tests.support.blackbox import screen_text, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, recorded_app
from tests.support.snapshots.plans import PLAN

HOT = BuildEvidence(steps_total=10, steps_cached=8)  # 80% cached: hot
COLD = BuildEvidence(steps_total=10, steps_cached=0, sccache_hits=1, sccache_misses=99)


def _row(job: str, node: str, ago: float, minutes: float, evidence: BuildEvidence) -> CostRow:
    start = time.time() - ago  # the store's retention counts from the real clock
    return CostRow(
        job, "demo-pytorch", "gfx1201", node, start, start + minutes * 60, minutes * 60,
        "succeeded", "rocmtui", "ci@snoc-strix", evidence,
    )  # fmt: skip


async def test_r_preselects_the_hot_node_with_why_and_the_core_s_estimates() -> None:
    config = recorded.config()
    store = JobStore.for_config(config)
    CostBook(store).add(
        [
            _row("20251129-1000-0001", "snoc-gaming", 86400, 120, COLD),
            _row("20251130-0930-0002", "snoc-gaming", 7200, 12, HOT),
        ]
    )
    app = recorded_app(plan=PLAN)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down", "r")  # the job: demo-pytorch on snoc-think
        shown = await until_text(pilot, r"finishes first: ")
        dialog = app.screen
        assert isinstance(dialog, BakeDialog)
        assert "finishes first: snoc-gaming: hot, about 12m00s" in shown
        assert "(not snoc-think: snoc-think would take " in shown
        await until_text(pilot, r"node snoc-gaming")
        assert dialog.query_one("#bake-node", Select).value == "snoc-gaming"
        # the same answer the core gives for this snapshot and store
        expected = placement_for(
            config, dialog.data.fleet, "demo-pytorch", "gfx1201", ("gfx950", "gfx1201"),
            original="snoc-think",
        )  # fmt: skip
        widget = dialog.query_one(NodeEstimates)
        assert widget.placement is not None
        assert [e.line() for e in widget.placement.estimates] == [
            e.line() for e in expected.estimates
        ]
        lines = placement_text(expected, False, None).plain.splitlines()
        text = screen_text(app)
        for line in lines:
            assert line[:60] in text


async def test_a_rebuild_with_nothing_known_stays_on_its_node() -> None:
    app = recorded_app(plan=PLAN)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down", "r")
        await until_text(pilot, r"finishes first: kept snoc-think")  # nothing known: stays
        dialog = app.screen
        assert isinstance(dialog, BakeDialog)
        assert dialog.query_one("#bake-node", Select).value == "snoc-think"
        # the other nodes' rows may be drawn a frame later on a busy machine: wait for them
        await until_text(pilot, r"snoc-gaming")
