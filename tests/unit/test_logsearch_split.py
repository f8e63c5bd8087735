"""A big search split with a helper process finds exactly what one `scan()` finds (on the
generated build log, on hostile lines, inverted, on a file whose last line is still growing);
a cancelled search leaves no helper behind, and a helper that fails is made up for."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import psutil
import pytest

from rocmtui.core.logs import search_split as logsearch_split
from rocmtui.core.logs.search import SearchState, compile_query, scan
from rocmtui.core.logs.search_split import scan_split
from tests.support.logs import hostile_log, reference

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_buildlog


@pytest.fixture(autouse=True)
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split anything past 64 KB, in pieces of 64 KB, on any machine."""
    monkeypatch.setattr(logsearch_split, "SPLIT_BYTES", 64 << 10)
    monkeypatch.setattr(logsearch_split, "PIECE", 64 << 10)
    monkeypatch.setattr(logsearch_split, "cores", lambda: 2)


def searched(path: Path, query: str, invert: bool = False, split: bool = True) -> list[int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        state = SearchState(compile_query(query), invert)
        (scan_split if split else scan)(fd, state, os.fstat(fd).st_size)
        return list(state.lines)
    finally:
        os.close(fd)


def helpers() -> list[psutil.Process]:
    """Search helpers among this process's children (other tests' may be zombies by now)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "time.sleep(60)" in (cmd := " ".join(child.cmdline())) or "search_helper" in cmd:
                found.append(child)
        except psutil.Error:
            continue
    return found


def test_the_split_search_finds_what_one_scan_finds(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=30_000, seed=4)
    hostile = tmp_path / "hostile.log"
    data = hostile_log(random.Random(7), 20_000)
    hostile.write_bytes(data + b"a last line, still growing")  # no final newline
    for path in (log, hostile):
        for query, invert in (("unused variable", False), ("error", False), (r"\.o$", True)):
            whole = searched(path, query, invert, split=False)
            assert searched(path, query, invert) == whole, (path.name, query)
    pattern = compile_query("error")
    assert searched(hostile, "error") == reference(hostile.read_bytes(), pattern)
    assert helpers() == []


def test_a_cancelled_split_search_leaves_no_helper(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=30_000, seed=5)
    fd = os.open(log, os.O_RDONLY)
    seen: list[int] = []

    def cancelled() -> bool:
        seen.extend(p.pid for p in helpers())
        return bool(seen)  # as soon as the helper is there

    try:
        state = SearchState(compile_query("warning"))
        assert not scan_split(fd, state, os.fstat(fd).st_size, cancelled)
    finally:
        os.close(fd)
    assert seen and helpers() == []
    assert not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in seen
    )


def test_a_helper_that_fails_is_made_up_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=20_000, seed=6)
    whole = searched(log, "unused", split=False)
    monkeypatch.setattr(logsearch_split.sys, "executable", str(tmp_path / "no-such-python"))
    assert searched(log, "unused") == whole


def test_the_helper_really_takes_pieces_from_the_back(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=30_000, seed=8)
    fd = os.open(log, os.O_RDONLY)
    try:
        state = SearchState(compile_query("unused variable"))
        shared = logsearch_split._Shared(
            fd, state, logsearch_split._cuts(fd, 0, os.fstat(fd).st_size), None, None, 0
        )
        try:
            assert shared.run()
        finally:
            shared.helper.close()
    finally:
        os.close(fd)
    assert shared.found, "the helper answered no piece"
    last = len(shared.cuts) - 2
    assert last in shared.found  # the first piece it was given: the last of the file
    assert list(state.lines) == searched(log, "unused variable", split=False)
    assert helpers() == []


def test_a_stuck_helper_is_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=20_000, seed=9)
    whole = searched(log, "unused", split=False)
    monkeypatch.setattr(logsearch_split, "_BOOT", "import time; time.sleep(60)")  # never answers
    monkeypatch.setattr(logsearch_split, "PATIENCE", 0.3)
    assert searched(log, "unused") == whole
    assert helpers() == []
