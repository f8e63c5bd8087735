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
from rocmtui.core.text.sanitize import sanitize_line

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_buildlog


def reference(data: bytes, pattern: re.Pattern[str], invert: bool = False) -> list[int]:
    """Python's re over each line's shown text (no length cut: the search sees whole lines)."""
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines.pop()
    return [
        i
        for i, raw in enumerate(lines)
        if (pattern.search(sanitize_line(raw.decode("utf-8", "replace"), 1 << 30)) is None)
        == invert
    ]


HOSTILE = [
    b"plain error: here",
    b"\x1b[31merr\x1b[0mor: split by colour",
    b"\x1b]0;error title\x07 osc then text",
    b"\x1b]52;c;ZXJyb3I=\x07 clipboard",
    b"progress 10%\rerror at 100%",
    b"error\rok",  # overwritten: shows "ok" + rest
    b"\xc2\x9b31m c1 csi then error",
    b"\xe2\x80\xaeerror reversed by bidi",
    b"\xff\xfe invalid utf8 error \xc3",
    b"caf\xc3\xa9 error \xe2\x80\x98quoted\xe2\x80\x99",
    b"\x1b]8;;http://x\x07link error text\x1b]8;;\x07",
    b"tab\terror\x00nul\x7fdel",
    b"ERROR: capital",
    b"",
    "\u212aelvin and \u017fign error".encode(),  # fold to k and s, ignoring case
    b"err\x1b[\x1b[0m31mor joined",  # removing one SGR makes another: shown as it is
    b"x" * 5000 + b" error at the end of a long line",
]


def hostile_log(rng: random.Random, n: int) -> bytes:
    """Lines drawn from HOSTILE and ordinary build lines."""
    out = []
    for i in range(n):
        if rng.random() < 0.3:
            out.append(rng.choice(HOSTILE))
        else:
            out.append(b"#%d %d.000 [%d/999] Building HIP object a%d.o" % (i % 40, i, i, i))
    return b"\n".join(out) + b"\n"


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
