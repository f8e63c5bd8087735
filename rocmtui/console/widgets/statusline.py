"""The fleet screen's status line, as text: the fleet file, the bake file, the fleet's health
and the age of its verdict, what is building, and what the operator must know (late probes, a
full state disk, probe rounds that raised, where rounds come from, read-only).

    rocmtui  fleet.toml · demo.hcl ·  healthy  · 1 building · probed 2s ago · shared monitor

`StatusFacts` is what the line says (the fleet screen gathers it); `status_line()` words it.
"""

from __future__ import annotations

import os

from msgspec import Struct
from rich.text import Text

from rocmtui.console.backend.names import MONITOR, bake_file_count
from rocmtui.console.backend.names import monitor_log as log_path
from rocmtui.console.backend.views import JobView
from rocmtui.console.outside_text import clean
from rocmtui.console.widgets.common import Palette
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.states import JobState
from rocmtui.core.text.units import fmt_age


class StatusFacts(Struct, frozen=True):
    """What the status line says, at `now`."""

    config: FleetConfig
    now: float
    fleet: FleetSnapshot | None
    round_at: float | None  # when the last whole round was taken: the verdict's age
    jobs: tuple[JobView, ...]
    source: str  # where rounds come from: "monitor" (the host's), "own", "" before any
    monitor_lost: bool  # the host's monitor went away; this console probes meanwhile
    read_only: bool


def status_line(facts: StatusFacts, palette: Palette) -> Text:
    """One line: fleet file, health summary, age of the fleet's verdict, read-only.

    While a round waits on a slow engine, the fleet's verdict and its age stay as the last
    whole round left them: the line says "waiting for" only targets that have never answered
    (the first round), never flips between a verdict and "waiting" on every refresh."""
    config, fleet = facts.config, facts.fleet
    line = Text()
    line.append(" rocmtui ", style="bold reverse")
    if facts.read_only:  # first: at 80 columns the line's end is cut
        line.append(" READ-ONLY ·", style=palette.warn)
    line.append(" " + clean(config.source.name if config.source else "built-in default", 60))
    line.append(" · " + bake_label(config), style=palette.muted)
    if fleet is None:
        line.append(" · waiting for the first probe round…", style=palette.muted)
    else:
        taken = facts.round_at if facts.round_at is not None else fleet.taken_at
        age = facts.now - taken
        late = age > 3 * config.refresh_seconds + config.probe_deadline_seconds
        stalled = [j for j in facts.jobs if j.record.state == JobState.STALLED]
        word, style = ("healthy", palette.good) if fleet.healthy else ("attention", palette.bad)
        if stalled:
            word, style = f"{len(stalled)} stalled", palette.alarm
        line.append(" · ")
        line.append(f" {word} ", style=style)
        running = sum(1 for j in facts.jobs if j.active)
        line.append(f" · {running} building")
        if fleet.pending:  # never answered yet (the first round): nothing else to say of them
            waiting = ", ".join(clean(name, 30) for name in fleet.pending[:3])
            more = f" and {len(fleet.pending) - 3} more" if len(fleet.pending) > 3 else ""
            line.append(f" · waiting for {waiting}{more}", style=palette.muted)
        else:
            line.append(f" · probed {fmt_age(age)} ago")
        if late:
            line.append(" (late: probes are not answering)", style=palette.warn)
        full = state_disk_full(fleet, config.disk_warn_percent)
        if full is not None:  # builds' logs and outcomes live there
            line.append(f" · state disk {full:.0f}% full", style=palette.bad)
        if fleet.failed_rounds:
            rounds = "round" if fleet.failed_rounds == 1 else "rounds"
            line.append(
                f" · {fleet.failed_rounds} probe {rounds} failed: why in {monitor_log(config)}",
                style=palette.warn,
            )
    if facts.source == MONITOR:
        line.append(" · shared monitor", style=palette.muted)
    elif facts.monitor_lost:
        line.append(" · monitor gone: probing here", style=palette.warn)
    return line


def bake_label(config: FleetConfig) -> str:
    """Which bake file the console read: its name, `(demo)` for the project's own, a folder's
    name and how many of bake's files it merged, `no bake file` when the built-in default found
    none; `+ compose not read` when bake would also read a compose file there."""
    if config.bake_problem and not config.bake_file.exists():
        return "no bake file"
    demo = " (demo)" if config.bake_found_by.startswith("the project's demo") else ""
    compose = " + compose not read" if "compose" in config.bake_found_by else ""
    path = config.bake_file
    if path.is_dir():  # several of bake's default files, merged as bake merges them
        count = bake_file_count(path)
        return f"{clean(path.name, 30)}/ ({count} bake files){compose}"
    return f"{clean(path.name, 40)}{demo}{compose}"  # .hcl says what it is: 80 columns


def monitor_log(config: FleetConfig) -> str:
    """The monitor process's log, as short as the home folder allows."""
    path = str(log_path(config))
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "/" and path.startswith(home + "/") else path


def state_disk_full(fleet: FleetSnapshot, warn_at: float) -> float | None:
    """How full the local node's disk (the state folder's) is, once it is `warn_at` percent
    full or more; None below that, or when no reading makes sense (the status line must
    never fail on a round a panel could not show)."""
    for node in fleet.nodes:
        used = node.host.disk_percent if node.host else None
        if isinstance(used, int | float) and used >= warn_at:
            return float(used)
    return None
