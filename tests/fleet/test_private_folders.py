"""Issue 37, shared folders: another local user can neither make rocmtui signal processes
through its ssh control folders, nor replace what a build runs, nor block its slots.

The other user is real (`nobody`, through setpriv: tests.support.otheruser); the victim
processes are real listeners on real unix sockets."""

from __future__ import annotations

import logging
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmtui.core import debuglog
from rocmtui.core.config.fleetfile import NodeConfig, load_config
from rocmtui.core.doctor.checks import FAIL, OK, check_state
from rocmtui.core.history.buildx import history_environment, node_workdir
from rocmtui.core.jobs import locks
from rocmtui.core.jobs.remote import prepare_environment
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.private import PrivateFolderError, ensure_private, for_state, job_folder
from rocmtui.core.probes.ssh.master import reap_stale_folders
from tests.support.jobs import job_record, wait_for
from tests.support.otheruser import OTHER_GID, as_other, shared_folder
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


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A process of ours (the user's ssh-agent, its systemd) answering on a unix socket in a
    folder of ours."""
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    path = folder / "agent.sock"
    proc = subprocess.Popen([sys.executable, "-c", LISTENER, str(path)])
    try:
        wait_for("victim listening", lambda: _listening(path), 15)
        yield folder, proc
    finally:
        proc.kill()
        proc.wait()


def _listening(path: Path) -> bool:
    """True once something listens on `path` (bind makes the name before listen)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


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
        wait_for("listener up", lambda: _listening(path), 15)
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


@pytest.fixture
def group_state(tmp_path: Path) -> Iterator[Path]:
    """The documented group setup: a state folder of group `nogroup` (the other user's),
    mode 2770, and `UMask=0007`; the test user's own XDG folders stay root's."""
    require("root")
    old = os.umask(0o007)
    try:
        with shared_folder() as shared:
            state = shared / "state"
            state.mkdir()
            os.chown(state, 0, OTHER_GID)
            state.chmod(0o2770)
            yield state
    finally:
        os.umask(old)


def test_another_operator_cannot_replace_the_ssh_wrapper_or_the_tls_links(
    group_state: Path, tmp_path: Path
) -> None:
    """History looks' ssh wrapper and TLS links: not in the shared state folder, where any
    member of its group could swap them and run as this user, but in a private one."""
    pem = tmp_path / "pem"
    pem.mkdir()
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (pem / name).write_text(name)
    (tmp_path / "rocmtui.toml").write_text(f'state_dir = "{group_state}"\n')
    config = load_config(tmp_path / "rocmtui.toml")
    ssh = NodeConfig("think", docker_host="ssh://ci@snoc-think")
    tls = NodeConfig(
        "gaming",
        docker_host="tcp://127.0.0.1:2376",
        tls_ca=str(pem / "ca.pem"),
        tls_cert=str(pem / "cert.pem"),
        tls_key=str(pem / "key.pem"),
    )
    bindir = Path(
        history_environment(ssh, config, os.environ, node_workdir(group_state, ssh))["PATH"].split(
            os.pathsep
        )[0]
    )
    certs = Path(
        history_environment(tls, config, os.environ, node_workdir(group_state, tls))[
            "DOCKER_CERT_PATH"
        ]
    )
    swap = 'printf "#!/bin/sh\\necho owned\\n" > "$1/.x" && chmod 755 "$1/.x" && mv -f "$1/.x" "$2"'
    tried = as_other(["sh", "-c", swap, "_", str(bindir), str(bindir / "ssh")])
    assert tried.returncode != 0, "another user replaced the ssh wrapper"
    assert "rocmtui" in (bindir / "ssh").read_text()
    linked = as_other(["ln", "-sfn", "/etc/hostname", str(certs / "key.pem")])
    assert linked.returncode != 0, "another user replaced a TLS link"
    assert (certs / "key.pem").read_text() == "key.pem"
    for folder in (bindir, certs):
        assert group_state not in folder.parents  # data only in the shared folder
        info = folder.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.geteuid(), 0o700)
    assert stat.S_IMODE((bindir / "ssh").stat().st_mode) == 0o700


