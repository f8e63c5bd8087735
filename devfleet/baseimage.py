"""The dev fleet's base image as a tar: a busybox root filesystem, built once per folder,
that each engine imports as `rocm-base:local` (`dockerd.import_base`), so that builds need no
registry on the internet.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path

BASE_IMAGE = "rocm-base:local"


def build_base_tar(workdir: Path) -> Path:
    """A root filesystem tar: static busybox with every applet linked, /tmp, /etc/passwd.

    Built once per workdir and reused; written to a temporary name first so a concurrent
    reader never sees half a tar.
    """
    out = Path(workdir) / "rocm-base.tar"
    if out.is_file():
        return out
    busybox = shutil.which("busybox") or "/bin/busybox"
    applets = subprocess.run(
        [busybox, "--list-full"], check=True, capture_output=True, text=True
    ).stdout.split()
    tmp = out.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
    with tarfile.open(tmp, "w") as tar:

        def add_dir(name: str, mode: int = 0o755) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)

        def add_file(name: str, data: bytes, mode: int = 0o644) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))

        for d in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "root", "proc", "sys", "dev"):
            add_dir(d)
        add_dir("tmp", 0o1777)
        add_file("bin/busybox", Path(busybox).read_bytes(), 0o755)
        add_file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
        add_file("etc/group", b"root:x:0:\n")
        for applet in applets:
            if applet == "bin/busybox":
                continue
            info = tarfile.TarInfo(applet)
            info.type, info.linkname = tarfile.SYMTYPE, "/bin/busybox"
            tar.addfile(info)
    tmp.replace(out)
    return out
