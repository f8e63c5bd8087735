"""The log view's renderer alone: file lines to strips, as the screen shows them. Plain and
coloured lines, wrapping at the screen's width, find highlights, dimming, the line a jump
landed on, line classes (error lines), caching, and lines too big to read on the event loop."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.style import Style

from rocmtui.console.widgets.logview.render import LineRenderer, LineStyles
from rocmtui.core.logs.index import LineIndex
from rocmtui.core.logs.search import compile_query

STYLES = LineStyles(
    base=Style(color="white", bgcolor="black"),
    match=Style(bgcolor="yellow"),
    current=Style(bgcolor="blue"),
    landed=Style(underline=True),
    dim=Style(dim=True),
    marker=Style(italic=True),
    line={"error": Style(color="red")},
)


class Rows:
    """Every file line is a row (no filter)."""

    def __init__(self, count: int) -> None:
        self.row_count = count

    def line_of_row(self, row: int) -> int:
        return row


def renderer_for(path: Path) -> tuple[LineRenderer, list[list[int]], list[int]]:
    pending: list[list[int]] = []
    wider: list[int] = []
    console = Console(width=100, color_system="truecolor")
    renderer = LineRenderer(lambda: console, pending.append, lambda: wider.append(1))
    renderer.index = LineIndex(path)
    renderer.index.open()
    renderer.styles = STYLES
    return renderer, pending, wider


def text(renderer: LineRenderer, line: int, width: int = 40) -> list[str]:
    return [strip.text for strip in renderer.strips(line, width)]


def test_lines_are_shown_sanitised_coloured_and_classed(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(
        b"[1/3] Building HIP object k1.o\n"
        b"\x1b[31mred\x1b[0m and \x1b]0;TITLE\x07plain\n"
        b"k.cpp:3:1: error: no member named 'y'\n"
        b"tab\there\n"
    )
    renderer, _, wider = renderer_for(path)
    assert text(renderer, 0) == ["[1/3] Building HIP object k1.o"]
    assert text(renderer, 1) == ["red and plain"]
    red = [s.style for s in renderer.strips(1, 40)[0] if s.text == "red"]
    assert red and red[0] is not None and red[0].color is not None
    assert red[0].color.number == 1  # SGR 31
    assert text(renderer, 3) == ["tab     here"]
    # an error line is class "error": its style goes under the line's own
    (error,) = renderer.strips(2, 40)[0]
    assert error.style == STYLES.base + Style(color="red")
    (plain,) = renderer.strips(0, 40)[0]
    assert plain.style == STYLES.base
    assert wider and renderer.max_width == len("k.cpp:3:1: error: no member named 'y'")


def test_an_unstyled_line_class_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"x: error: y\n")
    renderer, _, _ = renderer_for(path)
    renderer.styles = LineStyles(base=STYLES.base)  # the CSS gives "error" no style
    (segment,) = renderer.strips(0, 40)[0]
    assert segment.style == STYLES.base


def test_wrap_find_dim_and_landed(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"abcdefghij" * 5 + b"\nno match here\nabc again\n")
    renderer, _, _ = renderer_for(path)
    renderer.look.wrap = True
    renderer.restyle()
    assert text(renderer, 0, 20) == ["abcdefghij" * 2] * 2 + ["abcdefghij".ljust(20)]
    renderer.look.wrap = False
    renderer.look.find = compile_query("abc")
    renderer.look.dim = True
    renderer.restyle()
    matched = [s for s in renderer.strips(2, 40)[0] if s.text == "abc"]
    assert matched and matched[0].style is not None and matched[0].style.bgcolor is not None
    assert all(s.style is not None and s.style.dim for s in renderer.strips(1, 40)[0])
    renderer.look.find = None
    renderer.look.current_line = 1
    renderer.restyle()
    assert all(s.style is not None and s.style.underline for s in renderer.strips(1, 40)[0])


def test_rendered_lines_are_cached_until_the_look_or_the_line_changes(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"one\ntwo\nthr")
    renderer, _, _ = renderer_for(path)
    first = renderer.strips(2, 40)
    assert renderer.strips(2, 40) is first
    renderer.restyle()
    assert renderer.strips(2, 40) is not first
    with path.open("ab") as out:
        out.write(b"ee\n")
    assert renderer.index is not None
    renderer.index.refresh()
    assert text(renderer, 2) == ["thr"]  # still the cached text ...
    renderer.forget_line(2)  # ... until the view says the last line grew
    assert text(renderer, 2) == ["three"]


def test_the_wrapped_screen_from_the_bottom_keeps_the_last_line_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"".join(b"%02d " % n + b"x" * 30 + b"\n" for n in range(10)))
    renderer, _, _ = renderer_for(path)
    renderer.look.wrap = True
    screen = renderer.wrapped_screen(Rows(10), 0, True, (20, 5), 5)
    assert [row for row, _ in screen] == [7, 8, 8, 9, 9]
    assert screen[-2][1].text.startswith("09 ")
    top = renderer.wrapped_screen(Rows(10), 2, False, (20, 5), 5)
    assert [row for row, _ in top] == [2, 2, 3, 3, 4]


def test_a_line_too_big_for_the_event_loop_is_left_to_a_worker(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"before\n" + b"x" * (3 << 20) + b"\nafter\n")
    renderer, pending, _ = renderer_for(path)
    assert renderer.index is not None
    renderer.index.scan_back()
    assert text(renderer, 1) == ["…"] and pending == [[1]]
    renderer.index.spans(1, 2)  # what the worker does: the block's line starts are kept
    renderer.forget()
    shown = text(renderer, 1, 60)[0]
    assert shown.startswith("x" * 40) and "bytes]" in renderer.text(1)[0].plain


def test_a_miss_reads_the_side_the_screen_is_drawn_towards(tmp_path: Path) -> None:
    """Drawn from the top down, a missed line is read with the lines after it; from the bottom
    up, with those before it; else with both: each line read once, and the right one shown."""
    path = tmp_path / "n.log"
    path.write_bytes(b"".join(b"line %03d\n" % i for i in range(100)))
    for ahead, cached in ((True, range(50, 60)), (False, range(41, 51)), (None, range(41, 60))):
        renderer, _, _ = renderer_for(path)
        assert [s.text for s in renderer.strips(50, 40, window=10, ahead=ahead)] == ["line 050"]
        assert [n for n in range(100) if renderer._texts.get(n) is not None] == list(cached)
        renderer.index.close()
