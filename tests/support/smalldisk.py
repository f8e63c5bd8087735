"""A small tmpfs for tests (and bench_fulldisk) of a full or read-only state disk: mounted by
the caller (root: a test calls `require("root")` first), filled to the byte, unmounted at the
end (a lazy unmount if something still holds it, and the caller fails saying so)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def small_tmpfs(point: Path, size: int) -> Iterator[Path]:
    """`point` (made) with a tmpfs of `size` bytes on it, for the duration of the block."""
    point.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "rocmtui-test", str(point)],
        check=True,
        timeout=30,
    )
    try:
        yield point
    finally:
        done = subprocess.run(["umount", str(point)], capture_output=True, timeout=30)
        if done.returncode != 0:
            subprocess.run(["umount", "--lazy", str(point)], capture_output=True, timeout=30)
        assert done.returncode == 0, done.stderr


def remount_read_only(point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True, timeout=30)


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path: Path, leave: int = 0) -> Path:
    """Take all the space but `leave` bytes with a filler file (grown if it exists)."""
    filler = path / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size + max(0, free_bytes(path) - leave)
        with contextlib.suppress(OSError):
            os.posix_fallocate(fd, 0, size)
        block = b"\0" * 4096
        with contextlib.suppress(OSError):  # the last pages fallocate would not take
            os.lseek(fd, 0, os.SEEK_END)
            while free_bytes(path) > leave:
                os.write(fd, block)
    finally:
        os.close(fd)
    return filler
