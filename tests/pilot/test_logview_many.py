"""Many log views following growing files at once (issue 17): following never holds a thread of
asyncio's default pool, which every other worker of the console shares, and every view still
shows its newest lines.

The app runs with a default pool of 6 threads, what min(32, cores + 4) gives on the 2-core
machines the console runs on; a view that held one thread for as long as it followed (as each
did) starved the pool with six views open, whatever the test machine's own core count.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from textual.app import App, ComposeResult
from textual.containers import Grid
from textual.pilot import Pilot

from rocmtui.console.widgets.logview import LogView
from rocmtui.console.widgets.logview.watcher import LogWatcher

VIEWS = 20
POOL = 6  # min(32, 2 cores + 4)


class ManyViews(App[None]):
    """A grid of log views, one per file."""

    CSS = "Grid { grid-size: 4 5; } LogView { height: 1fr; }"

    def __init__(self, paths: list[Path], watcher: LogWatcher) -> None:
        super().__init__()
        self.paths, self.watcher = paths, watcher

    def compose(self) -> ComposeResult:
        with Grid():
            for path in self.paths:
                yield LogView(path, watcher=self.watcher)


async def until(pilot: Pilot[None], cond: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def newest_shown(view: LogView, line: str) -> bool:
    return any(row.startswith(line) for row in view.screen_text())


def all_show(views: list[LogView], line: Callable[[int], str]) -> Callable[[], bool]:
    """Whether every view shows its own `line(n)`."""
    return lambda: all(newest_shown(v, line(n)) for n, v in enumerate(views))


async def test_twenty_followed_logs_leave_the_default_pool_free(tmp_path: Path) -> None:
    paths = [tmp_path / f"build-{n}.log" for n in range(VIEWS)]
    for n, path in enumerate(paths):
        path.write_text(f"build {n} started\n")
    watcher = LogWatcher(name="test-many-views")
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=POOL, thread_name_prefix="default-pool")
    loop.set_default_executor(pool)
    app = ManyViews(paths, watcher)
    try:
        async with app.run_test(size=(200, 100)) as pilot:
            views = list(app.query(LogView))
            assert len(views) == VIEWS
            started = all_show(views, lambda n: f"build {n} started")
            await until(pilot, started, "every view to show its file", timeout=30)
            for batch in range(3):  # the files grow while all twenty follow them
                for n, path in enumerate(paths):
                    with path.open("a") as log:
                        log.write("".join(f"build {n} line {batch}.{i}\n" for i in range(200)))
                # a worker of the console's own gets a thread at once (it waited for ever when
                # six views held the pool)
                answer = loop.run_in_executor(None, lambda: "a free thread")
                assert await asyncio.wait_for(answer, timeout=10) == "a free thread"
                shown = all_show(views, lambda n, b=batch: f"build {n} line {b}.199")
                await until(pilot, shown, f"every view to show batch {batch}", timeout=30)
            assert all(v.line_count == 601 for v in views)
            assert watcher.running and watcher.followers == VIEWS
        # the views are gone: so is the watcher's thread (it never outlives its followers)
        deadline = time.monotonic() + 10
        while watcher.running and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not watcher.running and watcher.followers == 0
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
