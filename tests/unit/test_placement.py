"""The placement rule (`core.placement.choose`): facts written by hand, the choice and its why."""

from __future__ import annotations

from rocmtui.core.costbook.cost import Condition, CostPoint
from rocmtui.core.costbook.views import plain
from rocmtui.core.placement.choose import FULL_FREE_BYTES, HOT_WITHIN, place, predict
from rocmtui.core.placement.facts import NodeFacts
from rocmtui.core.placement.views import PlacementView

NOW = 1_800_000_000.0
H = 3600.0
GIB = 1024**3


def pt(ago: float, minutes: float, cond: Condition, ok: bool = True) -> CostPoint:
    return CostPoint(NOW - ago, minutes * 60, cond, ok)


def node(name: str, **kw: object) -> NodeFacts:
    base: dict[str, object] = {"gfx": "gfx1201", "state": "ok", "free_bytes": 100 * GIB}
    base.update(kw)
    return NodeFacts(node=name, **base)  # type: ignore[arg-type]


HISTORY_THINK = (
    pt(30 * H, 120, Condition.COLD),
    pt(10 * H, 12, Condition.HOT),
    pt(2 * H, 13, Condition.HOT),
)


def test_the_node_that_built_it_last_is_hot_and_chosen_over_one_that_never_did() -> None:
    facts = [node("snoc-gaming"), node("snoc-think", points=HISTORY_THINK)]
    chosen = place("pytorch", "gfx1201", facts, NOW)
    assert chosen.chosen == "snoc-think"
    think = chosen.estimate("snoc-think")
    gaming = chosen.estimate("snoc-gaming")
    assert think is not None and gaming is not None
    assert think.condition is Condition.HOT
    assert think.eta == 12.5 * 60  # median of the two hot builds here
    assert chosen.why == "snoc-think: hot, about 12m30s, idle"
    assert gaming.condition is Condition.WARM  # the fleet built it within the sccache window
    assert "on other nodes" in gaming.eta_from and "as cold" in gaming.eta_from


def test_down_stalled_full_and_archless_nodes_are_never_chosen_and_say_why() -> None:
    facts = [
        node("down", state="down", state_reason="connect: refused", points=HISTORY_THINK),
        node("stalled", state="stalled", points=HISTORY_THINK),
        node("full", free_bytes=FULL_FREE_BYTES - 1, points=HISTORY_THINK),
        node("strix", gfx="gfx1151", accepts_arch=False, points=HISTORY_THINK),
        node("busy", busy_with="job 20261206-1200-ab12", points=HISTORY_THINK),
        node("slow"),
    ]
    chosen = place("pytorch", "gfx1201", facts, NOW)
    assert chosen.chosen == "slow"
    said = {e.node: e.why_not for e in chosen.estimates}
    assert said["down"] == "down (connect: refused)"
    assert said["stalled"] == "stalled"
    assert said["full"] is not None and said["full"].startswith("data root full")
    assert said["strix"] == "cannot build this arch (its GPU is gfx1151)"
    assert said["busy"] == "already building it: job 20261206-1200-ab12"
    assert said["slow"] is None


def test_a_nearly_full_disk_by_percent_is_full() -> None:
    facts = [node("a", free_bytes=3 * GIB, total_bytes=1000 * GIB), node("b")]
    assert place("t", "gfx1201", facts, NOW).chosen == "b"


def test_no_node_at_all_says_why_each_one_cannot() -> None:
    facts = [node("a", state="down"), node("b", state="unprobed")]
    chosen = place("t", "gfx1201", facts, NOW)
    assert chosen.chosen is None
    assert chosen.why == "no node can build it: a: not chosen: down; b: not chosen: not probed"


def test_running_builds_share_the_node_and_lengthen_its_eta() -> None:
    facts = [
        node("busy", points=HISTORY_THINK, running=("a x (1)", "b y (2)")),
        node("idle", points=(pt(3 * H, 20, Condition.HOT),)),
    ]
    chosen = place("pytorch", "gfx1201", facts, NOW)
    busy = chosen.estimate("busy")
    assert busy is not None and busy.eta == 12.5 * 60 * 3
    assert chosen.chosen == "idle"  # 20m idle beats 37m30s shared three ways


