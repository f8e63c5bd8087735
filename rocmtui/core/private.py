"""A folder of the user's own for what runs and what authenticates.

The state folder may be shared (the documented group setup: group `rocmtui`, mode 2770,
`UMask=0007`), so whatever any group member may replace there is data, never code or keys:
the ssh wrapper bake runs first on its PATH and the TLS links docker authenticates with would
otherwise let one operator run as every other (and as the monitor's user, in the docker group).
They live here instead: `$XDG_STATE_HOME/rocmtui-private` (lasting: a detached build outlives
the login, and a runtime folder does not), one subfolder per state folder. Every folder on the
way is checked before use, not followed through a link, owned by this user, 0700; its parents
writable by nobody else (or sticky, like /tmp), so it cannot be swapped from above either.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from rocmtui.core.digests import sha256_hex

MODE = 0o700


class PrivateFolderError(Exception):
    """A folder meant to be the user's own is not (another's, a link, open to others)."""


def private_root(env: Mapping[str, str] | None = None) -> Path:
    """`$ROCMTUI_PRIVATE_DIR`, else `$XDG_STATE_HOME/rocmtui-private` (not checked here)."""
    env = os.environ if env is None else env
    if env.get("ROCMTUI_PRIVATE_DIR"):
        return Path(env["ROCMTUI_PRIVATE_DIR"])
    xdg = env.get("XDG_STATE_HOME") or str(
        Path(env.get("HOME", "~")).expanduser() / ".local" / "state"
    )
    return Path(xdg) / "rocmtui-private"


def for_state(state: Path, env: Mapping[str, str] | None = None) -> Path:
    """The private folder of one state folder (two fleet files' nodes may share a name)."""
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", state.name)[:24] or "state"
    return private_root(env) / f"{tag}-{sha256_hex(str(state).encode())[:12]}"


def job_folder(state: Path, job_id: str, env: Mapping[str, str] | None = None) -> Path:
    """Where a job's ssh wrapper and TLS links live."""
    return for_state(state, env) / "jobs" / job_id


def history_folder(state: Path, node: str, env: Mapping[str, str] | None = None) -> Path:
    """Where a node's ssh wrapper or TLS links for history looks live."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", node)[:60] or "node"
    return for_state(state, env) / "history" / safe


def ensure_private(path: Path) -> Path:
    """Make `path` (and its missing parents below the first that exists) 0700, and check it:
    raises PrivateFolderError with one line naming the folder and what is wrong. Nothing is
    made inside a folder that is not safe to hold it."""
    path = Path(os.path.abspath(path))
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    if missing:
        if os.path.islink(probe):
            raise PrivateFolderError(f"{path}: {probe} is a symlink: never followed")
        _check_above(path, probe)
        for parent in probe.parents:
            _check_above(path, parent)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, MODE)
        except FileExistsError:
            pass
        except OSError as exc:
            raise PrivateFolderError(f"{folder}: cannot be made ({exc.strerror})") from None
    check_private(path)
    return path


def check_private(path: Path) -> None:
    """Raise PrivateFolderError unless `path` is a folder of this user's, not a link, 0700
    (group and others' bits are taken away when the folder is ours), under parents nobody
    else can write (sticky ones aside)."""
    uid = os.geteuid()
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise PrivateFolderError(f"{path}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise PrivateFolderError(f"{path} is a symlink: a private folder is never followed")
    if not stat.S_ISDIR(info.st_mode):
        raise PrivateFolderError(f"{path} is not a folder")
    if info.st_uid != uid:
        raise PrivateFolderError(
            f"{path} belongs to uid {info.st_uid}, not to this user ({uid}): refused"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, MODE, follow_symlinks=False)
    for parent in path.parents:
        _check_above(path, parent)


def _check_above(path: Path, parent: Path) -> None:
    """`parent` (a folder above `path`) must be root's or ours, and writable by nobody else
    unless sticky (/tmp): otherwise whoever can write it can swap `path` for a folder of theirs."""
    uid = os.geteuid()
    try:
        above = os.stat(parent)
    except OSError as exc:
        raise PrivateFolderError(f"{path}: {parent}: {exc.strerror}") from None
    if above.st_uid not in (0, uid):
        raise PrivateFolderError(
            f"{path}: {parent} belongs to uid {above.st_uid}, not to this user ({uid}) or "
            "root: refused"
        )
    mode = stat.S_IMODE(above.st_mode)
    if mode & 0o022 and not above.st_mode & stat.S_ISVTX:
        raise PrivateFolderError(
            f"{path}: {parent} can be written by others (mode {mode:04o}): refused"
        )
