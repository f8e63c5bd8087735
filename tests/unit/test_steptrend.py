"""A target × arch's steps across its last builds (core/history/steptrend, the history
screen's `S` panel): matching, order, marks, gaps, and outside names drawn as plain text."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from rocmtui.console.widgets.common import Palette
from rocmtui.console.widgets.steptrend import builds_text, trend_row
from rocmtui.core.history.stepgraph import Step
from rocmtui.core.history.stepreport import StepReport
from rocmtui.core.history.steptrend import StepTrend, TrendBuild

T = 1_000_000.0
PLAIN = Palette(*(Style() for _ in range(7)))


def step(digest: str, name: str, start: float, end: float, cached: bool = False,
         inputs: tuple[str, ...] = ()) -> Step:  # fmt: skip
    return Step(digest, name, T + start, T + end, cached, None, inputs)


def report(*steps: Step) -> StepReport:
    return StepReport.build(list(steps))


def build(job: str, note: str | None = None) -> TrendBuild:
    return TrendBuild(job, "n0", T, "succeeded", note=note)


def test_steps_match_by_position_slowest_first_and_a_miss_is_marked() -> None:
    now = report(
        step("a2", "[base 2/2] RUN echo one", 0, 0, cached=True),
        step("b2", '[final 3/3] RUN echo "begin two chocolate"', 0, 9, inputs=("a2",)),
    )
    then = report(
        step("a1", "[base 2/2] RUN echo one", 0, 0, cached=True),
        step("b1", '[final 3/3] RUN echo "begin two vanilla"', 0, 0, cached=True, inputs=("a1",)),
    )
    first = report(
        step("a0", "[base 2/2] RUN echo one", 0, 4),
        step("b0", '[final 3/3] RUN echo "begin two vanilla"', 4, 6, inputs=("a0",)),
        step("c0", "[gone 1/1] RUN only then", 0, 1),
    )
    trend = StepTrend.build(
        "t", "gfx1201", [(build("j3"), now), (build("j2"), then), (build("j1"), first)]
    )
    keys = [r.key for r in trend.rows]
    assert keys == ["[final 3/3] RUN", "[base 2/2] RUN", "[gone 1/1] RUN"]
    final = trend.rows[0]
    assert final.name.endswith('chocolate"') and final.missed and final.critical
    assert [c.cached for c in final.cells] == [False, True, False]
    assert not trend.rows[1].missed
    gone = trend.rows[2]
    assert [c.present for c in gone.cells] == [False, False, True]


def test_a_build_without_steps_keeps_its_column_and_says_why() -> None:
    now = report(step("a", "[x 1/1] RUN true", 0, 2))
    trend = StepTrend.build(
        "t", "gfx1201", [(build("j2"), now), (build("j1", "the node keeps no history"), None)]
    )
    row = trend.rows[0]
    assert [c.present for c in row.cells] == [True, False]
    assert not row.missed
    text = builds_text(trend, T + 60, PLAIN).plain
    assert "now n0 " in text and "-1 n0 " in text
    assert "(no steps)" in text and "no steps: -1: the node keeps no history" in text


def test_rows_are_bounded_and_the_rest_counted() -> None:
    many = report(*(step(f"d{i}", f"[s {i}/10000] RUN x{i}", 0, i / 100) for i in range(1, 10001)))
    trend = StepTrend.build("t", "", [(build("j"), many)])
    assert len(trend.rows) == 200 and trend.more == 9800
    assert trend.rows[0].key == "[s 10000/10000] RUN"


def test_markup_and_escapes_in_a_step_name_stay_plain_text() -> None:
    hostile = "[final 1/1] RUN echo [bold red]x[/] \x1b[31mred\x1b]0;title\x07"
    trend = StepTrend.build("t", "", [(build("j"), report(step("a", hostile, 0, 1)))])
    _, cells = trend_row(trend.rows[0], PLAIN)
    name = cells[1]
    assert isinstance(name, Text)
    assert "\x1b" not in name.plain and "\x07" not in name.plain
    assert "[bold red]x[/]" in name.plain  # shown as written, never parsed as markup


def test_a_step_without_a_name_reads_so_everywhere() -> None:
    from rocmtui.core.history.stepreport import NO_NAME, shown_name

    trend = StepTrend.build("t", "", [(build("j"), report(step("a", "", 0, 1)))])
    _, cells = trend_row(trend.rows[0], PLAIN)
    assert cells[1].plain == NO_NAME == shown_name("")
    assert shown_name("[x 1/1] RUN x") == "[x 1/1] RUN x"
