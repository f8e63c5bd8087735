"""LogView in a real Textual app (Pilot): the right lines on screen for the generated build log
and for hostile files that grow, shrink, rotate, hold a 10 MB line or split UTF-8 across
writes; find, filter, jumps, wrap and copy checked against Python's own reading of the file."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from rocmtui.console.widgets.logview import LogView
from rocmtui.core.logs import search_grep
from rocmtui.core.progress.ninja import ERROR_LINE
from rocmtui.core.text.sanitize import sanitize_line
from tests.support.blackbox import screen_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_buildlog

SIZE = (100, 30)


class ViewApp(App[None]):
    """One LogView, like the standalone viewer."""

    def __init__(self, path: Path, follow: bool = True) -> None:
        super().__init__()
        self.path, self.follow = path, follow
        self.messages: list[object] = []

    def compose(self) -> ComposeResult:
        yield LogView(self.path, follow=self.follow)

    def on_mount(self) -> None:
        self.query_one(LogView).body.focus()

    def on_log_view_find_changed(self, message: LogView.FindChanged) -> None:
        self.messages.append(message)

    def on_log_view_filter_changed(self, message: LogView.FilterChanged) -> None:
        self.messages.append(message)

    def on_log_view_file_reset(self, message: LogView.FileReset) -> None:
        self.messages.append(message)

    def on_log_view_copied(self, message: LogView.Copied) -> None:
        self.messages.append(message)


async def until(
    pilot: Pilot[None], cond: Callable[[], bool], what: str, timeout: float = 15
) -> None:
    """Poll `cond` between frames until it holds, failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            view = pilot.app.query_one(LogView)
            screen = "\n".join(view.screen_text())
            raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}")
        await pilot.pause(0.03)


def shown(line: bytes) -> str:
    """What a raw line should look like on screen (before cropping)."""
    return sanitize_line(line.decode("utf-8", "replace")).expandtabs(8)


def file_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return lines


def rows(view: LogView) -> list[str]:
    return [r.rstrip() for r in view.screen_text()]


def bottom_matches(view: LogView, lines: list[bytes]) -> bool:
    """The screen's rows end with the file's last lines, each cropped to the screen."""
    screen = rows(view)
    want = [shown(raw) for raw in lines[-len(screen) :]]
    if len(want) < len(screen):
        screen = screen[: len(want)]
    return all(
        w.startswith(s) and len(s) >= min(len(w), 40) for s, w in zip(screen, want, strict=True)
    )


def shows_lines(view: LogView, lines: list[bytes], allowed: list[int]) -> bool:
    """Every row on screen shows (the start of) a line from `allowed`, in order."""
    body = view.body
    seen = [body.line_of_row(r) for r in body.visible_rows()]
    if not seen or not set(seen) <= set(allowed):
        return False
    screen = rows(view)
    return all(shown(lines[n]).startswith(screen[i]) for i, n in enumerate(seen))


async def at_the_end(pilot: Pilot[None], view: LogView, lines: list[bytes]) -> None:
    """Until the file is indexed and its last screen is shown."""
    await until(pilot, lambda: view.index_complete, "index")
    await until(pilot, lambda: bottom_matches(view, lines), "last screen")


@pytest.fixture(scope="module")
def build_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "build.log"
    gen_buildlog.generate(path, lines=40000, seed=2)
    return path


async def test_opens_at_the_end_of_the_build_log(build_log: Path) -> None:
    app = ViewApp(build_log)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        lines = file_lines(build_log)
        await at_the_end(pilot, view, lines)
        assert view.line_count == len(lines)
        assert "ERROR: failed to solve" in rows(view)[-1]
        await pilot.press("g")
        await until(pilot, lambda: rows(view)[0] == shown(lines[0])[: len(rows(view)[0])], "top")
        assert rows(view)[0] and not view.follow
        await pilot.press("G")
        await until(pilot, lambda: bottom_matches(view, lines), "back at the end")
        assert view.follow


