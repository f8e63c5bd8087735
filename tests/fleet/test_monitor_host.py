"""`rocmtui monitor` as a real process: one per fleet file, its socket and lock, its faults,
what `rocmtui status` says of it, and consoles that attach to it, lose it and find it again.

Fleet files here have one node whose engine socket does not exist (probed `down` at once):
nothing but the monitor itself is needed. The state folder is the test's own
($XDG_STATE_HOME, short enough for a unix socket path).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from devfleet import HungUnixSocket, ServiceHandle, start_monitor
from devfleet.processes import free_port
from rocmtui.console.app import RocmTui
from rocmtui.console.screens.fleet import FleetScreen
from rocmtui.console.widgets.common import StatusLine
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.hostmonitor import client
from rocmtui.core.hostmonitor.place import SUN_PATH_MAX, MonitorPlace
from rocmtui.core.hostmonitor.sources import MONITOR, ChildSource, SocketSource, open_source
from tests.support.jobs import engineless_fleet, hold_lock, run_cli, wait_for
from tests.support.prometheus import scrape


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    return engineless_fleet(tmp_path, refresh_seconds=1.0)


@pytest.fixture
def monitors(tmp_path: Path) -> Iterator[Callable[[Path], ServiceHandle]]:
    """`monitors(fleet_file)` starts `rocmtui monitor` (metrics on a free port) and waits until
    a console can attach; every one started is stopped by pid at the end."""
    started: list[ServiceHandle] = []

    def start(fleet: Path) -> ServiceHandle:
        handle = start_monitor(tmp_path / f"monitor{len(started)}", fleet)
        started.append(handle)
        config = load_config(fleet)
        wait_for("the monitor to answer on its socket", lambda: client.query(config).hello, 30)
        return handle

    try:
        yield start
    finally:
        for handle in reversed(started):
            handle.stop(grace=5.0)


def test_a_second_monitor_refuses_and_names_the_first(
    fleet_file: Path, monitors: Callable[[Path], ServiceHandle]
) -> None:
    first = monitors(fleet_file)
    second = run_cli(fleet_file, "monitor", "--listen", f"127.0.0.1:{free_port()}", timeout=30)
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert "already running" in lines[0] and f"pid {first.pid}" in lines[0]
    place = MonitorPlace.for_config(load_config(fleet_file))
    assert str(place.socket) in lines[0] and f"{first.url}/metrics" in lines[0]
    hello = client.query(load_config(fleet_file)).hello
    assert hello is not None and hello.pid == first.pid  # the first one is untouched


def test_a_stale_socket_from_a_killed_monitor_is_replaced(
    fleet_file: Path, monitors: Callable[[Path], ServiceHandle]
) -> None:
    config = load_config(fleet_file)
    place = MonitorPlace.for_config(config)
    killed = monitors(fleet_file)
    os.kill(killed.pid, signal.SIGKILL)
    wait_for("the kernel to drop the dead monitor's lock", lambda: not place.running(), 10)
    assert place.socket.exists()  # what SIGKILL leaves behind
    assert client.attach(config) is None
    # not even a connection attempt while nobody holds the lock: a listener put where the
    # stale socket was is never connected to
    place.socket.unlink()
    with HungUnixSocket(place.socket) as listener:
        assert client.attach(config) is None
        assert not client.query(config).running
        assert listener.accepted == 0
    again = monitors(fleet_file)
    hello = client.query(config).hello
    assert hello is not None and hello.pid == again.pid


def test_the_socket_belongs_to_the_state_folder_group_whatever_the_umask(
    fleet_file: Path, monitors: Callable[[Path], ServiceHandle]
) -> None:
    config = load_config(fleet_file)
    place = MonitorPlace.for_config(config)
    place.folder.mkdir(parents=True, exist_ok=True)
    os.chown(place.folder, -1, 1)  # a group other than ours (root's is 0)
    old = os.umask(0)  # the monitor inherits it: nothing may come out world-writable anyway
    try:
        monitors(fleet_file)
    finally:
        os.umask(old)
    sock = place.socket.stat()
    assert sock.st_mode & 0o777 == 0o660
    assert sock.st_gid == 1
    lock = place.lock.stat()
    assert not lock.st_mode & 0o002 and lock.st_gid == 1
    holder = place.holder()
    assert holder is not None and holder.socket == str(place.socket)


def test_a_socket_path_too_long_is_said_up_front(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    fleet = engineless_fleet(tmp_path, state_dir=deep)
    done = run_cli(fleet, "monitor", "--no-metrics", timeout=30)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"more than a unix socket allows ({SUN_PATH_MAX})" in lines[0]
    assert "state_dir" in lines[0] and "ROCMTUI_STATE_DIR" in lines[0]
    assert not deep.exists() or not any(deep.glob("monitor-*"))
    link = open_source(fleet)  # a console on that fleet file simply probes on its own
    try:
        assert isinstance(link, ChildSource)
    finally:
        link.stop(grace=1.0)


def test_a_bad_listen_address_or_a_taken_port_leaves_nothing_behind(fleet_file: Path) -> None:
    place = MonitorPlace.for_config(load_config(fleet_file))
    bad = run_cli(fleet_file, "monitor", "--listen", "localhost", timeout=30)
    assert bad.returncode == 2
    assert "--listen: expected HOST:PORT" in bad.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = run_cli(fleet_file, "monitor", "--listen", f"127.0.0.1:{port}", timeout=30)
    assert busy.returncode == 1
    assert f"cannot serve metrics on 127.0.0.1:{port}" in busy.stderr
    assert len(busy.stderr.strip().splitlines()) == 1
    assert not place.running() and not place.socket.exists()


def test_a_monitor_socket_that_never_answers_is_given_up_within_the_deadline(
    fleet_file: Path,
) -> None:
    """A monitor stuck (SIGSTOP, a hung loop): its lock is held and its socket accepts, but no
    hello comes. A console gives up within the deadline and starts its own child."""
    config = load_config(fleet_file)
    place = MonitorPlace.for_config(config)
    place.folder.mkdir(parents=True, exist_ok=True)
    holder = hold_lock(place.lock)
    try:
        with HungUnixSocket(place.socket) as hung:
            # returns (pytest-timeout ends a hang) having connected and waited for a hello
            assert client.attach(config) is None
            assert hung.accepted >= 1
            status = client.query(config)
            assert status.running and status.error and "sent nothing" in status.error
            link = open_source(fleet_file)
            try:
                assert isinstance(link, ChildSource)
            finally:
                link.stop(grace=1.0)
    finally:
        holder.kill()
        holder.wait()


def test_status_says_whether_a_monitor_runs_and_how_old_its_snapshot_is(
    fleet_file: Path, monitors: Callable[[Path], ServiceHandle]
) -> None:
    alone = run_cli(fleet_file, "status", "--json", timeout=60)
    assert json.loads(alone.stdout)["monitor"]["running"] is False
    assert "monitor: not running" in run_cli(fleet_file, "status", timeout=60).stdout
    handle = monitors(fleet_file)
    config = load_config(fleet_file)
    wait_for("a first round", lambda: client.query(config).snapshot_age() is not None, 30)
    report = json.loads(run_cli(fleet_file, "status", "--json", timeout=60).stdout)["monitor"]
    assert report["running"] is True and report["pid"] == handle.pid
    assert report["metrics"] == f"{handle.url}/metrics"
    assert 0 <= report["snapshot_age"] < 10
    table = run_cli(fleet_file, "status", timeout=60).stdout
    assert f"monitor: running (pid {handle.pid}" in table and "its snapshot is" in table


def test_a_hung_engine_delays_no_scrape(
    tmp_path: Path, monitors: Callable[[Path], ServiceHandle]
) -> None:
    """Rounds take the whole probe deadline (a node that accepts and never answers); every
    scrape meanwhile is answered from the last round at once."""
    with HungUnixSocket() as hung:
        fleet = tmp_path / "hung.toml"
        fleet.write_text(
            "refresh_seconds = 1.0\nprobe_deadline_seconds = 4.0\n"
            f'[[nodes]]\nname = "hung"\ndocker_host = "{hung.docker_host}"\n'
        )
        handle = monitors(fleet)
        wait_for("a first round", lambda: "rocmtui_probe_rounds_total 1" in scrape(handle), 30)
        deadline = time.monotonic() + 30
        text = ""
        during_round = 0  # scrapes answered while the second round was still probing
        # scraped all through the next round, held 4 s by the hung node, until it is counted
        while "rocmtui_probe_rounds_total 2" not in text and time.monotonic() < deadline:
            text = scrape(handle)
            assert 'rocmtui_node_engine_up{node="hung"} 0.0' in text
            during_round += "rocmtui_probe_rounds_total 1" in text
            time.sleep(0.2)  # the poll's interval
        assert "rocmtui_probe_rounds_total 2" in text
        # a scrape that waited for the round would see at most one answer in it; polled every
        # 0.2 s through a round held 4 s, answers from the last round come many times
        assert during_round >= 5, f"only {during_round} scrapes answered during a 4 s round"


ATTACHED_IMPORTS = """
import asyncio, sys
from pathlib import Path
from rocmtui.core.hostmonitor.sources import SocketSource, open_source
from rocmtui.console.app import RocmTui
from rocmtui.core.config.fleetfile import load_config

