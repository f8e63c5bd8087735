"""Anchor: lnav (Debian's `lnav`, 0.11 here), the terminal log viewer engineers hold up, driven
as an operator drives it (issue 41).

Both ways are in a private tmux server at the bench's 120x40, as bench_logs runs rocmtui:
- open: launch `lnav FILE` to the file's last line (`BENCH-END-MARKER`) on screen; lnav opens
  a plain-text log at its end. Memory is VmHWM once lnav no longer says "Loading".
- filter: a fresh lnav per filter, loaded, `:filter-in QUERY` typed (not timed), then Enter to
  the count of hidden lines it shows ("990684 Lines not shown"), the same count rocmtui's view
  shows as the matching lines (lnav's filters are PCRE, case-sensitive: the query is typed so
  that both find the same lines).

lnav keeps its state in `$HOME/.lnav` (or XDG_CONFIG_HOME): each run gets a temporary home, so
no earlier session's filters or positions come back and nothing is written outside the temp
dir. The headless way (`lnav -n`) is not used: tmux works for every figure here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time

from common import Row, median, row
from tui import ControlClient, Tmux, proc_status

MARKER = "BENCH-END-MARKER"


def lnav() -> list[str] | None:
    """`lnav`, or None when it is not installed."""
    path = shutil.which("lnav")
    return [path] if path else None


def version() -> str:
    """E.g. "lnav 0.11.1"; "lnav" when it cannot say."""
    argv = lnav()
    if argv is None:
        return "lnav"
    try:
        out = subprocess.run([*argv, "-V"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "lnav"
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "lnav"


class _Session:
    """One lnav in tmux on one file, with a home of its own."""

    def __init__(self, argv: list[str], path: str) -> None:
        self.home = tempfile.mkdtemp(prefix="rocmtui-bench-lnav-")
        self.term = Tmux([*argv, path])

    def start(self) -> None:
        # TERM as tmux sets it; HOME and XDG_CONFIG_HOME private (lnav writes its state there)
        self.term.start(env={"HOME": self.home, "XDG_CONFIG_HOME": self.home + "/.config"})

    def loaded(self, timeout: float) -> float | None:
        """Seconds from launch to the marker shown with loading finished."""
        return self.term.wait(lambda s: MARKER in s and "Loading" not in s, timeout)

    def close(self) -> None:
        self.term.close()
        shutil.rmtree(self.home, ignore_errors=True)


def open_once(argv: list[str], path: str) -> tuple[float | None, float]:
    """Seconds from launch to the last line on screen; VmHWM (MB) once loading finished."""
    session = _Session(argv, path)
    try:
        session.start()
        shown = session.term.wait(lambda s: MARKER in s, timeout=60)
        session.loaded(timeout=60)
        time.sleep(0.5)  # as bench_logs waits for rocmtui once its index is whole
        return shown, proc_status(session.term.pid(), "VmHWM")
    finally:
        session.close()


def filter_once(argv: list[str], path: str, query: str, hidden: int) -> float | None:
    """Seconds from Enter on `:filter-in QUERY` to "HIDDEN Lines not shown" on screen."""
    session = _Session(argv, path)
    ctl: ControlClient | None = None
    want = re.compile(rf"\b{hidden} Lines not shown")
    try:
        session.start()
        if session.loaded(timeout=60) is None:
            return None
        term = session.term
        term.send(":")
        term.wait(lambda s: "Enter an lnav command" in s, timeout=10)
        term.send(f"filter-in {query}", literal=True)
        term.wait(lambda s: f"filter-in {query}" in s, timeout=10)
        ctl = ControlClient(term)
        return ctl.wait_screen(term, want.search, ctl.send("Enter"), timeout=60)
    finally:
        if ctl is not None:
            ctl.close()
        session.close()


def open_rows(
    ours: list[tuple[float | None, float]], theirs: list[tuple[float | None, float]], name: str
) -> list[Row]:
    """bench_logs's open and memory figures beside lnav's, from the same alternating loop."""
    if not theirs:
        return []
    t_ours = median(t for t, _ in ours if t is not None)
    shown = [t for t, _ in theirs if t is not None]
    t_lnav = median(shown) if shown else None
    m_ours, m_lnav = max(m for _, m in ours), max(m for _, m in theirs)
    note = "both in tmux 120x40, launch to the last line on screen, alternating"
    return [
        row("open log, last screen shown, beside lnav, s", t_ours, t_lnav, unit="s",
            anchor_name=name, target="<= lnav", ok=t_lnav is not None and t_ours <= t_lnav,
            note=f"median of {len(ours)} / {len(shown)}; {note}"),
        row("peak memory with it open (VmHWM), beside lnav, MB", m_ours, m_lnav, unit="MB",
            anchor_name=name, target="<= lnav", ok=m_ours <= m_lnav,
            note="once indexed (rocmtui: \"of N\"; lnav: no longer \"Loading\")"),
    ]  # fmt: skip


def filter_row(query: str, ours: float | None, theirs: list[float], name: str) -> list[Row]:
    """bench_logs's filter figure beside lnav's `:filter-in` of the same query."""
    if not theirs:
        return []
    return [
        row(f"filter /{query}/: key to count on screen, beside lnav :filter-in, s", ours,
            median(theirs), unit="s", anchor_name=name, target="<= lnav",
            ok=ours is not None and ours <= median(theirs),
            note=f"lnav in tmux, a fresh lnav per filter, Enter to \"N Lines not shown\"; "
            f"median of {len(theirs)} ({min(theirs):.3f}–{max(theirs):.3f} s)"),
    ]  # fmt: skip