async def test_find_filter_and_jumps_agree_with_re(build_log: Path) -> None:
    lines = file_lines(build_log)
    texts = [sanitize_line(raw.decode("utf-8", "replace"), 1 << 30) for raw in lines]
    want_find = [i for i, t in enumerate(texts) if re.search("unused variable", t, re.I)]
    app = ViewApp(build_log)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await until(pilot, lambda: view.index_complete, "index")
        await pilot.press("slash", *"unused variable", "enter")
        done = [m for m in app.messages if isinstance(m, LogView.FindChanged)]
        await until(
            pilot,
            lambda: any(m.done for m in app.messages if isinstance(m, LogView.FindChanged)),
            "find done",
        )
        done = [m for m in app.messages if isinstance(m, LogView.FindChanged) and m.done]
        assert done[-1].matches == len(want_find) > 0
        await pilot.press("g", "n")
        await until(pilot, lambda: view.body.look.current_line == want_find[0], "first match")
        assert any("unused variable" in r for r in rows(view))
        await pilot.press("n", "n", "N")
        assert view.body.look.current_line == want_find[1]

        # filter: only matching lines, as many as re finds
        want_filter = [i for i, t in enumerate(texts) if re.search(r"warning: unused", t)]
        await pilot.press("F", *"warning: unused", "enter")
        await until(
            pilot,
            lambda: any(m.done for m in app.messages if isinstance(m, LogView.FilterChanged)),
            "filter done",
        )
        assert view.body.row_count == len(want_filter)
        assert list(view.body.rows or []) == want_filter
        await until(pilot, lambda: shows_lines(view, lines, want_filter), "filtered")

        # inverse filter: every other line
        app.messages.clear()
        await pilot.press("exclamation_mark", *"Building HIP", "enter")
        await until(
            pilot,
            lambda: any(m.done for m in app.messages if isinstance(m, LogView.FilterChanged)),
            "exclude done",
        )
        want_ex = [i for i, t in enumerate(texts) if not re.search("Building HIP", t)]
        assert list(view.body.rows or []) == want_ex
        await until(pilot, lambda: shows_lines(view, lines, want_ex), "excluded")

        # escape clears find and filter; goto line; first error; step
        await pilot.press("escape")
        assert view.body.rows is None and view.body.look.find is None
        await pilot.press("colon", *"1234", "enter")
        await until(
            pilot,
            lambda: any(r and shown(lines[1233]).startswith(r) for r in rows(view)),
            "line 1234",
        )
        await pilot.press("e")
        first_err = next(i for i, t in enumerate(texts) if ERROR_LINE.search(t))
        await until(
            pilot,
            lambda: any(r and shown(lines[first_err]).startswith(r) for r in rows(view)),
            "first error",
        )
        step = next(i for i, t in enumerate(texts) if t.startswith("#16 "))
        await pilot.press("s", "1", "6", "enter")
        await until(
            pilot,
            lambda: any(r and shown(lines[step]).startswith(r) for r in rows(view)),
            "step 16",
        )


def landed_rows(view: LogView) -> list[int]:
    """Screen rows drawn in the style of the line a jump landed on (bold and underlined)."""
    body = view.body
    found = []
    for y in range(body.scrollable_content_region.height):
        strip = body.render_line(y)
        if any(s.style and s.style.bold and s.style.underline for s in strip if s.text.strip()):
            found.append(y)
    return found


async def test_a_jump_marks_the_line_it_landed_on(tmp_path: Path) -> None:
    """`e` near the end of a log cannot put the error at the top of the screen (the view stops
    at the last line), so the line it landed on is marked; so is a line number's."""
    path = tmp_path / "failed.log"
    lines = [f"#9 {i / 10:.3f} [{i}/41] Building HIP object k{i}.hip.o" for i in range(1, 60)]
    lines[49] = "#9 5.000 /src/Indexing.hip:128:18: error: use of undeclared identifier"
    path.write_text("\n".join(lines) + "\n")
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await at_the_end(pilot, view, file_lines(path))
        assert landed_rows(view) == []
        await pilot.press("e")
        await until(pilot, lambda: view.body.look.current_line == 49, "first error")
        await pilot.pause()
        top = view.body.line_of_row(view.body.visible_rows().start)
        assert top < 49  # the error is not the top row: the mark is what shows it
        assert landed_rows(view) == [49 - top]
        assert "error: use of undeclared" in rows(view)[49 - top]
        await pilot.press("colon", *"12", "enter")
        await until(pilot, lambda: view.body.look.current_line == 11, "line 12")
        await pilot.pause()
        top = view.body.line_of_row(view.body.visible_rows().start)
        assert landed_rows(view) == [11 - top]


