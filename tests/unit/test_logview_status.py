"""The log view's status line and its selection, as plain data: what each says."""

from __future__ import annotations

from rocmtui.console.widgets.logview.selection import Selection
from rocmtui.console.widgets.logview.status import SearchFacts, StatusFacts, status_line


def test_the_status_line_says_where_what_and_how_far() -> None:
    assert status_line(StatusFacts()) == "FOLLOW"
    facts = StatusFacts(
        name="log",
        lines=52_113,
        complete=True,
        shown=(1_201, 1_240),
        follow=False,
        wrap=True,
        find=SearchFacts("error", 17, True),
        match_no=3,
        filter=SearchFacts("HIP", 4_210, False, invert=True),
        selecting=True,
    )
    assert status_line(facts) == (
        "log │ 1,201–1,240 of 52,113 │ paused │ wrap │ /error/ 3/17 │ filter !HIP: 4,210… │ "
        "select: ↑↓ then y"
    )
    indexing = StatusFacts(name="log", lines=800, indexing=(25, 100))
    assert status_line(indexing) == "log │ 800+ lines │ indexing 25% │ FOLLOW"
    gone = StatusFacts(name="log\x1b]0;x\x07", error="read: gone", removed=True, lines=1)
    assert status_line(gone) == "⚠ read: gone │ ⚠ removed; still followed │ log │ 1+ lines │ FOLLOW"


def test_a_selection_runs_from_its_anchor_to_its_cursor() -> None:
    selection = Selection()
    assert not selection.active and selection.move(1, 10) is None
    selection.start(5)
    assert selection.move(-2, 10) == 3 and selection.span() == (3, 5)
    assert [selection.role(r) for r in (2, 3, 4, 5, 6)] == [
        None,
        "cursor",
        "selected",
        "selected",
        None,
    ]
    assert selection.move(-9, 10) == 0 and selection.move(99, 10) == 9
    selection.clear()
    assert selection.span() is None and selection.role(5) is None
