"""Pilot tests of stall verdicts on the fleet screen (recorded data in, screen text out): a
quiet, busy build is marked with its reason and never rings; a stalled one is loud and rings
once; a full disk offers a prune, and `p` shows what would go, asks, and prunes through the
backend; read-only has no `p`."""

from __future__ import annotations

import time

import pytest

from rocmtui.console.backend.views import JobView, PrunePreview
from rocmtui.console.messages import JobsUpdated
from rocmtui.core.states import JobState
from tests.support.blackbox import row, screen_text, status_line, toasts, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app

# wide enough for the whole verdict and its key hint beside the Host vitals (at 120 the Job
# cell keeps its start: test_app_fleet::test_host_vitals_fit_120_columns)
SIZE = (220, 40)
QUIET = "quiet 16m40s, cc1plus at 100% CPU (compiling?)"
IDLE = "idle: 0% CPU for 16m40s of silence"
DISK = "disk: /var/lib/docker full (0B free of 1.8T); silent 16m40s"


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def judged(state: JobState, kind: str, line: str) -> tuple[JobView, ...]:
    """The recorded jobs with the pytorch build on snoc-think silent 16m40s and judged."""
    pytorch, *rest = recorded.jobs(stalled=True)
    pytorch = recorded.changed(pytorch, state=state, verdict=kind, verdict_line=line, evidence=line)
    return (pytorch, *rest)


async def test_a_quiet_busy_build_is_marked_and_never_rings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = recorded_app()
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot, with_jobs=False)
        for _ in range(3):
            post_feed(app, JobsUpdated(judged(JobState.RUNNING, "busy", QUIET)))
            await pilot.pause()
        shown = await until_text(pilot, r"▶ building +snoc-think")
        line = row(shown, "Nodes", "snoc-think")
        assert "quiet 16m40s" in line and "(compiling?)" in line, line
        assert "stalled" not in status_line(shown)
        assert rings == []
        # the same build judged idle: loud, first, and one ring
        post_feed(app, JobsUpdated(judged(JobState.STALLED, "idle", IDLE)))
        shown = await until_text(pilot, r"‼ stalled +snoc-think")
        line = row(shown, "Nodes", "snoc-think")
        assert "silent 16m40s" in line and IDLE in line, line
        assert "1 stalled" in status_line(shown)
        assert rings == [1]
        shown = await until_text(pilot, r"Build stalled")
        assert f"has printed nothing for 16m40s: {IDLE}" in " ".join(toasts(shown).split())


async def test_a_full_disk_offers_a_prune_that_asks_first(monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app()
    asked: list[str] = []
    pruned: list[str] = []

    def preview(node: str) -> PrunePreview:
        asked.append(node)
        lines = (f"{node}: 3 of the build cache's records, 1.2G of 1.5G (everything prunable)",
                 "     1.0G  [demo-pytorch 1/1] RUN fake-compile pytorch")  # fmt: skip
        return PrunePreview(node, lines, 3)

    def prune(node: str) -> str:
        pruned.append(node)
        return f"Pruned 3 records (1.2G) on {node}."

    async with app.run_test(size=SIZE, notifications=True) as pilot:
        monkeypatch.setattr(app.backend, "prune_preview", preview)
        monkeypatch.setattr(app.backend, "prune", prune)
        await feed(app, pilot, with_jobs=False)
        post_feed(app, JobsUpdated(judged(JobState.STALLED, "disk", DISK)))
        shown = await until_text(pilot, r"‼ stalled +snoc-think")
        line = row(shown, "Nodes", "snoc-think")
        assert DISK in line and "p prunes its build cache" in line, line
        await pilot.press("up", "p")  # the stalled node is first
        shown = await until_text(pilot, r"Prune the build cache of snoc-think\?")
        assert "1.2G of 1.5G" in shown and "RUN fake-compile pytorch" in shown
        assert asked == ["snoc-think"] and pruned == []
        await pilot.press("escape")
        await until_text(pilot, r"Prune the build cache of", absent=True)
        assert pruned == []
        await pilot.press("p")
        await until_text(pilot, r"Prune the build cache of snoc-think\?")
        await pilot.press("y")
        shown = await until_text(pilot, r"Pruned 3 records \(1\.2G\) on snoc-think")
        assert pruned == ["snoc-think"]
        assert "Pruned 3 records" in toasts(shown)


async def test_read_only_has_no_prune(monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app(read_only=True)
    asked: list[str] = []
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        monkeypatch.setattr(app.backend, "prune_preview", lambda node: asked.append(node))
        await feed(app, pilot, with_jobs=False)
        post_feed(app, JobsUpdated(judged(JobState.STALLED, "disk", DISK)))
        await until_text(pilot, r"‼ stalled +snoc-think")
        await pilot.press("p")
        await pilot.pause()
        assert "Prune the build cache" not in screen_text(app) and asked == []


async def test_r_on_a_stalled_build_offers_it_on_another_node() -> None:
    """Its node needs a person: `r` opens the dialog with what it built on another node that
    is ok (of the same GPU arch first), ready as `r` is: the operator sees the node there."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, with_jobs=False)
        post_feed(app, JobsUpdated(judged(JobState.STALLED, "idle", IDLE)))
        await until_text(pilot, r"‼ stalled +snoc-think")
        await pilot.press("up", "r")
        await until_text(pilot, r"target demo-pytorch .*arch gfx1201 .*node snoc-gaming")