async def test_follow_growth_partial_lines_and_split_utf8(tmp_path: Path) -> None:
    path = tmp_path / "grow.log"
    path.write_bytes(b"start\n")
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await until(pilot, lambda: rows(view)[0] == "start", "first line")
        with path.open("ab") as f:
            f.write(b"partial caf\xc3")  # no newline, and half of "é"
            f.flush()
            await until(pilot, lambda: "partial caf" in "\n".join(rows(view)), "partial line")
            f.write(b"\xa9 done\n")
            f.write(b"".join(b"burst %06d\n" % i for i in range(200_000)))
        await until(pilot, lambda: bottom_matches(view, file_lines(path)), "burst on screen")
        assert view.line_count == 200_002
        assert "partial café done" in [shown(x) for x in file_lines(path)[:3]]
        await pilot.press("g")
        await until(pilot, lambda: rows(view)[1] == "partial café done", "joined line")


async def test_truncate_rewrite_and_rotation_while_followed(tmp_path: Path) -> None:
    path = tmp_path / "rot.log"
    path.write_bytes(b"".join(b"old %d\n" % i for i in range(500)))
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await until(pilot, lambda: rows(view)[-1] == "old 499", "old end")
        path.write_bytes(b"".join(b"new %d\n" % i for i in range(800)))  # truncate + rewrite
        await until(pilot, lambda: rows(view)[-1] == "new 799", "rewritten end")
        assert view.line_count == 800
        # the message bubbles up through two queues: the rows can be on screen before it lands
        await until(
            pilot, lambda: any(isinstance(m, LogView.FileReset) for m in app.messages), "reset"
        )
        path.rename(tmp_path / "rot.log.1")
        path.write_bytes(b"rotated a\nrotated b\n")
        await until(
            pilot, lambda: [r for r in rows(view) if r] == ["rotated a", "rotated b"], "rotated"
        )
        assert view.line_count == 2


async def test_a_removed_log_is_still_followed_and_the_status_says_so(tmp_path: Path) -> None:
    path = tmp_path / "build.log"
    with path.open("ab", buffering=0) as writer:
        writer.write(b"".join(b"line %d\n" % i for i in range(100)))
        app = ViewApp(path)
        async with app.run_test(size=SIZE) as pilot:
            view = app.query_one(LogView)
            await until(pilot, lambda: rows(view)[-1] == "line 99", "the end")
            path.unlink()  # with nothing new written, the status says so all the same
            await until(pilot, lambda: "removed" in view.status_text, "the status")
            writer.write(b"written after the rm\n")
            await until(pilot, lambda: rows(view)[-1] == "written after the rm", "new line")
            assert "removed" in view.status_text
            assert view.line_count == 101
            path.write_bytes(b"a new file\n")
            await until(pilot, lambda: [r for r in rows(view) if r] == ["a new file"], "new")
            await until(pilot, lambda: "removed" not in view.status_text, "status cleared")


async def test_huge_line_no_final_newline_and_wrap(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    path.write_bytes(b"before\n" + b"x" * (10 << 20) + b"\nafter without newline")
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)

        def text() -> list[str]:
            return [r for r in rows(view) if r]

        await until(
            pilot, lambda: view.index_complete and text()[:1] == ["before"], "a 10 MB block read"
        )
        await until(pilot, lambda: text()[-1:] == ["after without newline"], "end")
        screen = text()
        assert screen[0] == "before"
        assert screen[1].startswith("xxxx") and len(screen) == 3
        await pilot.press("w")
        # wrapped, the 10 MB line fills many rows, cut with a marker of what was left out
        await until(
            pilot, lambda: len(text()) > 3 and text()[-1] == "after without newline", "wrapped"
        )
        wrapped = text()
        assert "bytes" in " ".join(wrapped[-3:-1])  # the marker of what was not read
        assert all(r == "x" * len(r) for r in wrapped[:-4])
        await pilot.press("g")
        await until(pilot, lambda: text()[0] == "before", "top in wrap mode")
        assert all(r.startswith("x") for r in text()[1:])


