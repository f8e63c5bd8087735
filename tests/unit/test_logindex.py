"""LineIndex against the plain truth: every span equals what splitting the file on \\n gives,
however the index was built (tail first, backwards in small chunks, appended to, reset)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from rocmtui.core.logs import index as logindex
from rocmtui.core.logs.index import Change, LineIndex


def truth(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each line, the way a reader splitting on \\n sees it."""
    out, pos = [], 0
    parts = data.split(b"\n")
    if data.endswith(b"\n"):
        parts.pop()
    if data == b"":
        parts = []
    for p in parts:
        out.append((pos, pos + len(p)))
        pos += len(p) + 1
    return out


def random_log(rng: random.Random, n: int, final_nl: bool = True) -> bytes:
    """Lines of very mixed length, empty ones, CRs, invalid UTF-8 and escape bytes included."""
    lines = []
    for i in range(n):
        r = rng.random()
        if r < 0.05:
            lines.append(b"")
        elif r < 0.08:
            lines.append(b"-I/opt/rocm/include " * rng.randint(50, 400))
        elif r < 0.10:
            lines.append(b"\xff\xfe bad \xc3 utf8 \x1b]52;c;QUJD\x07 \r progress")
        else:
            lines.append(b"#%d %d.%d [%d/9999] Building HIP object x.o" % (i, i, i % 10, i))
    data = b"\n".join(lines)
    return data + b"\n" if final_nl else data


def full_index(path: Path, chunk: int = 1 << 20) -> LineIndex:
    """Open and scan to the start, asserting it completes."""
    idx = LineIndex(path)
    idx.open()
    assert idx.scan_back(chunk=chunk)
    assert idx.complete
    return idx


def check(idx: LineIndex, data: bytes) -> None:
    """Every span and every line's bytes match the truth."""
    want = truth(data)
    assert idx.line_count == len(want)
    assert idx.spans(0, len(want)) == want
    got = idx.read_lines(0, len(want))
    assert got is not None
    assert [b for b, _ in got] == [data[s:e] for s, e in want]


@pytest.mark.parametrize("final_nl", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_index_equals_split_offsets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, final_nl: bool
) -> None:
    monkeypatch.setattr(logindex, "TAIL_BYTES", 4096)  # many segments from a small file
    rng = random.Random(seed)
    data = random_log(rng, 5000, final_nl)
    path = tmp_path / "a.log"
    path.write_bytes(data)
    idx = full_index(path, chunk=rng.choice([3000, 20000, 70000]))
    check(idx, data)
    # random access in any order, through the block cache
    want = truth(data)
    for _ in range(300):
        i = rng.randrange(len(want))
        assert idx.spans(i, i + 1) == [want[i]]


def test_tail_first_then_backwards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logindex, "TAIL_BYTES", 2048)
    data = b"".join(b"line %06d\n" % i for i in range(20000))
    path = tmp_path / "b.log"
    path.write_bytes(data)
    idx = LineIndex(path)
    idx.open()
    assert not idx.complete
    n = idx.line_count
    assert 0 < n < 20000
    lines = idx.read_lines(n - 3, n)
    assert lines is not None
    assert [b for b, _ in lines] == [b"line 019997", b"line 019998", b"line 019999"]
    seen: list[tuple[int, int]] = []
    assert idx.scan_back(progress=lambda d, t: seen.append((d, t)), chunk=10000)
    assert seen[-1][0] == seen[-1][1] == len(data)
    check(idx, data)


def test_cancel_stops_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logindex, "TAIL_BYTES", 1024)
    path = tmp_path / "c.log"
    path.write_bytes(b"x\n" * 100000)
    idx = LineIndex(path)
    idx.open()
    assert idx.scan_back(cancelled=lambda: True, chunk=1000) is False
    assert not idx.complete
    assert idx.scan_back(chunk=50000)
    assert idx.line_count == 100000


def test_huge_line_and_no_final_newline(tmp_path: Path) -> None:
    big = b"H" * (10 << 20)
    data = b"first\n" + big + b"\nmiddle\n" + big + b"tail-without-newline"
    path = tmp_path / "d.log"
    path.write_bytes(data)
    idx = full_index(path)
    check(idx, data)
    got = idx.read_lines(1, 4, cap=100)
    assert got is not None
    assert [(b[:5], n) for b, n in got] == [
        (b"HHHHH", len(big)),
        (b"middl", 6),
        (b"HHHHH", len(big) + 20),
    ]
    assert all(len(b) <= 100 for b, _ in got)
    # a block too big to read on the UI thread is refused, not read
    fresh = full_index(path)
    assert fresh.spans(1, 2, max_read=1 << 20) is None


def test_appends_are_indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logindex, "APPEND_CHUNK", 5000)  # refresh in several chunks
    rng = random.Random(7)
    path = tmp_path / "e.log"
    data = random_log(rng, 300, final_nl=False)
    path.write_bytes(data)
    idx = full_index(path)
    assert idx.refresh() is Change.NONE
    for _ in range(40):
        # appends that split lines (and UTF-8 sequences) anywhere
        more = random_log(rng, rng.randint(0, 200), final_nl=rng.random() < 0.5)
        more = more[: rng.randint(0, len(more))]
        with path.open("ab") as f:
            f.write(more)
        data += more
        idx.refresh()
        check(idx, data)


def test_truncate_rewrite_and_rotation(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(b"old one\nold two\nold three\n")
    idx = full_index(path)
    gen = idx.generation
    # truncated and rewritten with more bytes than before: only the fingerprint can tell
    with path.open("r+b") as f:
        f.truncate(0)
        f.write(b"new A\nnew B\nnew C\nnew D and more bytes than before\n")
    assert idx.refresh() is Change.RESET
    assert idx.generation > gen
    assert idx.scan_back()
    check(idx, path.read_bytes())
    # truncated to something shorter
    path.write_bytes(b"short\n")
    assert idx.refresh() is Change.RESET
    check(idx, b"short\n")
    # rotated: renamed away, a new file in its place
    os.rename(path, tmp_path / "f.log.1")
    assert idx.refresh() is Change.MISSING
    path.write_bytes(b"rotated 1\nrotated 2\n")
    assert idx.refresh() is Change.RESET
    assert idx.scan_back()
    check(idx, b"rotated 1\nrotated 2\n")
    idx.close()


def test_a_removed_file_is_still_read_while_its_writer_writes(tmp_path: Path) -> None:
    """`rm` of a log a build still writes: the open file is read as it grows (tail -f), and a
    new file at the path is opened in its place."""
    path = tmp_path / "build.log"
    with path.open("ab", buffering=0) as writer:
        writer.write(b"one\ntwo\n")
        idx = full_index(path)
        path.unlink()
        assert idx.refresh() is Change.MISSING and idx.removed
        writer.write(b"three\nfour\n")
        assert idx.refresh() is Change.GREW and idx.removed
        check(idx, b"one\ntwo\nthree\nfour\n")
    path.write_bytes(b"a new file\n")
    assert idx.refresh() is Change.RESET and not idx.removed
    assert idx.scan_back()
    check(idx, b"a new file\n")
    idx.close()


def test_empty_file_grows(tmp_path: Path) -> None:
    path = tmp_path / "g.log"
    path.write_bytes(b"")
    idx = full_index(path)
    assert idx.line_count == 0
    path.write_bytes(b"partial")
    assert idx.refresh() is Change.GREW
    check(idx, b"partial")
    with path.open("ab") as f:
        f.write(b" line\nnext\n")
    idx.refresh()
    check(idx, b"partial line\nnext\n")
