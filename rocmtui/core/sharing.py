"""Who may read what rocmtui writes in its state folder: the user alone, or the operators'
group when the state folder is shared through one.

Logs and records hold build arguments, registry names, errors: nobody else's business. With
a private state folder (the default, `$XDG_STATE_HOME/rocmtui`) files are 0600 and folders
0700. The documented group setup (README: the folder's group `rocmtui`, mode 2770, setgid)
is how a group is configured: then files are 0640 and folders 2750, readable by the group and
written by their maker, except folders other operators' processes write into too (a job's
folder, whose record a cancel or the monitor rewrites; the logs folder): 2770. The modes are
set explicitly: a process's umask (often 022) never decides them. What runs or authenticates
is never here (`core.private`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Sharing:
    """The modes for one state folder; `group`: its gid when shared through a group."""

    group: int | None = None

    @property
    def file_mode(self) -> int:
        """A log, a record, the debug log."""
        return 0o640 if self.group is not None else 0o600

    @property
    def folder_mode(self) -> int:
        """A folder only its maker writes."""
        return 0o2750 if self.group is not None else 0o700

    @property
    def common_folder_mode(self) -> int:
        """A folder other operators' processes write into as well."""
        return 0o2770 if self.group is not None else 0o700


def sharing_of(state: Path) -> Sharing:
    """The state folder's sharing: a group when it is setgid (the group setup), else none
    (also when it does not exist yet: it is then made private)."""
    try:
        info = os.stat(state)
    except OSError:
        return Sharing()
    return Sharing(info.st_gid if info.st_mode & stat.S_ISGID else None)


def make_folder(path: Path, mode: int, *, parents: bool = False) -> None:
    """mkdir `path` with exactly `mode` (not cut by the umask) when it is missing; anything
    already there is left as it is. Raises OSError as mkdir does."""
    if parents and not path.parent.exists():
        make_folder(path.parent, mode & 0o2770 | 0o700, parents=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return  # whatever is there: what uses it says what is wrong with it
    os.chmod(path, mode)


def open_file(path: Path, flags: int, mode: int) -> int:
    """os.open with O_CREAT and the file's mode made exactly `mode` when this call made it."""
    fd = os.open(path, flags | os.O_CREAT, mode)
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, mode)
    return fd


def close_to_others(path: Path) -> None:
    """Take others' bits off a folder of ours (an older rocmtui made the state folder 0755):
    its group keeps what it had, so a group set up without setgid is not locked out."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o007:
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o007)
