"""The monitor's Prometheus metrics: built once per probe round, served from memory.

A scrape never waits for a round, a slow engine or the job store: after each round the monitor
renders the exposition text once (`MetricsBook.update`), and a scrape sends those bytes plus the
few lines that depend on the moment (the snapshot's age, consoles attached, process figures).

Names follow Prometheus' conventions: `rocmtui_` first, the unit last (`_seconds`), counters end
in `_total`, a state is one gauge per state word (`state="down"` is 1, the others 0), and every
label's values are bounded by the fleet and bake files (node, service, target, arch, state):
never a job id, a digest or a message; a build started elsewhere whose target, arch or node the
files do not name is counted as `other` (`labels.LabelBounds`). README.md lists them all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence

from msgspec import Struct
from prometheus_client import ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor.costmetrics import DurationHistogram, duration_family
from rocmtui.core.hostmonitor.jobsview import JobsView
from rocmtui.core.hostmonitor.labels import LabelBounds
from rocmtui.core.hostmonitor.vitalsmetrics import vitals_families
from rocmtui.core.jobs.overlay import state_with_jobs
from rocmtui.core.snapshots import FleetSnapshot, ServiceSnapshot
from rocmtui.core.states import JobState, NodeState, ServiceState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NODE_STATES = tuple(str(s) for s in NodeState)
SERVICE_STATES = tuple(str(s) for s in ServiceState)
BUILDER_STATES = ("running", "inactive", "stopped", "error", "unknown")  # buildx's words
FINISHED_STATES = tuple(str(s) for s in JobState if s.finished)


class MonitorFigures(Struct, frozen=True):
    """The monitor's own counts at the end of a round."""

    rounds: int
    failed_rounds: int
    started_at: float


