"""How long a build of one target × arch would take on a node under the condition predicted
for it: the ETA rules, tried in this order (the first that has builds to go by answers, and
`eta_from` names it):

1. *here*: the median of this node's newest `RECENT` succeeded builds under that condition.
   The newest, not all: durations drift (the engine's cache grows, versions move, the
   machine's load changes), and the builds just made say best what the next one takes; a
   median of a few still passes over one odd build;
2. *fleet*: the median of the other nodes' newest `RECENT` builds under that condition, times
   this node's speed (`speed_factor`): its durations against the other nodes' under the
   conditions both have built. A fleet-wide median alone gives a slow node a fast node's time;
3. *prior*: when no node built it under that condition, its median under the nearest
   condition that is known (rules 1-2), times how long builds of other target × arch × node
   groups take under the one condition against the other (`learn_priors`: the median ratio
   over every group that built under both). A frozen rebuild of a target whose only history
   is warm takes a fraction of the warm time, not "at most" the warm time;
4. *bound*: with no ratio learned, the next slower condition's time, said as an upper bound;
5. nothing to go by: unknown (never guessed).

Pure: every input is in the arguments, so the rules are tested on hand-written facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from msgspec import Struct

from rocmtui.core.costbook.cost import CONDITIONS, Condition, CostPoint, median

#: The newest this many builds of a condition make its median (rules 1-2).
RECENT = 5
#: Conditions a duration is known for (unknown builds are no condition's time).
KNOWN = tuple(c for c in CONDITIONS if c is not Condition.UNKNOWN)


class Ratio(Struct, frozen=True):
    """How long builds under one condition take against another: the median ratio of the two
    medians, over `groups` target × arch × node groups that built under both."""

    value: float
    groups: int


#: (condition, against) -> ratio of condition's durations to against's.
Priors = Mapping[tuple[Condition, Condition], Ratio]


class Recent(Struct, frozen=True):
    """The median of the newest `used` of `total` succeeded builds under one condition."""

    median: float
    used: int
    total: int

    def words(self, condition: Condition) -> str:
        """`median of 3 hot builds`, `median of the last 5 of 12 hot builds`."""
        some = f"{self.used} {condition} build{'s' * (self.used > 1)}"
        if self.used < self.total:
            some = f"the last {self.used} of {self.total} {condition} builds"
        return f"median of {some}"


def recent_median(points: Iterable[CostPoint], condition: Condition) -> Recent | None:
    """The median of the newest `RECENT` succeeded builds under `condition`, or None."""
    runs = sorted(
        (p for p in points if p.succeeded and p.condition is condition),
        key=lambda p: p.started_at,
    )
    if not runs:
        return None
    newest = runs[-RECENT:]
    return Recent(median(p.duration for p in newest), len(newest), len(runs))


def _medians(points: Sequence[CostPoint]) -> dict[Condition, float]:
    out: dict[Condition, float] = {}
    for c in KNOWN:
        found = recent_median(points, c)
        if found is not None:
            out[c] = found.median
    return out


def learn_priors(groups: Iterable[Sequence[CostPoint]]) -> dict[tuple[Condition, Condition], Ratio]:
    """Per ordered pair of conditions, the median over `groups` (each one target × arch ×
    node's builds) of the ratio of their recent medians, where a group has both."""
    ratios: dict[tuple[Condition, Condition], list[float]] = {}
    for points in groups:
        m = _medians(points)
        for c, mc in m.items():
            for k, mk in m.items():
                if c is not k and mk > 0:
                    ratios.setdefault((c, k), []).append(mc / mk)
    return {pair: Ratio(median(values), len(values)) for pair, values in ratios.items()}


def speed_factor(here: Sequence[CostPoint], others: Sequence[CostPoint]) -> tuple[float, int]:
    """(factor, conditions compared): the median over the conditions both this node and the
    others built under of this node's median against theirs; (1.0, 0) when none is shared."""
    mine, theirs = _medians(here), _medians(others)
    shared = [mine[c] / theirs[c] for c in mine if c in theirs and theirs[c] > 0]
    if not shared:
        return 1.0, 0
    return median(shared), len(shared)


def _known(
    condition: Condition, here: Sequence[CostPoint], others: Sequence[CostPoint]
) -> tuple[float, str] | None:
    """Rules 1-2 for one condition: (seconds, from what) or None."""
    mine = recent_median(here, condition)
    if mine is not None:
        return mine.median, f"{mine.words(condition)} here"
    theirs = recent_median(others, condition)
    if theirs is None:
        return None
    said = f"{theirs.words(condition)} on other nodes"
    factor, compared = speed_factor(here, others)
    if compared == 0:
        return theirs.median, said
    where = f"{compared} condition{'s' * (compared > 1)}"
    return theirs.median * factor, f"{said} x{factor:.2f} (this node's speed on {where})"


def _by_distance(condition: Condition) -> list[Condition]:
    """The other known conditions, nearest first (the slower one first on a tie)."""
    at = KNOWN.index(condition)
    rest = [c for c in KNOWN if c is not condition]
    return sorted(rest, key=lambda c: (abs(KNOWN.index(c) - at), -KNOWN.index(c)))


def eta_for(
    condition: Condition,
    here: Sequence[CostPoint],
    others: Sequence[CostPoint],
    priors: Priors | None = None,
) -> tuple[float | None, str]:
    """Seconds a build under `condition` would take on this node (`here`: its builds of the
    target × arch; `others`: the other nodes'), and which rule gave it (the module doc)."""
    if condition is Condition.UNKNOWN:
        return None, "no earlier build to go by"
    direct = _known(condition, here, others)
    if direct is not None:
        return direct
    for k in _by_distance(condition):
        ratio = (priors or {}).get((condition, k))
        base = _known(k, here, others) if ratio is not None else None
        if ratio is not None and base is not None:
            groups = f"{ratio.groups} other group{'s' * (ratio.groups > 1)}"
            return base[0] * ratio.value, (
                f"no {condition} build of it: {base[1]} x{ratio.value:.2f} ({condition} "
                f"against {k} in {groups})"
            )
    for k in KNOWN[KNOWN.index(condition) + 1 :]:
        base = _known(k, here, others)
        if base is not None:
            return base[0], f"no {condition} build to go by: as {k}, at most; {base[1]}"
    return None, "no earlier build to go by"


__all__ = [
    "KNOWN",
    "RECENT",
    "Priors",
    "Ratio",
    "Recent",
    "eta_for",
    "learn_priors",
    "recent_median",
    "speed_factor",
]
