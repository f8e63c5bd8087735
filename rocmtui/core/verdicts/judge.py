"""The rule that turns a silent build's evidence into a verdict. Pure: no clock, no I/O.

The order is the order a person would look in: a link down since the silence began explains
everything after it; an OOM kill or a full data root is a cause whatever the CPU does; then the
CPU of the engine's process tree (the RUN step's processes descend from the engine) over the
silence: busy means quiet, not stalled, until the busy threshold or the build's usual time is
passed (a spinning hang is still a hang); idle is stalled, and said as waiting on I/O when io
pressure is high. A node that gives no CPU figure leaves silence alone to decide, and the line
says so, with what the node could tell.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from rocmtui.core.text.units import fmt_bytes
from rocmtui.core.verdicts.verdict import (
    Reading,
    SilentBuild,
    Thresholds,
    Verdict,
    VerdictKind,
)
from rocmtui.core.vitals.nodevitals import NodeVitals

#: percent of one core the engine's tree must use to count as working: an idle dockerd ticks
#: at a few percent; a compiler or a linker keeps a core busy, and still gets a fifth of one on
#: a host loaded nine deep on two cores (measured on the dev machine)
BUSY_CPU = 10.0
#: /proc/pressure/io "some avg10" at or above this, CPU idle: waiting on I/O
IO_PRESSURE = 20.0
#: swap-in pages a second at or above this at the last two readings: thrashing
THRASH_PAGES = 256.0
#: a data root with less free than this (or `DISK_FLOOR_SHARE` of it, the smaller): full
DISK_FLOOR_BYTES = 512 * 1024 * 1024
DISK_FLOOR_SHARE = 0.02
#: CPU that fell idle only this recently (or `stall_after`, the smaller) is not yet a hang
IDLE_GRACE = 60.0
#: earlier builds the usual time needs before it can call a busy build overdue
MIN_USUAL_BUILDS = 3

_LINKERS = {"ld", "ld.lld", "lld", "ld.gold", "ld.bfd", "collect2", "mold"}
_COMPILERS = {"cc1", "cc1plus", "clang", "clang++", "hipcc", "gcc", "g++", "c++", "nvcc", "as"}


def span(seconds: float) -> str:
    """A silence as people say it: 8s, 1m05s, 22m, 1h10m, 2d03h."""
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _hint(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    if base in _LINKERS or base.startswith("ld."):
        return " (linking?)"
    if base in _COMPILERS or base.startswith("clang"):
        return " (compiling?)"
    return ""


def _cpu(v: NodeVitals) -> tuple[float, bool] | None:
    """The engine tree's CPU, else the host's (flagged), else None."""
    if v.engine_cpu_percent is not None:
        return v.engine_cpu_percent, False
    if v.host_cpu_percent is not None:
        return v.host_cpu_percent, True
    return None


def _disk_full(v: NodeVitals) -> bool:
    if v.data_root_free_bytes is None:
        return False
    floor = DISK_FLOOR_BYTES
    if v.data_root_total_bytes:
        floor = min(floor, int(v.data_root_total_bytes * DISK_FLOOR_SHARE))
    return v.data_root_free_bytes <= floor


def _last(values: Sequence[NodeVitals], attr: str) -> NodeVitals | None:
    return next((v for v in reversed(values) if getattr(v, attr) is not None), None)


def _what_it_told(v: NodeVitals | None) -> str:
    """The figures a node without CPU figures could give, and why the rest are missing."""
    if v is None:
        return "no vitals from any source"
    told = [f"from {v.source}"]
    if v.data_root_free_bytes is not None:
        told.append(f"data root {fmt_bytes(v.data_root_free_bytes)} free")
    if v.build_cache_bytes is not None:
        told.append(f"build cache {fmt_bytes(v.build_cache_bytes)}")
    if v.mem_used_percent is not None:
        told.append(f"mem {v.mem_used_percent:.0f}%")
    told.extend(v.missing[:3])
    if v.error:
        told.append(v.error)
    return "; ".join(told)


def judge(
    build: SilentBuild, readings: Sequence[Reading], thresholds: Thresholds, now: float
) -> Verdict:
    """The verdict on a build silent for `build.silent_seconds` (at least `stall_after`), from
    its node's `readings` (oldest first; those before the silence began are ignored)."""
    silent = build.silent_seconds
    began = now - silent
    during = [r for r in readings if r.taken_at >= began]
    if build.link_down_since is not None and build.link_down_since <= began + IDLE_GRACE:
        return Verdict(True, VerdictKind.LINK, f"link: {build.node} down, silent {span(silent)}")
    if during and all(r.unreachable for r in during):
        why = during[-1].unreachable or "no answer"
        return Verdict(
            True,
            VerdictKind.LINK,
            f"link: {build.node} unreachable since the silence began {span(silent)} ago ({why})",
        )
    vitals = [r.vitals for r in during if r.vitals is not None]
    # a rate read at the silence's first round also covers the output before it: only readings
    # whose previous one was taken in the silence say that the build kept working in it
    inside = {b.taken_at for a, b in pairwise(readings) if a.taken_at >= began}
    return _from_vitals(build, vitals, thresholds, now) or _from_cpu(
        build, vitals, thresholds, now, inside
    )