def test_a_private_folder_made_or_linked_by_another_user_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A private folder someone else made (or a link they planted where it would be) is
    refused with a line naming it, before anything is written into it."""
    require("root")
    node = NodeConfig("think", docker_host="ssh://ci@snoc-think")
    (tmp_path / "rocmtui.toml").write_text("")
    config = load_config(tmp_path / "rocmtui.toml")
    with shared_folder() as shared:
        theirs = shared / "theirs"
        assert as_other(["mkdir", "-m", "700", str(theirs)]).returncode == 0
        link = shared / "link"
        assert as_other(["ln", "-s", str(shared), str(link)]).returncode == 0
        for root, said in ((theirs, "belongs to uid 65534"), (link, "is a symlink")):
            monkeypatch.setenv("ROCMTUI_PRIVATE_DIR", str(root))
            with pytest.raises(PrivateFolderError, match=said):
                ensure_private(for_state(shared / "state"))
            with pytest.raises(PrivateFolderError):
                prepare_environment(
                    job_folder(shared / "state", "j1"), node, config, os.environ, {}
                )
        assert not list(theirs.iterdir()) and not (shared / "state").exists()


def _other_takes(path: Path) -> bool:
    """True when the other user can take (and at once drop) an exclusive flock on `path`."""
    return as_other(["flock", "-n", "-x", str(path), "true"]).returncode == 0


def test_another_user_cannot_block_or_delete_a_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slot locks in a folder anyone can reach: a user outside the operators' group can
    neither hold a slot (blocking every build of that image) nor remove a held one."""
    require("root")
    with shared_folder() as shared:
        monkeypatch.setenv("ROCMTUI_LOCK_DIR", str(shared / "locks"))
        slot = locks.slot_path(locks.lock_dir(), "think", "ssh://ci@snoc-think", "img:x")
        fd = locks.take_slot(slot)
        assert fd is not None
        os.close(fd)  # released: free for the next build
        assert not _other_takes(slot), "another user could hold the slot"
        assert as_other(["rm", "-f", str(slot)]).returncode != 0 or slot.exists()
        assert slot.exists(), "another user removed the slot file"
        folder = slot.parent.stat()
        assert not stat.S_IMODE(folder.st_mode) & 0o007
        assert stat.S_IMODE(slot.stat().st_mode) & 0o007 == 0


def test_a_lock_folder_another_user_made_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone else got to the lock folder first (made it world-writable, theirs): refused
    with a line naming the folder and its owner, not used."""
    require("root")
    with shared_folder() as shared:
        theirs = shared / "locks"
        assert as_other(["mkdir", "-m", "1777", str(theirs)]).returncode == 0
        monkeypatch.setenv("ROCMTUI_LOCK_DIR", str(theirs))
        slot = locks.slot_path(locks.lock_dir(), "think", "ssh://ci@snoc-think", "img:x")
        with pytest.raises(locks.LockFolderError, match=rf"{theirs} \(owner nobody"):
            locks.take_slot(slot)
        assert not slot.exists()


def test_the_operators_group_shares_slots(
    group_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group setup: the lock folder takes the state folder's group (2770), slot files are
    0660 in that group, so another operator (a member) takes a slot once it is free, and not
    while it is held."""
    monkeypatch.setenv("ROCMTUI_LOCK_DIR", str(group_state.parent / "locks"))
    slot = locks.slot_path(locks.lock_dir(), "think", "ssh://ci@snoc-think", "img:x")
    fd = locks.take_slot(slot, share_with=group_state)
    assert fd is not None
    try:
        assert not _other_takes(slot)  # held
    finally:
        os.close(fd)
    assert _other_takes(slot)  # free: a member of the group takes it
    folder, made = slot.parent.stat(), slot.stat()
    assert (folder.st_gid, stat.S_IMODE(folder.st_mode)) == (OTHER_GID, 0o2770)
    assert (made.st_gid, stat.S_IMODE(made.st_mode)) == (OTHER_GID, 0o660)


