"""`rocmtui monitor`: the probe loop as one long-running process per host and fleet file.

In order: take the fleet file's lock (or refuse, naming the monitor that holds it), bind the
metrics address (a port in use is said before anything else is made), make the socket
(replacing a stale one), write who we are into the lock file, then probe until SIGTERM or
SIGINT. On the way out the socket is removed while the lock is still held, so the next
monitor never finds a socket it did not make; after a SIGKILL the kernel drops the lock and the
next monitor replaces the socket the dead one left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable

from rocmtui import __version__
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.costbook.usual import UsualTimes
from rocmtui.core.diskroom import describe
from rocmtui.core.hostmonitor.costmetrics import CostCounts
from rocmtui.core.hostmonitor.http import MetricsServer, parse_listen
from rocmtui.core.hostmonitor.jobsview import read_jobs
from rocmtui.core.hostmonitor.metrics import MetricsBook, MonitorFigures
from rocmtui.core.hostmonitor.place import MonitorPlace, describe_holder
from rocmtui.core.hostmonitor.server import SnapshotHub, bind_socket
from rocmtui.core.hostmonitor.wire import PROTOCOL, Hello, snapshot_line
from rocmtui.core.jobs.locks import try_lock, write_holder
from rocmtui.core.jobs.procstat import start_time
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.probes.round import FleetMonitor
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.verdicts.context import StallJudge

log = logging.getLogger("rocmtui.monitor")
LOCK_MODE = 0o640
POKE_INTERVAL = 1.0  # s: consoles' requests for a round closer together than this are one


class MonitorAlreadyRunning(RuntimeError):
    """Another monitor holds this fleet file's lock (the text names it)."""


class MonitorStartError(RuntimeError):
    """The monitor cannot start here (the text says why, naming the path or address)."""


