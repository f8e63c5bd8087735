"""The console's rounds: where they come from, the first one early, each relayed to the screen.

A round comes from the host's monitor when one runs for this fleet file, else from a child of
our own; the feed is swapped for the monitor when one comes up, and ends with an error saying
which one went. This is one job of the door (`FleetBackend` in access.py), apart from the
store and bake calls that share nothing with it but the fleet file.
"""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from collections.abc import Callable, Iterable

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor import ownchild
from rocmtui.core.hostmonitor.sources import (
    OWN,
    ChildSource,
    MonitorFailed,
    MonitorGone,
    ProbeSource,
    as_source,
    find_monitor,
)
from rocmtui.core.snapshots import FleetSnapshot

REATTACH_EVERY = 5.0  # s between looks for the host's monitor while probing on our own


class RoundFeed:
    """One console's feed of rounds: adopted early, relayed by a worker thread, swapped for
    the host's monitor when one comes up, stopped with the console."""

    def __init__(
        self,
        config: Callable[[], FleetConfig],
        observe: Callable[[FleetSnapshot], object],
    ) -> None:
        """`config`: the backend's fleet file as it is now (read-only mode replaces it);
        `observe`: hears of each round before it is published (the stall verdicts read its
        vitals)."""
        self._config = config
        self._observe = observe
        #: The feed rounds come from now (None before the first is opened).
        self.feed: ProbeSource | None = None
        self._gone_at = -REATTACH_EVERY  # monotonic time the host's monitor last went away
        self._first: _FirstRound | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def adopt_monitor(self, source: ProbeSource | subprocess.Popen[bytes]) -> None:
        """Use a feed opened early (before Textual was imported: the host's monitor, or a
        child of our own), and start reading its first round now, so that the first frame can
        show it (`take_first_round`)."""
        feed = as_source(source)
        self.feed = feed
        self._first = _FirstRound(feed)

    @property
    def source(self) -> str:
        """Where rounds come from now: `sources.MONITOR`, `sources.OWN`, or "" before any."""
        feed = self.feed
        return feed.kind if feed is not None else ""

    def take_first_round(self) -> FleetSnapshot | None:
        """The adopted feed's first round if it has already come (never waits); a round
        taken here is not relayed again by `run_monitor`."""
        with self._lock:
            first = self._first
            if first is None or not first.done.is_set():
                return None
            if not isinstance(first.item, FleetSnapshot):
                return None
            first.taken = True
            return first.item

    def _open(self) -> ProbeSource:
        """The host's monitor if one answers, else a child of our own. Not the monitor again
        right after it went away: one that says hello and then hangs up would be attached to
        and lost in a tight loop."""
        if time.monotonic() - self._gone_at >= REATTACH_EVERY:
            found = find_monitor(self._config())
            if found is not None:
                return found

        return ChildSource(ownchild.start(self._config().source))

    def run_monitor(
        self,
        publish: Callable[[FleetSnapshot], object],
        source_changed: Callable[[str, str], object] | None = None,
    ) -> None:
        """Relay rounds until `stop_monitor()`; blocks (a worker thread).

        From the host's monitor when one runs for this fleet file, else from a child of our
        own (rocmtui.core.hostmonitor.ownchild: probing never holds the GIL the event loop
        needs); this thread only reads lines. While the child probes, a monitor that comes up
        is attached to (checked every `REATTACH_EVERY` seconds, between rounds) and the child
        ended.
        `source_changed(kind, description)` hears of each feed used. The feed ending raises
        MonitorGone (the shared monitor: the caller starts again at once, on a child) or
        MonitorFailed (our child).
        """
        while True:
            with self._lock:
                if self._stopped:
                    return
                feed = self.feed
                if feed is None or not feed.alive():
                    feed = self.feed = self._open()
            if source_changed is not None:
                source_changed(feed.kind, feed.describe())
            items: Iterable[FleetSnapshot | str] = feed.rounds()
            first = self._first
            if first is not None and first.feed is feed:
                first.done.wait()  # its reader owns the stream until the first line is read
                with self._lock:
                    self._first = None
                if first.item is not None and not first.taken:  # None: the output had ended
                    items = itertools.chain([first.item], items)
            if not self._relay(feed, items, publish):
                return
            with self._lock:
                if self.feed is not feed:  # swapped for the host's monitor: go on with it
                    continue
            error = feed.ended()
            if isinstance(error, MonitorGone):
                self._gone_at = time.monotonic()
            raise error

    def _relay(
        self,
        feed: ProbeSource,
        items: Iterable[FleetSnapshot | str],
        publish: Callable[[FleetSnapshot], object],
    ) -> bool:
        """Publish the feed's rounds until it ends (True) or the console stops (False)."""
        look_at = time.monotonic() + REATTACH_EVERY
        for item in items:
            if self._stopped:
                return False
            if isinstance(item, str):
                raise MonitorFailed(item)
            self._observe(item)  # the silent builds' verdicts read its vitals
            publish(item)
            if feed.kind == OWN and time.monotonic() >= look_at:
                look_at = time.monotonic() + REATTACH_EVERY
                found = find_monitor(self._config())
                if found is not None:
                    with self._lock:
                        self.feed = found
                    feed.stop(grace=1.0)  # a worker thread: it may wait, and reap the child
                    return True
        return not self._stopped

    def refresh_now(self) -> None:
        """Ask for a round now (thread-safe, never blocks)."""
        with self._lock:
            if self.feed is not None:
                self.feed.poke()

    def stop_monitor(self) -> None:
        """End the feed without waiting for it (safe on the event loop)."""
        with self._lock:
            self._stopped = True
            feed = self.feed
        if feed is not None:
            feed.close()


class _FirstRound:
    """Reads a feed's first round in a daemon thread, while Textual starts."""

    def __init__(self, feed: ProbeSource) -> None:
        self.feed = feed
        self.item: FleetSnapshot | str | None = None  # None: the stream ended first
        self.taken = False
        self.done = threading.Event()
        threading.Thread(target=self._read, name="first-round", daemon=True).start()

    def _read(self) -> None:
        try:
            self.item = next(iter(self.feed.rounds()), None)
        except (OSError, ValueError) as exc:  # the stream was closed under it (stopping)
            self.item = f"fleet monitor: {exc}"
        finally:
            self.done.set()