async def test_hostile_text_is_sanitised_and_copy_is_explicit(tmp_path: Path) -> None:
    path = tmp_path / "evil.log"
    path.write_bytes(
        b"\x1b]52;c;UFdORUQ=\x07clip\n"
        b"\x1b]0;PWNED-TITLE\x07title\n"
        b"\x1bcreset\n"
        b"\xc2\x9b2Jc1\n"
        b"\x1b]8;;http://evil.example/PWNED-LINK\x07link\x1b]8;;\x07\n"
        b"\x1b[31mred [/] [link=x]markup\x1b[0m\n"
    )
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await until(pilot, lambda: "link" in rows(view), "lines")
        assert [r for r in rows(view) if r] == [
            "clip",
            "title",
            "reset",
            "c1",
            "link",
            "red [/] [link=x]markup",
        ]
        assert app.clipboard == ""
        await pilot.press("v", "up", "up", "y")
        await until(pilot, lambda: any(isinstance(m, LogView.Copied) for m in app.messages), "copy")
        assert app.clipboard == "c1\nlink\nred [/] [link=x]markup\n"


async def test_find_highlights_dims_and_prompt_toggles(tmp_path: Path) -> None:
    path = tmp_path / "find.log"
    path.write_bytes(b"alpha ERROR one\nbeta fine\ngamma error two\ndelta fine\n")
    app = ViewApp(path, follow=False)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        body = view.body
        await until(pilot, lambda: "delta fine" in rows(view), "lines")
        await pilot.press("slash")
        label = app.query_one("#logview-prompt-label")
        await pilot.press("ctrl+r", "ctrl+t")  # literal, case-sensitive
        assert "lit" in str(label.render()) and "Aa" in str(label.render())
        await pilot.press(*"error", "enter")
        await until(pilot, lambda: view.search.find is not None and view.search.find.done, "find")
        assert list(view.search.find.state.lines) == [2]  # case-sensitive: "ERROR" is not "error"
        match = body.get_component_rich_style("logview--current")

        def styles(row: int) -> list[object]:
            return [seg.style for seg in body.render_line(row) if seg.text.strip()]

        await until(pilot, lambda: body.look.current_line == 2, "landed on the match")
        assert any(s is not None and s.bgcolor == match.bgcolor for s in styles(2))
        await pilot.press("d")  # dim the others
        dim = [s for s in styles(1) if s is not None and s.dim]
        assert dim, "a line without a match is dimmed"
        await pilot.press("escape")  # clears the find: no highlight left
        assert view.search.find is None
        assert not any(s is not None and s.bgcolor == match.bgcolor for s in styles(2))
        await pilot.press("slash", *"abc")
        await pilot.press("escape")  # closes the prompt without searching
        assert view.search.find is None and body.has_focus


async def test_status_names_the_lines_on_screen_after_a_resize(build_log: Path) -> None:
    app = ViewApp(build_log)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        lines = file_lines(build_log)
        await at_the_end(pilot, view, lines)

        def status_says_what_is_shown() -> bool:
            shown_rows = view.body.visible_rows()
            first = view.body.line_of_row(shown_rows.start) + 1
            return f"{first:,}–{len(lines):,} of {len(lines):,}" in view.status_text

        await until(pilot, status_says_what_is_shown, "status before")
        before = view.status_text
        await pilot.resize_terminal(SIZE[0], SIZE[1] - 10)
        await until(pilot, lambda: view.status_text != before, "status after the resize")
        await until(pilot, status_says_what_is_shown, "status names the new first line")


async def test_status_follows_the_view_when_it_scrolls(build_log: Path) -> None:
    app = ViewApp(build_log)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        lines = file_lines(build_log)
        await at_the_end(pilot, view, lines)
        total = f"of {len(lines):,}"

        def status_names_the_screen(top: bool) -> bool:
            rows_now = view.body.visible_rows()
            first = view.body.line_of_row(rows_now.start) + 1
            last = view.body.line_of_row(rows_now.stop - 1) + 1
            return (first == 1) == top and f"{first:,}–{last:,} {total}" in view.status_text

        await pilot.press("g")  # top: the status's range goes with it
        await until(pilot, lambda: status_names_the_screen(top=True), "status at the top")
        await pilot.press("down", "down", "pagedown")
        await until(pilot, lambda: status_names_the_screen(top=False), "status scrolled down")
        await pilot.press("G")
        await until(pilot, lambda: f"–{len(lines):,} {total}" in view.status_text, "the end")


