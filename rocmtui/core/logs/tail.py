"""The rule both followers of a file by name keep, as `tail -F` does: what the path names now.

A writer may still write to a file that was renamed away (rotated) or removed, so a follower
reads the file it has open for as long as the path names nothing; once the path names another
file (a new inode), that one is the log now. `jobs.logtail.FileTail` (the CLI's `logs -f`)
drains the old file first and reads the new one from its start; `logs.index.LineIndex` (the
console's panes) indexes the new one from its tail.
"""

from __future__ import annotations

import os
from pathlib import Path


def at_path(path: Path, fd: int | None) -> tuple[os.stat_result, bool]:
    """The file at `path`, or the open file `fd` while the path names nothing, and whether it
    names nothing (FileNotFoundError: nothing there, and nothing open)."""
    try:
        return os.stat(path), False
    except FileNotFoundError:
        if fd is None:
            raise
        return os.fstat(fd), True


def replaced(found: os.stat_result, ident: tuple[int, int]) -> bool:
    """Whether `found` is another file than the one opened as `ident` (device, inode)."""
    return (found.st_dev, found.st_ino) != ident
