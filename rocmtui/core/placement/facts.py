"""What placement reads (`NodeFacts`) and answers (`NodeEstimate`, `Placement`).

Facts are gathered once (`gather`) and judged by a pure rule (`choose.place`), so the rule is
tested on facts written by hand and the CLI, the console and the benchmark share it.
"""

from __future__ import annotations

from msgspec import Struct

from rocmtui.core.costbook.cost import Condition, CostPoint
from rocmtui.core.text.units import fmt_age, fmt_bytes


class NodeFacts(Struct, frozen=True):
    """One node as placement sees it. None: not known (said as unknown, never guessed)."""

    node: str
    gfx: str | None
    state: str  # the node's state word (ok, building, stalled, down, unknown) or "unprobed"
    state_reason: str | None = None  # why down or unknown, one sanitised line
    accepts_arch: bool = True  # the node can build the chosen arch
    busy_with: str | None = None  # a job of this very target × arch already running there
    running: tuple[str, ...] = ()  # builds running there now: "pytorch gfx1201 (20261206-..)"
    load1: float | None = None
    cpu_count: int | None = None
    free_bytes: int | None = None  # on the engine's data root
    total_bytes: int | None = None
    vitals_from: str | None = None  # where load and disk came from (a vitals source, "host")
    points: tuple[CostPoint, ...] = ()  # this node's finished builds of target × arch
    # its newest build of target × arch had exactly the launch's variables (None: not known,
    # or the launch's variables were not given)
    same_variables: bool | None = None
    # the names of the variables the launch sets otherwise than that newest build (None: not
    # known)
    changed: frozenset[str] | None = None


class Rebuild(Struct, frozen=True):
    """A quick rebuild in the history: which variables it changed against the build before it
    on the same node, and the condition it met."""

    node: str
    started_at: float
    changed: frozenset[str]
    condition: Condition
    arch: str | None = None  # set for a rebuild of the same target for another arch


class NodeEstimate(Struct, frozen=True):
    """One node's estimate for the build: what it would most likely meet and take there."""

    node: str
    condition: Condition  # the cache condition predicted
    condition_why: str  # "built it 2h05m ago", "never built it here"
    eta: float | None  # seconds until it would finish (None: nothing to go by)
    eta_from: str  # "median of 5 hot builds here"
    running: tuple[str, ...]
    load1: float | None
    cpu_count: int | None
    free_bytes: int | None
    eligible: bool
    why_not: str | None = None  # for a node never chosen: down, stalled, full, lacks the arch
    eta_here: bool = False  # the ETA is from this node's own builds under that condition

    def busy_words(self) -> str:
        """`idle`, `running 1 build`, `running 2 builds`."""
        n = len(self.running)
        return "idle" if n == 0 else f"running {n} build{'s' if n > 1 else ''}"

    def eta_words(self) -> str:
        """`about 12m00s`, or `ETA unknown`."""
        return "ETA unknown" if self.eta is None else f"about {fmt_age(self.eta)}"

    def line(self) -> str:
        """`snoc-think: hot, about 12m00s, idle` (why not, for a node never chosen)."""
        if not self.eligible:
            return f"{self.node}: not chosen: {self.why_not}"
        return f"{self.node}: {self.condition}, {self.eta_words()}, {self.busy_words()}"

    def detail(self) -> str:
        """The evidence: `built it 2h05m ago; median of 5 hot builds here; load 1.2/2 cores,
        140 GiB free`."""
        load = (
            "load unknown"
            if self.load1 is None
            else f"load {self.load1:.1f}" + (f"/{self.cpu_count} cores" if self.cpu_count else "")
        )
        disk = (
            "free disk unknown" if self.free_bytes is None else f"{fmt_bytes(self.free_bytes)} free"
        )
        return f"{self.condition_why}; {self.eta_from}; {load}, {disk}"


class Placement(Struct, frozen=True):
    """Every node's estimate (fleet order) and the node chosen, with one line why."""

    target: str
    arch: str
    estimates: tuple[NodeEstimate, ...]
    chosen: str | None  # None: no node can take it (each estimate's `why_not` says why)
    why: str  # one line: "snoc-think: hot, about 12m00s, idle" / why none / why not the original
    original: str | None = None  # the node a rebuild (`r`) came from
    kept_original: bool | None = None  # None without an original

    def estimate(self, node: str) -> NodeEstimate | None:
        """The estimate of `node`."""
        return next((e for e in self.estimates if e.node == node), None)


__all__ = ["NodeEstimate", "NodeFacts", "Placement", "Rebuild"]
