"""Figures of the log view at full scale, each beside its anchor, measured through tmux.

    python bench/bench_logs.py [--quick] [--json OUT] [--skip-toolong] [--skip-lnav]

The viewer is `python -m rocmtui.console.logviewer FILE` (the LogView the console embeds, alone).
Anchors: Toolong 1.5 (`tl FILE`, installed into a venv of its own under the bench cache dir,
never the project's), lnav (Debian's, anchor_lnav.py: open, memory, `:filter-in`), Textual's
own `Log` widget following the file (anchor_textual_log.py), and `grep -c`. Every program runs
in a private tmux server at 120x40; times are from launch (or from the moment of the write or
key) to the first `capture-pane` showing the awaited text; memory is VmHWM / VmRSS from
/proc/PID/status.

1. Open the 1,000,000-line generated build log, last screen shown (< 0.6 s; Toolong ~2.2 s).
2. Peak memory with it open and fully indexed (< 80 MB; Toolong ~213 MB).
3. 200,000 lines appended in one write: the last one on screen (< 2 s; Toolong ~38 s).
4. Filter for a regex matching ~1% ("unused variable"), key to final count (within 2x
   `grep -c` of the same, issue 41; each filter beside a `grep -c` run just before it).
5. Follow a file written at 20,000 lines/s: age of the newest line on screen, p95 (no worse
   than Textual's Log in the same run, issue 18), and key to screen p95 (< 50 ms) while it
   streams, beside Textual's Log and Toolong.
6. Memory after following 5,000,000 lines within 10% of after 100,000 (--quick: 1,000,000).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import anchor_lnav  # noqa: E402
import core_search  # noqa: E402
import gen_buildlog  # noqa: E402
from common import Row, cache_dir, emit, median, p95, quick, row  # noqa: E402
from follow import follow_once  # noqa: E402
from tui import ControlClient, Tmux, proc_status  # noqa: E402

from rocmtui.core.logs.search import compile_query, search_file  # noqa: E402

MARKER = "BENCH-END-MARKER"
TOOLONG = "toolong==1.5.0"
VIEWER = [sys.executable, "-m", "rocmtui.console.logviewer"]
BARE_APP = (  # the start-up anchor: a Textual app that only shows one Static
    "from textual.app import App\nfrom textual.widgets import Static\n"
    "class A(App):\n    def compose(self):\n        yield Static('BENCH-END-MARKER')\nA().run()\n"
)
LOG_ANCHOR = [sys.executable, str(HERE / "anchor_textual_log.py")]


def base_log(lines: int) -> Path:
    """The generated build log (shared with bench_progress.py's cache), plus a marker line."""
    folder = Path(os.environ.get("ROCMTUI_BENCH_DIR") or tempfile.gettempdir())
    gen = folder / f"rocmtui-buildlog-{lines}-1.log"
    if not gen.exists():
        print(f"generating {gen} ...", flush=True)
        gen_buildlog.generate(gen, lines=lines, seed=1)
    marked = cache_dir() / f"marked-{lines}.log"
    if not marked.exists() or marked.stat().st_mtime < gen.stat().st_mtime:
        shutil.copyfile(gen, marked)
        with marked.open("a", encoding="utf-8") as fh:
            fh.write(MARKER + "\n")
    return marked


def toolong() -> list[str] | None:
    """`tl` from a venv of its own (created on first use); None when it cannot be installed."""
    venv = cache_dir() / "venv-anchors"
    tl = venv / "bin" / "tl"
    if not tl.exists():
        print(f"installing {TOOLONG} into {venv} ...", flush=True)
        try:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run(
                [str(venv / "bin" / "pip"), "install", "-q", TOOLONG], check=True, timeout=600
            )
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"toolong unavailable: {exc}", flush=True)
            return None
    return [str(tl)]


def fresh_copy(src: Path, name: str) -> Path:
    """A private copy of a log that a figure may append to."""
    dst = cache_dir() / name
    shutil.copyfile(src, dst)
    return dst