fleet = sys.argv[1]
link = open_source(fleet)
assert isinstance(link, SocketSource), link

async def main():
    app = RocmTui(load_config(fleet))
    app.backend.adopt_monitor(link)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):
            if app.screen.data.fleet is not None:
                break
            await pilot.pause(0.05)
        assert app.screen.data.fleet is not None, "no snapshot from the monitor"
        assert isinstance(app.backend.rounds.feed, SocketSource)
        status = str(app.screen.query_one("#statusbar").render())
        assert "shared monitor" in status and "probed" in status, status
        app.screen.stop_feeds()

asyncio.run(main())
probes = ("docker", "httpx", "psutil", "rocmtui.core.probes.round", "rocmtui.core.probes")
print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in probes or m in probes)))
"""


def test_an_attached_console_imports_no_probe_library(
    fleet_file: Path, monitors: Callable[[Path], ServiceHandle]
) -> None:
    monitors(fleet_file)
    config = load_config(fleet_file)
    wait_for("a first round", lambda: client.query(config).snapshot_age() is not None, 30)
    done = subprocess.run(
        [sys.executable, "-c", ATTACHED_IMPORTS, str(fleet_file)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", f"probe modules imported: {done.stdout.strip()}"


async def until(
    pilot: Pilot[object], ready: Callable[[], object], what: str, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        await pilot.pause(0.05)


async def test_a_console_says_its_monitor_died_probes_on_its_own_and_reattaches(
    fleet_file: Path, monitors: Callable[[Path], ServiceHandle]
) -> None:
    first = monitors(fleet_file)
    config = load_config(fleet_file)
    app = RocmTui(config)
    app.backend.adopt_monitor(open_source(fleet_file))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)

        def status() -> str:
            return str(screen.query_one("#statusbar", StatusLine).render())

        await until(pilot, lambda: screen.data.fleet is not None, "the monitor's snapshot", 15)
        assert screen.source == MONITOR and "shared monitor" in status()
        os.kill(first.pid, signal.SIGKILL)
        await until(pilot, lambda: "monitor gone" in status(), "the console to say so", 15)
        assert screen.monitor_lost and f"pid {first.pid}" in screen.monitor_lost
        own = app.backend.rounds.feed
        assert isinstance(own, ChildSource)
        lost_at = time.time()

        def fresh() -> bool:
            return screen.data.fleet is not None and screen.data.fleet.taken_at > lost_at

        await until(pilot, fresh, "a round from the console's own child", 20)
        second = monitors(fleet_file)
        await until(pilot, lambda: screen.source == MONITOR, "the console to re-attach", 20)
        assert "shared monitor" in status() and "monitor gone" not in status()
        link = app.backend.rounds.feed
        assert isinstance(link, SocketSource) and link.pid == second.pid
        with contextlib.suppress(subprocess.TimeoutExpired):
            own.child.wait(timeout=10)
        assert own.child.poll() is not None  # its own child is gone: one probe loop again
        app.screen.stop_feeds()


async def test_a_monitor_that_goes_silent_is_left_for_a_child(
    fleet_file: Path, monitors: Callable[[Path], ServiceHandle], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGSTOP: the socket stays open and says nothing. Past the idle deadline (2 s here, from
    the refresh in real use) the console stops waiting and probes on its own."""
    monkeypatch.setattr(client, "idle_deadline", lambda config: 2.0)
    stopped = monitors(fleet_file)
    app = RocmTui(load_config(fleet_file))
    app.backend.adopt_monitor(open_source(fleet_file))
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            assert isinstance(screen, FleetScreen)
            await until(pilot, lambda: screen.data.fleet is not None, "a snapshot", 15)
            os.kill(stopped.pid, signal.SIGSTOP)
            await until(pilot, lambda: screen.monitor_lost is not None, "the fallback", 15)
            assert "sent nothing for 2s" in (screen.monitor_lost or "")
            await until(
                pilot, lambda: isinstance(app.backend.rounds.feed, ChildSource), "a child", 10
            )
            app.screen.stop_feeds()
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
