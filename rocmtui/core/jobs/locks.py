"""flock-based locks: job liveness and one build per image and node on the machine.

The kernel drops an flock when the last descriptor of its open file goes, so a lock held by the
supervisor says exactly whether the supervisor lives: no pid file, no heartbeat to go stale.
The launcher takes both locks *before* the job becomes visible and hands the very same open
files to the supervisor (inherited descriptors share the lock), so there is no instant at which
a visible job has no holder.

Slot files live in a machine-wide folder (default `/run/lock/rocmtui`) so operators with
different state folders still exclude each other. Anyone who can open a slot file can hold its
flock and block every build of that image, or remove a held one: so the folder is never
world-writable and its files are 0660. It is made 0700, or, when the state folder is shared
through a group (setgid, the documented 2770 setup), 2770 in that group; a folder that is a
link, writable by everyone, or another user's outside our groups is refused with one line (the
fix: `ROCMTUI_LOCK_DIR`, or give the folder to the operators' group). The holder writes who it
is into the slot file; values are never secrets.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import grp
import json
import os
import pwd
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import Struct

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.digests import sha256_hex
from rocmtui.core.paths import state_dir

SYSTEM_LOCK_DIR = Path("/run/lock/rocmtui")
SLOT_MODE = 0o660  # the operators' group may take a slot later; nobody else may open it
HOLDER_BYTES = 65536  # a holder record is a few hundred bytes: read no more than this
H = TypeVar("H", bound=Struct)


def lock_dir(config: FleetConfig | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where slot locks live: `$ROCMTUI_LOCK_DIR`, else `/run/lock/rocmtui` when it exists or
    can be made, else `<state dir>/locks` (then only operators sharing that state folder
    exclude each other). The folder is made and checked when a slot is taken (`take_slot`).
    """
    env = os.environ if env is None else env
    if env.get("ROCMTUI_LOCK_DIR"):
        return Path(env["ROCMTUI_LOCK_DIR"])
    if os.path.lexists(SYSTEM_LOCK_DIR) or os.access(SYSTEM_LOCK_DIR.parent, os.W_OK | os.X_OK):
        return SYSTEM_LOCK_DIR
    return state_dir(config, env) / "locks"


class LockFolderError(Exception):
    """The slot lock folder cannot be trusted (see the module docstring)."""


def ensure_lock_dir(path: Path, share_with: Path | None = None) -> None:
    """Make the lock folder when missing (0700; 2770 in the group of `share_with`, the state
    folder, when that is setgid) and check it; raises LockFolderError naming what is wrong."""
    if not os.path.lexists(path):
        group = _shared_group(share_with)
        with contextlib.suppress(FileExistsError):
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, 0o700)
            if group is not None:
                os.chown(path, -1, group)
                os.chmod(path, 0o2770)
    if os.path.lexists(path) and not os.path.islink(path):
        info = os.lstat(path)
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o002 and info.st_uid == os.geteuid() and stat.S_ISDIR(info.st_mode):
            os.chmod(path, mode & ~0o007)  # an older rocmtui made it 1777: ours to close
    problem = lock_dir_problem(path)
    if problem is not None:
        raise LockFolderError(problem)


def lock_dir_problem(path: Path) -> str | None:
    """Why the lock folder `path` cannot be trusted, in one line; None when it can (or does
    not exist yet). Only looks: `rocmtui doctor` asks it too."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"lock folder {path}: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return f"lock folder {path} is not a folder (a link is never followed)"
    mode = stat.S_IMODE(info.st_mode)
    ours = info.st_uid in (0, os.geteuid())
    member = info.st_gid in {os.getegid(), *os.getgroups()} and mode & 0o020
    if mode & 0o002 or not (ours or member):
        return (
            f"lock folder {path} (owner {_user(info.st_uid)}, group {_group(info.st_gid)}, "
            f"mode {mode:04o}) can be used by others to block or remove slots: refused; "
            "set ROCMTUI_LOCK_DIR, or make it root's or the operators' group's, not "
            "world-writable"
        )
    return None


def _shared_group(state: Path | None) -> int | None:
    """The group of a state folder shared through one (setgid), else None."""
    if state is None:
        return None
    try:
        info = os.stat(state)
    except OSError:
        return None
    return info.st_gid if info.st_mode & stat.S_ISGID else None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return f"gid {gid}"


def try_lock(path: Path, mode: int = 0o644) -> int | None:
    """Open (creating) `path` and take an exclusive flock without waiting.

    Returns the descriptor (inheritable: the caller hands it to the supervisor) or None when
    another process holds the lock.
    """
    fd = _open_rw(path, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def _open_rw(path: Path, mode: int) -> int:
    """Open for writing, creating only when missing.

    O_CREAT on an existing file that another user owns in a sticky world-writable folder is
    refused where `fs.protected_regular` is on, so an existing file is opened without it.
    """
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
    for _ in range(10):
        try:
            return os.open(path, flags)
        except FileNotFoundError:
            pass
        try:
            return os.open(path, flags | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue  # someone created it between our two calls: open theirs
    return os.open(path, flags)


def is_locked(path: Path) -> bool:
    """True while some process holds an flock on `path` (the file's holder is alive).

    Tries a shared lock without waiting and drops it at once; a missing file is not locked.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)  # closing drops the shared lock we may have taken
    return False


class SlotHolder(Struct, frozen=True):
    """Who holds an image+node slot, as the holder wrote it."""

    job_id: str | None
    user: str | None
    host: str | None
    started_at: float | None
    state_dir: str | None


def slot_path(directory: Path, node: str, endpoint: str, image: str) -> Path:
    """The lock file for building one image on one node (`image`: a key from
    `plan.images`). The node's endpoint is part of the key so two fleet files that both call a
    different engine `local` do not block each other."""
    key = json.dumps([node, endpoint, image])
    digest = sha256_hex(key.encode())[:24]
    return directory / f"slot-{digest}.lock"


def take_slot(path: Path, share_with: Path | None = None) -> int | None:
    """Take the slot's lock (None: held by someone else). The folder is made if missing and
    checked (`ensure_lock_dir`; `share_with`: the state folder); raises LockFolderError."""
    ensure_lock_dir(path.parent, share_with)
    fd = try_lock(path, SLOT_MODE)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.fchmod(fd, SLOT_MODE)  # whatever the umask; another's file stays as it is
    return fd


def write_holder(
    fd: int, holder: Mapping[str, Any], *, mode: int | None = None, sync: bool = False
) -> None:
    """Record who holds the lock, in the locked file itself: one JSON object, keys sorted (a
    refused taker reads it with `read_holder`). `mode`: the file's mode afterwards (a slot
    other operators must be able to take later); `sync`: on disk before the call returns."""
    data = json.dumps(dict(holder), sort_keys=True).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    with contextlib.suppress(OSError):
        if mode is not None:
            os.fchmod(fd, mode)
        if sync:
            os.fsync(fd)


def read_holder(path: Path, kind: type[H]) -> H | None:
    """What the lock's holder wrote there, as a `kind` whose fields all take None (None when
    unreadable or not written yet). A field missing or of another type reads as None: another
    version may have written the file, or the writer may be half-way."""
    try:
        raw = path.read_bytes()[:HOLDER_BYTES]
        data = json.loads(raw) if raw else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    values: dict[str, Any] = {}
    for info in msgspec.structs.fields(kind):
        try:
            values[info.name] = msgspec.convert(data.get(info.name), info.type)
        except msgspec.ValidationError:
            values[info.name] = None
    return kind(**values)
