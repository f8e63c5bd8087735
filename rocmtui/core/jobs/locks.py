"""flock-based locks: job liveness and one build per image and node on the machine.

The kernel drops an flock when the last descriptor of its open file goes, so a lock held by the
supervisor says exactly whether the supervisor lives: no pid file, no heartbeat to go stale.
The launcher takes both locks *before* the job becomes visible and hands the very same open
files to the supervisor (inherited descriptors share the lock), so there is no instant at which
a visible job has no holder.

Slot files live in a machine-wide folder (default `/run/lock/rocmtui`, sticky and
world-writable like `/run/lock` itself) so operators with different state folders still
exclude each other. The holder writes who it is into the slot file; values are never secrets.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
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
HOLDER_BYTES = 65536  # a holder record is a few hundred bytes: read no more than this
H = TypeVar("H", bound=Struct)


def lock_dir(config: FleetConfig | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where slot locks live: `$ROCMTUI_LOCK_DIR`, else `/run/lock/rocmtui` when it can be used,
    else `<state dir>/locks` (then only operators sharing that state folder exclude each other).
    """
    env = os.environ if env is None else env
    if env.get("ROCMTUI_LOCK_DIR"):
        return Path(env["ROCMTUI_LOCK_DIR"])
    try:
        SYSTEM_LOCK_DIR.mkdir(mode=0o1777, exist_ok=True)
        info = SYSTEM_LOCK_DIR.stat()
        if not info.st_mode & stat.S_ISVTX:
            with contextlib.suppress(OSError):
                SYSTEM_LOCK_DIR.chmod(0o1777)  # mkdir's mode is cut by the umask
        if os.access(SYSTEM_LOCK_DIR, os.W_OK | os.X_OK):
            return SYSTEM_LOCK_DIR
    except OSError:
        pass
    return state_dir(config, env) / "locks"


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


def take_slot(path: Path) -> int | None:
    """Take the slot's lock (None: held by someone else). The folder is made if missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return try_lock(path, 0o666)


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
