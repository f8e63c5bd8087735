"""A literal searched by grep finds exactly what one `scan()` finds: on the generated build
log and on hostile lines (colour, escapes, controls, CR, bidi, C1, NUL and case folds inside the
literal), inverted, ignoring case or not, with ERE characters in the literal, on a file whose
last line is still growing and on one that grows while grep reads it; what grep cannot do
(a regex, a search too dense to verify) is left to `scan()` untouched."""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from rocmtui.core.logs import search_grep
from rocmtui.core.logs.search import SearchState, compile_query, scan
from rocmtui.core.logs.search_grep import grep_form, scan_grep
from tests.support.logs import hostile_log, reference

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_buildlog

# the literal split by each kind of thing the sanitiser removes or moves
SPLIT = [
    b"er\x07ror: a bell inside",
    b"er\x00ror: a NUL inside",
    b"er\x7fror: a DEL inside",
    b"er\xc2\x85ror: a C1 control inside",
    b"er\xe2\x80\x8eror: a bidi mark inside",
    b"er\xe2\x80\xa8ror: a line separator inside",
    b"er\xd8\x9cror: an Arabic letter mark inside",
    b"e\x1b[1mr\x1b[0mr\x1b[31mor: three colours inside",
    b"err\x1b[Kor: an erase inside",
    b"xxror\rer: laid over",
    b"\x1b]0;error\x07 only in a title",
    "\u212aELVIN \u017fign \u0130stanbul \u0131 error".encode(),
    b"a.b*c [x] (y) {z} ^$ | + ? \\ error",
]


def lines_of(
    path: Path, query: str, case: bool | None, invert: bool, grep: bool, regex: bool = False
) -> list[int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        state = SearchState(compile_query(query, regex=regex, case=case), invert)
        size = os.fstat(fd).st_size
        if grep:
            data = path.read_bytes()
            stop = data.rfind(b"\n") + 1
            assert scan_grep(fd, state, stop, data.count(b"\n")) is True
            assert state.next_byte == stop and state.next_line == data.count(b"\n")
        scan(fd, state, size)  # what is left: the growing last line
        return list(state.lines)
    finally:
        os.close(fd)


@pytest.fixture(autouse=True)
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """grep for any search, however small."""
    monkeypatch.setattr(search_grep, "GREP_BYTES", 0)


def needs_grep() -> None:
    if shutil.which("grep", path=os.defpath) is None:
        pytest.skip("no grep")


@pytest.mark.parametrize(
    ("query", "case"),
    [
        ("error", None),
        ("Error", None),
        ("error", True),
        ("ERROR", False),
        ("kelvin", None),
        ("sign", False),
        ("istanbul", None),
        ("error: here", None),
        ("a.b*c [x] (y) {z} ^$ | + ? \\", None),
        ("o", None),
    ],
)
def test_grep_finds_what_scan_finds_on_hostile_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str, case: bool | None
) -> None:
    needs_grep()
    monkeypatch.setattr(search_grep, "MIN_SEEN", 1 << 40)  # never too dense here
    rng = random.Random(11)
    data = hostile_log(rng, 4000) + b"\n".join(rng.choice(SPLIT) for _ in range(400)) + b"\n"
    path = tmp_path / "h.log"
    path.write_bytes(data + b"error in a last line, still growing")
    pattern = compile_query(query, regex=False, case=case)
    for invert in (False, True):
        whole = lines_of(path, query, case, invert, grep=False)
        assert lines_of(path, query, case, invert, grep=True) == whole, (query, invert)
    assert lines_of(path, query, case, False, grep=True) == reference(path.read_bytes(), pattern)


@pytest.mark.parametrize(
    ("query", "case"),
    [
        (r"err(or)?\b", None),
        (r"error:\s+\S", None),
        (r"\bERROR\b", True),
        (r"^plain error", None),
        (r"quoted\W+$", None),
        (r"(err)or: .*\1", False),
        (r"kelvin|sign", None),  # no literal every match holds: left to scan
    ],
)
def test_a_regex_by_its_literal_finds_what_scan_finds_on_hostile_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str, case: bool | None
) -> None:
    needs_grep()
    monkeypatch.setattr(search_grep, "MIN_SEEN", 1 << 40)
    rng = random.Random(13)
    data = hostile_log(rng, 4000) + b"\n".join(rng.choice(SPLIT) for _ in range(400)) + b"\n"
    path = tmp_path / "r.log"
    path.write_bytes(data + b"error: in a last line, still growing")
    pattern = compile_query(query, case=case)
    if grep_form(pattern) is None:
        assert "|" in query
        return
    for invert in (False, True):
        whole = lines_of(path, query, case, invert, grep=False, regex=True)
        assert lines_of(path, query, case, invert, grep=True, regex=True) == whole, query
    got = lines_of(path, query, case, False, grep=True, regex=True)
    assert got == reference(path.read_bytes(), pattern)


