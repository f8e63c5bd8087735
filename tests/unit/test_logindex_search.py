"""Whole-file search: the matching line numbers equal Python's `re` run line by line over the
text the sanitiser shows, on the generated build log and on hostile files, in one pass or
resumed as the file grows."""

from __future__ import annotations

import os
import random
import re
import sys
from array import array
from pathlib import Path

import pytest

from rocmtui.core.logs import search as logsearch
from rocmtui.core.logs.search import SearchState, compile_query, scan, search_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_buildlog

from tests.support.logs import hostile_log, reference

QUERIES = [
    ("error", None, False),
    ("Error", None, False),
    ("error", False, True),
    (r"^#1\d ", True, False),
    (r"\S+\.o$", None, False),
    ("error: here", None, False),
    (r"err(or)?\b", True, False),
    ("é", None, False),
    (r"\w+ error", None, False),
    (r"err.r", None, False),
    (r"[^a-z]rror", True, False),
    ("KELVIN", False, False),
    ("sign", False, False),
    (r"\s+$", None, True),
    (r"error\s+\S", None, False),  # runs over line ends: each line alone decides
    ("ERROR", True, False),
]


@pytest.mark.parametrize(("query", "case", "invert"), QUERIES)
def test_hostile_lines_match_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str, case: bool | None, invert: bool
) -> None:
    monkeypatch.setattr(logsearch, "CHUNK", 997)  # chunk ends fall everywhere
    data = hostile_log(random.Random(5), 3000)
    path = tmp_path / "h.log"
    path.write_bytes(data)
    pattern = compile_query(query, case=case)
    got = search_file(path, pattern, invert=invert)
    assert list(got) == reference(data, pattern, invert)


def test_generated_build_log_counts(tmp_path: Path) -> None:
    path = tmp_path / "build.log"
    gen_buildlog.generate(path, lines=30000, seed=3)
    data = path.read_bytes()
    for query in ("unused variable", "warning: unused", r"\[\d+/\d+\] Building HIP", "error"):
        pattern = compile_query(query)
        got = search_file(path, pattern)
        assert list(got) == reference(data, pattern), query
    assert len(search_file(path, compile_query("warning: unused"))) > 0


def test_resumed_scan_equals_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logsearch, "CHUNK", 4096)
    rng = random.Random(11)
    data = hostile_log(rng, 2000)
    path = tmp_path / "g.log"
    path.write_bytes(b"")
    pattern = compile_query("error")
    for invert in (False, True):
        state = SearchState(pattern, invert)
        written = b""
        path.write_bytes(b"")
        fd = os.open(path, os.O_RDONLY)
        try:
            pos = 0
            while pos < len(data):  # appends cut anywhere, mid-line and mid-UTF-8 included
                step = rng.randint(1, 3000)
                with path.open("ab") as f:
                    f.write(data[pos : pos + step])
                written += data[pos : pos + step]
                pos += step
                assert scan(fd, state, len(written))
                assert list(state.lines) == reference(written, pattern, invert)
        finally:
            os.close(fd)


def test_limit_and_cancel(tmp_path: Path) -> None:
    path = tmp_path / "l.log"
    path.write_bytes(b"x error\ny\n" * 5000)
    first = search_file(path, compile_query("error"), limit=1)
    assert first == array("Q", [0])
    state = SearchState(compile_query("error"))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert scan(fd, state, os.fstat(fd).st_size, cancelled=lambda: True) is False
        assert len(state.lines) == 0
    finally:
        os.close(fd)


def test_smart_case_and_literal() -> None:
    assert compile_query("error").flags & re.IGNORECASE
    assert not compile_query("Error").flags & re.IGNORECASE
    assert compile_query(r"\S+error").flags & re.IGNORECASE  # \S is no capital
    assert compile_query("a.b", regex=False).search("a.b")
    assert not compile_query("a.b", regex=False).search("axb")
    with pytest.raises(re.error):
        compile_query("(unclosed")


def test_a_pattern_that_matches_nothing_at_all_finds_every_line_once(tmp_path: Path) -> None:
    path = tmp_path / "two.log"
    path.write_bytes(b"a\nb\n")  # after the final newline there is no line to match
    assert list(search_file(path, compile_query("x*"))) == [0, 1]
    assert list(search_file(path, compile_query("x*"), invert=True)) == []
