"""Outside text that looks like markup reaches the screen as the characters it is (issue 37).

A build started elsewhere names its target from the record's name, which any client of the
builder sets (`BUILDKIT_BUILD_NAME`); node names, users, steps and variables come from files and
engines. Each name below is fed through the console's panels, screens and dialogs: the console
lives (a `MarkupError` would end it), shows each name literally, and turns none into an action.
"""

from __future__ import annotations

import time

import pytest
from msgspec.structs import replace

from rocmtui.console.backend.matrix_child import Published
from rocmtui.console.backend.views import BakeView, JobView, VariableView
from rocmtui.console.dialogs.bake import BakeDialog
from rocmtui.console.dialogs.cell_detail import CellDetailScreen
from rocmtui.console.messages import BakeLoaded, FleetUpdated, JobsUpdated
from rocmtui.console.outside_text import clean
from rocmtui.console.screens.history import HistoryScreen
from rocmtui.console.screens.published import PublishedScreen
from rocmtui.core.costbook.report import HistoryReport
from rocmtui.core.snapshots import FleetSnapshot
from tests.support.blackbox import panel, screen_text, until_text
from tests.support.history import recorded_rows
from tests.support.snapshots import published as recorded_published
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app

# each one raised MarkupError, or became a live link or action, when parsed as markup
NAMES = ("x[/]", "[@click=app.quit]q", "[link=http://127.0.0.1/]l[/link]", "[bold]")
SIZE = (200, 60)  # big enough for the watch panel under the tables


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.mark.parametrize("name", NAMES)
async def test_watched_build_named_like_markup(name: str) -> None:
    """The watch panel's title holds the target of the build that matters most."""
    app = recorded_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot, with_jobs=False)
        views = recorded.jobs(stalled=True)
        hostile = tuple(recorded.changed(v, target=name) for v in views)
        post_feed(app, JobsUpdated(hostile))
        shown = await until_text(pilot, r"Watching ")
        assert app.is_running, shown
        watching = next(line for line in shown.splitlines() if "Watching " in line)
        assert f"Watching {clean(name, 30)} " in watching, watching
        assert app.is_running, screen_text(app)


def hostile_fleet(name: str) -> FleetSnapshot:
    """The recorded fleet with markup-looking node names, builder names and service answers."""
    snap = recorded.fleet(think_down=True)
    nodes = tuple(
        replace(n, name=f"{name}{i}", reason=f"{name} {n.reason}" if n.reason else None)
        for i, n in enumerate(snap.nodes)
    )
    registry = replace(snap.registry, identity=name, extras=((name, name),))
    return replace(snap, nodes=nodes, registry=registry, webdav=replace(snap.webdav, reason=name))


def hostile_jobs(name: str) -> tuple[JobView, ...]:
    """The recorded jobs with a markup-looking target, user, node, step and failure."""
    out = []
    for i, view in enumerate(recorded.jobs(stalled=True)):
        view = recorded.changed(view, target=name, user=name, node=f"{name}{i}")
        if view.record.error_step:
            view = recorded.changed(view, error_step=name)
        if view.progress is not None:
            steps = tuple(replace(s, name=name) for s in view.progress.steps)
            view = replace(view, progress=replace(view.progress, step=name, steps=steps))
        out.append(view)
    return tuple(out)


def hostile_bake(name: str) -> BakeView:
    """The demo bake file with a markup-looking target and variable value."""
    bake = recorded.bake(hostile=True)
    extra = (VariableView("HOSTILE", name, "", "env"),)
    return replace(bake, targets=(name, *bake.targets), variables=bake.variables + extra)


def hostile_published(name: str) -> Published:
    """The recorded matrix with a markup-looking row, reason and store path."""
    answer = recorded_published.published()
    matrix = answer.matrix
    rows = list(matrix.rows)
    first = rows[0]
    cells = tuple(replace(c, reason=name, tag=f"r/{name}:t") for c in first.cells)
    rows[0] = replace(first, name=name, cells=cells)
    store = {**(matrix.store or {}), "path": f"/srv/{name}"}
    versions = answer.versions
    assert versions is not None
    pins = list(versions.rows)
    upstream = replace(pins[0].upstream, newest=name, name=name, reason=name)
    pins[0] = replace(pins[0], pinned=name, upstream=upstream, registry={name: 3})
    return replace(
        answer,
        matrix=replace(matrix, rows=tuple(rows), store=store),
        versions=replace(versions, rows=tuple(pins)),
    )


def hostile_history(name: str) -> HistoryReport:
    """Recorded build history whose targets and starters are markup-looking names."""
    rows = [replace(r, target=name, started_by=name) for r in recorded_rows(48)]
    return HistoryReport.build(rows, now=rows[-1].ended_at + 3600.0)


def literally(shown: str, name: str, where: str) -> None:
    """`name` is on the screen as written (a markup parser would have eaten its tags)."""
    assert clean(name)[:6] in shown, f"{name!r} not shown literally on {where}:\n{shown}"


@pytest.mark.parametrize("name", NAMES)
async def test_every_screen_shows_markup_looking_names_literally(name: str) -> None:
    """Fleet panels, log panes, history, published (and a cell's detail), the bake dialog and
    help, each fed markup-looking names: the console lives and shows them as written."""
    app = recorded_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        post_feed(app, BakeLoaded(hostile_bake(name)))
        post_feed(app, FleetUpdated(hostile_fleet(name)))
        post_feed(app, JobsUpdated(hostile_jobs(name)))
        shown = await until_text(pilot, r"Watching ")
        for title in ("Nodes", "Jobs", "Services", "Variables"):
            literally("\n".join(panel(shown, title)), name, f"the {title} panel")
        assert app.is_running

        await pilot.press("l")  # the selected job's log pane
        shown = await until_text(pilot, r"Log panes|logs? │|\.log")
        assert app.is_running, shown
        literally(shown, name, "the log screen")
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("h")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen), screen_text(app)
        screen.show(hostile_history(name))
        await pilot.pause()
        literally(screen_text(app), name, "the history screen")
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("m")
        await pilot.pause()
        published = app.screen
        assert isinstance(published, PublishedScreen), screen_text(app)
        published.show(hostile_published(name))
        await pilot.pause()
        shown = screen_text(app)
        literally(shown, name, "the published screen")
        literally("\n".join(panel(shown, "Pinned versions")), name, "the versions panel")
        await pilot.press("enter")  # the cell's detail, its reason and tag
        await pilot.pause()
        assert isinstance(app.screen, CellDetailScreen), screen_text(app)
        literally(screen_text(app), name, "a cell's detail")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("b")  # the bake dialog: its target chooser starts with the name
        await until_text(pilot, r"Bake")
        assert isinstance(app.screen, BakeDialog), screen_text(app)
        literally(screen_text(app), name, "the bake dialog")
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("question_mark")
        shown = await until_text(pilot, r"Keys|Close")
        assert app.is_running, shown
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running
        assert app.screen is app.screen_stack[0], screen_text(app)  # no click ran an action
