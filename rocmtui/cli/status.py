"""`rocmtui status [--json]`: one probe round of the fleet, for people or for scripts.

Exit 0 when every node and both services are healthy, 1 when anything is not, 2 for a usage
or fleet-file error (raised as ConfigError and reported by `rocmtui.cli.main`). The table view
imports rich only when it is drawn; the JSON view is `snapshotviews.snapshot_json`. Textual is
never imported.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, config_from
from rocmtui.core.states import NODE_SYMBOLS, SERVICE_SYMBOLS, NodeState
from rocmtui.core.text.units import fmt_age, fmt_bytes, fmt_latency, fmt_seconds

if TYPE_CHECKING:  # the probes are imported by `run`: `rocmtui completion` builds this
    # parser too, and must not pay for asyncio and the probe stack (~60 ms)
    from collections.abc import Sequence

    from rich.table import Table
    from rich.text import Text

    from rocmtui.core.config.fleetfile import FleetConfig
    from rocmtui.core.hostmonitor.client import MonitorStatus
    from rocmtui.core.jobs.overlay import NodeJobOverlay
    from rocmtui.core.probes.round import Probers
    from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot, ServiceSnapshot

STATE_STYLES = {
    "ok": "green",
    "building": "cyan",
    "stalled": "yellow",
    "down": "bold red",
    "unknown": "magenta",
    "auth": "yellow",
    "slow": "yellow",
    "degraded": "yellow",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `status` subcommand."""
    parser = sub.add_parser(
        "status",
        help="probe every node, the registry and WebDAV once",
        description="Probe every node, the registry and WebDAV once. Exit 0 when all is "
        "healthy, 1 when anything is not, 2 for a usage or fleet-file error.",
    )
    parser.add_argument("--json", action="store_true", help="print the snapshot as JSON")


def run(args: argparse.Namespace) -> int:
    """Probe once and print; the exit code says whether the fleet is healthy."""
    # on first use: kept off `--help`
    import asyncio

    # on first use: kept off `--help`
    from rocmtui.core.jobs.overlay import NodeJobOverlay

    config = config_from(args)
    preload(config)
    overlay = NodeJobOverlay(config)
    snapshot, monitor = asyncio.run(probe_and_ask(config, overlay))
    snapshot = with_job_problems(snapshot, overlay)
    if args.json:
        # start-up: the JSON views (msgspec) are not for `status --help` or the table
        from rocmtui.core.jobs.views import record_json
        from rocmtui.core.snapshotviews import snapshot_json

        builds = [record_json(job) for jobs in overlay.all_active().values() for job in jobs]
        report = {**snapshot_json(snapshot), "monitor": monitor.to_json(), "builds": builds}
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render(snapshot, monitor_line=monitor.line(), quiet=quiet_lines(overlay))
    sys.stdout.flush()
    return EXIT_OK if snapshot.healthy else EXIT_UNHEALTHY


async def probe_and_ask(
    config: FleetConfig, overlay: NodeJobOverlay
) -> tuple[FleetSnapshot, MonitorStatus]:
    """One probe round, and meanwhile whether the fleet file's monitor runs (and how old its
    snapshot is): it answers within a second or counts as not answering."""
    # on first use: kept off `--help`
    import asyncio

    # on first use: kept off `--help`
    from rocmtui.core.history.discover import HistoryWatch
    from rocmtui.core.hostmonitor.client import query
    from rocmtui.core.probes.round import Probers, probe_fleet

    asking = asyncio.ensure_future(asyncio.to_thread(query, config))
    # builds started elsewhere: every node's BuildKit history asked once, now
    watch = (
        HistoryWatch(config, interval=0, local=None, finished_per_look=0)
        if config.watch_history
        else None
    )
    # two readings of each node's vitals half a second apart: CPU figures in one probe
    probers = Probers(history=watch, history_now=watch is not None, vitals_window=VITALS_WINDOW)
    snapshot = await probe_fleet(
        config, deadline=probe_budget(config), node_overlay=overlay, probers=probers
    )
    # a look at history that outlived the round (a slow ssh link): its builds still count
    if watch is not None and await watch.settle(HISTORY_SETTLE):
        overlay.invalidate()
        snapshot = replace(snapshot, nodes=tuple(overlay.again(n) for n in snapshot.nodes))
    snapshot = await judged_again(config, snapshot, overlay, probers)
    return snapshot, await asking


