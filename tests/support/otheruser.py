"""Another local user, for tests of what a second operator (or an attacker sharing the host)
can do to rocmtui's folders: steps run as `nobody` through `setpriv`, and a sticky
world-writable folder both users can reach (tmp_path's parents are root's alone).

Tests using it run as root (`realparts.require("root")`): only root can switch user."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

OTHER_UID = 65534  # nobody
OTHER_GID = 65534  # nogroup


def as_other(argv: Sequence[str], timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """Run `argv` as nobody:nogroup with no supplementary groups; its output is returned."""
    command = [
        "setpriv",
        f"--reuid={OTHER_UID}",
        f"--regid={OTHER_GID}",
        "--clear-groups",
        "--",
        *argv,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env={"PATH": os.defpath}
    )


@contextlib.contextmanager
def shared_folder() -> Iterator[Path]:
    """A folder like /tmp (root's, mode 1777) under /tmp, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="rt-shared-", dir="/tmp"))
    try:
        path.chmod(0o1777)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
