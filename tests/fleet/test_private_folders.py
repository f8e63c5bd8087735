"""Issue 37, shared folders: another local user can neither make rocmtui signal processes
through its ssh control folders, nor replace what a build runs, nor block its slots.

The other user is real (`nobody`, through setpriv: tests.support.otheruser); the victim
processes are real listeners on real unix sockets."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmtui.core.probes.ssh.master import reap_stale_folders
from tests.support.otheruser import as_other, shared_folder
from tests.support.realparts import require

LISTENER = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8)
while True:
    c, _ = s.accept()
    d = c.recv(64)
    if d:
        c.sendall(b"alive:" + d)
    c.close()
"""


def _wait_for(what: str, check: object, deadline: float = 15.0) -> None:
    end = time.monotonic() + deadline
    while not callable(check) or not check():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {deadline:g}s")
        time.sleep(0.02)


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A process of ours (the user's ssh-agent, its systemd) answering on a unix socket in a
    folder of ours."""
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    path = folder / "agent.sock"
    proc = subprocess.Popen([sys.executable, "-c", LISTENER, str(path)])
    try:
        _wait_for("victim listening", path.exists)
        yield folder, proc
    finally:
        proc.kill()
        proc.wait()


def _answers(path: Path) -> bool:
    """True when the listener on `path` answers (a process SIGTERMed does not)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        try:
            sock.connect(str(path))
            sock.sendall(b"x")
            return sock.recv(64) == b"alive:x"
        except OSError:
            return False


def test_reaping_never_follows_a_symlink_planted_by_another_user(
    victim: tuple[Path, subprocess.Popen[bytes]],
) -> None:
    """With /tmp as the control root, another user names a link like a dead prober's folder
    and points it at the victim's runtime folder: rocmtui must not signal what answers there,
    nor remove anything through the link."""
    require("root")
    folder, proc = victim
    with shared_folder() as root:
        planted = root / "rt-ssh-4194301-evil"
        made = as_other(["ln", "-s", str(folder), str(planted)])
        assert made.returncode == 0, made.stderr
        reap_stale_folders(str(root))
        assert _answers(folder / "agent.sock"), "the victim was signalled through the link"
        assert proc.poll() is None
        assert (folder / "agent.sock").exists()


def test_reaping_signals_only_an_ssh_master_of_that_folder(tmp_path: Path) -> None:
    """A stale folder of our own whose socket answers from a process that is not an ssh
    master for that control path (a reused pid, anything else): not signalled."""
    stale = tmp_path / "root" / "rt-ssh-4194301-abcd"
    stale.mkdir(parents=True, mode=0o700)
    path = stale / "0"
    proc = subprocess.Popen([sys.executable, "-c", LISTENER, str(path)])
    try:
        _wait_for("listener up", path.exists)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as held:
            held.settimeout(10)
            held.connect(str(path))  # accepted first: it answers once the reap is over
            reap_stale_folders(str(stale.parent))
            held.sendall(b"x")
            assert held.recv(64) == b"alive:x", "a process that is no ssh master was signalled"
    finally:
        proc.kill()
        proc.wait()
    assert not stale.exists()  # the folder itself, ours, is still removed
