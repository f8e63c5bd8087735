"""bench_logs's filter figure without the UI: the core search the ways the log view runs it.

`shared`: `scan_split`, the in-process scan with pieces handed to a helper process (2 cores).
`by_grep`: `scan_grep_from_start`, a literal's candidate lines named by grep in a process of
its own and verified in-process (issue 41), as the view runs a filter of a literal over 16 MB.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rocmtui.core.logs.search import SearchState
from rocmtui.core.logs.search_split import scan_split


def shared(log: Path, pattern: re.Pattern[str]) -> int:
    """Lines found by `scan_split` over the whole file."""
    fd = os.open(log, os.O_RDONLY)
    try:
        state = SearchState(pattern)
        scan_split(fd, state, os.fstat(fd).st_size)
        return len(state.lines)
    finally:
        os.close(fd)


def by_grep(log: Path, pattern: re.Pattern[str], newlines: int) -> int | None:
    """Lines found through grep over the whole file (ending with a newline: `newlines` lines);
    None when grep was not used (not a literal, no grep, too many candidates; a tree before
    issue 41, measured beside this one, has no such path)."""
    try:
        from rocmtui.core.logs.search_grep import scan_grep_from_start
    except ImportError:
        return None
    fd = os.open(log, os.O_RDONLY)
    try:
        state = SearchState(pattern)
        done = scan_grep_from_start(fd, state, os.fstat(fd).st_size, newlines)
        return len(state.lines) if done else None
    finally:
        os.close(fd)
