"""The log view's search controller alone: a search waits (on its event, not a sleep loop) for
the whole file to be indexed, then finds what Python's `re` finds; a replaced search stops; a
finished one takes in what the file grew by; jumps find the first line; n/N skip what the
filter hides."""

from __future__ import annotations

import os
import queue
import re
import shutil
import threading
from array import array
from pathlib import Path
from typing import Any

import pytest

from rocmtui.console.widgets.logview.search import Search, SearchController, next_match
from rocmtui.core.logs import search_grep
from rocmtui.core.logs.index import TAIL_BYTES, LineIndex
from rocmtui.core.logs.search import compile_query

WAIT = 15.0


class Results:
    """What the controller reported, from its threads."""

    def __init__(self) -> None:
        self.finished: queue.Queue[Search] = queue.Queue()
        self.progressed: list[tuple[str, int, int]] = []

    def progress(self, search: Search, done: int, total: int) -> None:
        self.progressed.append((search.kind, done, total))

    def done(self, search: Search) -> None:
        self.finished.put(search)

    def next(self) -> Search:
        return self.finished.get(timeout=WAIT)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "build.log"
    rows = []
    for n in range(60_000):
        if n % 97 == 0:
            rows.append(f"#9 {n} src/k{n}.cpp:3:1: warning: unused variable 'x{n}'")
        elif n == 41_234:
            rows.append(f"#9 {n} src/k{n}.cpp:3:1: error: no member named 'y'")
        else:
            rows.append(f"#9 {n} [{n}/60000] Building HIP object k{n}.hip.o")
    path.write_text("\n".join(rows) + "\n")
    assert path.stat().st_size > 20 * TAIL_BYTES
    return path


def expected(path: Path, pattern: str, invert: bool = False) -> list[int]:
    compiled = compile_query(pattern)
    lines = path.read_text().splitlines()
    return [n for n, text in enumerate(lines) if bool(compiled.search(text)) != invert]


def search_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("logview-")]


def test_a_search_waits_for_the_whole_index_then_finds_what_re_finds(log: Path) -> None:
    results = Results()
    index = LineIndex(log)
    index.open()  # the tail only: line numbers are not the file's own yet
    controller = SearchController(results.progress, results.done)
    controller.attach(index)
    find = controller.set_find("unused variable", compile_query("unused variable"))
    filt = controller.set_filter("Building", compile_query("Building"), invert=True)
    assert not find.done and results.finished.empty()  # waiting: the index is not complete
    assert index.scan_back()
    controller.index_complete()  # sets their events: both go
    got = {s.kind: s for s in (results.next(), results.next())}
    assert got == {"find": find, "filter": filt}
    assert list(find.state.lines) == expected(log, "unused variable")
    assert list(filt.state.lines) == expected(log, "Building", invert=True)
    assert find.done and filt.done
    index.close()


def test_a_replaced_or_closed_search_stops(log: Path) -> None:
    results = Results()
    index = LineIndex(log)
    index.open()
    controller = SearchController(results.progress, results.done)
    controller.attach(index)
    old = controller.set_find("warning", compile_query("warning"))
    new = controller.set_find("error", compile_query("error"))
    assert old.cancelled and not new.cancelled and controller.find is new
    waiting = controller.set_filter("x", compile_query("x"))
    controller.close()  # the view went away before the index was complete
    assert waiting.cancelled and new.cancelled
    for thread in search_threads():
        thread.join(WAIT)
    assert search_threads() == [] and results.finished.empty()
    index.close()


def test_a_finished_search_takes_in_what_the_file_grew_by(log: Path) -> None:
    results = Results()
    index = LineIndex(log)
    index.open()
    index.scan_back()
    controller = SearchController(results.progress, results.done)
    controller.attach(index)
    find = controller.set_find("unused", compile_query("unused"))
    assert results.next() is find
    before = len(find.state.lines)
    with log.open("a") as out:
        out.write("#9 late warning: unused variable 'z'\n#9 done\n")
    index.refresh()
    controller.extend(index)  # on the follower's thread, in the view
    assert len(find.state.lines) == before + 1
    assert list(find.state.lines) == expected(log, "unused")
    index.close()


def test_a_jump_finds_the_first_line(log: Path) -> None:
    results = Results()
    index = LineIndex(log)
    index.open()
    index.scan_back()
    controller = SearchController(results.progress, results.done)
    controller.attach(index)
    jump = controller.first_line(re.compile(r"error:"), "no error found")
    assert results.next() is jump and list(jump.state.lines) == [41_234]
    missing = controller.first_line(re.compile("nothing like this"), "no such line")
    assert results.next() is missing and list(missing.state.lines) == []
    assert missing.text == "no such line"
    index.close()


def test_next_and_previous_match_skip_lines_the_filter_hides() -> None:
    lines = array("Q", [3, 10, 20, 30])
    assert next_match(lines, 10, 1, None) == (3, 20)
    assert next_match(lines, 10, -1, None) == (1, 3)
    assert next_match(lines, 30, 1, None) is None
    shown = array("Q", [1, 3, 30, 31])  # 10 and 20 are filtered out
    assert next_match(lines, 3, 1, shown) == (4, 30)
    assert next_match(lines, 30, -1, shown) == (1, 3)
    controller = SearchController(lambda *_: None, lambda _: None)
    assert controller.step(0, 1) == "nothing to find: press /"


def test_a_big_literal_is_run_by_grep_and_finds_what_re_finds(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("grep", path=os.defpath) is None:
        pytest.skip("no grep")
    monkeypatch.setattr(search_grep, "GREP_BYTES", 0)  # "big": any size
    used: list[bool | None] = []
    real = search_grep.GrepScan.finish

    def counted(*args: Any, **kwargs: Any) -> bool | None:
        used.append(real(*args, **kwargs))
        return used[-1]

    monkeypatch.setattr(search_grep.GrepScan, "finish", counted)
    with log.open("a") as fh:
        fh.write("#9 a last line, unused variable, still growing")  # no newline yet
    results = Results()
    index = LineIndex(log)
    index.open()
    assert index.scan_back()
    controller = SearchController(results.progress, results.done)
    controller.attach(index)
    filt = controller.set_filter("unused variable", compile_query("unused variable"))
    hidden = controller.set_find("no member", compile_query("no member"))
    controller.index_complete()
    assert {results.next(), results.next()} == {filt, hidden}
    assert used == [True, True]  # both literals went to grep, and grep answered
    text = log.read_text()
    assert list(filt.state.lines) == expected(log, "unused variable")
    assert filt.state.lines[-1] == text.count("\n")  # the growing line, searched here
    assert list(hidden.state.lines) == expected(log, "no member") == [41_234]
    index.close()