# -- 1 and 2: open, and memory once open -------------------------------------------------------
def open_once(argv: list[str], path: Path, settle: float) -> tuple[float | None, float]:
    """Seconds to the marker on screen; VmHWM (MB) once indexing settled."""
    term = Tmux([*argv, str(path)])
    try:
        term.start()
        shown = term.wait(lambda s: MARKER in s, timeout=60)
        pid = term.pid()
        # rocmtui says "of N" once every line is indexed; others get a fixed settle time
        term.wait(lambda s: " of " in s and "indexing" not in s, settle)
        time.sleep(0.5 if argv[0] == sys.executable else settle)
        return shown, proc_status(pid, "VmHWM")
    finally:
        term.close()


def figure_open(log: Path, runs: int, tl: list[str] | None, lnav: list[str] | None) -> list[Row]:
    """Figures 1 and 2, beside Toolong and lnav."""
    ours: list[tuple[float | None, float]] = []
    theirs: list[tuple[float | None, float]] = []
    by_lnav: list[tuple[float | None, float]] = []
    bare: list[float] = []
    for _ in range(runs):  # alternate, so all see the same machine load
        ours.append(open_once(VIEWER, log, 5))
        if tl:
            theirs.append(open_once(tl, log, 8))
        if lnav:
            by_lnav.append(anchor_lnav.open_once(lnav, str(log)))
        term = Tmux([sys.executable, "-c", BARE_APP])
        try:
            term.start()
            took = term.wait(lambda s: MARKER in s, timeout=30)
            if took is not None:
                bare.append(took)
        finally:
            term.close()
    t_ours = median(t for t, _ in ours if t is not None)
    t_theirs = median(t for t, _ in theirs if t is not None) if theirs else None
    m_ours = max(m for _, m in ours)
    m_theirs = max(m for _, m in theirs) if theirs else None
    lines = f"{sum(1 for _ in log.open('rb')):,} lines"
    return [
        row(f"open log, last screen shown ({lines}), s", t_ours, t_theirs, unit="s",
            anchor_name="toolong 1.5", target="< 0.6 s", ok=t_ours < 0.6,
            note=f"median of {runs}, launch to marker in tmux"),
        row("open log, last screen shown, beside a bare Textual app's first frame, s",
            t_ours, median(bare), unit="s", anchor_name="bare Textual app",
            note="the floor: Python + Textual start-up on this machine"),
        row("peak memory with it open (VmHWM), MB", m_ours, m_theirs, unit="MB",
            anchor_name="toolong 1.5", target="< 80 MB", ok=m_ours < 80,
            note="after indexing finished"),
        *anchor_lnav.open_rows(ours, by_lnav, anchor_lnav.version()),
    ]  # fmt: skip


