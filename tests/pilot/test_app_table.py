"""The fleet screen's table: keyed rows, a cursor that follows its key, repaints of changed rows
only, columns that do not jitter, and keys that work without a mouse."""

from __future__ import annotations

from pathlib import Path

from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region

from rocmtui.console.widgets.table import SHRINK_AFTER, Row, SnapshotTable

STYLES = Path(__file__).resolve().parents[2] / "rocmtui" / "styles" / "console.tcss"


def rows(*names: str, note: str = "") -> list[Row]:
    return [(n, [Text(n), Text(f"{n}{note}")]) for n in names]


class TableApp(App[None]):
    CSS_PATH = STYLES

    def __init__(self, height: int = 10) -> None:
        super().__init__()
        self.table = SnapshotTable(("Name", "Note"), id="t")
        self.height = height
        self.chosen: list[str] = []

    def compose(self) -> ComposeResult:
        yield self.table

    def on_mount(self) -> None:
        self.table.styles.height = self.height
        self.table.focus()

    def on_snapshot_table_row_selected(self, event: SnapshotTable.RowSelected) -> None:
        self.chosen.append(event.key)


def lines(table: SnapshotTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


async def test_rows_under_a_header_in_padded_columns() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 12)) as pilot:
        app.table.show_rows(rows("alpha", "b", note="!"))
        await pilot.pause()
        assert lines(app.table)[:4] == [" Name   Note", " alpha  alpha!", " b      b!", ""]
        assert app.table.row_keys == ["alpha", "b"] and app.table.row_count == 2
        assert [str(c) for c in app.table.get_row_at(1)] == ["b", "b!"]
        # a row of plain cells is one run of one style (and the fill to the table's width):
        # every segment costs its own colour codes on the wire
        assert len(list(app.table.render_line(2))) <= 2


async def test_cursor_follows_its_key_and_keys_move_it() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 12)) as pilot:
        app.table.show_rows(rows("a", "b", "c", "d"))
        await pilot.press("down", "down")
        assert app.table.selected_key == "c"
        app.table.show_rows(rows("c", "a", "b"))  # reordered: the cursor stays on "c"
        assert app.table.selected_key == "c" and app.table.cursor_row == 0
        app.table.show_rows(rows("a", "b"))  # "c" went away: the cursor stays in range
        assert app.table.selected_key == "a"
        app.table.show_rows(rows(*"abcdefghijklmnop"))
        await pilot.press("end")
        assert app.table.selected_key == "p"
        await pilot.press("home", "pagedown")
        assert app.table.cursor_row == 8  # a page is the table's height less the header, less one
        await pilot.press("up")
        assert app.table.selected_key == "h"
        app.table.show_rows([])
        assert app.table.selected_key is None


async def test_enter_and_a_click_on_the_cursor_choose_the_row() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 12)) as pilot:
        app.table.show_rows(rows("a", "b", "c"))
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.chosen == ["b"]
        await pilot.click("#t", offset=(2, 3))  # the third row: the cursor moves there
        await pilot.pause()
        assert app.table.selected_key == "c" and app.chosen == ["b"]
        await pilot.click("#t", offset=(2, 3))  # again, on the cursor: chosen
        await pilot.pause()
        assert app.chosen == ["b", "c"]
        await pilot.click("#t", offset=(2, 0))  # the header chooses nothing
        await pilot.pause()
        assert app.chosen == ["b", "c"]


async def test_a_changed_cell_repaints_its_row_only() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 12)) as pilot:
        app.table.show_rows(rows("a", "b", "c"))
        await pilot.pause()
        repaints: list[tuple[Region, ...]] = []
        original = app.table.refresh

        def spy(*regions: Region, **kwargs: object) -> SnapshotTable:
            repaints.append(regions)
            return original(*regions, **kwargs)  # type: ignore[arg-type]

        app.table.refresh = spy  # type: ignore[method-assign]
        app.table.show_rows(rows("a", "b", "c"))  # nothing changed: nothing repainted
        assert repaints == []
        changed = rows("a", "b", "c")
        changed[1] = ("b", [Text("b"), Text("b?")])  # the same width: the row alone
        app.table.show_rows(changed)
        assert repaints == [(Region(0, 2, 40, 1),)]
        await pilot.pause()
        assert lines(app.table)[2] == " b     b?"


async def test_columns_grow_at_once_and_shrink_only_when_far_too_wide() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 12)) as pilot:
        app.table.show_rows([("a", [Text("a"), Text("x" * 20)])])
        await pilot.pause()
        wide = lines(app.table)[0]
        app.table.show_rows([("a", [Text("a"), Text("x" * (20 - SHRINK_AFTER))])])
        await pilot.pause()
        assert lines(app.table)[0] == wide  # a little narrower: the columns stay
        assert app.table.virtual_size.width == 1 + 2 + 4 + 2 + 20 - 1  # " Name  " + 20 + " "
        app.table.show_rows([("a", [Text("a"), Text("x")])])
        await pilot.pause()
        assert app.table.virtual_size.width == 6 + 6  # fitted again: " Name " " Note "
        assert lines(app.table)[1] == " a     x"


async def test_left_and_right_scroll_a_column_at_a_time() -> None:
    app = TableApp(height=4)
    async with app.run_test(size=(12, 8)) as pilot:
        app.table.show_rows([("a", [Text("abcdefghij"), Text("0123456789")])])
        await pilot.pause()
        await pilot.press("right")
        await pilot.pause()
        assert app.table.scroll_offset.x == 12  # the second column's start
        assert lines(app.table)[1].startswith(" 0123456789")
        await pilot.press("left")
        await pilot.pause()
        assert app.table.scroll_offset.x == 0


async def test_cells_keep_their_colours_and_the_cursor_goes_over_them() -> None:
    app = TableApp()
    red, alarm = Style(color="red"), Style(bgcolor="red")
    async with app.run_test(size=(40, 12)) as pilot:
        app.table.show_rows(
            [
                ("a", [Text("alarm", style=alarm), Text("x")]),
                ("b", [Text("quiet", style=red), Text("two\nlines")]),
            ]
        )
        await pilot.pause()
        under_cursor = app.table.render_line(1)
        below = app.table.render_line(2)
        cursor = app.table.get_component_rich_style("snapshot-table--cursor")
        [seg] = [s for s in below if "quiet" in s.text]
        assert seg.style is not None and seg.style.color == red.color
        # the gap after a coloured word trails it (a space shows no colour), and SVG
        # renderers that drop leading spaces still put the next column in its place
        assert seg.text == "quiet  "
        [seg] = [s for s in under_cursor if "alarm" in s.text]
        assert seg.style is not None and seg.style.bgcolor == cursor.bgcolor
        assert seg.text == "alarm"  # a background never spreads into the gap
        assert lines(app.table)[2] == " quiet  two"  # one line per row, whatever a cell holds
        app.table.show_rows(
            [
                ("a", [Text("a"), Text("x")]),
                ("c", [Text.assemble(("zot", "bold"), " http://x"), Text("y")]),
            ]
        )
        await pilot.pause()
        texts = [s.text for s in app.table.render_line(2)]
        assert texts[:2] == [" ", "zot "]  # the span's space trails "zot" ...
        assert texts[2].startswith("http://x  y")  # ... and the gap trails the cell
