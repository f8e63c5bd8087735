"""The placement rule: from every node's facts to the node that would finish first.

The cache condition a build would most likely meet on a node, in this order:

- it built this target × arch there and succeeded within `HOT_WITHIN`: BuildKit's local cache
  most likely still holds its compile layers, so `hot`; and when the history shows what a
  rebuild that soon after a build met on that node (cache pruned often, or nothing changed
  and every step cached), that condition instead; when the launch's variables are known:
  the same as that build's, every step is most likely cached (`frozen`); changed, not frozen
  (a frozen quick rebuild in the history says `hot` then). Changed, and a quick rebuild in
  the history changed exactly the same variables (`changes`): the condition the newest such
  met, here else on any node (a version only the last stage reads leaves the rest cached; a
  variable every stage reads rebuilds them all). A node with no quick rebuild of its own goes
  by the newest one on another node: rebuilds soon after a build meet what the launches of
  the day change, whichever node they run on;
- else any node built it and succeeded within `WARM_WITHIN`: the shared sccache store most
  likely still holds its objects, so `warm`;
- else `cold` (built long ago or never).

The ETA is the time such a build takes under that condition (`eta.eta_for`: this node's
recent median, else the other nodes' times this node's speed, else the nearest known
condition's scaled by a ratio learned from other builds, else the next slower condition's as
an upper bound, else unknown); a node already running builds shares its cores, so its ETA is
multiplied by one plus their number (said so). A node that is down, unknown, unprobed or
stalled, whose data root is full, that cannot build the arch, or that already builds this
very target × arch is never chosen, and says why not. Among the others the smallest ETA wins
(a known ETA before an unknown one; ties: the better condition, fewer running builds, then
the fleet file's order), except that a node timed by its own builds wins over one timed by
other nodes' builds within `OWN_TIME_MARGIN` of it: a borrowed time does not carry this
node's speed when no build both made says it. A rebuild (`r`) keeps its original node when
that is within `KEEP_ORIGINAL_MARGIN` of the best, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocmtui.core.costbook.cost import CONDITIONS, Condition, CostPoint
from rocmtui.core.placement.eta import Priors, eta_for, recent_median
from rocmtui.core.placement.facts import NodeEstimate, NodeFacts, Placement, Rebuild
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_age, fmt_bytes

HOUR = 3600.0
DAY = 24 * HOUR
#: Succeeded here within this long: the node's BuildKit cache most likely holds the layers.
HOT_WITHIN = 2 * DAY
#: Succeeded on any node within this long: the shared sccache most likely holds the objects.
WARM_WITHIN = 14 * DAY
#: A data root with less free than this (or `FULL_USED_PERCENT` used) is full: never chosen.
FULL_FREE_BYTES = 2 * 1024**3
FULL_USED_PERCENT = 97.0
#: A rebuild keeps its node when its ETA is at most this much over the best one's.
KEEP_ORIGINAL_MARGIN = 0.10
#: A node timed by its own builds is chosen over one timed by other nodes' builds (the first
#: by ETA) when its ETA is at most this much over that one's.
OWN_TIME_MARGIN = 0.10
#: Node states a build may be placed on.
USABLE_STATES = ("ok", "building")


def why_not(facts: NodeFacts) -> str | None:
    """Why a node is never chosen, or None when it may be."""
    if facts.state not in USABLE_STATES:
        said = {"unprobed": "not probed"}.get(facts.state, facts.state)
        reason = f" ({facts.state_reason})" if facts.state_reason else ""
        return f"{said}{reason}"
    if not facts.accepts_arch:
        gpu = f" (its GPU is {facts.gfx})" if facts.gfx else ""
        return f"cannot build this arch{gpu}"
    if facts.busy_with:
        return f"already building it: {facts.busy_with}"
    if facts.free_bytes is not None and facts.free_bytes < FULL_FREE_BYTES:
        return f"data root full ({fmt_bytes(facts.free_bytes)} free)"
    if facts.free_bytes is not None and facts.total_bytes:
        used = 100.0 * (facts.total_bytes - facts.free_bytes) / facts.total_bytes
        if used >= FULL_USED_PERCENT:
            return f"data root full ({used:.0f}% used)"
    return None


def _rebuild_condition(points: Sequence[CostPoint]) -> tuple[float, Condition] | None:
    """(its start, the condition) of a node's latest quick rebuild (a build started within
    `HOT_WITHIN` of a succeeded one before it on the same node), when known."""
    ordered = sorted(points, key=lambda p: p.started_at)
    last_ok: float | None = None
    found: tuple[float, Condition] | None = None
    for p in ordered:
        quick = last_ok is not None and p.started_at - last_ok <= HOT_WITHIN
        if quick and p.succeeded and p.condition is not Condition.UNKNOWN:
            found = (p.started_at, p.condition)
        if p.succeeded:
            last_ok = p.started_at
    return found


def fleet_rebuild(nodes: Sequence[Sequence[CostPoint]]) -> Condition | None:
    """The condition of the newest quick rebuild on any of `nodes` (each one node's builds)."""
    found = [q for points in nodes if (q := _rebuild_condition(points)) is not None]
    return max(found, key=lambda q: q[0])[1] if found else None


def _like(rebuilds: Sequence[Rebuild], changed: frozenset[str], node: str) -> Rebuild | None:
    """The newest rebuild that changed exactly `changed`: of this arch before another's (the
    Dockerfile is the same, the arch's own history is closer), on `node` before any node."""
    same = [r for r in rebuilds if r.changed == changed]
    for pool in (
        [r for r in same if r.arch is None and r.node == node],
        [r for r in same if r.arch is None],
        [r for r in same if r.node == node],
        same,
    ):
        if pool:
            return max(pool, key=lambda r: r.started_at)
    return None


def predict(
    facts: NodeFacts,
    fleet: Sequence[CostPoint],
    now: float,
    elsewhere: Condition | None = None,
    rebuilds: Sequence[Rebuild] = (),
) -> tuple[Condition, str]:
    """The condition a build would most likely meet on this node, and why (the module doc);
    `elsewhere`: what the newest quick rebuild on another node met (`fleet_rebuild`);
    `rebuilds`: the history's quick rebuilds with what each changed (`changes`)."""
    done = [p for p in facts.points if p.succeeded]
    last = max(done, key=lambda p: p.started_at) if done else None
    if last is not None and now - last.started_at <= HOT_WITHIN:
        ago = fmt_age(now - last.started_at)
        if facts.same_variables:
            return Condition.FROZEN, f"built it {ago} ago with the same variables"
        like = _like(rebuilds, facts.changed, facts.node) if facts.changed else None
        if like is not None and facts.changed:
            names = one_line(", ".join(sorted(facts.changed)), 80)
            where = "here" if like.node == facts.node else "on the fleet"
            if like.arch is not None:
                where += f" (for {one_line(like.arch, 20)})"
            return like.condition, (
                f"built it {ago} ago; a rebuild changing {names} met {like.condition} {where}"
            )
        mine = _rebuild_condition(facts.points)
        quick, where = (mine[1], "here") if mine is not None else (elsewhere, "on the fleet")
        if quick is Condition.FROZEN and facts.same_variables is False:
            return Condition.HOT, f"built it {ago} ago; variables changed since"
        if quick is not None and quick is not Condition.HOT:
            return quick, f"built it {ago} ago; its last quick rebuild {where} was {quick}"
        return Condition.HOT, f"built it {ago} ago"
    anywhere = [p for p in fleet if p.succeeded and now - p.started_at <= WARM_WITHIN]
    if anywhere:
        newest = max(anywhere, key=lambda p: p.started_at)
        here = "" if last is None else f"; here {fmt_age(now - last.started_at)} ago"
        return Condition.WARM, (
            f"the fleet built it {fmt_age(now - newest.started_at)} ago (sccache){here}"
        )
    if last is not None:
        return Condition.COLD, f"built it here {fmt_age(now - last.started_at)} ago"
    return Condition.COLD, "never built it here"


def estimate_node(
    facts: NodeFacts,
    others: Sequence[CostPoint],
    now: float,
    priors: Priors | None = None,
    elsewhere: Condition | None = None,
    rebuilds: Sequence[Rebuild] = (),
) -> NodeEstimate:
    """One node's estimate (see the module doc); `others`: the other nodes' builds;
    `elsewhere`: the condition of the newest quick rebuild on another node."""
    condition, cwhy = predict(facts, (*facts.points, *others), now, elsewhere, rebuilds)
    eta, efrom = eta_for(condition, facts.points, others, priors)
    if eta is not None and facts.running:
        n = len(facts.running)
        eta *= 1 + n
        efrom += f", x{1 + n}: shares the node with {n} running build{'s' * (n > 1)}"
    blocked = why_not(facts)
    return NodeEstimate(
        node=facts.node,
        condition=condition,
        condition_why=cwhy,
        eta=eta,
        eta_from=efrom,
        running=facts.running,
        load1=facts.load1,
        cpu_count=facts.cpu_count,
        free_bytes=facts.free_bytes,
        eligible=blocked is None,
        why_not=blocked,
        eta_here=recent_median(facts.points, condition) is not None,
    )


def _rank(e: NodeEstimate, order: int) -> tuple[int, float, int, int, int]:
    """Known ETA first, smallest first; on a tie (two ETAs borrowed from one median) the
    better cache condition, then fewer running builds, then the fleet file's order."""
    known = 0 if e.eta is not None else 1
    return (known, e.eta or 0.0, CONDITIONS.index(e.condition), len(e.running), order)


def _trusted(ranked: Sequence[tuple[NodeEstimate, int]]) -> NodeEstimate:
    """The first ranked, unless its ETA is borrowed from other nodes and a node timed by its
    own builds is within `OWN_TIME_MARGIN` of it: that node is the one known to finish then
    (a borrowed time carries the other nodes' speed, not this one's)."""
    best = ranked[0][0]
    if best.eta is None or best.eta_here:
        return best
    for e, _ in ranked[1:]:
        if e.eta is not None and e.eta_here and e.eta <= best.eta * (1 + OWN_TIME_MARGIN):
            return e
    return best


def _keeps(mine: NodeEstimate, best: NodeEstimate) -> bool:
    """A rebuild stays on its node: the best itself, within the margin of the best's ETA, or,
    when no ETA is known anywhere, at a condition no worse (nothing says another is faster)."""
    if mine is best:
        return True
    if best.eta is None:
        return mine.eta is None and (
            CONDITIONS.index(mine.condition) <= CONDITIONS.index(best.condition)
        )
    return mine.eta is not None and mine.eta <= best.eta * (1 + KEEP_ORIGINAL_MARGIN)


def place(
    target: str,
    arch: str,
    facts: Sequence[NodeFacts],
    now: float,
    original: str | None = None,
    priors: Priors | None = None,
    rebuilds: Sequence[Rebuild] = (),
) -> Placement:
    """Every node's estimate and the node that would finish first (see the module doc);
    `priors`: condition ratios learned from other builds (`eta.learn_priors`); `rebuilds`:
    the history's quick rebuilds with what they changed (`changes.variable_changes`)."""
    estimates = tuple(
        estimate_node(
            f,
            [p for g in facts if g is not f for p in g.points],
            now,
            priors,
            fleet_rebuild([g.points for g in facts if g is not f]),
            rebuilds,
        )
        for f in facts
    )
    ranked = sorted(
        ((e, i) for i, e in enumerate(estimates) if e.eligible), key=lambda ei: _rank(*ei)
    )
    if not ranked:
        why = (
            "no node can build it: " + "; ".join(e.line() for e in estimates)
            if estimates
            else ("no node in the fleet file")
        )
        return Placement(
            target, arch, estimates, None, why, original, None if not original else False
        )
    best = _trusted(ranked)
    if original is None:
        return Placement(target, arch, estimates, best.node, best.line())
    mine = next((e for e in estimates if e.node == original), None)
    if mine is not None and mine.eligible and _keeps(mine, best):
        return Placement(
            target, arch, estimates, mine.node, f"kept {mine.line()} (still the best choice)",
            original, True,
        )  # fmt: skip
    if mine is None:
        was = f"{original} is no longer in the fleet file"
    elif not mine.eligible:
        was = f"{original} {mine.why_not}"
    else:
        was = f"{original} would take {mine.eta_words().removeprefix('about ')}"
    return Placement(
        target, arch, estimates, best.node, f"{best.line()} (not {original}: {was})",
        original, False,
    )  # fmt: skip


__all__ = [
    "FULL_FREE_BYTES",
    "FULL_USED_PERCENT",
    "HOT_WITHIN",
    "KEEP_ORIGINAL_MARGIN",
    "OWN_TIME_MARGIN",
    "WARM_WITHIN",
    "estimate_node",
    "eta_for",
    "fleet_rebuild",
    "place",
    "predict",
    "why_not",
]
