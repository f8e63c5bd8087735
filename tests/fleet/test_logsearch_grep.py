"""The filter counts what `grep -c` counts: lines, not matches, on the same file, by the real GNU
grep; so does a literal run by grep itself (its candidate lines verified). Chunk ends and
shared pieces falling anywhere (a line longer than a chunk included), lines with several
matches, invalid UTF-8 around a match, and the same text as a regex and as a literal. (Where
the two differ on purpose — a match split by an SGR colour code, which the filter sees as
shown — see test_logindex_search.py.)"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from rocmtui.core.logs import search as logsearch
from rocmtui.core.logs import search_grep
from rocmtui.core.logs import search_split as logsearch_split
from rocmtui.core.logs.search import SearchState, compile_query, scan, search_file
from rocmtui.core.logs.search_grep import grep_form, scan_grep_from_start
from rocmtui.core.logs.search_split import scan_split
from tests.support.realparts import require

GREP_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}


def grep_count(path: Path, pattern: str, *options: str) -> int:
    """`grep -a -c` (text mode: invalid UTF-8 does not make the file "binary")."""
    require("grep")
    done = subprocess.run(
        ["grep", "-a", "-c", *options, "-e", pattern, str(path)],
        capture_output=True,
        text=True,
        env=GREP_ENV,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return int(done.stdout)


def counts(path: Path, query: str, *, regex: bool = True, case: bool | None = None) -> set[int]:
    """The filter's count, searched in one pass, shared with the helper in small pieces, and
    (a literal) run by grep and verified: one number when they agree."""
    pattern = compile_query(query, regex=regex, case=case)
    whole = len(search_file(path, pattern))
    fd = os.open(path, os.O_RDONLY)
    try:
        state = SearchState(pattern)
        assert scan_split(fd, state, os.fstat(fd).st_size)
        assert list(state.lines) == list(search_file(path, pattern))
        by_grep = SearchState(pattern)
        data = path.read_bytes()
        used = scan_grep_from_start(fd, by_grep, len(data), data.count(b"\n"))
        assert used is (True if grep_form(pattern) else None)
        scan(fd, by_grep, len(data))  # the last line, when it has no newline
        assert list(by_grep.lines) == list(state.lines) or not used
    finally:
        os.close(fd)
    return {whole, len(state.lines)}


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Share anything past 16 KB with the helper, in pieces of ~16 KB."""
    monkeypatch.setattr(logsearch_split, "SPLIT_BYTES", 16 << 10)
    monkeypatch.setattr(logsearch_split, "PIECE", 16 << 10)
    monkeypatch.setattr(logsearch_split, "cores", lambda: 2)
    monkeypatch.setattr(search_grep, "GREP_BYTES", 0)  # grep for any literal
    monkeypatch.setattr(search_grep, "MIN_SEEN", 1 << 40)  # however many lines it names


ALPHABET = bytes(b"abcdefghij klmnopqrstuvwxyz0123456789"[i % 37] for i in range(256))


def boundary_log(rng: random.Random) -> bytes:
    """Lines of every length, a few longer than any chunk, the needle at their start, middle or
    end, so that chunk and piece ends fall before, inside and after a match."""
    out = []
    for i in range(6000):
        size = rng.choice([0, 1, 5, 40, 200, 1000, 5000]) if i % 500 else 70_000
        body = rng.randbytes(size).translate(ALPHABET)
        where = rng.random()
        if where < 0.1:
            body = b"unused variable " + body
        elif where < 0.2:
            body = body + b" Unused Variable"
        elif where < 0.3:
            half = len(body) // 2
            body = body[:half] + b"unused variable" + body[half:]
        out.append(body)
    return b"\n".join(out)  # no final newline: the last line counts all the same


@pytest.mark.parametrize("chunk", [97, 997, 4096, 128 << 10])
def test_chunk_and_piece_ends_anywhere_count_as_grep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(logsearch, "CHUNK", chunk)
    path = tmp_path / "b.log"
    path.write_bytes(boundary_log(random.Random(chunk)))
    assert counts(path, "unused variable") == {grep_count(path, "unused variable", "-i")}
    assert counts(path, "Unused Variable") == {grep_count(path, "Unused Variable")}
    assert counts(path, "variable$") == {grep_count(path, "variable$", "-E", "-i")}
    assert counts(path, r"^unused [a-z]+ ") == {grep_count(path, "^unused [a-z]+ ", "-E", "-i")}


