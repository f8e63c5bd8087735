"""Why a file under the state folder could not be written, in the words an operator needs.

SQLite says "disk I/O error" or "unable to open database file", Python says "[Errno 28]":
neither tells the operator that the state disk is full or the state folder read-only. Every
writer of the state folder (job store, job outcome, monitor lock, debug log, console prefs)
names the condition with `condition`, from the error and from the file system itself.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

FULL_BELOW = 1024 * 1024  # a state disk with less free than this is called full
_FULL = {errno.ENOSPC, errno.EDQUOT}


def condition(path: Path | str, exc: BaseException | None = None) -> str | None:
    """ "state disk full", "state folder read-only", or None when neither is the case, for
    `path` (a file or folder under the state folder; its nearest existing parent is asked)."""
    code = getattr(exc, "errno", None)
    if code in _FULL:
        return "state disk full"
    if code == errno.EROFS:
        return "state folder read-only"
    here = Path(path)
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        st = os.statvfs(here)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return "state folder read-only"
    if st.f_bavail * st.f_frsize < FULL_BELOW:
        return "state disk full"
    return None


def describe(path: Path | str, exc: BaseException) -> str:
    """`PATH: why` with the condition named when there is one."""
    why = getattr(exc, "strerror", None) or str(exc)
    said = condition(path, exc)
    return f"{path}: {why}" + (f" ({said})" if said and said not in why else "")


__all__ = ["FULL_BELOW", "condition", "describe"]
