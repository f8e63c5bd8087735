"""The JSON shapes of fleet runs and placement, held byte for byte (issue 39): `rocmtui runs
show ID --json` (`RunView`), `rocmtui runs --json` (`RunSummaryView`), `rocmtui run --json`
(`RunStartView`) and `rocmtui bake --node auto --json`'s `placement` (`PlacementView`), from
recorded data with every field set somewhere and every optional one left out somewhere."""

from __future__ import annotations

from pathlib import Path

from msgspec import json
from msgspec.structs import replace

from rocmtui.core.costbook.cost import Condition, CostPoint
from rocmtui.core.placement.choose import place
from rocmtui.core.placement.facts import NodeFacts
from rocmtui.core.placement.views import PlacementView
from rocmtui.core.runs.chart import chart, compare
from rocmtui.core.runs.launch import NodeStart
from rocmtui.core.runs.run import Run, RunBuild, TargetSpan
from rocmtui.core.runs.views import RunStartView, RunSummaryView, RunView
from tests.support.jobs import job_record
from tests.support.runs import DAY, T0, recorded_run

DATA = Path(__file__).resolve().parents[1] / "data" / "json_shapes"
NOW = T0 + DAY + 5400.0  # run 1 in flight: some builds running


def printed(view: object) -> str:
    return json.format(json.encode(view), indent=2).decode() + "\n"


def sample_runs() -> str:
    before = recorded_run(0, builds=6)
    run = replace(
        recorded_run(1, builds=6, running_at=NOW),
        nodes=("snoc-strix", "snoc-think", "snoc-gaming", "snoc-old"),
        notes={"snoc-old": "down (connect: refused)"},
        overrides={"DEMO_SLEEP": "1"},
        missing_jobs=1,
    )
    fleet = ["snoc-strix", "snoc-think", "snoc-gaming"]
    shown = RunView.of(chart(run, NOW, fleet), NOW, before, compare(before, run, NOW))
    alone = RunView.of(chart(before, NOW, fleet), NOW, None, [])
    listed = [RunSummaryView.of(chart(r, NOW, fleet)) for r in (run, before)]
    started = RunStartView.of(
        run,
        [
            NodeStart("snoc-think", "gfx1201", job_record("20261202-0200-0001")),
            NodeStart("snoc-old", "", None, "down (connect: refused)"),
        ],
    )
    spans = (
        TargetSpan("demo-base", T0 + 2, T0 + 300, steps=3, cached=3),
        TargetSpan("demo-vllm", T0 + 3, T0 + 900, failed=True, steps=4),
    )
    built = RunBuild("20261201-0000-0009", "snoc-think", "all", "gfx1201", T0, T0 + 910,
                     "failed", Condition.COLD, targets=spans)  # fmt: skip
    group = Run("run-20261201-0000-ab12", "all", T0, "rocmtui", "me", ("snoc-think",),
                builds=(built,))  # fmt: skip
    grouped = RunView.of(chart(group, NOW, fleet), NOW, None, [])
    return "".join(printed(v) for v in (shown, alone, listed, started, grouped))


def sample_placement() -> str:
    hot = (CostPoint(NOW - 7200, 720.0, Condition.HOT, True),)
    facts = [
        NodeFacts("snoc-strix", "gfx1151", "ok", accepts_arch=False, load1=1.5, cpu_count=32,
                  free_bytes=700 * 1024**3, total_bytes=900 * 1024**3, vitals_from="local"),
        NodeFacts("snoc-think", "gfx1201", "ok", points=hot, running=("demo-vllm gfx1201 (x)",)),
        NodeFacts("snoc-gaming", "gfx1201", "down", state_reason="connect: refused"),
    ]  # fmt: skip
    kept = place("demo-pytorch", "gfx1201", facts, NOW, original="snoc-think")
    fresh = place("demo-pytorch", "gfx1201", facts[2:], NOW)
    return printed(PlacementView.of(kept)) + printed(PlacementView.of(fresh))


def test_runs_print_byte_for_byte_what_they_did() -> None:
    assert sample_runs() == (DATA / "runs.json").read_text(encoding="utf-8")


def test_a_placement_prints_byte_for_byte_what_it_did() -> None:
    assert sample_placement() == (DATA / "placement.json").read_text(encoding="utf-8")