def test_rebuild_keeps_its_node_while_it_is_still_best_and_says_so_when_not() -> None:
    facts = [node("snoc-gaming"), node("snoc-think", points=HISTORY_THINK)]
    kept = place("pytorch", "gfx1201", facts, NOW, original="snoc-think")
    assert kept.chosen == "snoc-think" and kept.kept_original is True
    assert kept.why == "kept snoc-think: hot, about 12m30s, idle (still the best choice)"
    moved = place("pytorch", "gfx1201", facts, NOW, original="snoc-gaming")
    assert moved.chosen == "snoc-think" and moved.kept_original is False
    assert moved.why.startswith("snoc-think: hot, about 12m30s, idle (not snoc-gaming: ")
    down = [node("snoc-gaming", state="down"), node("snoc-think", points=HISTORY_THINK)]
    gone = place("pytorch", "gfx1201", down, NOW, original="snoc-gaming")
    assert gone.why.endswith("(not snoc-gaming: snoc-gaming down)")
    removed = place("pytorch", "gfx1201", facts, NOW, original="old-node")
    assert "old-node is no longer in the fleet file" in removed.why


def test_a_quick_rebuild_the_history_saw_frozen_predicts_frozen() -> None:
    points = (pt(5 * H, 30, Condition.COLD), pt(4 * H, 1, Condition.FROZEN))
    condition, why = predict(node("a", points=points), points, NOW)
    assert condition is Condition.FROZEN
    assert "last quick rebuild here was frozen" in why


def test_the_same_variables_as_the_last_build_predict_frozen_and_changed_ones_not() -> None:
    points = (pt(5 * H, 30, Condition.COLD),)
    same = predict(node("a", points=points, same_variables=True), points, NOW)
    assert same == (Condition.FROZEN, "built it 5h00m ago with the same variables")
    # a frozen quick rebuild in the history says hot once the variables changed
    seen = (*points, pt(4 * H, 1, Condition.FROZEN))
    changed = predict(node("a", points=seen, same_variables=False), seen, NOW)
    assert changed == (Condition.HOT, "built it 4h00m ago; variables changed since")
    unknown = predict(node("a", points=seen), seen, NOW)
    assert unknown[0] is Condition.FROZEN  # not told the variables: as the history says


def test_old_builds_and_failures_are_not_hot() -> None:
    old = (pt(HOT_WITHIN + H, 30, Condition.HOT),)
    assert predict(node("a", points=old), old, NOW)[0] is Condition.WARM
    failed = (pt(H, 30, Condition.HOT, ok=False),)
    assert predict(node("a", points=failed), failed, NOW)[0] is Condition.COLD
    ancient = (pt(30 * 24 * H, 30, Condition.COLD),)
    assert predict(node("a", points=ancient), ancient, NOW) == (
        Condition.COLD,
        "built it here 30d00h ago",
    )


def test_a_node_with_no_history_borrows_the_fleets_and_json_has_every_node() -> None:
    facts = [node("new"), node("known", points=(pt(40 * 24 * H, 90, Condition.COLD),))]
    chosen = place("t", "gfx1201", facts, NOW)
    new = chosen.estimate("new")
    assert new is not None and new.eta == 5400.0 and "on other nodes" in new.eta_from
    assert chosen.chosen == "known"  # a tie: the node timed by its own build, not a borrowed time
    nothing = place(
        "t", "gfx1201", [node("a"), node("b", points=(pt(H, 9, Condition.HOT, False),))], NOW
    )
    assert nothing.chosen == "a"
    data = plain(PlacementView.of(nothing))
    assert [n["node"] for n in data["nodes"]] == ["a", "b"]
    assert [n["eta_seconds"] for n in data["nodes"]] == [None, None]
    assert data["why"] == "a: cold, ETA unknown, idle"


def test_on_a_tie_of_borrowed_etas_the_better_condition_wins() -> None:
    # one cold build on the last node only: every ETA is that median, the hot node's included
    facts = [node("a"), node("b"), node("c", points=(pt(H, 30, Condition.COLD),))]
    chosen = place("t", "gfx1201", facts, NOW)
    assert [e.condition for e in chosen.estimates] == [
        Condition.WARM,
        Condition.WARM,
        Condition.HOT,
    ]
    assert chosen.chosen == "c"


def test_a_rebuild_stays_put_when_nothing_says_another_node_is_faster() -> None:
    facts = [node("a"), node("b"), node("c")]
    kept = place("t", "gfx1201", facts, NOW, original="b")
    assert kept.chosen == "b" and kept.kept_original is True
    assert kept.why == "kept b: cold, ETA unknown, idle (still the best choice)"
