"""The core's FleetMonitor in a child process: one JSON line per probe round.

`python -m rocmtui.core.hostmonitor.ownchild [FLEET_FILE]` runs `FleetMonitor` and writes each
`FleetSnapshot` as one line of JSON on stdout; any line on stdin asks for a round now; end of
stdin (the console closed, or died) ends it. The console starts it before importing Textual
when no host monitor (`rocmtui monitor`) runs for its fleet file. The lines are the host
monitor's protocol (rocmtui/core/hostmonitor/wire.py, which says why the child keeps its pipes
while the host monitor serves a socket); only the socket's opening hello is not sent here.

Why a process, not a thread: the probes (docker SDK, httpx, psutil) are Python code, and in a
thread they take the GIL from the event loop in the middle of a key press; in a child they run
on the other core. Their imports (~0.4 s) also overlap Textual's instead of following them.
`decode` turns a line back into the `FleetSnapshot` the screen renders.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the console imports this module only to start the
    # child, and every millisecond before `start()` delays the first round (asyncio: ~70 ms)
    from rocmtui.core.config.fleetfile import FleetConfig
    from rocmtui.core.snapshots import FleetSnapshot


def start(config_path: Path | str | None) -> subprocess.Popen[bytes]:
    """Start the monitor child (raises OSError when it cannot be started)."""
    # -P: never a rocmtui/ folder in the working folder
    argv = [sys.executable, "-P", "-m", "rocmtui.core.hostmonitor.ownchild"]
    if config_path is not None:
        argv.append(str(config_path))
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )


def stop(child: subprocess.Popen[bytes], grace: float = 2.0) -> None:
    """End the child: close its stdin (it stops after its round), then terminate, then kill."""
    with contextlib.suppress(OSError, ValueError):
        if child.stdin is not None:
            child.stdin.close()
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.terminate()
        try:
            child.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def decode(data: dict[str, Any]) -> FleetSnapshot:
    """A FleetSnapshot from `snapshotviews.snapshot_json` output (rocmtui.core.hostmonitor.wire)."""
    # on first use: kept off the console's start or the monitor child's start
    from rocmtui.core.hostmonitor.wire import decode as wire_decode

    return wire_decode(data)


def rounds(child: subprocess.Popen[bytes]) -> Iterator[FleetSnapshot | str]:
    """Each round the child reports (blocks: call from a worker thread); a line that does not
    decode is yielded as its error text. Ends when the child's stdout closes."""
    assert child.stdout is not None
    for raw in child.stdout:
        try:
            yield decode(json.loads(raw))
        except (ValueError, KeyError, TypeError) as exc:
            yield f"unreadable probe round: {type(exc).__name__}: {exc}"


def poke(child: subprocess.Popen[bytes]) -> None:
    """Ask for a round now."""
    with contextlib.suppress(OSError, ValueError):
        if child.stdin is not None:
            child.stdin.write(b"\n")
            child.stdin.flush()


async def _run(config: FleetConfig) -> None:
    # on first use: kept off the monitor child's start
    import asyncio

    # on first use: kept off the console's start or the monitor child's start
    from rocmtui.core.probes.round import FleetMonitor

    loop = asyncio.get_running_loop()
    out = sys.stdout.buffer

    # on first use: kept off the console's start or the monitor child's start
    from rocmtui.core.hostmonitor.wire import snapshot_line

    def publish(snapshot: FleetSnapshot) -> None:
        out.write(snapshot_line(snapshot))
        out.flush()
        if not gc.isenabled():  # the first round is out: see main()
            gc.freeze()
            gc.enable()

    monitor = FleetMonitor(config, publish)
    _ON_TERM.append(monitor.probers.nodes.close)
    task = asyncio.ensure_future(monitor.run())
    # stdin is read in a thread, not through the loop: the loop can watch only pipes and
    # sockets (on /dev/null or a file its reader never fired, and the child never ended)
    while await loop.run_in_executor(None, sys.stdin.buffer.readline):
        monitor.request_refresh()  # a line: a round now; end of input: the console is gone
    monitor.stop()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(task, config.probe_deadline_seconds + 2)


_ON_TERM: list[Callable[[], None]] = []


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (the console's grace ran out): end the monitor's kept ssh connections
    (`ssh -O exit`, bounded) and exit at once; unwinding asyncio could wait forever on the
    thread reading stdin."""
    for cleanup in _ON_TERM:
        with contextlib.suppress(Exception):
            cleanup()
    os._exit(0)


def main(argv: Sequence[str]) -> int:
    """Monitor until stdin ends; one JSON line per round.

    The collector stays off until the first round is out: that round imports the docker SDK,
    httpx and their stacks, and the collector ran ~100 passes over the new objects meanwhile
    (~20 ms of a ~0.36 s first round, median of 11 starts). What start-up leaves alive
    (~38,000 objects) is then frozen, so later passes do not walk it either."""
    # on first use: kept off the monitor child's start
    import asyncio

    gc.disable()
    signal.signal(signal.SIGTERM, _terminated)
    # on first use: kept off the monitor child's start
    from rocmtui.core.config.fleetfile import load_config

    config = load_config(argv[0] if argv else None)
    # on first use: kept off the console's start or the monitor child's start
    from rocmtui.core import debuglog

    debuglog.redirect_stderr(config)  # a round that raises leaves its traceback there
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        asyncio.run(_run(config))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