async def judged_again(
    config: FleetConfig, snapshot: FleetSnapshot, overlay: NodeJobOverlay, probers: Probers
) -> FleetSnapshot:
    """A round's first vitals have no rates (a CPU percentage needs two readings): the nodes
    with a silent build are read once more through the round's own sources and kept ssh
    connections, a second after the first, and their builds judged again with it (so a
    silent build adds up to 1 s and the round's deadline to `status`)."""
    # on first use: kept off `--help`
    import asyncio

    # on first use: kept off `--help`
    from rocmtui.core.verdicts.oneshot import read_again

    names = overlay.silent_nodes()
    if not names or probers.vitals is None:
        return snapshot
    prober = probers.vitals
    nodes = {n.name: n for n in config.nodes}
    # read again even when the round's two readings gave a rate: half a second of a loaded
    # host is a noisy sample of a busy build, and a second one a second later steadies it
    wanted = [n for n in snapshot.nodes if n.name in names and n.name in nodes]

    async def again(snap: NodeSnapshot) -> NodeSnapshot:
        # its own deadline, the round's: what is left of the command's budget after the round
        # is too short for an ssh read on a loaded host
        deadline = config.probe_deadline_seconds
        vitals = await read_again(prober, nodes[snap.name], snap.vitals, deadline)
        return overlay.again(replace(snap, vitals=vitals)) if vitals is not None else snap

    fresh = {s.name: s for s in await asyncio.gather(*(again(s) for s in wanted))}
    return replace(snapshot, nodes=tuple(fresh.get(n.name, n) for n in snapshot.nodes))


def with_job_problems(snapshot: FleetSnapshot, overlay: NodeJobOverlay) -> FleetSnapshot:
    """The snapshot with one problem line per stalled job: the fleet is not healthy while a
    build is stalled, even on a node that is down or not in this fleet file. The jobs come
    from the overlay's read of the store, the one the node states were laid from."""
    # on first use: kept off `--help`
    from rocmtui.core.text.sanitize import one_line

    stalled = overlay.stalled_jobs()
    if overlay.error is not None:  # an unreadable job store is reported, not fatal
        return replace(
            snapshot,
            problems=(*snapshot.problems, f"job store unreadable: {one_line(overlay.error)}"),
        )
    lines = tuple(
        one_line(f"job {job.id} ({job.target} {job.arch} on {job.node}) is stalled")
        for job in stalled
    )
    return replace(snapshot, problems=(*snapshot.problems, *lines))


def quiet_lines(overlay: NodeJobOverlay) -> list[str]:
    """One line per quiet build (silent past the threshold, its node busy): not a problem,
    but said, with the verdict's reason."""
    # on first use: kept off `--help`
    from rocmtui.core.text.sanitize import one_line

    return [
        one_line(f"job {j.id} ({j.target} {j.arch} on {j.node}) is quiet: {j.verdict_line}")
        for jobs in overlay.all_active().values()
        for j in jobs
        if j.quiet
    ]


def preload(config: FleetConfig) -> None:
    """Import what the round will need before it starts (the probes import lazily so the
    console's loop never waits on an import; a one-shot command has no loop to protect), so
    the round's `duration` measures probing, not importing."""
    import httpx  # noqa: F401

    # httpx loads its transport (httpcore) and anyio's asyncio backend only on first use
    with contextlib.suppress(ImportError):
        import anyio._backends._asyncio  # noqa: F401
        import httpcore  # noqa: F401
    if config.nodes:
        import docker  # noqa: F401
    if any(node.local for node in config.nodes):
        import psutil  # noqa: F401