def test_grep_finds_what_scan_finds_on_the_build_log(tmp_path: Path) -> None:
    needs_grep()
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=40_000, seed=3)
    for query in ("unused variable", "warning:", "FAILED"):
        whole = lines_of(log, query, None, False, grep=False)
        assert whole and lines_of(log, query, None, False, grep=True) == whole


def test_what_grep_cannot_do_is_left_to_scan(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=60_000, seed=6)
    fd = os.open(log, os.O_RDONLY)
    size = os.fstat(fd).st_size
    try:
        regex = SearchState(compile_query(r"[a-z]+ \w+"))  # no literal every match holds
        assert scan_grep(fd, regex, size, 60_000) is None
        around = SearchState(compile_query(r"(?<=: )unused"))  # looks before the line's text
        assert scan_grep(fd, around, size, 60_000) is None
        assert grep_form(compile_query(r"(?-m:^unused)")) is None  # the chunk's ^, not a line's
        assert grep_form(compile_query(r"\Aunused")) is None
        # the mark of a cut line is text grep never sees: a literal it may be found in
        assert grep_form(compile_query("bytes cut]")) is None
        assert grep_form(compile_query("[12", regex=False)) is None
        dense = SearchState(compile_query("#"))  # every line: verifying would cost more
        assert scan_grep(fd, dense, size, 60_000) is None
        assert (dense.next_byte, dense.next_line, len(dense.lines)) == (0, 0, 0)
    finally:
        os.close(fd)


def test_a_file_growing_while_grep_reads_gives_the_range_asked(tmp_path: Path) -> None:
    needs_grep()
    log = tmp_path / "grow.log"
    gen_buildlog.generate(log, lines=20_000, seed=8)
    before = log.read_bytes()
    with log.open("ab") as fh:  # written after the range was taken: grep reads it too
        fh.write(b"error: after the range\n" * 1000)
    fd = os.open(log, os.O_RDONLY)
    try:
        state = SearchState(compile_query("error"))
        assert scan_grep(fd, state, len(before), before.count(b"\n")) is True
        assert state.next_byte == len(before)
        assert list(state.lines) == reference(before, compile_query("error"))
    finally:
        os.close(fd)


@pytest.mark.parametrize("end", ["exit 2", "kill -9 $$"])
def test_a_grep_that_fails_or_dies_leaves_the_search_to_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    fake = tmp_path / "grep"
    fake.write_text(f"#!/bin/sh\nhead -c 100000 >/dev/null\necho '1:error: a line'\n{end}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(search_grep.shutil, "which", lambda *_a, **_k: str(fake))
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=5_000, seed=2)
    data = log.read_bytes()
    fd = os.open(log, os.O_RDONLY)
    try:
        state = SearchState(compile_query("error"))
        assert scan_grep(fd, state, len(data), data.count(b"\n")) is None
        assert (state.next_byte, state.next_line, len(state.lines)) == (0, 0, 0)
    finally:
        os.close(fd)


@pytest.mark.parametrize("query", ["2:1 x", ":ab", "3:ab"])
def test_a_literal_across_grep_s_line_number_is_not_a_match(tmp_path: Path, query: str) -> None:
    """grep -n writes "N:" before each line it names; a literal with a colon may be found
    across that prefix and the line (line 12's "1 x :2\x1b[0m!" is "12:1 x :2!" as a record):
    only the line's own text decides."""
    needs_grep()
    lines = [b"plain %d" % i for i in range(40)]
    for n in range(0, 40, 3):
        lines[n] = b"1 x :2\x1b[0m!"  # a candidate of "2:1 x" ("2" before ESC), not a match
    for n in range(1, 40, 3):
        lines[n] = b"ab :a\x1b[1mX %d" % n  # a candidate of ":ab" and "3:ab" (":a" before ESC)
    lines[38] = b"really 2:1 x and :ab and 3:ab"
    path = tmp_path / "n.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    whole = lines_of(path, query, None, False, grep=False)
    assert whole == [38]
    assert lines_of(path, query, None, False, grep=True) == whole