async def test_wrap_while_followed_paints_the_newest_lines_laid_out_afresh(tmp_path: Path) -> None:
    """The painted screen (not the body's own rows): `w` on a followed log that keeps growing
    wraps its long lines, each new line arrives laid out at the bottom, `w` again unwraps."""
    path = tmp_path / "grow.log"
    long = "L" * 150  # wider than the 100-column screen: two rows when wrapped
    path.write_text("".join(f"line {i:03d} {long}\n" for i in range(50)), encoding="utf-8")
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)

        def painted() -> list[str]:
            return [r.rstrip() for r in screen_text(app).splitlines()]

        await until(pilot, lambda: any(r.startswith("line 049 L") for r in painted()), "end")
        await pilot.press("w")
        tail = "L" * (len("line 049 ") + 150 - 100)
        await until(pilot, lambda: tail in painted(), "the last line's second row")
        assert view.wrap and "wrap" in view.status_text
        screen = painted()
        last = max(i for i, r in enumerate(screen) if r.startswith("line 049 "))
        assert screen[last + 1] == tail  # its rest on the next row, nothing cut
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"line 050 {long}\nline 051 short\n")
        await until(pilot, lambda: "line 051 short" in painted(), "appended while wrapped")
        screen = painted()
        at = screen.index("line 051 short")
        assert screen[at - 1] == tail and screen[at - 2].startswith("line 050 L")
        await pilot.press("w")
        await until(pilot, lambda: tail not in painted(), "unwrapped")
        screen = painted()
        at = screen.index("line 051 short")
        assert screen[at - 1].startswith("line 050 L") and "wrap" not in view.status_text


async def test_a_literal_filter_run_by_grep_shows_what_re_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in, the painted screen out: a filter for a literal goes through grep (any size here)
    and shows exactly the lines whose shown text matches, a colour code inside the word and a
    bell inside it included, and the count in the status line."""
    if shutil.which("grep", path=os.defpath) is None:
        pytest.skip("no grep")
    monkeypatch.setattr(search_grep, "GREP_BYTES", 0)
    used: list[bool | None] = []
    real = search_grep.GrepScan.finish

    def counted(*args: Any, **kwargs: Any) -> bool | None:
        used.append(real(*args, **kwargs))
        return used[-1]

    monkeypatch.setattr(search_grep.GrepScan, "finish", counted)
    path = tmp_path / "colour.log"
    body = [b"step %d: building" % i for i in range(3000)]
    body[100] = b"step 100: \x1b[1mfail\x1b[0med here"  # shown "failed here"
    body[2000] = b"step 2000: fai\x07led too"  # the bell is removed: "failed too"
    body[2500] = b"step 2500: failed plainly"
    body[2600] = b"step 2600: \x1b]0;failed\x07 only in a title"  # not shown
    path.write_bytes(b"\n".join(body) + b"\n")
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await until(pilot, lambda: view.index_complete, "index")
        await pilot.press("F", *"failed", "enter")

        def painted() -> list[str]:
            return [r.rstrip() for r in screen_text(app).splitlines()]

        await until(pilot, lambda: "failed plainly" in "\n".join(painted()), "filtered")
        assert used == [True]  # grep ran and answered
        assert list(view.body.rows or []) == [100, 2000, 2500]
        screen = [r for r in painted() if r.startswith("step ")]
        assert screen == [
            "step 100: failed here",
            "step 2000: failed too",
            "step 2500: failed plainly",
        ]
        await until(pilot, lambda: "filter failed: 3" in view.status_text, "count")


async def test_a_key_right_after_enter_goes_to_the_log_and_the_filter_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enter starts the filter (its grep first) and only then closes the prompt: the keys typed
    at once after it belong to the log (f pauses it), never to the closing prompt, and the
    screen shows the filtered lines and their count."""
    monkeypatch.setattr(search_grep, "GREP_BYTES", 0)
    path = tmp_path / "keys.log"
    body = [b"step %d: building" % i for i in range(2000)]
    for i in (5, 700, 1999):
        body[i] = b"step %d: \x1b[31mfailed\x1b[0m here" % i
    path.write_bytes(b"\n".join(body) + b"\n")
    app = ViewApp(path)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await until(pilot, lambda: view.index_complete, "index")
        await pilot.press("F", *"failed", "enter", "f")
        await until(pilot, lambda: "filter failed: 3 " in view.status_text + " ", "count")
        assert "paused" in view.status_text and not view.prompt.is_open
        assert view.prompt.query_one("#logview-input").value == "failed"  # nothing added
        painted = [r for r in rows(view) if r.startswith("step ")]
        assert painted == [f"step {i}: failed here" for i in (5, 700, 1999)]
