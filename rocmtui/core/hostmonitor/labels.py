"""Label values the monitor's metrics may carry: bounded by the fleet and bake files.

The job store and the build history hold builds started elsewhere too, named by their record
(a name any client of the builder sets) or their ref: exported as they are, every such name
is a new series in every scraper, for good. So a target outside the bake file, an arch that
neither the bake file nor the fleet file names, and a node outside the fleet file are all
`other`, their figures folded together (counts added, the newest of the "last" kind kept);
the fleet's own keep their names. The bounds are read in the metrics' render thread, from the
bake file as `load_bake` caches it (a few stat() calls a round when nothing changed).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from msgspec import Struct
from msgspec.structs import replace

from rocmtui.core.bake.file import load_bake
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor.costmetrics import DurationHistogram
from rocmtui.core.hostmonitor.jobsview import CacheRate, JobsView, LastJob, Outcomes

OTHER = "other"
NO_ARCH = ("", "none")  # a build for no particular arch, as the store and the history say it
log = logging.getLogger(__name__)


class LabelBounds(Struct, frozen=True):
    """The targets, arches and nodes that keep their own series; anything else is `other`."""

    targets: frozenset[str] = frozenset()
    arches: frozenset[str] = frozenset(NO_ARCH)
    nodes: frozenset[str] = frozenset()
    error: str | None = None  # why the bake file could not be read (logged when it changes)

    @classmethod
    def read(cls, config: FleetConfig, previous: LabelBounds | None = None) -> LabelBounds:
        """The bounds of the fleet file and its bake file now; when the bake file cannot be
        read, its targets and arches as last read (none the first time: all `other`)."""
        targets = previous.targets if previous else frozenset()
        arches = set(previous.arches if previous else NO_ARCH)
        error = None
        try:
            bake = load_bake(config.bake_file)
            targets = frozenset(bake.targets)
            arches = {*NO_ARCH, *(a.strip() for a in bake.arches)}
        except Exception as exc:  # a bake file being edited: keep the last bounds, say why
            error = str(exc).splitlines()[0] if str(exc) else repr(exc)
            if previous is None or error != previous.error:
                log.warning(
                    "metrics: targets outside the last bake file read are 'other': %s", error
                )
        arches |= {n.gfx for n in config.nodes if n.gfx}
        nodes = frozenset(n.name for n in config.nodes)
        return cls(targets, frozenset(arches), nodes, error)

    def target(self, value: str) -> str:
        """`value` when the bake file names it, else `other`."""
        return value if value in self.targets else OTHER

    def arch(self, value: str) -> str:
        """`value` when the bake or fleet file names it, else `other`."""
        return value if value in self.arches else OTHER

    def node(self, value: str) -> str:
        """`value` when the fleet file names it, else `other`."""
        return value if value in self.nodes else OTHER

    def jobs(self, view: JobsView) -> JobsView:
        """The job store's view with every label bounded and the folded figures merged."""
        counts: dict[tuple[str, str, str, str], int] = {}
        for o in view.outcomes:
            key = (self.target(o.target), self.arch(o.arch), self.node(o.node), o.state)
            counts[key] = counts.get(key, 0) + o.count
        last: dict[tuple[str, str, bool], LastJob] = {}
        for job in view.last:
            bounded = replace(job, target=self.target(job.target), arch=self.arch(job.arch))
            pair = (bounded.target, bounded.arch, bounded.push)
            if pair not in last or bounded.ended_at > last[pair].ended_at:
                last[pair] = bounded
        cache: dict[tuple[str, str], CacheRate] = {}
        for rate in view.cache:  # a folded pair keeps the first rate read (one job's)
            bounded_rate = replace(rate, target=self.target(rate.target), arch=self.arch(rate.arch))
            cache.setdefault((bounded_rate.target, bounded_rate.arch), bounded_rate)
        return replace(
            view,
            active=tuple(replace(a, node=self.node(a.node)) for a in view.active),
            outcomes=tuple(Outcomes(*key, count) for key, count in counts.items()),
            last=tuple(last.values()),
            cache=tuple(cache.values()),
        )

    def costs(self, series: Iterable[DurationHistogram]) -> Sequence[DurationHistogram]:
        """The duration histograms with targets and arches bounded, folded ones added up."""
        found: dict[tuple[str, str, str], DurationHistogram] = {}
        for s in series:
            key = (self.target(s.target), self.arch(s.arch), s.condition)
            had = found.get(key)
            if had is None:
                found[key] = replace(s, target=key[0], arch=key[1])
            else:
                counts = tuple(a + b for a, b in zip(had.counts, s.counts, strict=True))
                found[key] = replace(had, counts=counts, total=had.total + s.total)
        return [found[key] for key in sorted(found)]
