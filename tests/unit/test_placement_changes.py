"""What a launch changes, and the condition rebuilds that changed the same met
(`core.placement.changes`, `choose.predict`): the history, not the Dockerfile, says which
variables leave the early stages cached."""

from __future__ import annotations

from pathlib import Path

from rocmtui.core.costbook.book import CostBook, CostFilter, CostRow
from rocmtui.core.costbook.cost import BuildEvidence, Condition, CostPoint
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.placement.changes import changed_names, other_arch_rebuilds, variable_changes
from rocmtui.core.placement.choose import place, predict
from rocmtui.core.placement.facts import NodeFacts, Rebuild
from rocmtui.core.states import JobState
from tests.support.jobs import job_record

NOW = 1_800_000_000.0
H = 3600.0
F, HOT, W, C = Condition.FROZEN, Condition.HOT, Condition.WARM, Condition.COLD


def test_the_names_that_changed() -> None:
    assert changed_names({"A": "1", "B": "2"}, {"A": "1", "B": "3", "C": "4"}) == {"B", "C"}
    assert changed_names({"A": "1"}, {"A": "1"}) == frozenset()


def test_a_launch_changing_what_a_past_rebuild_changed_meets_its_condition() -> None:
    points = (CostPoint(NOW - 3 * H, 60.0, W, True), CostPoint(NOW - 2 * H, 10.0, HOT, True))
    history = [
        Rebuild("strix", NOW - 2 * H, frozenset({"VLLM_VERSION"}), HOT),
        Rebuild("think", NOW - 5 * H, frozenset({"PYTORCH_VERSION"}), W),
    ]
    torch = NodeFacts("strix", None, "ok", points=points, same_variables=False,
                      changed=frozenset({"PYTORCH_VERSION"}))  # fmt: skip
    assert predict(torch, points, NOW, HOT, history) == (
        W,
        "built it 2h00m ago; a rebuild changing PYTORCH_VERSION met warm on the fleet",
    )
    vllm = NodeFacts("strix", None, "ok", points=points, same_variables=False,
                     changed=frozenset({"VLLM_VERSION"}))  # fmt: skip
    assert predict(vllm, points, NOW, W, history)[0] is HOT
    # a change no rebuild made: the last quick rebuild here, as before
    other = NodeFacts("strix", None, "ok", points=points, same_variables=False,
                      changed=frozenset({"ROCM_VERSION"}))  # fmt: skip
    assert predict(other, points, NOW, None, history) == (HOT, "built it 2h00m ago")
    # and the ETA follows the condition: the warm median here
    chosen = place("vllm", "gfx1201", [torch], NOW, rebuilds=history)
    e = chosen.estimate("strix")
    assert e is not None and e.condition is W and e.eta == 60.0


def _job(store: JobStore, ago_h: float, cached: int, **overrides: str) -> JobRecord:
    def make(job_id: str, job_dir: Path) -> JobRecord:
        return job_record(
            job_id, job_dir, target="vllm", node="strix", started_at=NOW - ago_h * H,
            ended_at=NOW - ago_h * H + 60, state=JobState.SUCCEEDED, overrides=dict(overrides),
        )  # fmt: skip

    record = store.create(make)
    evidence = BuildEvidence(steps_total=4, steps_cached=cached, sccache_hits=9, sccache_misses=1)
    CostBook(store).add([
        CostRow(job_id=record.id, target="vllm", arch="gfx1201", node="strix",
                started_at=record.started_at, ended_at=record.started_at + 60, duration=60.0,
                outcome="succeeded", origin="rocmtui", started_by="ci", evidence=evidence)
    ])  # fmt: skip
    return record


