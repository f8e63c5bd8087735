"""A bake group built by one job, drawn one bar per target (`core.runs.targetspans`,
`run.per_target`, the chart and `runs show --json`): spans from recorded BuildKit steps, kept
in a real job store (SQLite in a temporary folder), clocks that disagree. No process but one
`history logs` that cannot start."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from msgspec.structs import replace

from rocmtui.cli.runs_text import render_chart
from rocmtui.core.costbook.cost import Condition
from rocmtui.core.history.stepgraph import Step, StepCollector
from rocmtui.core.history.stepstore import KeptSteps, save_steps
from rocmtui.core.jobs.bakefiles import target_refs_from_metadata
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.book import RunBook
from rocmtui.core.runs.chart import chart, compare
from rocmtui.core.runs.run import Run, RunBuild, TargetSpan, per_target
from rocmtui.core.runs.scale import text_row, tracks
from rocmtui.core.runs.targetspans import (
    group_targets,
    keep_target_spans,
    load_spans,
    save_spans,
    span_of,
)
from rocmtui.core.runs.views import RunView
from rocmtui.core.states import JobState
from tests.support.jobs import job_record

DATA = Path(__file__).parent.parent / "data" / "buildkit"
T0 = 1_800_000_000.0


def recorded_steps_by_target() -> dict[str, list[Step]]:
    """The recorded two-target bake (alpha, beta) split by its vertices' `[target ...]`
    prefix: what each target's own BuildKit record holds."""
    collector = StepCollector()
    collector.feed((DATA / "multi_rawjson.log").read_bytes())
    out: dict[str, list[Step]] = {}
    for step in collector.steps():
        head = step.name[1:].split("]", 1)[0].split(" ", 1)[0]
        if step.name.startswith("[") and head in ("alpha", "beta"):
            out.setdefault(head, []).append(step)
    return out


def test_a_targets_span_runs_from_its_first_step_to_its_last() -> None:
    steps = recorded_steps_by_target()
    alpha, beta = span_of("alpha", steps["alpha"]), span_of("beta", steps["beta"])
    assert alpha is not None and beta is not None
    assert alpha.started == min(s.started for s in steps["alpha"] if s.started)
    assert alpha.ended == max(s.completed for s in steps["alpha"] if s.completed)
    assert beta.ended is not None and alpha.ended is not None and beta.ended < alpha.ended
    assert not alpha.failed and not beta.failed
    # Dockerfile steps, no FROM: alpha's three RUNs ran, beta's RUN, COPY, RUN were cached
    assert (alpha.steps, alpha.cached) == (3, 0) and (beta.steps, beta.cached) == (3, 3)


def test_each_target_has_its_own_cache_condition() -> None:
    frozen = TargetSpan("demo-base", T0, T0 + 1, steps=3, cached=3)
    ran = TargetSpan("demo-vllm", T0, T0 + 90, steps=4, cached=0)
    assert frozen.condition(Condition.COLD) == Condition.FROZEN
    assert ran.condition(Condition.COLD) == Condition.COLD  # the job's sccache evidence
    assert ran.condition(Condition.HOT) == Condition.UNKNOWN  # its own steps say otherwise
    assert TargetSpan("t", T0, T0).condition(Condition.WARM) == Condition.WARM  # no count
    bars = per_target(replace(group((frozen, ran)), condition=Condition.COLD))
    assert [(b.target, b.condition) for b in bars] == [
        ("demo-base", Condition.FROZEN),
        ("demo-vllm", Condition.COLD),
    ]


def test_a_step_that_never_ended_or_failed_is_said() -> None:
    cut = [Step("a", "x", 10.0, 20.0), Step("b", "y", 15.0, None)]
    assert span_of("t", cut) == TargetSpan("t", 10.0, None, False)
    broken = [Step("a", "x", 10.0, 12.0, error="exit 3")]
    assert span_of("t", broken) == TargetSpan("t", 10.0, 12.0, True)
    assert span_of("t", [Step("a", "x")]) is None  # no time at all: no span


def group(spans: tuple[TargetSpan, ...], state: str = "succeeded") -> RunBuild:
    return RunBuild("j1", "a", "all", "gfx1201", T0, T0 + 100, state, targets=spans)


SPANS = (
    TargetSpan("demo-base", T0 + 2, T0 + 30),
    TargetSpan("demo-pytorch", T0 + 2, T0 + 70),
    TargetSpan("demo-vllm", T0 + 3, T0 + 98),
)