HISTORY_SETTLE = 5.0  # seconds status waits for a look at build history past its round
EXIT_RESERVE = 0.15  # seconds kept for printing and interpreter exit
MAX_WORD = 40  # a column is never kept wider than this for one word


def process_age() -> float:
    """Seconds since this process started (from /proc; 0.0 where that is not readable)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


VITALS_WINDOW = 0.5  # seconds between a node's two vitals readings (its CPU rates)


def probe_budget(config: FleetConfig) -> float:
    """The probe deadline counted from the command's start, so `rocmtui status` as a whole
    answers within the fleet file's `probe_deadline_seconds` (never less than half of it is
    left to the probes, however slow the start-up was)."""
    deadline = config.probe_deadline_seconds
    return max(deadline / 2, deadline - process_age() - EXIT_RESERVE)


def _state(word: str, symbol: str) -> Text:
    # on first use: kept off `--help`
    from rich.text import Text

    return Text(f"{symbol} {word}", style=STATE_STYLES.get(word, ""), no_wrap=True)


def _reason(snap: NodeSnapshot, now: float) -> str:
    reason = snap.reason or ""
    if snap.failed_step and reason:  # which step of reaching it failed: dns, connect ...
        reason = f"{snap.failed_step}: {reason}"
    if snap.state is NodeState.DOWN:
        since = f"down for {fmt_age(now - snap.down_since)}" if snap.down_since else ""
        last = f"last ok {fmt_age(now - snap.last_ok_at)} ago" if snap.last_ok_at else ""
        extra = ", ".join(x for x in (since, last) if x and snap.down_since != snap.probed_at)
        return f"{reason} ({extra})" if extra else reason
    if snap.builder is not None and snap.builder.error:
        return reason or f"builder: {snap.builder.error}"
    return reason


def _service_detail(svc: ServiceSnapshot) -> str:
    parts = [svc.identity] if svc.identity else []
    if svc.repositories is not None:
        parts.append(f"{svc.repositories} repos")
    parts += [f"{name} {word}" for name, word in svc.extras]
    return ", ".join(parts) or "—"


def _host_line(snapshot: FleetSnapshot) -> str | None:
    h = next((n.host for n in snapshot.nodes if n.host is not None), None)
    if h is None:  # every local node is this one machine: one line is enough
        return None
    # a one-shot probe has no CPU window long enough to mean something (probes/host.py)
    cpu = f"{h.cpu_count} cpus"
    if h.cpu_percent is not None:
        cpu = f"cpu {h.cpu_percent:.0f}% of {h.cpu_count}"
    return (
        f"this host: {cpu} · mem {h.mem_percent:.0f}% "
        f"({fmt_bytes(h.mem_used)} of {fmt_bytes(h.mem_total)}) · load {h.load1:.2f} "
        f"{h.load5:.2f} {h.load15:.2f} · disk {h.disk_percent:.0f}% used on {h.disk_path} "
        f"({fmt_bytes(h.disk_free)} free)"
    )


def _add_rows(table: Table, rows: Sequence[Sequence[Text]]) -> None:
    """Add `rows`, each column kept at least as wide as its longest word (its whole text when
    it does not wrap): a narrow terminal then wraps cells at their spaces, and no version, URL
    or age is cut in the middle (rich folds anywhere once a column is narrower than a word)."""
    # on first use: kept off `--help`
    from rich.cells import cell_len

    for i, column in enumerate(table.columns):
        texts = [str(column.header), *(row[i].plain for row in rows)]
        words = texts if column.no_wrap else [w for text in texts for w in text.split()]
        column.min_width = min(MAX_WORD, max(cell_len(w) for w in words))
    for row in rows:
        table.add_row(*row)


def render(
    snapshot: FleetSnapshot,
    now: float | None = None,
    width: int | None = None,
    monitor_line: str | None = None,
    quiet: Sequence[str] = (),
) -> None:
    """Print the snapshot as tables (rich; every cell is Text, never markup); `quiet`: a line
    per quiet build (`quiet_lines`).

    Reasons go under each table rather than in a column, so the tables fit 80 columns.
    Piped output is drawn 160 columns wide so nothing is cut in a log or a cron mail.
    """
    # on first use: kept off `--help`
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    now = time.time() if now is None else now
    console = Console(highlight=False, soft_wrap=False, width=width)
    if width is None and not console.is_terminal:
        console.width = 160

    def table(title: str, columns: tuple[str, ...]) -> Table:
        t = Table(
            title=title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,  # two spaces between columns: the tables fit 80 columns
        )
        for column in columns:
            fixed = column in ("state", "latency", "age", "gfx", "via")
            t.add_column(column, no_wrap=fixed, overflow="fold")
        return t

    nodes = table(
        "Nodes", ("node", "gfx", "via", "state", "engine · buildkit", "builder", "latency", "age")
    )
    reasons: list[Text] = []
    rows: list[tuple[Text, ...]] = []
    for n in snapshot.nodes:
        buildkit = n.builder.buildkit_version if n.builder else None
        engine = " · ".join(x for x in (n.engine_version, buildkit) if x) or "—"
        builder = f"{n.builder.name} {n.builder.status}" if n.builder else "—"
        rows.append(
            (
                Text(n.name),
                Text(n.gfx or "—"),
                Text(n.via or "—"),
                _state(str(n.state), NODE_SYMBOLS.get(n.state, "?")),
                Text(engine),
                Text(builder),
                Text(fmt_latency(n.latency)),
                Text(fmt_age(n.age(now))),
            )
        )
        why = _reason(n, now)
        if why:
            reasons.append(Text(f"  {NODE_SYMBOLS.get(n.state, '?')} {n.name}: {why}"))
        if n.api_note:
            reasons.append(Text(f"  {NODE_SYMBOLS.get(n.state, '?')} {n.name}: {n.api_note}"))
        if n.history_note:
            reasons.append(Text(f"  · {n.name}: {n.history_note}"))
        if n.vitals is not None:
            # on first use: kept off `--help`
            from rocmtui.core.text.sanitize import one_line
            from rocmtui.core.vitals.summary import summary

            reasons.append(Text(f"  · {n.name}: {summary(n.vitals, now)}"))
            if n.vitals.error:
                reasons.append(Text(f"  · {n.name}: {one_line(n.vitals.error)}"))
    _add_rows(nodes, rows)
    if rows:
        console.print(nodes)
    else:
        console.print(Text("Nodes: none (the fleet file has no [[nodes]] entry)"))
    for line in reasons:
        console.print(line)
    host = _host_line(snapshot)
    if host:
        console.print(Text(host))
    console.print()
    services = table("Services", ("service", "url", "state", "latency", "detail", "age"))
    reasons, rows = [], []
    for svc in (snapshot.registry, snapshot.webdav):
        rows.append(
            (
                Text(svc.kind),
                Text(svc.url),
                _state(str(svc.state), SERVICE_SYMBOLS.get(svc.state, "?")),
                Text(fmt_latency(svc.latency)),
                Text(_service_detail(svc)),
                Text(fmt_age(svc.age(now))),
            )
        )
        if svc.reason:
            symbol = SERVICE_SYMBOLS.get(svc.state, "?")
            http = f" (HTTP {svc.http_status})" if svc.http_status else ""
            reasons.append(Text(f"  {symbol} {svc.kind}: {svc.reason}{http}"))
    _add_rows(services, rows)
    console.print(services)
    for line in reasons:
        console.print(line)
    for said in quiet:
        console.print(Text(f"  {NODE_SYMBOLS[NodeState.BUILDING]} {said}"))
    for problem in snapshot.problems:
        console.print(Text(f"  {NODE_SYMBOLS[NodeState.STALLED]} {problem}", style="bold yellow"))
    if monitor_line:
        console.print(Text(monitor_line))
    verdict = "healthy" if snapshot.healthy else "NOT healthy"
    style = "green" if snapshot.healthy else "bold red"
    console.print(Text(f"{verdict} · probed in {fmt_seconds(snapshot.duration)}", style=style))
