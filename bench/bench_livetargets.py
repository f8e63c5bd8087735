"""What following a group's targets costs the supervisor's drain (issue 39).

The supervisor moves bake's output to the log in 64 KiB chunks (`LogWriter.write`); for a bake
of two or more targets it also hands each chunk to `livetargets.LiveTargets.feed`. Both are
timed here over the same chunks of gen_buildlog's 1,000,000-line PyTorch log, every vertex name
given a target prefix as bake prints a group's (`#12 [demo-vllm base 2/4] ...`): the figure is
the parse's CPU seconds, the anchor the drain's own write of the same chunks to a file (best
of three each). Target: under 1% of a core at bench_logs' flood of 20,000 lines/s, i.e. under
0.5 CPU s per 1,000,000 lines (the bare write is the cheaper of the two: it is a memory copy).

    python bench/bench_livetargets.py [--lines 1000000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import gen_buildlog
from common import cache_dir, emit, quick, row

from rocmtui.core.jobs.logwriter import LogWriter
from rocmtui.core.runs.livetargets import LiveTargets

CHUNK = 1 << 16
TARGETS = ("demo-base", "demo-pytorch", "demo-vllm")


def chunks(lines: int) -> list[bytes]:
    """The generated log, its vertex names prefixed with a target, in the drain's chunks."""
    path = cache_dir() / f"livetargets-{lines}.log"
    if not path.exists():
        gen_buildlog.generate(path, lines)
    data = path.read_bytes()
    turn = iter(range(1 << 30))
    data = re.sub(
        rb"(?m)^(#\d+) \[",
        lambda m: m.group(1) + b" [" + TARGETS[next(turn) % 3].encode() + b" ",
        data,
    )
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


def best(runs: int, once: object) -> float:
    """The fewest CPU seconds of `runs` calls of `once`."""
    out = []
    for _ in range(runs):
        start = time.process_time()
        once()  # type: ignore[operator]
        out.append(time.process_time() - start)
    return min(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000 if quick() else 1_000_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    parts = chunks(args.lines)
    names = sum(p.count(b"\n#") for p in parts)

    def parse() -> None:
        live = LiveTargets(TARGETS)
        for p in parts:
            live.feed(p, 0.0)

    with tempfile.TemporaryDirectory() as tmp:
        fd = os.open(Path(tmp) / "log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

        def write() -> None:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            log = LogWriter(fd)
            for p in parts:
                log.write(p)

        try:
            parsed = best(3, parse)
            written = best(3, write)
        finally:
            os.close(fd)
    emit(
        [
            row(
                f"live targets: parse {args.lines:,} lines in 64 KiB chunks, CPU s",
                parsed,
                written,
                unit="s",
                anchor_name="the drain's LogWriter.write of the same chunks",
                target=f"< {0.5 * args.lines / 1e6:g} s (1% of a core at 20k lines/s)",
                ok=parsed < 0.5 * args.lines / 1e6,
                note=f"{len(parts)} chunks, {names:,} lines starting '#'",
            )
        ]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