def test_a_line_with_many_matches_counts_once(tmp_path: Path) -> None:
    rng = random.Random(3)
    lines = []
    for i in range(4000):
        hits = rng.choice([0, 0, 1, 2, 5])
        lines.append(b" x ".join([b"#%d warning:" % i] + [b"unused variable"] * hits))
    path = tmp_path / "m.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    want = grep_count(path, "unused variable", "-i")
    matches = sum(line.count(b"unused variable") for line in lines)
    assert want < matches  # the file really has lines with several matches
    assert counts(path, "unused variable") == {want}
    assert counts(path, r"(unused|variable)") == {grep_count(path, "(unused|variable)", "-E")}
    assert counts(path, "x unused") == {grep_count(path, "x unused", "-i")}


INVALID = [
    b"\xff\xfe",  # never UTF-8
    b"\xc3",  # a lead byte cut off
    b"\xed\xa0\x80",  # a surrogate
    b"\xc0\xaf",  # overlong
    b"\xe2\x82",  # three-byte sequence cut after two
    "é ü 漢字".encode(),  # valid, not ASCII
]


def test_invalid_utf8_around_a_match_counts_as_grep(tmp_path: Path) -> None:
    rng = random.Random(8)
    lines = []
    for i in range(5000):
        bad = rng.choice(INVALID)
        parts = [b"#%d " % i, bad, b" build step "]
        if rng.random() < 0.4:
            parts.insert(rng.randrange(len(parts) + 1), b" unused variable ")
        if rng.random() < 0.3:
            parts.append(bad)
        lines.append(b"".join(parts))
    path = tmp_path / "u.log"
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    assert all(bad in data for bad in INVALID)
    assert counts(path, "unused variable") == {grep_count(path, "unused variable", "-i")}
    assert counts(path, "unused variable", regex=False) == {
        grep_count(path, "unused variable", "-F", "-i")
    }
    assert counts(path, "build step$") == {grep_count(path, "build step$", "-E", "-i")}
    assert counts(path, r"^#1[0-9]* ") == {grep_count(path, "^#1[0-9]* ", "-E")}


def test_a_regex_and_the_same_text_as_a_literal_count_as_grep(tmp_path: Path) -> None:
    rng = random.Random(13)
    words = [b"a.c", b"abc", b"a+c", b"aac", b"(a)", b"[x]", b"x", b"a\\c", b"A.C", b"a|c"]
    lines = [b" ".join(rng.choice(words) for _ in range(rng.randint(0, 6))) for _ in range(8000)]
    path = tmp_path / "r.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for text in ("a.c", "a+c", "(a)", "[x]", "a\\c", "a|c"):
        literal = grep_count(path, text, "-F", "-i")
        assert counts(path, text, regex=False) == {literal}, text
    for text, ere in (("a.c", "a.c"), ("a+c", "a+c"), ("(a)", "(a)"), ("a|c", "a|c")):
        assert counts(path, text) == {grep_count(path, ere, "-E", "-i")}, text
    assert counts(path, "a.c", case=True) == {grep_count(path, "a.c", "-E")}
    assert counts(path, "A.C", regex=False) == {grep_count(path, "A.C", "-F")}  # smart: a capital
    # the literal finds fewer than the regex here: "a.c" as a regex is also "abc", "a+c" ...
    assert len(search_file(path, compile_query("a.c", regex=False))) < len(
        search_file(path, compile_query("a.c"))
    )


def test_a_growing_file_resumed_counts_as_grep_at_every_step(tmp_path: Path) -> None:
    data = boundary_log(random.Random(21))
    path = tmp_path / "g.log"
    path.write_bytes(b"")
    state = SearchState(compile_query("unused variable"))
    fd = os.open(path, os.O_RDONLY)
    rng = random.Random(2)
    try:
        pos = 0
        while pos < len(data):  # appends cut anywhere, mid-line included
            step = rng.randint(1, 200_000)
            with path.open("ab") as f:
                f.write(data[pos : pos + step])
            pos += step
            assert scan(fd, state, min(pos, len(data)))
            assert len(state.lines) == grep_count(path, "unused variable", "-i")
    finally:
        os.close(fd)
