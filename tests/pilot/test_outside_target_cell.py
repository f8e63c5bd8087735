"""The jobs panel's Target cell for a build started elsewhere with no bake target (a plain
`docker build` read from BuildKit's history): keys in, the screen's text out."""

from __future__ import annotations

from msgspec.structs import replace

from rocmtui.console.messages import JobsUpdated
from tests.support.blackbox import cell, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app


async def test_a_build_elsewhere_of_no_bake_target_is_named_not_a_question_mark() -> None:
    """A plain `docker build` seen in BuildKit's history has no bake target: its Target cell
    read "?" while `rocmtui jobs` named it; it now shows the record's name, muted."""
    from rocmtui.console.backend.adapters import job_view
    from rocmtui.core.history.outside import OutsideBuild

    base = recorded.jobs()[2].record
    plain = OutsideBuild("r1", name="polish-esc", inspected=True, status="completed")
    unread = OutsideBuild("r2", name="polish-esc")
    record = replace(base, id="elsewhere-1", target="polish-esc", outside=plain)
    views = (
        job_view(record, None),
        job_view(replace(record, id="elsewhere-2", outside=unread), None),
    )
    app = recorded_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await feed(app, pilot)
        post_feed(app, JobsUpdated(views))
        shown = await until_text(pilot, r"elsewhere-1")
        assert cell(shown, "Jobs", r"elsewhere-1", "Target") == "polish-esc", shown
        assert cell(shown, "Jobs", r"elsewhere-2", "Target") == "?", shown  # not read yet