# -- 3: a burst of 200,000 lines ----------------------------------------------------------------
def burst_once(argv: list[str], log: Path, lines: int, timeout: float) -> float | None:
    """Seconds from one write of `lines` lines to the last one on screen."""
    path = fresh_copy(log, "burst.log")
    term = Tmux([*argv, str(path)])
    end = "BURST-END-MARKER"
    try:
        term.start()
        if term.wait(lambda s: MARKER in s, timeout=60) is None:
            return None
        time.sleep(2)  # let indexing finish
        data = "".join(f"#17 {i:08d} burst line {i}\n" for i in range(lines - 1)) + end + "\n"
        with path.open("a", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            wrote = time.monotonic()
        return term.wait(lambda s: end in s, timeout=timeout, since=wrote)
    finally:
        term.close()
        path.unlink(missing_ok=True)


def figure_burst(log: Path, tl: list[str] | None) -> list[Row]:
    """Figure 3."""
    ours = burst_once(VIEWER, log, 200_000, 30)
    theirs = burst_once(tl, log, 200_000, 90) if tl else None
    return [
        row("200,000 lines in one write: last on screen, s", ours, theirs, unit="s",
            anchor_name="toolong 1.5", target="< 2 s", ok=ours is not None and ours < 2,
            note="None = not shown within the timeout (toolong: 90 s)"),
    ]  # fmt: skip


# -- 4: filter ------------------------------------------------------------------------------------
def figure_filter(log: Path, query: str, rounds: int, lnav: list[str] | None) -> list[Row]:
    """Figure 4: through the UI, beside grep -c and lnav's filter-in; the core search alone;
    and a key pressed while the filter runs, beside the same key idle. Each round filters
    afresh (escape clears it)."""
    grep: list[float] = []
    expected = _grep_count(log, query, grep)
    total = sum(1 for _ in log.open("rb"))
    by_lnav = []  # before the viewer's rounds: a fresh lnav each, the same file
    for _ in range(rounds if lnav else 0):
        took = anchor_lnav.filter_once(lnav or [], str(log), query, total - expected)
        if took is not None:
            by_lnav.append(took)
    t = time.monotonic()
    core = len(search_file(log, compile_query(query)))
    core_s = time.monotonic() - t
    t = time.monotonic()
    shared = core_search.shared(log, compile_query(query))
    shared_s = time.monotonic() - t
    t = time.monotonic()
    by_grep = core_search.by_grep(log, compile_query(query), total)
    grep_s = time.monotonic() - t
    term = Tmux([*VIEWER, str(log)])
    counted: list[float] = []
    ratios: list[float] = []  # each filter against the grep -c run just before it
    busy: list[float] = []  # f pressed right after Enter, painted while the search ran
    idle: list[float] = []
    ctl: ControlClient | None = None
    want = re.compile(rf"filter {re.escape(query)}: {expected:,}(?!…)")
    running = re.compile(rf"filter {re.escape(query)}: [0-9,]+…")
    try:
        term.start()
        term.wait(lambda s: MARKER in s, timeout=60)
        term.wait(lambda s: " of " in s and "indexing" not in s, timeout=30)
        ctl = ControlClient(term)  # waits without polling: see ControlClient.wait_screen
        for _ in range(rounds):
            _grep_count(log, query, grep)  # beside each filter: the same load on both
            _filter_prompt(term, query)
            took = ctl.wait_screen(term, want.search, ctl.send("Enter"), timeout=60)
            if took is not None:
                counted.append(took)
                ratios.append(took / grep[-1])
            _filter_prompt(term, query)
            enter = ctl.send("Enter")
            # f once the prompt has closed (sent with Enter, it is typed into the prompt)
            ctl.wait_screen(term, running.search, enter, timeout=10)
            pressed = ctl.send("f")
            key = ctl.wait_output("paused", pressed, timeout=5)
            done = ctl.wait_screen(term, want.search, enter, timeout=60)
            if key is not None and done is not None and pressed - enter + key < done:
                busy.append(key)
            _pressed(term, "f", lambda s: "FOLLOW" in s)
            key = ctl.wait_output("paused", ctl.send("f"), timeout=5)
            if key is not None:
                idle.append(key)
            _pressed(term, "f", lambda s: "FOLLOW" in s)
    finally:
        if ctl is not None:
            ctl.close()
        term.close()
    ui_s = median(counted) if counted else None
    spread = f"{min(counted):.3f}–{max(counted):.3f} s" if counted else "none"
    each = f"{min(ratios):.2f}–{max(ratios):.2f}x" if ratios else "none"
    note = f"{expected:,} matching lines (grep -c); the core found {core:,}"
    return [
        row(f"filter /{query}/ (1%): key to count on screen, s", ui_s, median(grep), unit="s",
            anchor_name="grep -c", target="<= 2x",
            ok=ui_s is not None and ui_s <= 2 * median(grep),
            note=f"{note}; median of {len(counted)} filters ({spread}), each beside a grep -c "
            f"run just before it ({len(grep)} in all; each filter {each} of its own)"),
        row(f"filter /{query}/: core search alone, s", core_s, median(grep), unit="s",
            anchor_name="grep -c",
            note="rocmtui.core.logs.search.search_file in-process, one core"),
        row(f"filter /{query}/: core search shared with its helper, s", shared_s, median(grep),
            unit="s", anchor_name="grep -c",
            note=f"logsearch_split.scan_split in-process, as the view runs a regex: 2 cores; "
            f"found {shared:,}"),
        row(f"filter /{query}/: core search as the view runs it, s",
            grep_s if by_grep is not None else None, median(grep),
            unit="s", anchor_name="grep -c",
            note=f"search_grep: the literal's candidate lines by grep, verified here; "
            f"found {by_grep if by_grep is not None else 'nothing: grep not used'}"),
        row("filter running: key to screen p95 (f: pause), ms",
            p95(busy) * 1000 if busy else None, p95(idle) * 1000 if idle else None, unit="ms",
            anchor_name="same key, idle",
            note=f"{len(busy)} presses painted before the count / {len(idle)} idle"),
        *anchor_lnav.filter_row(query, ui_s, by_lnav, anchor_lnav.version()),
    ]  # fmt: skip


def _grep_count(log: Path, query: str, times: list[float]) -> int:
    """`grep -c query log`, timed into `times`; the count."""
    t = time.monotonic()
    out = subprocess.run(["grep", "-c", query, str(log)], capture_output=True, text=True)
    times.append(time.monotonic() - t)
    return int(out.stdout.strip() or 0)


def _filter_prompt(term: Tmux, query: str) -> None:
    """No filter, follow on; then the filter prompt open with `query` typed (not entered)."""
    if "filter" in term.screen():  # escape with nothing to clear would leave the log
        term.send("Escape")
        term.wait(lambda s: "filter" not in s, timeout=10)
    term.send("F")
    term.wait(lambda s: "filter [" in s, timeout=5)
    term.send(query, literal=True)
    typed = re.compile(rf"^ filter \[.*{re.escape(query)}", re.MULTILINE)
    # typed, and shown in the prompt: the key after it is all that is timed
    term.wait(lambda s: typed.search(s) is not None, timeout=5)


def _pressed(term: Tmux, key: str, shown: Callable[[str], bool]) -> None:
    term.send(key)
    term.wait(shown, timeout=5)


# -- 5: follow at 20,000 lines/s ------------------------------------------------------------------
def figure_follow(seconds: float, tl: list[str] | None) -> list[Row]:
    """Figure 5."""
    rate = 20_000
    # keys timed: f (pause: the status line says "paused"; a press an operator makes on a
    # fast log) and w (wrap: every row laid out again, the heaviest key); the anchor's w flips
    # a label to "wrap:on"
    ours = follow_once(VIEWER, rate, seconds, ("f", "paused"))
    ours_w = follow_once(VIEWER, rate, seconds, ("w", "│ wrap"))
    log_anchor = follow_once(LOG_ANCHOR, rate, seconds, ("w", "wrap:on"))
    tl_res = follow_once(tl, rate, seconds, None) if tl else None
    ages = ours[0] + ours_w[0]
    age_ours, age_log = p95(ages) if ages else None, p95(log_anchor[0]) or None
    age_tl = p95(tl_res[0]) if tl_res and tl_res[0] else None
    key_ours = p95(ours[1]) * 1000 if ours[1] else None
    key_log = p95(log_anchor[1]) * 1000 if log_anchor[1] else None
    key_w = p95(ours_w[1]) * 1000 if ours_w[1] else None
    return [
        row("follow 20k lines/s: newest line age p95, s", age_ours, age_log, unit="s",
            anchor_name="Textual Log", target="<= Log's",
            ok=age_ours is not None and age_log is not None and age_ours <= age_log,
            note=f"toolong 1.5: {age_tl:.2f} s" if age_tl is not None else "toolong: no lines"),
        row("follow 20k lines/s: key to screen p95 (f: pause), ms", key_ours, key_log,
            unit="ms", anchor_name="Textual Log (label flip)", target="< 50 ms",
            ok=key_ours is not None and key_ours < 50,
            note=f"{len(ours[1])} / {len(log_anchor[1])} presses, tmux control mode"),
        row("follow 20k lines/s: key to screen p95 (w: wrap, full repaint), ms", key_w,
            key_log, unit="ms", anchor_name="Textual Log (label flip)", target="< 50 ms",
            ok=key_w is not None and key_w < 50, note=f"{len(ours_w[1])} presses"),
        row("follow 20k lines/s: CPU, % of a core", 100 * ours_w[2] / seconds,
            100 * log_anchor[2] / seconds, unit="%", anchor_name="Textual Log",
            note="viewer process only"),
    ]  # fmt: skip


# -- 6: memory after following millions of lines --------------------------------------------------
def figure_memory(total: int) -> list[Row]:
    """Figure 6: VmRSS after 100,000 lines followed, and after `total`."""
    path = cache_dir() / "long-follow.log"
    path.write_text("", encoding="utf-8")
    term = Tmux([*VIEWER, str(path)])
    marks: dict[int, float] = {}
    try:
        term.start()
        time.sleep(1)
        pid = term.pid()
        written = 0
        with path.open("a", encoding="utf-8") as fh:
            for goal in (100_000, total):
                while written < goal:
                    n = min(50_000, goal - written)
                    fh.write(
                        "".join(
                            f"#16 {s:08d} [{s}/{total}] Building HIP object torch_hip.dir/k{s}.o\n"
                            for s in range(written, written + n)
                        )
                    )
                    fh.flush()
                    written += n
                    time.sleep(0.05)
                last = f"#16 {written - 1:08d} "
                term.wait(lambda s, last=last: last in s, timeout=120)
                samples = []
                for _ in range(6):  # idle, on screen: the median of a few readings
                    time.sleep(0.4)
                    samples.append(proc_status(pid, "VmRSS"))
                marks[goal] = median(samples)
        hwm = proc_status(pid, "VmHWM")
    finally:
        term.close()
        path.unlink(missing_ok=True)
    small, big = marks.get(100_000), marks.get(total)
    growth = (big / small - 1) * 100 if small and big else None
    return [
        row(f"RSS after following {total:,} lines, MB", big, small, unit="MB",
            anchor_name="after 100,000", target="within 10%",
            ok=growth is not None and growth <= 10,
            note=f"growth {growth:+.1f}%, VmHWM {hwm:.0f} MB" if growth is not None else ""),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the figures and emit the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--skip-toolong", action="store_true")
    parser.add_argument("--skip-lnav", action="store_true")
    parser.add_argument("--only", nargs="*", default=[], help="open burst filter follow memory")
    args = parser.parse_args(argv)
    short = args.quick or quick()
    if not shutil.which("tmux"):
        print("tmux is missing", file=sys.stderr)
        return 2
    log = base_log(1_000_000)
    tl = None if args.skip_toolong else toolong()
    lnav = None if args.skip_lnav else anchor_lnav.lnav()
    want = set(args.only) or {"open", "burst", "filter", "follow", "memory"}
    rows: list[Row] = []
    steps = [
        ("open", lambda: figure_open(log, 1 if short else 3, tl, lnav)),
        ("burst", lambda: figure_burst(log, tl)),
        ("filter", lambda: figure_filter(log, "unused variable", 3 if short else 7, lnav)),
        ("follow", lambda: figure_follow(6 if short else 15, tl)),
        ("memory", lambda: figure_memory(1_000_000 if short else 5_000_000)),
    ]
    for name, step in steps:
        if name in want:
            print(f"-- {name}", flush=True)
            try:
                rows.extend(step())
            except Exception as exc:  # one broken figure must not hide the others
                traceback.print_exc()
                rows.append(
                    row(f"{name}: failed ({type(exc).__name__}: {exc})"[:90], None, ok=False)
                )
    emit(rows, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
