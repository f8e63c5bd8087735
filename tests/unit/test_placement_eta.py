"""The ETA rules (`core.placement.eta`) on hand-written builds: which rule answers, with what
number, and that `eta_from` names it; and what `gather` feeds them from a job store."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from rocmtui.core.costbook.book import CONDITION_SQL, CostBook, CostRow
from rocmtui.core.costbook.cost import BuildEvidence, Condition, CostPoint
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.placement.choose import fleet_rebuild, place, predict
from rocmtui.core.placement.eta import RECENT, Ratio, eta_for, learn_priors, speed_factor
from rocmtui.core.placement.facts import NodeFacts
from rocmtui.core.placement.gather import (
    condition_priors,
    cost_points,
    just_ended,
    ran_every_step,
)
from rocmtui.core.states import JobState
from tests.support.jobs import job_record

NOW = 1_800_000_000.0
H = 3600.0
F, HOT, W, C = Condition.FROZEN, Condition.HOT, Condition.WARM, Condition.COLD


def pt(ago_h: float, seconds: float, cond: Condition, ok: bool = True) -> CostPoint:
    return CostPoint(NOW - ago_h * H, seconds, cond, ok)


def test_the_newest_builds_make_the_median_not_all_of_them() -> None:
    # durations drifted down: twenty old builds at 100 s, then RECENT at 60 s
    old = [pt(100 - i, 100.0, HOT) for i in range(20)]
    new = [pt(10 - i, 60.0, HOT) for i in range(RECENT)]
    eta, said = eta_for(HOT, [*old, *new], [])
    assert eta == 60.0
    assert said == f"median of the last {RECENT} of {20 + RECENT} hot builds here"
    few, said_few = eta_for(HOT, [pt(2, 30.0, HOT), pt(1, 40.0, HOT)], [])
    assert few == 35.0 and said_few == "median of 2 hot builds here"


def test_failed_builds_are_no_time_of_any_condition() -> None:
    eta, said = eta_for(HOT, [pt(2, 30.0, HOT), pt(1, 3.0, HOT, ok=False)], [])
    assert eta == 30.0 and said == "median of 1 hot build here"


def test_a_slow_node_borrowing_the_fleets_time_is_scaled_by_its_speed() -> None:
    # this node took twice the others' time on the cold and warm builds both made
    here = [pt(50, 200.0, C), pt(40, 100.0, W)]
    others = [pt(60, 100.0, C), pt(45, 50.0, W), pt(2, 10.0, HOT)]
    assert speed_factor(here, others) == (2.0, 2)
    eta, said = eta_for(HOT, here, others)
    assert eta == 20.0
    assert said == "median of 1 hot build on other nodes x2.00 (this node's speed on 2 conditions)"
    # a node with nothing in common with the others takes their time as it is
    bare, bare_said = eta_for(HOT, [], others)
    assert bare == 10.0 and bare_said == "median of 1 hot build on other nodes"


def test_a_condition_never_built_is_the_nearest_one_scaled_by_what_others_show() -> None:
    here = [pt(3, 100.0, W)]
    priors = {(F, W): Ratio(0.1, 4), (F, C): Ratio(0.05, 2)}
    eta, said = eta_for(F, here, [], priors)
    assert eta is not None and abs(eta - 10.0) < 1e-9
    assert said == (
        "no frozen build of it: median of 1 warm build here x0.10 (frozen against warm in 4 "
        "other groups)"
    )
    # no ratio learned for this pair: the slower condition's time, as an upper bound
    bound, bound_said = eta_for(F, here, [], {(F, C): Ratio(0.05, 2)})
    assert bound == 100.0
    assert bound_said == "no frozen build to go by: as warm, at most; median of 1 warm build here"
    # a cold build with only hot ones known: scaled up by the ratio, never "at most"
    up, up_said = eta_for(C, [pt(1, 10.0, HOT)], [], {(C, HOT): Ratio(6.0, 1)})
    assert up == 60.0 and up_said.startswith("no cold build of it: median of 1 hot build here")
    assert eta_for(C, [pt(1, 10.0, HOT)], []) == (None, "no earlier build to go by")


def test_priors_are_the_median_ratio_over_groups_that_built_under_both() -> None:
    a = [pt(5, 100.0, W), pt(4, 10.0, F)]
    b = [pt(5, 200.0, W), pt(4, 40.0, F), pt(3, 400.0, C)]
    c = [pt(5, 50.0, W)]  # one condition only: teaches nothing
    priors = learn_priors([a, b, c])
    f_w = priors[(F, W)]
    assert f_w.groups == 2 and abs(f_w.value - 0.15) < 1e-9  # median of 0.1 and 0.2
    assert priors[(W, F)] == Ratio(7.5, 2)  # median of 10 and 5
    assert priors[(C, W)] == Ratio(2.0, 1)
    assert (F, HOT) not in priors


def test_place_uses_the_priors_and_the_bake_json_says_so() -> None:
    facts = [NodeFacts("a", "gfx1201", "ok", points=(pt(1, 100.0, W),), same_variables=True)]
    chosen = place("t", "gfx1201", facts, NOW, priors={(F, W): Ratio(0.1, 3)})
    e = chosen.estimate("a")
    assert e is not None and e.condition is F
    assert e.eta is not None and abs(e.eta - 10.0) < 1e-9
    assert e.eta_from.startswith("no frozen build of it: ")
    assert chosen.why == "a: frozen, about 10s, idle"


def _row(job: str, target: str, node: str, ago_h: float, seconds: float, cached: int) -> CostRow:
    start = NOW - ago_h * H
    return CostRow(
        job_id=job, target=target, arch="gfx1201", node=node, started_at=start,
        ended_at=start + seconds, duration=seconds, outcome="succeeded", origin="rocmtui",
        started_by="ci@strix",
        evidence=BuildEvidence(steps_total=10, steps_cached=cached, sccache_hits=90,
                               sccache_misses=10),
    )  # fmt: skip


def test_priors_are_learned_from_the_other_targets_in_the_cost_book(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    CostBook(store).add([
        _row("j1", "vllm", "think", 5, 600.0, 0),  # warm
        _row("j2", "vllm", "think", 4, 60.0, 10),  # frozen
        _row("j3", "pytorch", "think", 3, 1000.0, 0),  # the target asked about: left out
        _row("j4", "pytorch", "think", 2, 900.0, 10),
    ])  # fmt: skip
    priors = condition_priors(store, "pytorch", "gfx1201", NOW, 30.0)
    assert priors[(F, W)] == Ratio(0.1, 1)


def test_a_build_that_ended_but_is_not_recorded_yet_counts(tmp_path: Path) -> None:
    def record(job: str, target: str, state: JobState, ended: float | None) -> JobRecord:
        folder = tmp_path / job
        folder.mkdir()
        return JobRecord(
            id=job, target=target, arch="gfx1201", node="think", endpoint="unix:///x", push=False,
            overrides={}, command=(), user="ci", host="strix", bake_file="b.hcl",
            job_dir=str(folder), started_at=NOW - 100, state=state, ended_at=ended,
        )  # fmt: skip

    live = [
        record("a", "pytorch", JobState.SUCCEEDED, NOW - 10),  # ended: its supervisor records
        record("b", "pytorch", JobState.RUNNING, None),
        record("c", "vllm", JobState.SUCCEEDED, NOW - 10),  # another target
    ]
    points: dict[str, list[CostPoint]] = {"think": [pt(5, 80.0, HOT)]}
    just_ended(live, "pytorch", "gfx1201", points)
    assert [(p.duration, p.succeeded) for p in points["think"]] == [(80.0, True), (90.0, True)]


def test_the_sql_condition_is_the_evidence_s_own_classification(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    grid = [
        BuildEvidence(steps_total=t, steps_cached=c, sccache_hits=h, sccache_misses=m)
        for t in (None, 0, 2, 5, 10)
        for c in (None, 0, 1, 3, 5, 10)
        for h, m in ((None, None), (0, 0), (3, 2), (6, 4), (59, 41), (60, 40), (1, 0), (0, 5))
    ]
    base = [_row(f"j{i}", "t", "n", 0, 1.0, 0) for i in range(len(grid))]
    rows = [msgspec.structs.replace(r, evidence=e) for r, e in zip(base, grid, strict=True)]
    CostBook(store).add(rows)
    with store.connect() as conn:
        found = dict(conn.execute(f"SELECT job_id, {CONDITION_SQL} FROM build_costs").fetchall())
    assert {r.job_id: str(r.evidence.classify()) for r in rows} == found


def test_the_newest_builds_of_each_group_and_condition_are_read(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    rows = [_row(f"w{i}", "vllm", "think", 50 - i, 100.0 + i, 0) for i in range(12)]
    rows += [_row("f1", "vllm", "think", 30, 9.0, 10), _row("p1", "pytorch", "think", 1, 5.0, 10)]
    rows += [_row("old", "vllm", "gaming", 24 * 40, 7.0, 10)]  # before the window
    CostBook(store).add(rows)
    got = CostBook(store).newest_by_group(NOW - 30 * 24 * H, RECENT, 1000, ("pytorch", "gfx1201"))
    assert list(got) == [("vllm", "gfx1201", "think")]
    points = got[("vllm", "gfx1201", "think")]
    warm = [p.duration for p in points if p.condition is W]
    assert warm == [107.0, 108.0, 109.0, 110.0, 111.0]  # the newest five, oldest first
    assert [p.duration for p in points if p.condition is F] == [9.0]
    # the limit keeps the newest builds overall
    few = CostBook(store).newest_by_group(NOW - 30 * 24 * H, RECENT, 2)
    assert [p.duration for ps in few.values() for p in ps] == [9.0, 5.0]  # f1, p1


def test_a_node_with_no_quick_rebuild_of_its_own_goes_by_the_fleets_newest() -> None:
    # strix: a build, then a quick rebuild that met cold (a new nonce); think built it once
    strix = (pt(3, 9.0, W), pt(2, 9.0, C))
    think = (pt(1, 12.0, C),)
    assert fleet_rebuild([strix]) is C and fleet_rebuild([think]) is None
    facts = [
        NodeFacts("strix", "gfx1201", "ok", points=strix, same_variables=False),
        NodeFacts("think", "gfx1201", "ok", points=think, same_variables=False),
    ]
    chosen = place("t", "gfx1201", facts, NOW)
    e = chosen.estimate("think")
    assert e is not None and e.condition is C  # not "hot": nothing here says it would be
    assert e.condition_why == "built it 1h00m ago; its last quick rebuild on the fleet was cold"
    assert e.eta == 12.0 and e.eta_from == "median of 1 cold build here"
    assert chosen.chosen == "strix"  # 9 s against think's 12 s
    # its own quick rebuild comes first
    own = (pt(5, 12.0, W), pt(4, 3.0, HOT))
    mine = predict(NodeFacts("think", None, "ok", points=own), own, NOW, elsewhere=C)
    assert mine == (HOT, "built it 4h00m ago")


def test_a_node_timed_by_its_own_builds_wins_a_near_tie_over_a_borrowed_time() -> None:
    facts = [
        NodeFacts("think", "gfx1201", "ok"),  # never built it: the fleet's warm time
        NodeFacts("strix", "gfx1201", "ok", points=(pt(3, 8.6, W), pt(2, 8.7, C))),
    ]
    near = place("t", "gfx1201", facts, NOW)
    think, strix = near.estimate("think"), near.estimate("strix")
    assert think is not None and strix is not None
    assert think.eta == 8.6 and not think.eta_here
    assert strix.eta == 8.7 and strix.eta_here
    assert near.chosen == "strix"
    # far enough apart, the borrowed time wins all the same
    slow = [facts[0], NodeFacts("strix", "gfx1201", "ok", points=(pt(3, 8.6, W), pt(2, 20, C)))]
    assert place("t", "gfx1201", slow, NOW).chosen == "think"


ENGINE_BUG = (
    'failed to prepare extraction snapshot "extract-296202435-S2zM sha256:b7a6c27335": parent '
    "snapshot sha256:f0cf9e3ee647ea6dc7f712458e6f16 does not exist: not found"
)


def test_a_build_the_engine_failed_after_every_step_counts_as_done(tmp_path: Path) -> None:
    """The first hot rebuild on the bench failed unpacking its finished image (BuildKit's
    'parent snapshot does not exist'): the next estimate had no hot build to go by. A failure
    of the build's own command still counts for nothing."""
    store = JobStore(tmp_path)
    start = time.time() - 600

    def job(ago: float, tail: str) -> JobRecord:
        def make(job_id: str, job_dir: Path) -> JobRecord:
            (job_dir / "log").write_text(
                f"#9 [final 3/3] RUN fake-compile vllm\n#9 CACHED\n#11 exporting to image\n{tail}\n"
            )
            return job_record(
                job_id, job_dir, target="demo-vllm", node="strix", started_at=start + ago,
                ended_at=start + ago + 4.0, state=JobState.FAILED, exit_code=1,
                error_step="exporting to image",
            )  # fmt: skip

        return store.create(make)

    bug = job(0, f"#11 ERROR: {ENGINE_BUG}\nERROR: failed to solve: {ENGINE_BUG}")
    own = job(60, "#9 ERROR: process did not complete successfully: exit code: 1")
    assert ran_every_step(store.get(bug.id)) and not ran_every_step(store.get(own.id))
    # builds that succeeded since do not push it out: it stays counted
    CostBook(store).add([_row(f"ok{i}", "demo-vllm", "strix", -i / H, 4.5, 3) for i in range(6)])
    points = cost_points(store, "demo-vllm", "gfx1201", time.time(), 30.0)["strix"]
    assert [(p.duration, p.succeeded) for p in points][:2] == [(4.0, True), (4.0, False)]
    assert len(points) == 8 and all(p.succeeded for p in points[2:])
