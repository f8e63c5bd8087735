"""What /proc says about a process: start time (to detect pid reuse), group, session, tree.

A pid alone lies once the process is gone and the number is reused, so every pid the job layer
keeps is paired with the process's start time (`/proc/PID/stat` field 22, clock ticks since
boot). Scanning is by session as well as by process group because helpers such as the ssh
connection of `docker` put themselves in a process group of their own but stay in the session.
"""

from __future__ import annotations

import os

from msgspec import Struct


class ProcStat(Struct, frozen=True):
    """The fields of `/proc/PID/stat` the job layer needs."""

    pid: int
    comm: str
    state: str
    ppid: int
    pgid: int
    sid: int
    start: int  # field 22: clock ticks after boot


def proc_stat(pid: int) -> ProcStat | None:
    """Read `/proc/PID/stat`; None when the process does not exist (or is unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    # comm may hold spaces and parentheses: the fields after it start after the *last* ')'
    open_paren = raw.find(b"(")
    close_paren = raw.rfind(b")")
    if open_paren < 0 or close_paren < 0:
        return None
    comm = raw[open_paren + 1 : close_paren].decode("utf-8", "replace")
    fields = raw[close_paren + 2 :].split()
    # fields[0] is field 3 (state); field N is fields[N - 3]
    try:
        return ProcStat(
            pid=pid,
            comm=comm,
            state=fields[0].decode(),
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            sid=int(fields[3]),
            start=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks after boot, or None if it does not exist."""
    stat = proc_stat(pid)
    return stat.start if stat else None


def is_same_process(pid: int | None, start: int | None) -> bool:
    """True when `pid` is alive and is the very process that had start time `start`.

    A zombie counts as gone: it has exited and only waits for its parent to reap it.
    """
    if not pid or start is None:
        return False
    stat = proc_stat(pid)
    return stat is not None and stat.start == start and stat.state not in ("Z", "X")


def all_procs() -> list[ProcStat]:
    """Every process visible in /proc (processes that vanish mid-scan are skipped)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = proc_stat(int(name))
            if stat is not None:
                out.append(stat)
    return out


def job_processes(sid: int, pgid: int | None = None, min_start: int | None = None) -> list[int]:
    """Live (non-zombie) pids in session `sid` or process group `pgid`, started at or after
    `min_start` (so a reused session number from an older boot-relative time is not matched).
    """
    pids = []
    for stat in all_procs():
        if stat.state in ("Z", "X"):
            continue
        if stat.sid != sid and (pgid is None or stat.pgid != pgid):
            continue
        if min_start is not None and stat.start < min_start:
            continue
        pids.append(stat.pid)
    return sorted(pids)


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (children, their children ...), found through ppid."""
    children: dict[int, list[int]] = {}
    for stat in all_procs():
        if stat.state not in ("Z", "X"):
            children.setdefault(stat.ppid, []).append(stat.pid)
    out: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, []))
    return sorted(out)
