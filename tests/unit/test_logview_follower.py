"""The log view's follower and the one watcher thread that serves every follower: events in
order, one read at a time per reader, resets and removals, failures kept to their file, and no
thread left once the last follower stopped. No Textual here: the follower knows none."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocmtui.console.widgets.logview.follower import (
    Failed,
    FollowerEvent,
    Indexing,
    LogFollower,
    Opened,
    Tailed,
)
from rocmtui.console.widgets.logview.watcher import LogWatcher
from rocmtui.core.logs.index import TAIL_BYTES, Change

WAIT = 15.0  # seconds any event may take on a loaded machine


class Events:
    """What a follower sent, in order, as a reader on another thread sees it."""

    def __init__(self) -> None:
        self.queue: queue.Queue[FollowerEvent] = queue.Queue()
        self.progress = 0  # progress events of the backward scan seen

    def __call__(self, follower: LogFollower, event: FollowerEvent) -> None:
        self.queue.put(event)

    def next(self, kind: type[FollowerEvent]) -> FollowerEvent:
        """The next event, which must be a `kind` (the scan's progress is skipped)."""
        while True:
            event = self.queue.get(timeout=WAIT)
            if isinstance(event, Indexing) and not event.complete:
                self.progress += 1
                continue
            assert isinstance(event, kind), event
            return event

    def none_for(self, seconds: float) -> bool:
        """Nothing (but scan progress) arrives for `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self.queue.get(timeout=left)
            except queue.Empty:
                return True
            if not isinstance(event, Indexing):
                return False
        return True


@pytest.fixture
def watcher(request: pytest.FixtureRequest) -> Iterator[LogWatcher]:
    """A watcher of the test's own; its thread must be gone once the test stopped its
    followers."""
    own = LogWatcher(name=f"watcher-{request.node.name}")
    yield own
    wait_until(lambda: not own.running, "the watcher's thread to end")


def lines(first: int, count: int) -> bytes:
    return b"".join(b"line %07d of a build\n" % n for n in range(first, first + count))


def wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_opens_the_tail_then_indexes_backwards_once_painted(
    tmp_path: Path, watcher: LogWatcher
) -> None:
    path = tmp_path / "big.log"
    path.write_bytes(lines(0, 100_000))  # several MB: far more than the tail read at open
    assert path.stat().st_size > 20 * TAIL_BYTES
    events = Events()
    follower = LogFollower(path, events, watcher=watcher)
    follower.start()
    opened = events.next(Opened)
    assert isinstance(opened, Opened) and not opened.index.complete
    assert not follower.indexed.is_set()
    follower.painted()  # the tail is on screen: the scan may start
    done = events.next(Indexing)
    assert isinstance(done, Indexing) and done.complete and done.done == done.total
    assert follower.indexed.is_set() and opened.index.line_count == 100_000
    assert events.progress > 0  # it said how far it got on the way
    follower.stop()
    wait_until(lambda: not watcher.running, "the watcher to end with its last follower")
    assert opened.index.fileno() is None  # closed on the watcher's thread


def test_one_read_at_a_time_until_the_reader_applied_it(
    tmp_path: Path, watcher: LogWatcher
) -> None:
    path = tmp_path / "grow.log"
    path.write_bytes(lines(0, 10))
    events = Events()
    follower = LogFollower(path, events, watcher=watcher)
    follower.start()
    opened = events.next(Opened)
    assert isinstance(opened, Opened)
    events.next(Indexing)  # all of it was in the tail
    follower.painted()
    with path.open("ab") as log:
        log.write(lines(10, 5))
        log.flush()
        grew = events.next(Tailed)
        assert isinstance(grew, Tailed) and grew.change is Change.GREW and grew.before == 10
        log.write(lines(15, 5))
        log.flush()
        # not applied yet: nothing more is read, however long the reader takes
        assert events.none_for(0.5)
        assert opened.index.line_count == 15
        follower.applied()
        more = events.next(Tailed)
        assert isinstance(more, Tailed) and more.before == 15
    assert opened.index.line_count == 20
    follower.stop()


def test_a_truncated_then_removed_file(tmp_path: Path, watcher: LogWatcher) -> None:
    path = tmp_path / "reset.log"
    path.write_bytes(lines(0, 1000))
    events = Events()
    follower = LogFollower(path, events, watcher=watcher)
    follower.start()
    opened = events.next(Opened)
    assert isinstance(opened, Opened)
    follower.painted()
    events.next(Indexing)
    path.write_bytes(lines(0, 3))  # rewritten, shorter
    reset = events.next(Tailed)
    assert isinstance(reset, Tailed) and reset.change is Change.RESET
    follower.applied()
    events.next(Indexing)
    assert follower.indexed.is_set()
    assert opened.index.line_count == 3
    path.unlink()
    gone = events.next(Tailed)
    assert isinstance(gone, Tailed) and gone.change is Change.MISSING
    follower.applied()
    assert events.none_for(0.5)  # said once; the index says `removed` meanwhile
    assert opened.index.removed
    follower.stop()


def test_a_file_that_is_not_there_yet_is_opened_when_it_appears(
    tmp_path: Path, watcher: LogWatcher
) -> None:
    path = tmp_path / "later.log"
    events = Events()
    follower = LogFollower(path, events, watcher=watcher)
    follower.start()
    failed = events.next(Failed)
    assert isinstance(failed, Failed) and "later.log" in failed.reason
    path.write_bytes(b"here now\n")
    opened = events.next(Opened)
    assert isinstance(opened, Opened) and opened.index.line_count == 1
    follower.stop()


class Broken:
    """A follower whose every step raises."""

    def __init__(self, path: Path) -> None:
        self.path, self.stopped, self.failures, self.closed = path, False, 0, False

    def serve(self, now: float) -> float:
        raise RuntimeError("a bug")

    def close(self) -> None:
        self.closed = True

    def fail(self, reason: str) -> None:
        self.failures += 1


def test_one_thread_serves_them_all_and_a_failing_one_stops_no_other(
    tmp_path: Path, watcher: LogWatcher
) -> None:
    broken = Broken(tmp_path / "broken.log")
    watcher.add(broken)
    followers, all_events = [], []
    for n in range(10):
        path = tmp_path / f"f{n}.log"
        path.write_bytes(lines(0, 1))
        events = Events()
        follower = LogFollower(path, events, watcher=watcher)
        follower.start()
        followers.append((path, follower))
        all_events.append(events)
    for events in all_events:
        events.next(Opened)
        events.next(Indexing)
    for path, follower in followers:
        follower.painted()
        with path.open("ab") as log:
            log.write(lines(1, 1))
    for events in all_events:
        tailed = events.next(Tailed)
        assert isinstance(tailed, Tailed) and tailed.change is Change.GREW
    threads = [t for t in threading.enumerate() if t.name == watcher.name]
    assert len(threads) == 1 and watcher.followers == 11
    assert broken.failures > 0  # told, and still served
    broken.stopped = True
    for _, follower in followers:
        follower.stop()
    watcher.wake()
    wait_until(lambda: not watcher.running, "the watcher's thread to end")
    assert broken.closed and watcher.followers == 0


def test_asked_to_look_now_it_answers_even_when_nothing_changed(
    tmp_path: Path, watcher: LogWatcher
) -> None:
    path = tmp_path / "still.log"
    path.write_bytes(lines(0, 5))
    events = Events()
    follower = LogFollower(path, events, watcher=watcher)
    follower.start()
    events.next(Opened)
    events.next(Indexing)
    assert events.none_for(0.3)  # nothing changes: nothing is said
    follower.poll_now()  # follow mode went on: the view shows the end once it hears back
    answer = events.next(Tailed)
    assert isinstance(answer, Tailed) and answer.change is Change.NONE and answer.before == 5
    follower.applied()
    follower.stop()
