"""Two builds of one target compared step by step: each step's time then and now, cached then
and not now, the first step whose cache missed, and why, from what is known.

Steps are matched by their Dockerfile position and instruction (`[final 3/3] RUN`), not by
their whole name: BuildKit names a step with its build args expanded (`RUN echo "begin two
chocolate"`), so the step a changed arg re-ran would otherwise never match its past self.
Steps with no position (`[internal] load ...`, `exporting to image`) match by name; a name
seen twice matches in order.

The first miss is the earliest-starting Dockerfile step (a position, not a FROM) that ran
rather than came from the cache. Its reasons, from `buildfacts.BuildFacts` then and now:
build args that differ (an arg whose new value is in that step's name first), the bake
variables set for each, materials (base images) whose digests differ, and sccache's hit rate
then and now. None differing: the reason is "unknown", with what was compared. Nothing missed:
nothing is named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from msgspec import Struct

from rocmtui.core.history.buildfacts import BuildFacts
from rocmtui.core.history.stepreport import StepReport, StepTime

_POSITION = re.compile(r"\A\[([^\]]*\d+/\d+)\] (\S+)")
HIT_RATE_MOVE = 0.1  # sccache's hit rate moved by this much: named


class StepChange(Struct, frozen=True):
    """One step then and now (None: not in that build)."""

    key: str
    name: str  # now's name (then's when it is gone)
    then_run: float | None
    then_cached: bool | None
    now_run: float | None
    now_cached: bool | None

    @property
    def missed(self) -> bool:
        """Cached then, not now."""
        return self.then_cached is True and self.now_cached is False


class Reason(Struct, frozen=True):
    """One difference that may explain a miss."""

    kind: str  # "build arg", "bake variable", "material", "sccache"
    name: str
    then: str | None
    now: str | None
    in_step: bool = False  # its new value is in the first missed step's name

    def describe(self) -> str:
        """`build arg FLAVOUR: vanilla → chocolate`."""
        return f"{self.kind} {self.name}: {self.then or '(unset)'} → {self.now or '(unset)'}"


class BuildDiff(Struct, frozen=True):
    """A build (`now`) against its baseline (`then`)."""

    now_job: str
    then_job: str
    steps: tuple[StepChange, ...]
    first_miss: StepChange | None
    reasons: tuple[Reason, ...]
    compared: tuple[str, ...]
    now_span: float
    then_span: float

    @property
    def verdict(self) -> str:
        """One line: what missed and why."""
        if self.first_miss is None:
            return "all cached: nothing missed" if self.all_cached else "no Dockerfile step ran"
        head = f"first miss: {self.first_miss.name}"
        if not self.reasons:
            return f"{head}; why: unknown (compared {', '.join(self.compared) or 'nothing'})"
        return f"{head}; why: " + "; ".join(r.describe() for r in self.reasons)

    @property
    def all_cached(self) -> bool:
        """Every Dockerfile step now (a FROM aside: BuildKit reads a local image's FROM
        cached or done by whim) came from the cache."""
        mine = [s for s in self.steps if s.now_cached is not None and _dockerfile_step(s.key)]
        return bool(mine) and all(s.now_cached for s in mine)


def _dockerfile_step(name: str) -> bool:
    m = _POSITION.match(name)
    return m is not None and m.group(2).upper() != "FROM"


def step_key(name: str) -> str:
    """`[final 3/3] RUN` for a Dockerfile step; the whole name otherwise."""
    m = _POSITION.match(name)
    return f"[{m.group(1)}] {m.group(2)}" if m else name


def _keyed(steps: Sequence[StepTime]) -> dict[str, StepTime]:
    out: dict[str, StepTime] = {}
    for s in steps:
        key = step_key(s.name)
        n = 1
        while key in out:
            n += 1
            key = f"{step_key(s.name)} #{n}"
        out[key] = s
    return out


def _differ(kind: str, then: dict[str, str], now: dict[str, str]) -> list[Reason]:
    return [
        Reason(kind, name, then.get(name), now.get(name))
        for name in sorted(set(then) | set(now))
        if then.get(name) != now.get(name)
    ]


def diff_builds(
    now: StepReport,
    then: StepReport,
    now_facts: BuildFacts,
    then_facts: BuildFacts,
    now_job: str = "",
    then_job: str = "",
) -> BuildDiff:
    """Compare `now` with its baseline `then` (see the module doc)."""
    a, b = _keyed(then.steps), _keyed(now.steps)
    changes = []
    for key, s in b.items():
        old = a.get(key)
        changes.append(
            StepChange(
                key, s.name, old.run if old else None, old.cached if old else None, s.run, s.cached
            )
        )
    for key, old in a.items():
        if key not in b:
            changes.append(StepChange(key, old.name, old.run, old.cached, None, None))
    by_key = {c.key: c for c in changes}
    first = None
    for key, s in b.items():  # now's steps come ordered by start
        if _dockerfile_step(s.name) and not s.cached and s.start is not None:
            first = by_key[key]
            break
    reasons: list[Reason] = []
    if first is not None:
        reasons += _differ("build arg", then_facts.args, now_facts.args)
        reasons += _differ("bake variable", then_facts.variables, now_facts.variables)
        reasons += _differ("material", then_facts.materials, now_facts.materials)
        reasons = [
            Reason(x.kind, x.name, x.then, x.now, bool(x.now) and str(x.now) in first.name)
            for x in reasons
        ]
        reasons.sort(key=lambda x: not x.in_step)
        rates = then_facts.hit_rate, now_facts.hit_rate
        if (
            rates[0] is not None
            and rates[1] is not None
            and abs(rates[0] - rates[1]) >= HIT_RATE_MOVE
        ):
            reasons.append(
                Reason("sccache", "hit rate", f"{rates[0] * 100:.0f}%", f"{rates[1] * 100:.0f}%")
            )
    compared = tuple(k for k in then_facts.known if k in now_facts.known)
    return BuildDiff(
        now_job, then_job, tuple(changes), first, tuple(reasons), compared, now.span, then.span
    )


__all__ = ["BuildDiff", "Reason", "StepChange", "diff_builds", "step_key"]