class _Families:
    """Metric families as a collector (what `generate_latest` renders)."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def _gauge(name: str, doc: str, labels: Sequence[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


def _states(
    family: GaugeMetricFamily, head: Sequence[str], states: Sequence[str], now: str
) -> None:
    for state in states:
        family.add_metric([*head, state], 1.0 if state == now else 0.0)


def node_families(snapshot: FleetSnapshot, jobs: JobsView) -> list[Metric]:
    """Node, engine and builder state; builds running and stalled per node."""
    state = _gauge(
        "rocmtui_node_state",
        "Node state (1 for the current one): ok, building, "
        "stalled, down, unknown; building and stalled come from the job store",
        ["node", "state"],
    )
    up = _gauge(
        "rocmtui_node_engine_up", "1 when the node's engine answered the last probe", ["node"]
    )
    latency = _gauge(
        "rocmtui_node_engine_latency_seconds", "How long the engine took to answer", ["node"]
    )
    last_ok = _gauge(
        "rocmtui_node_last_ok_timestamp_seconds",
        "When the engine last answered (Unix time)",
        ["node"],
    )
    info = _gauge(
        "rocmtui_node_info",
        "The node's GPU arch, engine and BuildKit versions",
        ["node", "gfx", "engine_version", "buildkit_version"],
    )
    builder = _gauge(
        "rocmtui_builder_state",
        "The node's buildx builder status (1 for the current one); unknown when there is no answer",
        ["node", "state"],
    )
    builds = _gauge(
        "rocmtui_builds_active",
        "Builds running now, by node and state (running, stalled)",
        ["node", "state"],
    )
    silent = _gauge(
        "rocmtui_build_last_output_age_seconds",
        "Seconds since the log of the node's most silent running build last grew",
        ["node"],
    )
    verdicts = _gauge(
        "rocmtui_builds_silent",
        "Builds silent past stall_after_seconds, by node and verdict (busy: quiet, still "
        "building; idle, io, memory, disk, link, no-evidence, busy-too-long: stalled)",
        ["node", "verdict"],
    )
    by_node: dict[str, list[tuple[bool, float | None]]] = {}
    kinds: dict[tuple[str, str], int] = {}
    for build in jobs.active:
        by_node.setdefault(build.node, []).append((build.stalled, build.silent))
        if build.verdict is not None:
            kinds[(build.node, build.verdict)] = kinds.get((build.node, build.verdict), 0) + 1
    for (name, kind), count in sorted(kinds.items()):
        verdicts.add_metric([name, kind], float(count))
    for node in snapshot.nodes:
        mine = by_node.get(node.name, [])
        now = state_with_jobs(node.state, bool(mine), any(s for s, _ in mine))
        _states(state, [node.name], NODE_STATES, str(now))
        answered = node.state not in (NodeState.DOWN, NodeState.UNKNOWN)
        up.add_metric([node.name], 1.0 if answered else 0.0)
        if node.latency is not None:
            latency.add_metric([node.name], node.latency)
        if node.last_ok_at is not None:
            last_ok.add_metric([node.name], node.last_ok_at)
        kit = node.builder.buildkit_version if node.builder else None
        info.add_metric([node.name, node.gfx or "", node.engine_version or "", kit or ""], 1.0)
        word = (node.builder.status or "").lower() if node.builder else "unknown"
        _states(builder, [node.name], BUILDER_STATES, word if word in BUILDER_STATES else "unknown")
    # every configured node has its zeros (absent is not 0 in PromQL); a job on a node no
    # longer in the fleet file is counted too
    configured = [n.name for n in snapshot.nodes]
    names = configured + sorted(set(by_node) - set(configured))
    for name in names:
        mine = by_node.get(name, [])
        stalled = sum(1 for s, _ in mine if s)
        builds.add_metric([name, "running"], float(len(mine) - stalled))
        builds.add_metric([name, "stalled"], float(stalled))
        ages = [age for _, age in mine if age is not None]
        if ages:
            silent.add_metric([name], max(ages))
    return [state, up, latency, last_ok, info, builder, builds, silent, verdicts]


def service_families(snapshot: FleetSnapshot) -> list[Metric]:
    """The registry's and WebDAV's health."""
    up = _gauge(
        "rocmtui_service_up", "1 unless the service is down (no answer, or refused)", ["service"]
    )
    state = _gauge(
        "rocmtui_service_state",
        "Service state (1 for the current one): ok, auth, slow, degraded, down",
        ["service", "state"],
    )
    latency = _gauge(
        "rocmtui_service_latency_seconds", "How long the service took to answer", ["service"]
    )
    status = _gauge(
        "rocmtui_service_http_status", "The HTTP status of the service's answer", ["service"]
    )
    last_ok = _gauge(
        "rocmtui_service_last_ok_timestamp_seconds",
        "When the service last answered well (Unix time)",
        ["service"],
    )
    services: tuple[ServiceSnapshot, ...] = (snapshot.registry, snapshot.webdav)
    for svc in services:
        up.add_metric([svc.kind], 0.0 if svc.state is ServiceState.DOWN else 1.0)
        _states(state, [svc.kind], SERVICE_STATES, str(svc.state))
        if svc.latency is not None:
            latency.add_metric([svc.kind], svc.latency)
        if svc.http_status is not None:
            status.add_metric([svc.kind], float(svc.http_status))
        if svc.last_ok_at is not None:
            last_ok.add_metric([svc.kind], svc.last_ok_at)
    return [up, state, latency, status, last_ok]


def job_families(jobs: JobsView) -> list[Metric]:
    """Outcomes on record, and the last job of each target and arch (its cache hit rate too)."""
    store_up = _gauge("rocmtui_job_store_up", "1 when the job store could be read")
    store_up.add_metric([], 0.0 if jobs.error else 1.0)
    finished = CounterMetricFamily(
        "rocmtui_jobs_finished",
        "Jobs on record that ended, by target, arch, node and state (succeeded, failed, "
        "cancelled, lost)",
        labels=["target", "arch", "node", "state"],
    )
    for o in sorted(jobs.outcomes, key=lambda o: (o.target, o.arch, o.node, o.state)):
        finished.add_metric([o.target, o.arch, o.node, o.state], float(o.count))
    last_state = _gauge(
        "rocmtui_job_last_state",
        "State of the last finished job of a target "
        'and arch (1 for its state), for jobs that pushed (push="true") and '
        "jobs that did not",
        ["target", "arch", "push", "state"],
    )
    duration = _gauge(
        "rocmtui_job_last_duration_seconds",
        "How long the last finished job of a target and arch ran",
        ["target", "arch"],
    )
    ended = _gauge(
        "rocmtui_job_last_end_timestamp_seconds",
        "When the last finished job of a target and arch ended (Unix time)",
        ["target", "arch"],
    )
    latest: dict[tuple[str, str], tuple[float, float]] = {}
    for job in sorted(jobs.last, key=lambda j: (j.target, j.arch, j.push)):
        push = "true" if job.push else "false"
        _states(last_state, [job.target, job.arch, push], FINISHED_STATES, job.state)
        key = (job.target, job.arch)
        if key not in latest or job.ended_at > latest[key][0]:
            latest[key] = (job.ended_at, job.duration)
    for (target, arch), (end, took) in sorted(latest.items()):
        duration.add_metric([target, arch], took)
        ended.add_metric([target, arch], end)
    hits = _gauge(
        "rocmtui_job_last_sccache_hit_ratio",
        "sccache hits per looked-up compile (0 to 1) in the last finished job of a target and "
        "arch whose log reported sccache statistics",
        ["target", "arch"],
    )
    for rate in sorted(jobs.cache, key=lambda r: (r.target, r.arch)):
        hits.add_metric([rate.target, rate.arch], rate.ratio)
    return [store_up, finished, last_state, duration, ended, hits]


def round_families(
    config: FleetConfig, snapshot: FleetSnapshot, figures: MonitorFigures, version: str
) -> list[Metric]:
    """The monitor itself: its rounds, its snapshot's time, its settings."""
    info = _gauge(
        "rocmtui_monitor_info", "The monitor's version and fleet file", ["version", "fleet"]
    )
    info.add_metric([version, str(config.source or "built-in default")], 1.0)
    started = _gauge("rocmtui_monitor_start_timestamp_seconds", "When the monitor started")
    started.add_metric([], figures.started_at)
    taken = _gauge("rocmtui_snapshot_timestamp_seconds", "When the latest snapshot was taken")
    taken.add_metric([], snapshot.taken_at)
    took = _gauge("rocmtui_probe_round_duration_seconds", "How long the latest probe round took")
    took.add_metric([], snapshot.duration)
    rounds = CounterMetricFamily("rocmtui_probe_rounds", "Probe rounds completed")
    rounds.add_metric([], float(figures.rounds))
    failed = CounterMetricFamily("rocmtui_probe_round_failures", "Probe rounds that raised")
    failed.add_metric([], float(figures.failed_rounds))
    refresh = _gauge("rocmtui_refresh_interval_seconds", "The fleet file's refresh_seconds")
    refresh.add_metric([], config.refresh_seconds)
    stall = _gauge("rocmtui_stall_threshold_seconds", "The fleet file's stall_after_seconds")
    stall.add_metric([], config.stall_after_seconds)
    return [info, started, taken, took, rounds, failed, refresh, stall]


