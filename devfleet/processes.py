"""Process plumbing for the dev fleet: spawn detached, identify by pid + start time, stop for sure.

Every process the dev fleet starts is a child in its own session with stdin from /dev/null and
output to a log file, so it survives the shell (or test) that started it and can be stopped later
from another process by its recorded pid. A pid alone lies after reuse, so records carry the
process start time (`/proc/PID/stat` field 22) and nothing is signalled unless both match.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: Short root for unix sockets and exec roots: a unix socket path must stay under 108 bytes.
SHORT_ROOT = Path("/tmp")


class FleetError(RuntimeError):
    """A dev-fleet part failed to start or stop; the message says which and quotes its log."""


def start_time(pid: int) -> int | None:
    """The kernel start time of `pid` in clock ticks, or None when it is gone (or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def alive(pid: int, started: int | None = None) -> bool:
    """Whether `pid` runs (not a zombie) and, when `started` is given, is still that process."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def children_of(pid: int) -> list[int]:
    """Every descendant of `pid` (recursively), read from /proc; parents before children."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(raw[raw.rindex(")") + 2 :].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def pids_mentioning(marker: str) -> list[int]:
    """Pids whose command line contains `marker` (a path unique to one fleet part).

    containerd shims re-parent to init, so the process tree alone cannot find them; the unique
    exec-root or data-root path on their command line can.
    """
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_for(
    check: Callable[[], T | None],
    timeout: float,
    what: str,
    interval: float = 0.05,
    failed: Callable[[], str | None] | None = None,
) -> T:
    """Poll `check` until it returns something truthy; raise FleetError after `timeout` seconds.

    `failed` is asked on every round and may return a reason to give up at once (the process
    died): no point waiting the whole deadline for a corpse.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if failed is not None:
            reason = failed()
            if reason:
                raise FleetError(f"{what}: {reason}")
        if time.monotonic() > deadline:
            raise FleetError(f"{what}: not ready after {timeout:.0f}s")
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)


def spawn(
    argv: Sequence[str],
    log: Path,
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start `argv` detached: own session, stdin /dev/null, stdout+stderr appended to `log`.

    Argument list only, never a shell. The Popen object is returned so this process can reap it.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for fleet processes: ours without DOCKER_* (they must not redirect dockerd
    or the CLI to another engine), with the sbin directories dockerd needs on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_")}
    path = env.get("PATH", "/usr/bin:/bin").split(":")
    for d in ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"):
        if d not in path:
            path.append(d)
    env["PATH"] = ":".join(path)
    env.update(extra or {})
    return env


def log_tail(log: Path, lines: int = 15) -> str:
    """The last lines of a log file, for error messages."""
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def stop_pids(
    main: Iterable[tuple[int, int | None]],
    grace: float = 15.0,
    extra_markers: Sequence[str] = (),
    popen: subprocess.Popen[bytes] | None = None,
) -> None:
    """Stop processes for sure: SIGTERM to each (pid, start time) that still is that process,
    wait up to `grace`, then SIGKILL the main pids, their descendants (collected before the
    first signal, since orphans lose their parent link) and anything mentioning a marker.
    """
    targets = [(pid, st) for pid, st in main if alive(pid, st)]
    tree: set[int] = set()
    for pid, _ in targets:
        tree.update(children_of(pid))
    for marker in extra_markers:
        tree.update(pids_mentioning(marker))
    for pid, _ in targets:
        _signal(pid, signal.SIGTERM)

    def all_gone() -> bool:
        if popen is not None:
            popen.poll()  # reap our own child so it does not linger as a zombie
        return not any(alive(pid, st) for pid, st in targets)

    with contextlib.suppress(FleetError):
        wait_for(all_gone, grace, "stop")
    for pid, st in targets:
        if alive(pid, st):
            _signal(pid, signal.SIGKILL)
    for marker in extra_markers:
        tree.update(pids_mentioning(marker))
    survivors = [pid for pid in tree if alive(pid)]
    for pid in survivors:
        _signal(pid, signal.SIGKILL)
    everything = [p for p, _ in targets] + survivors
    with contextlib.suppress(FleetError):
        wait_for(
            lambda: (popen.poll() if popen else None, not any(alive(p) for p in everything))[1],
            5.0,
            "kill",
        )
    leftover = [p for p in everything if alive(p)]
    if leftover:
        raise FleetError(f"processes survived SIGKILL: {leftover}")


def mounts_under(*roots: Path) -> list[Path]:
    """Mount points at or below any of `roots`, deepest first (from /proc/self/mountinfo)."""
    prefixes = [str(Path(r)) for r in roots]
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Field 5 is the mount point, with spaces and the like octal-escaped.
        point = line.split()[4].encode().decode("unicode_escape")
        if any(point == p or point.startswith(p + "/") for p in prefixes):
            found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def unmount_under(*roots: Path) -> None:
    """Detach every mount below `roots`: a dockerd killed hard leaves its data root bind-mounted
    on itself (and container mounts), which would make the directory impossible to delete."""
    for point in mounts_under(*roots):
        subprocess.run(["umount", "--lazy", str(point)], check=False, capture_output=True)


def free_port() -> int:
    """A loopback TCP port free right now (the caller retries if someone takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def short_dir(prefix: str = "rt") -> Path:
    """A fresh short directory under /tmp for unix sockets (paths must stay under 100 bytes)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=SHORT_ROOT))