def _from_vitals(
    build: SilentBuild, vitals: Sequence[NodeVitals], thresholds: Thresholds, now: float
) -> Verdict | None:
    """A cause that stalls whatever the CPU does: an OOM kill, a full data root, thrashing."""
    silent = span(build.silent_seconds)
    oom = _last(vitals, "oom_kills_total")
    if oom is not None and build.oom_kills_at_start is not None:
        kills = (oom.oom_kills_total or 0) - build.oom_kills_at_start
        if kills > 0:
            plural = "s" if kills > 1 else ""
            return Verdict(
                True,
                VerdictKind.MEMORY,
                f"memory: {kills} OOM kill{plural} on {build.node} since the build began; "
                f"silent {silent}",
            )
    disk = _last(vitals, "data_root_free_bytes")
    if disk is not None and _disk_full(disk):
        where = disk.data_root or "the data root"
        total = fmt_bytes(disk.data_root_total_bytes) if disk.data_root_total_bytes else "?"
        return Verdict(
            True,
            VerdictKind.DISK,
            f"disk: {where} full ({fmt_bytes(disk.data_root_free_bytes)} free of {total}); "
            f"silent {silent}",
        )
    swaps = [v.swap_in_pages_per_second for v in vitals if v.swap_in_pages_per_second is not None]
    if len(swaps) >= 2 and min(swaps[-2:]) >= THRASH_PAGES:
        return Verdict(
            True,
            VerdictKind.MEMORY,
            f"memory: swapping in {swaps[-1]:.0f} pages/s (thrashing); silent {silent}",
        )
    return None


def _from_cpu(
    build: SilentBuild,
    vitals: Sequence[NodeVitals],
    thresholds: Thresholds,
    now: float,
    inside: set[float],
) -> Verdict:
    """Busy, busy too long, idle, or waiting on I/O, from the CPU over the silence."""
    silent_s = build.silent_seconds
    silent = span(silent_s)
    cpus = [(v, c) for v in vitals if (c := _cpu(v)) is not None]
    if not cpus:
        told = _what_it_told(vitals[-1] if vitals else None)
        return Verdict(
            True,
            VerdictKind.NO_EVIDENCE,
            f"no evidence from this node: silent {silent}, no CPU figure ({told})",
        )
    latest, (cpu, host_only) = cpus[-1]
    whose = "host " if host_only else ""
    if cpu >= BUSY_CPU:
        if silent_s >= thresholds.stall_busy_after:
            return Verdict(
                True,
                VerdictKind.BUSY_TOO_LONG,
                f"busy but silent {silent} ({whose}{cpu:.0f}% CPU), past "
                f"stall_busy_after_seconds ({span(thresholds.stall_busy_after)})",
            )
        usual = build.usual
        if usual is not None and usual.builds >= MIN_USUAL_BUILDS and silent_s > usual.p90_seconds:
            return Verdict(
                True,
                VerdictKind.BUSY_TOO_LONG,
                f"busy but silent {silent}; this build took at most {span(usual.p90_seconds)} "
                f"(p90) in {usual.builds} earlier builds",
            )
        return Verdict(False, VerdictKind.BUSY, _busy_line(build, latest, cpu, host_only))
    busy_at = [v.taken_at for v, (c, _) in cpus if c >= BUSY_CPU and v.taken_at in inside]
    idle_from = busy_at[-1] if busy_at else cpus[0][0].taken_at
    idle_for = max(0.0, now - idle_from)
    if busy_at and idle_for < min(thresholds.stall_after, IDLE_GRACE):
        return Verdict(
            False,
            VerdictKind.BUSY,
            f"quiet {silent}, {whose}CPU fell to {cpu:.0f}% {span(idle_for)} ago",
        )
    peak = max(c for v, (c, _) in cpus if v.taken_at >= idle_from)
    over = (
        f"for {span(idle_for)} of silence"
        if idle_for >= 1.0
        else f"at the one reading, silent {silent}"
    )
    io = latest.psi_io_some_avg10
    if io is not None and io >= IO_PRESSURE:
        return Verdict(
            True,
            VerdictKind.IO,
            f"waiting on I/O: io pressure {io:.0f}%, {whose}{peak:.0f}% CPU {over}",
        )
    return Verdict(True, VerdictKind.IDLE, f"idle: {whose}{peak:.0f}% CPU {over}")


def _busy_line(build: SilentBuild, v: NodeVitals, cpu: float, host_only: bool) -> str:
    """`quiet 22m, ld.lld at 100% CPU (linking?)`, `quiet 2h, output clipped at 2MiB, 1580%
    CPU`, `quiet 9m, host 180% CPU (no engine figure)`."""
    parts = [f"quiet {span(build.silent_seconds)}"]
    if build.clipped_at:
        parts.append(f"output clipped at {build.clipped_at}")
    if host_only:
        parts.append(f"host {cpu:.0f}% CPU (no engine figure)")
    elif v.busiest is not None and v.busiest.cpu_percent >= BUSY_CPU and not build.clipped_at:
        line = f"{v.busiest.name} at {v.busiest.cpu_percent:.0f}% CPU{_hint(v.busiest.name)}"
        if cpu >= v.busiest.cpu_percent + 50:
            line += f", engine {cpu:.0f}%"
        parts.append(line)
    else:
        parts.append(f"{cpu:.0f}% CPU")
    return ", ".join(parts)


__all__ = ["BUSY_CPU", "IO_PRESSURE", "THRASH_PAGES", "judge", "span"]