def test_a_group_build_is_one_bar_per_target_with_its_own_times() -> None:
    r = Run("run-1", "all", T0, "rocmtui", "me", ("a",), builds=(group(SPANS),))
    drawn = chart(r, T0 + 500)
    bars = drawn.lanes[0].bars
    assert [(b.build.target, b.start, b.end) for b in bars] == [
        ("demo-base", 0.0, 28.0),
        ("demo-pytorch", 0.0, 68.0),
        ("demo-vllm", 1.0, 96.0),
    ]
    assert drawn.wall == 96.0 and drawn.lanes[0].busy == 96.0
    assert drawn.lanes[0].note is None  # the clocks agree: nothing to say
    view = msgspec.to_builtins(RunView.of(drawn, T0 + 500, None, []))
    shown = [(b["target"], b["offset"], b["duration"]) for b in view["lanes"][0]["builds"]]
    assert shown == [
        ("demo-base", 0.0, 28.0),
        ("demo-pytorch", 0.0, 68.0),
        ("demo-vllm", 1.0, 95.0),
    ]


def test_a_build_without_spans_or_still_running_stays_one_bar() -> None:
    running = RunBuild("j1", "a", "all", "gfx1201", T0, None, "running", targets=SPANS)
    assert per_target(running) == [running]
    alone = RunBuild("j2", "a", "demo-vllm", "gfx1201", T0, T0 + 9, "succeeded")
    assert per_target(alone) == [alone]


def test_a_failed_group_marks_the_target_that_failed() -> None:
    spans = (TargetSpan("demo-base", T0 + 1, T0 + 20), TargetSpan("demo-vllm", T0 + 1, None, True))
    bars = per_target(group(spans, state="failed"))
    assert [(b.target, b.state, b.ended_at) for b in bars] == [
        ("demo-base", "succeeded", T0 + 20),
        ("demo-vllm", "failed", T0 + 100),  # it never ended: drawn to the job's end
    ]
    lane = chart(
        Run("run-1", "all", T0, "rocmtui", "me", ("a",), builds=(group(spans, "failed"),)), T0 + 200
    ).lanes[0]
    assert text_row(lane, 100.0, 10)[0] in "xF?HWC"


def test_a_node_whose_buildkit_clock_disagrees_is_shifted_and_said() -> None:
    behind = tuple(
        TargetSpan(s.target, s.started - 3600, None if s.ended is None else s.ended - 3600)
        for s in SPANS
    )
    r = Run("run-1", "all", T0, "rocmtui", "me", ("a",), builds=(group(behind),))
    lane = chart(r, T0 + 500).lanes[0]
    assert [(b.build.target, b.start, b.end) for b in lane.bars] == [
        ("demo-base", 0.0, 28.0),
        ("demo-pytorch", 0.0, 68.0),
        ("demo-vllm", 1.0, 96.0),
    ]
    assert lane.note is not None and "about 59m58s behind" in lane.note


def test_compare_matches_targets_of_two_group_runs() -> None:
    before = Run("run-1", "all", T0, "rocmtui", "me", ("a",), builds=(group(SPANS),))
    slower = (*SPANS[:2], TargetSpan("demo-vllm", T0 + 3, T0 + 160))
    after = Run("run-2", "all", T0, "rocmtui", "me", ("a",),
                builds=(RunBuild("j2", "a", "all", "gfx1201", T0, T0 + 170, "succeeded",
                                 targets=slower),))  # fmt: skip
    changes = compare(before, after, T0 + 500)
    assert changes[0].target == "demo-vllm" and changes[0].slower
    assert {c.target for c in changes if not c.slower} == {"demo-base", "demo-pytorch"}


def _finished(store: JobStore) -> JobRecord:
    def make(job_id: str, job_dir: Path) -> JobRecord:
        return job_record(job_id, job_dir, target="all", node="a", started_at=T0,
                          ended_at=T0 + 100, state=JobState.SUCCEEDED)  # fmt: skip

    return store.create(make)


