"""Following a log written at a steady rate: the newest line's age each time the screen is
drawn, key-to-screen latency, and CPU, for any program that follows a file given as its last
argument (the viewer, Textual's Log, Toolong). Used by bench_logs.py, figure 5.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from pathlib import Path

from common import cache_dir
from tui import ControlClient, Tmux, cpu_seconds


class Writer(threading.Thread):
    """Appends numbered lines at a steady rate, recording when each batch was written."""

    def __init__(self, path: Path, rate: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.path, self.rate, self.seconds = path, rate, seconds
        self.last_seq: list[int] = []
        self.times: list[float] = []
        self.seq = 0

    def run(self) -> None:
        period = 0.01
        per = max(1, int(self.rate * period))
        start = time.monotonic()
        with self.path.open("a", encoding="utf-8") as fh:
            n = 0
            while time.monotonic() - start < self.seconds:
                chunk = "".join(
                    f"#16 {s:08d} [{s}/9999999] Building HIP object torch_hip.dir/k{s}.hip.o\n"
                    for s in range(self.seq, self.seq + per)
                )
                fh.write(chunk)
                fh.flush()
                self.seq += per
                self.last_seq.append(self.seq - 1)
                self.times.append(time.monotonic())
                n += 1
                pause = start + n * period - time.monotonic()
                if pause > 0:
                    time.sleep(pause)

    def written_at(self, seq: int) -> float | None:
        """When line `seq` was written."""
        i = bisect.bisect_left(self.last_seq, seq)
        return self.times[i] if i < len(self.times) else None


SEQ = re.compile(r"#16 (\d{8}) \[")
SGR = re.compile(r"\x1b\[[0-9;:]*m")


Flip = tuple[str, str]  # a key, and text its effect writes to the terminal


def follow_once(
    argv: list[str], rate: int, seconds: float, flip: Flip | None
) -> tuple[list[float], list[float], float]:
    """(ages of the newest line each time the screen is drawn, key-to-screen latencies, CPU
    seconds). Screen output is read as tmux produces it (a control-mode client), so neither
    figure depends on polling. `flip`: a key that toggles something, and text that its "on"
    state writes to the screen (only "on" presses are timed; "off" presses restore it)."""
    path = cache_dir() / "follow.log"
    path.write_text("#16 00000000 [0/0] start\n", encoding="utf-8")
    term = Tmux([*argv, str(path)])
    keys: list[float] = []
    ctl: ControlClient | None = None
    try:
        term.start()
        term.wait(lambda s: "start" in s, timeout=30)
        pid = term.pid()
        ctl = ControlClient(term)
        cpu0 = cpu_seconds(pid)
        writer = Writer(path, rate, seconds)
        writer.start()
        time.sleep(1.5)  # warm up
        measuring_from = time.monotonic()
        while writer.is_alive():
            if flip is None:
                time.sleep(0.2)
                continue
            key, shows_on = flip
            took = ctl.wait_output(shows_on, ctl.send(key), timeout=3)
            if took is not None and writer.is_alive():
                keys.append(took)
            time.sleep(0.2)
            ctl.send(key)  # back off
            time.sleep(0.2)
        measuring_to = writer.times[-1] if writer.times else time.monotonic()
        cpu = cpu_seconds(pid) - cpu0
        ages = []
        for t, text in ctl.output():
            seqs = SEQ.findall(SGR.sub("", text))  # toolong colours the digits
            if seqs and measuring_from <= t <= measuring_to:
                at = writer.written_at(max(int(x) for x in seqs))
                if at is not None:
                    ages.append(t - at)
    finally:
        if ctl is not None:
            ctl.close()
        term.close()
        path.unlink(missing_ok=True)
    return ages, keys, cpu
