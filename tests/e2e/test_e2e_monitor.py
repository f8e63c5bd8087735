"""End to end: `rocmtui monitor` and real consoles in a real terminal (tmux) on the real fleet.

Each engine is reached through a counting proxy (devfleet/counting.py: a unix socket
in front of the engine's, counting the HTTP request lines on their way in), so the engines'
request counts are measured, not inferred. Two consoles attached ask the engines no more per
monitor round than the monitor alone does: one probe loop. SIGKILL the monitor: both consoles
say so and probe with children of their own; start it again: both re-attach and their
children end.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import CountingProxy, DevFleet, ServiceHandle, start_monitor
from tests.support.jobs import wait_for
from tests.support.terminal import Terminal, console_env, fleet_file

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
ROUNDS = 8  # monitor rounds whose engine requests are counted per phase (1 s refresh)


@pytest.fixture
def proxies(fleet: DevFleet) -> Iterator[dict[str, CountingProxy]]:
    """A counting proxy in front of each engine of the fleet, by node name."""
    made = {engine.name: CountingProxy(engine.socket) for engine in fleet.engines}
    try:
        yield made
    finally:
        for proxy in made.values():
            proxy.stop()


def proxied_fleet_file(fleet: DevFleet, tmp: Path, proxies: dict[str, CountingProxy]) -> Path:
    path = fleet_file(fleet, tmp, refresh_seconds=1.0)
    text = path.read_text()
    for engine in fleet.engines:
        text = text.replace(engine.docker_host, proxies[engine.name].docker_host)
    path.write_text(text)
    return path


def rounds(monitor: ServiceHandle) -> int:
    with urllib.request.urlopen(f"{monitor.url}/metrics", timeout=5) as answer:
        found = re.search(rb"(?m)^rocmtui_probe_rounds_total (\S+)$", answer.read())
    return int(float(found.group(1))) if found else 0


def requests_per_round(monitor: ServiceHandle, proxies: dict[str, CountingProxy]) -> float:
    """Engine requests (all engines) per monitor round over `ROUNDS` rounds."""
    before, first = sum(p.count() for p in proxies.values()), rounds(monitor)
    wait_for(f"{ROUNDS} monitor rounds", lambda: rounds(monitor) >= first + ROUNDS, 60)
    after, last = sum(p.count() for p in proxies.values()), rounds(monitor)
    return (after - before) / (last - first)


def own_children(fleet_file: Path) -> list[int]:
    """Console-owned monitor children (hostmonitor.ownchild) probing this fleet file."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"rocmtui.core.hostmonitor.ownchild" in argv and str(fleet_file).encode() in argv:
                found.append(int(entry.name))
    return found


def test_consoles_share_one_probe_loop_lose_it_and_reattach(
    fleet: DevFleet,
    terminal: Terminal,
    tmp_path: Path,
    proxies: dict[str, CountingProxy],
) -> None:
    config = proxied_fleet_file(fleet, tmp_path, proxies)
    env = console_env(tmp_path)
    state = {"ROCMTUI_STATE_DIR": env["ROCMTUI_STATE_DIR"]}
    monitor = start_monitor(tmp_path / "monitor", config, state)
    try:
        wait_for("the monitor's first rounds", lambda: rounds(monitor) >= 2, 60)
        alone = requests_per_round(monitor, proxies)
        consoles = [terminal.start(env, config) for _ in range(2)]

        def screens() -> list[str]:
            return [terminal.tmux("capture-pane", "-p", "-t", name) for name in consoles]

        def all_say(pattern: str) -> bool:
            return all(
                re.search(pattern, shown.splitlines()[0] if shown else "") for shown in screens()
            )

        wait_for("both consoles attached", lambda: all_say(r"probed \d+s ago · shared monitor"), 60)
        assert all(re.search(r"✓ ok +snoc-think", shown) for shown in screens())
        attached = requests_per_round(monitor, proxies)
        assert own_children(config) == []
        # one loop: the consoles add nothing (three loops would be about 3x)
        assert attached <= alone * 1.25 + 1, (alone, attached, proxies["snoc-think"].by_path)

        os.kill(monitor.pid, 9)
        wait_for("both consoles to say the monitor is gone", lambda: all_say(r"monitor gone"), 30)
        wait_for("a child of each console's own", lambda: len(own_children(config)) == 2, 30)
        killed_at = time.monotonic()
        wait_for(
            "their own rounds on screen",
            lambda: time.monotonic() - killed_at > 2 and all_say(r"probed [0-2]s ago"),
            30,
        )
        monitor.stop(grace=1.0)  # reaped; its ledger entry dropped
        monitor = start_monitor(tmp_path / "monitor2", config, state)
        wait_for("both consoles re-attached", lambda: all_say(r"shared monitor"), 30)
        wait_for("their own children gone", lambda: own_children(config) == [], 30)
    finally:
        monitor.stop(grace=5.0)