def test_the_run_book_reads_kept_spans_with_the_builds(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = _finished(store)
    save_spans(store, job.id, SPANS)
    book = RunBook(store)
    book.create(Run("run-20271215-0800-ab12", "all", T0, "rocmtui", "me", ("a",)))
    book.add_jobs("run-20271215-0800-ab12", [(job.id, "a")])
    got = book.get("ab12", now=T0 + 200)
    assert got.builds[0].targets == SPANS
    assert [b.target for b in got.bars()] == ["demo-base", "demo-pytorch", "demo-vllm"]
    save_spans(store, job.id, SPANS[:2])  # kept again: replaced, not added to
    assert len(book.get("ab12", now=T0 + 200).builds[0].targets) == 2


def test_bakes_metadata_names_each_targets_record(tmp_path: Path) -> None:
    meta = tmp_path / "metadata.json"
    meta.write_text(json.dumps({
        "demo-base": {"buildx.build.ref": "default/default/aaa"},
        "demo-vllm": {"buildx.build.ref": "default/default/bbb", "containerimage.digest": "x"},
        "buildx.build.warnings": [],
    }))  # fmt: skip
    assert target_refs_from_metadata(meta) == [("demo-base", "aaa"), ("demo-vllm", "bbb")]
    assert target_refs_from_metadata(tmp_path / "absent.json") == []


def test_records_that_cannot_be_read_are_said_never_raised(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = _finished(store)
    missing = str(tmp_path / "no-such-buildx")
    pairs = [("demo-base", "aaa"), ("demo-vllm", "bbb")]
    said = keep_target_spans(store, job.id, None, pairs, [missing], {"PATH": "/nonexistent"}, 5.0)
    assert said is not None and said.startswith("target spans not read for 2 of 2: demo-base")
    assert keep_target_spans(store, job.id, None, [("demo-vllm", "bbb")], [missing], {}) is None


def test_runs_show_text_draws_a_row_per_target(capsys: pytest.CaptureFixture[str]) -> None:
    r = Run("run-1", "all", T0, "rocmtui", "me", ("a",), builds=(group(SPANS),))
    drawn = chart(r, T0 + 500)
    assert [len(t.bars) for t in tracks(drawn.lanes[0])] == [1, 1, 1]
    render_chart(drawn, None, T0 + 500)
    out = capsys.readouterr().out.splitlines()
    rows = [ln for ln in out if "|" in ln]
    assert [ln.rsplit(" ", 1)[-1] for ln in rows] == ["demo-base", "demo-pytorch", "demo-vllm"]
    assert rows[0].startswith("  a |") and "busy 1m36s" in rows[0]
    drawn_cells = [ln.split("|")[1].count("?") for ln in rows]  # its condition is unknown
    assert drawn_cells == [round(28 / 96 * 60), round(68 / 96 * 60), 60]
    assert sum(1 for ln in out if ln.startswith("  j1  a  demo-")) == 3  # a line per target


def test_builds_one_after_another_stay_on_one_row() -> None:
    after = RunBuild("j2", "a", "demo-vllm", "gfx1201", T0 + 100, T0 + 150, "succeeded")
    first = RunBuild("j1", "a", "demo-base", "gfx1201", T0, T0 + 100, "succeeded")
    r = Run("run-1", "all", T0, "rocmtui", "me", ("a",), builds=(first, after))
    lane = chart(r, T0 + 500).lanes[0]
    assert tracks(lane) == [lane]


def test_a_group_still_running_is_one_bar_and_its_lane_says_so(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    earlier = _finished(store)  # target "all", built as three targets
    save_spans(store, earlier.id, SPANS)
    with store.connect() as conn:
        assert group_targets(conn) == {"all"}
    running = RunBuild("j9", "a", "all", "gfx1201", T0, None, "running", group=True)
    lane = chart(Run("run-1", "all", T0, "rocmtui", "me", ("a",), builds=(running,)), T0 + 50)
    (only,) = lane.lanes
    assert len(only.bars) == 1 and only.bars[0].running
    assert only.note == "a group still running: one bar until it ends, then one per target"


def test_every_targets_record_is_read_within_one_deadline(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = _finished(store)
    steps = recorded_steps_by_target()
    save_steps(store, job.id, KeptSteps(steps["alpha"], "rawjson"))  # the main record's, kept
    missing = str(tmp_path / "no-such-buildx")
    said = keep_target_spans(store, job.id, "aaa", [("alpha", "aaa"), ("beta", "bbb")],
                             [missing], {}, 0.0)  # fmt: skip
    assert said == ("target spans not read for 1 of 2: beta: no time left of 0 s for every target")
    with store.connect() as conn:
        (kept,) = load_spans(conn, [job.id])[job.id]
    assert kept == span_of("alpha", steps["alpha"])