class MetricsBook:
    """The exposition text of the latest round, and the moment's lines added at scrape time."""

    def __init__(self, config: FleetConfig, version: str) -> None:
        self.config = config
        self.version = version
        self._lock = threading.Lock()
        self._text = b""
        self._taken_at: float | None = None
        self._process = ProcessCollector(registry=None)
        self._bounds: LabelBounds | None = None

    def update(
        self,
        snapshot: FleetSnapshot,
        jobs: JobsView,
        figures: MonitorFigures,
        costs: Sequence[DurationHistogram] = (),
    ) -> None:
        """Render a finished round's metrics (once; every scrape until the next reuses them),
        with the labels of the job store and the history bounded by the fleet and bake files."""
        bounds = self._bounds = LabelBounds.read(self.config, self._bounds)
        jobs, costs = bounds.jobs(jobs), bounds.costs(costs)
        families = [
            *node_families(snapshot, jobs),
            *vitals_families(snapshot),
            *service_families(snapshot),
            *job_families(jobs),
            duration_family(costs),
            *round_families(self.config, snapshot, figures, self.version),
        ]
        text = generate_latest(_Families(families))
        with self._lock:
            self._text, self._taken_at = text, snapshot.taken_at

    def exposition(self, consoles: int, now: float | None = None) -> bytes:
        """What a scrape answers: the round's text and the moment's lines."""
        now = time.time() if now is None else now
        with self._lock:
            text, taken_at = self._text, self._taken_at
        age = _gauge(
            "rocmtui_snapshot_age_seconds",
            "Seconds since the latest snapshot was taken, at scrape time",
        )
        if taken_at is not None:
            age.add_metric([], max(0.0, now - taken_at))
        attached = _gauge("rocmtui_consoles_attached", "Consoles attached to the monitor now")
        attached.add_metric([], float(consoles))
        moment = _Families([age, attached, *self._process.collect()])
        return text + generate_latest(moment)