def _modes(state: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[int, int]]:
    """(mode, gid) of what a job and the debug log make in `state`, umask 022 (a login's)."""
    monkeypatch.setenv("ROCMTUI_STATE_DIR", str(state))
    monkeypatch.setenv("ROCMTUI_DEBUG", "1")
    old = os.umask(0o022)
    root = logging.getLogger()
    handlers = list(root.handlers)
    try:
        store = JobStore(state)
        record = store.create(job_record)
        os.close(store.open_log(record))
        debug = debuglog.setup()
        assert debug is not None
    finally:
        os.umask(old)
        for handler in set(root.handlers) - set(handlers):
            root.removeHandler(handler)
            handler.close()
    seen = {
        "jobs": store.jobs_dir,
        "job": record.path,
        "record": record.record_path,
        "log": record.log_path,
        "logs": debug.parent,
        "debug": debug,
    }
    return {k: (stat.S_IMODE(p.stat().st_mode), p.stat().st_gid) for k, p in seen.items()}


def test_logs_and_records_are_the_users_alone_without_a_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A private state folder: records, logs and the debug log 0600 in 0700 folders, whatever
    the umask (they were 0644 in 0755: any local user read every build's arguments)."""
    modes = _modes(tmp_path / "state", monkeypatch)
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert {k: m for k, (m, _) in modes.items()} == {
        "jobs": 0o700,
        "job": 0o700,
        "record": 0o600,
        "log": 0o600,
        "logs": 0o700,
        "debug": 0o600,
    }


def test_logs_and_records_are_the_groups_to_read_in_the_group_setup(
    group_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group setup: the group reads (0640, folders 2750; 2770 where other operators'
    processes write too: a job's folder, the logs folder); others nothing."""
    modes = _modes(group_state, monkeypatch)
    assert {k: gid for k, (_, gid) in modes.items()} == dict.fromkeys(modes, OTHER_GID)
    assert {k: m for k, (m, _) in modes.items()} == {
        "jobs": 0o2770,
        "job": 0o2770,
        "record": 0o640,
        "log": 0o640,
        "logs": 0o2770,
        "debug": 0o640,
    }


def test_doctor_names_an_untrusted_lock_or_private_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rocmtui doctor` says before any build does that the lock folder or the private
    folder is another user's, with the fix; and it makes neither."""
    require("root")
    (tmp_path / "rocmtui.toml").write_text(f'state_dir = "{tmp_path / "state"}"\n')
    config = load_config(tmp_path / "rocmtui.toml")
    with shared_folder() as shared:
        theirs = shared / "locks"
        assert as_other(["mkdir", "-m", "1777", str(theirs)]).returncode == 0
        private = shared / "private"
        assert as_other(["mkdir", "-m", "700", str(private)]).returncode == 0
        monkeypatch.setenv("ROCMTUI_LOCK_DIR", str(theirs))
        monkeypatch.setenv("ROCMTUI_PRIVATE_DIR", str(private))
        found = {f.check: f for f in check_state(config)}
        assert found["lock folder"].verdict == FAIL, found["lock folder"]
        assert str(theirs) in found["lock folder"].detail
        assert "ROCMTUI_LOCK_DIR" in found["lock folder"].remedy
        assert found["private folder"].verdict == FAIL, found["private folder"]
        assert "uid 65534" in found["private folder"].detail
        monkeypatch.setenv("ROCMTUI_LOCK_DIR", str(tmp_path / "locks"))
        monkeypatch.setenv("ROCMTUI_PRIVATE_DIR", str(tmp_path / "private"))
        found = {f.check: f for f in check_state(config)}
        assert found["lock folder"].verdict == OK and found["private folder"].verdict == OK
        assert not (tmp_path / "locks").exists() and not (tmp_path / "private").exists()


def test_an_older_state_folder_open_to_everyone_is_closed_to_others(tmp_path: Path) -> None:
    """A state folder an older rocmtui made 0755 (every job's record and log readable by any
    local user) is closed to others when the store is next used; its group keeps its access."""
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    JobStore(state).list()
    assert stat.S_IMODE(state.stat().st_mode) == 0o750