def test_the_history_keeps_each_quick_rebuild_with_what_it_changed(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    fleet = {"REGISTRY": "zot:8080"}  # the fleet file's, in every record
    _job(store, 10, 0, NONCE="a", VLLM="1", REGISTRY="zot:8080")  # warm
    _job(store, 9, 3, NONCE="a", VLLM="2", REGISTRY="zot:8080")  # hot: VLLM changed
    _job(store, 8, 0, NONCE="b", VLLM="2", REGISTRY="zot:8080")  # warm: NONCE changed
    _job(store, 8 - 72, 4, NONCE="b", VLLM="2", REGISTRY="zot:8080")  # days later: not quick
    rows = CostBook(store).rows(CostFilter(target="vllm", arch="gfx1201"))
    launch, rebuilds = variable_changes(store, rows, {"NONCE": "b", "VLLM": "3"}, fleet)
    assert launch == {"strix": frozenset({"VLLM"})}  # the fleet's REGISTRY is not a change
    assert [(r.changed, r.condition) for r in rebuilds] == [
        (frozenset({"VLLM"}), HOT),
        (frozenset({"NONCE"}), W),
    ]
    same, _ = variable_changes(store, rows, {"NONCE": "b", "VLLM": "2"}, fleet)
    assert same == {"strix": frozenset()}  # the same variables: frozen, in predict
    _job(store, 8 - 73, 4, NONCE="<redacted:secret>", VLLM="2", REGISTRY="zot:8080")
    rows = CostBook(store).rows(CostFilter(target="vllm", arch="gfx1201"))
    secret, _ = variable_changes(store, rows, {"NONCE": "b", "VLLM": "2"}, fleet)
    assert secret == {}  # its newest build's value is not kept: not known


def test_a_change_the_target_s_other_arch_rebuilt_after_predicts_this_arch(
    tmp_path: Path,
) -> None:
    """What a change leaves cached is the Dockerfile's doing: a rebuild of vllm for gfx950
    that changed NONCE met warm, so the first such launch for gfx1201 is predicted warm (not
    hot, as its own last quick rebuild was), said with the arch; this arch's own rebuild of
    the same change comes first."""
    store = JobStore(tmp_path)
    for ago, nonce, cached in ((10, "a", 0), (9, "b", 0)):  # gfx950: NONCE changed, warm
        record = store.create(
            lambda job_id, job_dir, ago=ago, nonce=nonce: job_record(
                job_id, job_dir, target="vllm", node="strix", started_at=NOW - ago * H,
                ended_at=NOW - ago * H + 60, state=JobState.SUCCEEDED,
                overrides={"NONCE": nonce},
            )
        )  # fmt: skip
        evidence = BuildEvidence(steps_total=4, steps_cached=cached, sccache_hits=9,
                                 sccache_misses=1)  # fmt: skip
        CostBook(store).add([
            CostRow(job_id=record.id, target="vllm", arch="gfx950", node="strix",
                    started_at=record.started_at, ended_at=record.started_at + 60,
                    duration=60.0, outcome="succeeded", origin="rocmtui", started_by="ci",
                    evidence=evidence)
        ])  # fmt: skip
    _job(store, 8, 0, NONCE="c", VLLM="1")  # gfx1201: a warm first build
    _job(store, 7, 3, NONCE="c", VLLM="2")  # hot: VLLM changed
    every = CostBook(store).rows(CostFilter(target="vllm"))
    others = other_arch_rebuilds(store, every, "gfx1201", None)
    assert [(r.arch, r.changed, r.condition) for r in others] == [
        ("gfx950", frozenset({"NONCE"}), W)
    ]
    points = (CostPoint(NOW - 8 * H, 60.0, W, True), CostPoint(NOW - 7 * H, 10.0, HOT, True))
    launch = NodeFacts("strix", None, "ok", points=points, same_variables=False,
                       changed=frozenset({"NONCE"}))  # fmt: skip
    assert predict(launch, points, NOW, None, others) == (
        W,
        "built it 7h00m ago; a rebuild changing NONCE met warm here (for gfx950)",
    )
    mine = Rebuild("strix", NOW - 7.5 * H, frozenset({"NONCE"}), Condition.COLD)
    assert predict(launch, points, NOW, None, [*others, mine])[0] is Condition.COLD
