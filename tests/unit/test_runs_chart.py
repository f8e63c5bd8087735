"""A run drawn (`core.runs.chart`, `core.runs.scale`): lanes, bars, busy and idle time, the
chain, clamped clocks, nodes gone or down, compare. Recorded runs, no process."""

from __future__ import annotations

from rocmtui.core.costbook.cost import Condition
from rocmtui.core.costbook.views import plain
from rocmtui.core.runs.chart import chart, compare, compare_line
from rocmtui.core.runs.run import Run, RunBuild
from rocmtui.core.runs.scale import text_row
from rocmtui.core.runs.views import RunView

T0 = 1_800_000_000.0


def b(job: str, node: str, start: float, end: float | None, state: str = "succeeded",
      cond: Condition = Condition.HOT, target: str = "demo-vllm") -> RunBuild:  # fmt: skip
    return RunBuild(
        job, node, target, "gfx1201", T0 + start, None if end is None else T0 + end, state, cond
    )


def run(*builds: RunBuild, nodes: tuple[str, ...] = ("a", "b", "c"), **kw: object) -> Run:
    return Run("run-1", "all", T0, "rocmtui", "me@here", nodes, builds=builds, **kw)  # type: ignore[arg-type]


def test_lanes_busy_idle_wall_and_the_chain() -> None:
    r = run(
        b("j1", "a", 0, 60),
        b("j2", "a", 62, 200),  # follows j1 within the gap: one chain
        b("j3", "b", 0, 100, cond=Condition.COLD),
        b("j4", "b", 20, 120),  # overlaps j3: busy counts the union
    )
    c = chart(r, T0 + 500)
    assert c.wall == 200
    lanes = {ln.node: ln for ln in c.lanes}
    assert [ln.node for ln in c.lanes] == ["a", "b", "c"]
    assert lanes["a"].busy == 198 and lanes["a"].idle == 2
    assert lanes["b"].busy == 120 and lanes["b"].idle == 80
    assert lanes["c"].bars == () and lanes["c"].note == "no build recorded"
    assert c.chain == ("j1", "j2")
    assert not c.running


def test_a_running_build_grows_until_now() -> None:
    r = run(b("j1", "a", 0, None, state="running"), b("j2", "b", 0, 30))
    early, later = chart(r, T0 + 40), chart(r, T0 + 90)
    assert early.running and early.wall == 40 and later.wall == 90
    bar = later.lanes[0].bars[0]
    assert bar.running and bar.length == 90
    assert text_row(later.lanes[0], later.wall, 10) == ">" * 10
    assert text_row(later.lanes[1], later.wall, 9) == "HHH......"


def test_failed_stalled_and_conditions_are_marked() -> None:
    r = run(
        b("j1", "a", 0, 10, state="failed"),
        b("j2", "b", 0, 10, state="stalled"),
        b("j3", "c", 0, 10, cond=Condition.FROZEN),
    )
    c = chart(r, T0 + 10)
    assert [text_row(ln, c.wall, 2) for ln in c.lanes] == ["xx", "!!", "FF"]


def test_a_node_that_did_not_start_says_why_and_a_removed_node_says_so() -> None:
    r = run(b("j1", "a", 0, 10), notes={"b": "down (connect: refused)"})
    c = chart(r, T0 + 10, fleet_nodes=["a", "b"])
    lanes = {ln.node: ln for ln in c.lanes}
    assert lanes["b"].note == "did not start: down (connect: refused)"
    assert lanes["c"].note == "no build recorded; no longer in the fleet file"


def test_clocks_that_disagree_are_clamped_and_said() -> None:
    r = run(
        b("j1", "a", 0, 50),
        b("j2", "b", 900, 950),  # its node's clock runs 15 minutes ahead of now
        b("j3", "c", 40, 20),  # ends before it starts
    )
    c = chart(r, T0 + 60)
    lanes = {ln.node: ln for ln in c.lanes}
    assert lanes["b"].bars[0].clamped and lanes["b"].bars[0].start <= c.wall
    assert lanes["c"].bars[0].clamped and lanes["c"].bars[0].length == 0
    for node in ("b", "c"):
        assert "clock disagrees" in (lanes[node].note or "")
    assert lanes["a"].note is None


def test_builds_lost_from_the_store_are_counted() -> None:
    c = chart(run(b("j1", "a", 0, 10), missing_jobs=3), T0 + 10)
    assert c.notes == ("3 builds of this run no longer in the job store",)
    assert plain(RunView.of(c, T0 + 10, None, []))["notes"] == list(c.notes)


def test_compare_names_the_build_made_slower() -> None:
    before = run(b("j1", "a", 0, 60), b("j2", "b", 0, 100, target="demo-pytorch"))
    after = run(b("k1", "a", 0, 61), b("k2", "b", 0, 160, target="demo-pytorch"))
    changes = compare(before, after, T0 + 500)
    assert changes[0].node == "b" and changes[0].delta == 60 and changes[0].slower
    assert not changes[1].slower  # one second: noise
    assert compare_line(changes) == (
        "slower: demo-pytorch gfx1201 on b: 1m40s -> 2m40s (+1m00s, slower)"
    )
    assert compare_line(compare(before, before, T0 + 500)) == "no build got slower"


def test_a_run_of_200_builds_draws() -> None:
    builds = [b(f"j{i}", "abc"[i % 3], i * 3, i * 3 + 30) for i in range(200)]
    c = chart(run(*builds), T0 + 2000)
    assert sum(len(ln.bars) for ln in c.lanes) == 200
    assert c.wall == 199 * 3 + 30
    assert all(len(text_row(ln, c.wall, 60)) == 60 for ln in c.lanes)


def test_a_run_s_state_word() -> None:
    assert run(b("j1", "a", 0, None, state="running")).state() == "running"
    assert run().state() == "not started"
    assert run(b("j1", "a", 0, 5)).state() == "done"
    assert run(b("j1", "a", 0, 5, state="lost")).state() == "failed"
    assert run(b("j1", "a", 0, 5), notes={"b": "down"}).state() == "failed"