class _MetricsFeed:
    """Renders the metrics of the newest full round in a thread of its own (the job store's
    SQLite may wait on a writer; the probe loop never does). At most one render runs; rounds
    that come meanwhile are folded into the next."""

    def __init__(
        self, config: FleetConfig, book: MetricsBook, figures: Callable[[], MonitorFigures]
    ) -> None:
        self.config = config
        self.book = book
        self.figures = figures
        self.store = JobStore.for_config(config)
        self.costs = CostCounts(self.store, config.history_retention_days)
        # the verdicts on silent builds, from the vitals of the rounds offered here
        self.judge = StallJudge(config, UsualTimes(self.store).of)
        self._lock = threading.Lock()
        self._next: FleetSnapshot | None = None
        self._busy = False

    def offer(self, snapshot: FleetSnapshot) -> None:
        with self._lock:
            self._next = snapshot
            if self._busy:
                return
            self._busy = True
        threading.Thread(target=self._work, name="metrics-render", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._lock:
                snapshot, self._next = self._next, None
                if snapshot is None:
                    self._busy = False
                    return
            try:
                self.judge.observe_fleet(snapshot)
                jobs = read_jobs(self.config, self.store, judge=self.judge)
                try:
                    costs = self.costs.series()
                except Exception:  # the store said so in rocmtui_job_store_up already
                    log.warning("reading the build history failed", exc_info=True)
                    costs = ()
                self.book.update(snapshot, jobs, self.figures(), costs)
            except Exception:  # a bug here must not stop the metrics for good
                log.exception("rendering the metrics failed")


class MonitorService:
    """One monitor: the lock, the metrics server, the socket and the probe loop."""

    def __init__(self, config: FleetConfig, listen: str | None) -> None:
        self.config = config
        self.listen = listen
        self.place = MonitorPlace.for_config(config)
        self.started_at = time.time()
        self.book = MetricsBook(config, __version__)
        self.hub: SnapshotHub | None = None
        self.monitor: FleetMonitor | None = None
        self.metrics: MetricsServer | None = None
        self._lock_fd: int | None = None
        self._sock: socket.socket | None = None
        self._latest_taken_at: float | None = None
        self._poked_at = -POKE_INTERVAL

    # ---------------------------------------------------------------- start and end

    def claim(self) -> None:
        """Take the lock, bind the metrics address, make the socket (or raise, leaving
        nothing behind: MonitorAlreadyRunning, MonitorStartError, ListenError)."""
        problem = self.place.socket_path_problem()
        if problem:
            raise MonitorStartError(problem)
        address = parse_listen(self.listen) if self.listen else None
        try:
            self.place.folder.mkdir(parents=True, exist_ok=True)
            fd = try_lock(self.place.lock, LOCK_MODE)
        except OSError as exc:
            raise MonitorStartError(f"cannot lock {describe(self.place.lock, exc)}") from None
        if fd is None:
            who = describe_holder(self.place, self.place.holder())
            raise MonitorAlreadyRunning(
                f"a monitor for {self.place.fleet} is already running ({who})"
            )
        self._lock_fd = fd
        group = self.place.folder.stat().st_gid
        with contextlib.suppress(OSError):  # the state folder's group may read who holds it
            if os.fstat(fd).st_gid != group:
                os.fchown(fd, -1, group)
        try:
            if address is not None:
                self.metrics = MetricsServer(address, self.book, lambda: self.attached)
            self._sock = bind_socket(self.place)
        except BaseException:
            self.release()
            raise
        holder = {
            "pid": os.getpid(),
            "start_time": start_time(os.getpid()),
            "fleet": self.place.fleet,
            "socket": str(self.place.socket),
            "metrics": self.metrics.url if self.metrics else None,
            "started_at": self.started_at,
            "version": __version__,
        }
        try:
            write_holder(fd, holder, sync=True)
        except OSError as exc:  # a full state disk: the lock (the kernel's) holds all the same
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # never half a holder
            log.warning(
                "who runs this monitor is not written into its lock (%s); it runs, and a second "
                "monitor's refusal names the lock file only",
                describe(self.place.lock, exc),
            )

    def release(self) -> None:
        """Remove the socket (while the lock is still ours), stop serving metrics, unlock."""
        if self.metrics is not None:
            self.metrics.close()
            self.metrics = None
        if self._lock_fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.place.socket.unlink()
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)
            self._lock_fd = None

    # ---------------------------------------------------------------- running

    @property
    def attached(self) -> int:
        """Consoles attached now."""
        return self.hub.attached if self.hub is not None else 0

    def hello(self) -> Hello:
        """What a console learns first."""
        return Hello(
            protocol=PROTOCOL,
            pid=os.getpid(),
            fleet=self.place.fleet,
            started_at=self.started_at,
            latest_taken_at=self._latest_taken_at,
            metrics=self.metrics.url if self.metrics else None,
            version=__version__,
        )

    def poke(self) -> None:
        """A console asks for a round now: granted once per `POKE_INTERVAL` (consoles are many,
        and each of their refresh keys would otherwise be a round against every engine)."""
        now = time.monotonic()
        if self.monitor is not None and now - self._poked_at >= POKE_INTERVAL:
            self._poked_at = now
            self.monitor.request_refresh()

    def figures(self) -> MonitorFigures:
        """The probe loop's counts now."""
        monitor = self.monitor
        rounds = monitor.rounds if monitor else 0
        return MonitorFigures(rounds, monitor.failed_rounds if monitor else 0, self.started_at)

    async def serve(self) -> None:
        """Probe and serve until SIGTERM or SIGINT (after `claim`)."""
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        feed = _MetricsFeed(self.config, self.book, self.figures)

        def publish(snapshot: FleetSnapshot) -> None:
            self._latest_taken_at = snapshot.taken_at
            assert self.hub is not None
            self.hub.publish(snapshot_line(snapshot))
            if not snapshot.interim:  # a round's own snapshot, once: the metrics' samples
                feed.offer(snapshot)

        self.monitor = FleetMonitor(self.config, publish)
        self.hub = SnapshotHub(self.hello, self.poke)
        assert self._sock is not None
        await self.hub.start(self._sock)
        log.info(
            "monitoring %s (pid %d); consoles attach at %s%s",
            self.place.fleet,
            os.getpid(),
            self.place.socket,
            f"; metrics at {self.metrics.url}" if self.metrics else "",
        )
        task = asyncio.ensure_future(self.monitor.run())
        done = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({task, done}, return_when=asyncio.FIRST_COMPLETED)
        self.monitor.stop()
        await self.hub.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, self.config.probe_deadline_seconds + 2)
        log.info("stopped")


def run(config: FleetConfig, listen: str | None) -> None:
    """`rocmtui monitor`: claim, serve until a signal, release (raises what `claim` raises)."""
    service = MonitorService(config, listen)
    service.claim()
    try:
        asyncio.run(service.serve())
    finally:
        service.release()
