"""The log viewer in a real terminal (tmux) filtering a log past the size grep searches for it:
keys in, the count on screen out, equal to the in-process scan's; and no grep left running."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import psutil

from rocmtui.core.logs import search_grep
from rocmtui.core.logs.search import compile_query, search_file
from tests.support.realparts import require
from tests.support.terminal import Terminal

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_buildlog


def test_a_literal_filter_on_a_big_log_counts_what_the_scan_counts(
    terminal: Terminal, tmp_path: Path
) -> None:
    require("grep")
    log = tmp_path / "build.log"
    gen_buildlog.generate(log, lines=110_000, seed=9)
    assert log.stat().st_size > search_grep.GREP_BYTES  # the view hands it to grep
    want = len(search_file(log, compile_query("unused variable")))
    assert want > 0
    argv = [sys.executable, "-m", "rocmtui.console.logviewer", str(log)]
    env = {"PATH": os.environ.get("PATH", os.defpath), "TERM": "xterm-256color"}
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    command = f"env -i {assignments} {shlex.join(argv)}"
    terminal.session = "viewer"
    subprocess.run(
        ["tmux", "-S", terminal.socket, "new-session", "-d", "-s", "viewer", "-x", "120",
         "-y", "40", command],
        check=True, timeout=20,
    )  # fmt: skip
    terminal.wait(lambda s: " of " in s and "indexing" not in s, "the whole log indexed")
    viewer = int(terminal.tmux("list-panes", "-t", "viewer", "-F", "#{pane_pid}").strip())
    terminal.keys("F")
    terminal.wait_text(r"filter \[")
    terminal.tmux("send-keys", "-t", "viewer", "-l", "unused variable")
    terminal.wait_text(r"filter \[.*unused variable")
    terminal.keys("Enter")
    shown = terminal.wait_text(rf"filter unused variable: {want:,}(?!…)")
    assert re.search(r"unused variable", shown)  # the rows shown are the matching ones
    children = psutil.Process(viewer).children(recursive=True)
    assert not [c for c in children if c.name() == "grep"], "grep left running"
