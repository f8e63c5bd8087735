"""One kept ssh connection per node: OpenSSH masters, owned, bounded, never leaked.

Each ssh:// target gets one master connection, started with
`ssh -N -f -o ControlMaster=yes -o ControlPath=DIR/N -o ControlPersist=P ... HOST`: the one
login. Every probe is then a session over it (`sshdial.SSHDialer`), so a 2 s refresh is one
login per node for as long as the link holds, not one per refresh (sshd logs each login; the
bench counts them).

* Owned: the control sockets live in a short folder of the prober's own (`/tmp/rt-ssh-XXXX/0`,
  `/1` ..., mode 0700). A unix socket path is limited to 108 bytes and ssh first binds the path
  plus a 17-byte temporary suffix, so the length is checked up front (a number per master
  rather than `%C`, whose expansion would cost an `ssh -G` per node). `close()` (also at
  interpreter exit) ends each with `ssh -O exit` and removes the folder.
* Bounded: a master whose owner died without that (SIGKILL) ends by itself `ControlPersist`
  seconds after its last session (the monitor uses max(60 s, three refreshes)); the folder
  carries the owner's pid, and the next prober to start removes folders whose owner is gone
  (ending any master still listening there).
* A login slower than a probe's deadline is not killed at the deadline: it goes on in a thread
  of its own (at most `START_TIMEOUT`), and the next round finds the master up. So a loaded
  host does not make every round start a login and kill it again. A failed login is reported
  to every probe that waited for it, and tried again after `RETRY_AFTER`.
* A black-holed link: the master sends keepalives (`ServerAliveInterval=2`,
  `ServerAliveCountMax=2`) and exits within ~4-6 s of silence; the next round starts a new one,
  whose connect times out (step `connect`).
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from rocmtui.core.probes.failure import ReachError, ReachStep, ssh_failure
from rocmtui.core.probes.ssh.dial import SshTarget, base_argv, kill_group
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

SUN_PATH_MAX = 108  # bytes of a unix socket path, its NUL included
SSH_BIND_SUFFIX = 17  # ssh binds PATH + ".XXXXXXXXXXXXXXXX" and renames it
DEFAULT_PERSIST = 60.0  # seconds a master outlives its last session when its owner is gone
START_TIMEOUT = 10.0  # seconds a login (a master's start) may take, whatever a probe's deadline
FOLDER_PREFIX = "rt-ssh-"  # then the owner's pid: a folder whose owner is gone is reaped
RETRY_AFTER = 1.0  # s a failed login is reported as is before another is tried


def _peer_pid(path: str) -> int | None:
    """The pid of the master listening on control socket `path`; None if none listens."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect(path)
        except OSError:
            return None
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, _, _ = struct.unpack("3i", creds)
    return int(pid)


class _Master:
    """One node's master connection: its control path, and its start when one runs."""

    def __init__(self, path: str, log: Path) -> None:
        self.path = path
        self.log = log
        self.lock = threading.Lock()
        self.starting: subprocess.Popen[bytes] | None = None
        self.started: threading.Event | None = None  # set when the running start is over
        self.attempt = 0  # starts so far; a waiter knows which one it waited for
        self.error: ReachError | None = None  # why the latest start failed
        self.error_attempt = 0  # ... which start that was
        self.error_at = -1e9  # ... and when (monotonic)
        self.pid: int | None = None


class SSHMasters:
    """The master connections this process owns, one per ssh target and config."""

    def __init__(self, persist: float = DEFAULT_PERSIST, root: str | None = None) -> None:
        self.persist = persist
        self._root = root
        self._dir: str | None = None
        self._masters: dict[tuple[SshTarget, str | None], _Master] = {}
        self._lock = threading.RLock()
        self._closed = False

    def _folder(self) -> str:
        with self._lock:
            if self._dir is None:
                root = self._root or self._short_root()
                reap_stale_folders(root)
                self._dir = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=root)
                atexit.register(self.close)
            return self._dir

    @staticmethod
    def _short_root() -> str:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime and len(runtime) < 40 and os.access(runtime, os.W_OK):
            return runtime
        return "/tmp"

    def control_path(self, index: int) -> str:
        """The control socket of the index-th master, checked against the socket path limit."""
        path = os.path.join(self._folder(), str(index))
        longest = len(os.fsencode(path)) + SSH_BIND_SUFFIX + 1
        if longest > SUN_PATH_MAX:
            raise ReachError(
                ReachStep.CONFIG,
                one_line(
                    f"ssh control path of {longest} bytes is over the {SUN_PATH_MAX}-byte "
                    f"unix socket limit: {path}"
                ),
            )
        return path

    def _entry(self, target: SshTarget, ssh_config: str | None) -> _Master:
        key = (target, ssh_config)
        with self._lock:
            master = self._masters.get(key)
            if master is None:
                path = self.control_path(len(self._masters))
                master = _Master(path, Path(f"{path}.log"))
                self._masters[key] = master
            return master

    def ensure(
        self, target: SshTarget, ssh_config: str | None, timeout: float
    ) -> tuple[str, int | None]:
        """A live master for `target`: (its control path, its pid); raises ReachError naming
        the step that failed.

        With no master up, one is started (the login) in a thread of its own, under its own
        `START_TIMEOUT`, and waited for only `timeout` seconds: a login slower than a probe's
        deadline (a loaded host, a slow link) then serves the next round instead of being
        killed and started again every round. Its failure is reported by the next `ensure`.
        """
        if self._closed:
            raise ReachError(None, "ssh connections are closed (the console is ending)")
        master = self._entry(target, ssh_config)
        with master.lock:
            pid = _peer_pid(master.path)
            if pid is not None:
                master.pid = pid
                return master.path, pid
            failed = master.error
            if failed is not None and time.monotonic() - master.error_at < RETRY_AFTER:
                raise failed  # the same round's other probe: one attempt per round is enough
            if master.started is None:  # none running: a new attempt
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(master.path)  # a stale socket of a master that was killed
                master.attempt += 1
                master.started = threading.Event()
                threading.Thread(
                    target=self._start_in_thread,
                    args=(target, ssh_config, master, timeout),
                    daemon=True,
                    name=f"ssh-master {target.label}",
                ).start()
            attempt, started = master.attempt, master.started
        started.wait(max(0.0, timeout))
        with master.lock:
            pid = _peer_pid(master.path)
            if pid is not None:
                master.pid = pid
                return master.path, pid
            if master.error_attempt == attempt and master.error is not None:
                raise master.error  # every waiter of a failed start hears why
        raise ReachError(
            ReachStep.CONNECT,
            f"ssh login to {target.label} still in progress after {fmt_seconds(timeout)}",
        )

    def _start_in_thread(
        self, target: SshTarget, ssh_config: str | None, master: _Master, connect: float
    ) -> None:
        error: ReachError | None = None
        try:
            self._start(target, ssh_config, master, master.path, connect)
        except ReachError as exc:
            error = exc
        except Exception as exc:  # never let the thread die with nothing said
            error = ReachError(None, one_line(f"ssh: {type(exc).__name__}: {exc}"))
        finally:
            with master.lock:
                master.error, master.error_attempt = error, master.attempt
                master.error_at = time.monotonic()
                event, master.started = master.started, None
            if event is not None:
                event.set()

    def _start(
        self,
        target: SshTarget,
        ssh_config: str | None,
        master: _Master,
        path: str,
        timeout: float,
    ) -> None:
        alive = 2  # keepalive after 2 s of silence, 2 missed: a dead link ends it in ~4-6 s
        # the connection (and banner) within the probe's deadline: a dead link is named as
        # such by the next round; the login after it may take up to START_TIMEOUT
        argv = base_argv(target, ssh_config, timeout)
        argv += [
            "-o", "ControlMaster=yes",
            "-o", f"ControlPath={path}",
            "-o", f"ControlPersist={max(1, math.ceil(self.persist))}",
            "-o", f"ServerAliveInterval={alive}",
            "-o", "ServerAliveCountMax=2",
            "-E", str(master.log),  # what the master says later (link lost) goes here too
            "-N", "-f", "--", target.host,
        ]  # fmt: skip
        master.log.write_bytes(b"")
        begun = time.monotonic()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # no controlling tty: ssh cannot prompt
            close_fds=True,
        )
        master.starting = proc
        try:
            code = proc.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()
            said = self._said(master)
            if said:
                raise ssh_failure(said, target.label, None) from None
            raise ReachError(
                ReachStep.CONNECT, f"ssh login to {target.label} took over {START_TIMEOUT:g}s"
            ) from None
        finally:
            master.starting = None
        if code == 0:  # the master listens once it has forked: on a loaded host that can take
            # more than a moment, so wait for its socket as long as the login could have taken
            until = max(begun + START_TIMEOUT, time.monotonic() + 1.0)
            while time.monotonic() < until:
                if _peer_pid(path) is not None:
                    return
                threading.Event().wait(0.02)
        raise ssh_failure(self._said(master), target.label, code)

    @staticmethod
    def _said(master: _Master) -> str:
        try:
            return master.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def pid_of(self, target: SshTarget, ssh_config: str | None) -> int | None:
        """The pid of `target`'s master as last seen (None: none started or found)."""
        master = self._masters.get((target, ssh_config))
        return master.pid if master else None

    def kill_starting(self, target: SshTarget | None = None, ssh_config: str | None = None) -> None:
        """Kill the master start in progress for `target` (every one when None): its probe was
        abandoned, or the pool is closing."""
        for key, master in list(self._masters.items()):
            proc = master.starting
            if proc is not None and (target is None or key == (target, ssh_config)):
                kill_group(proc)

    def close(self) -> None:
        """End every master this pool started and remove the folder: `ssh -O exit` to each
        (all at once: an ssh start costs a loaded machine most of a second), then SIGTERM to
        any that still listens (its pid from the control socket) so that nothing outlives
        `close()` even when ssh is slow to start."""
        self._closed = True
        self.kill_starting()
        exits: list[subprocess.Popen[bytes]] = []
        for (target, ssh_config), master in list(self._masters.items()):
            if _peer_pid(master.path) is None:
                continue
            argv = base_argv(target, ssh_config, 1)
            argv += ["-o", f"ControlPath={master.path}", "-O", "exit", "--", target.host]
            with contextlib.suppress(OSError):
                exits.append(
                    subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
        for proc in exits:
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                proc.wait()
        for master in self._masters.values():
            pid = _peer_pid(master.path)
            if pid is not None and pid != os.getpid() and is_own_master(pid, master.path):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def reap_stale_folders(root: str) -> None:
    """Remove the control folders of owners that are gone (killed before their `close()`):
    their masters have ended by themselves (ControlPersist) or are ended here.

    The root may be `/tmp`, where anyone can name an entry like ours: a folder is opened
    without following a link and used only when it is ours and 0700, and a socket's listener
    is signalled only when it is our own ssh master for that very control path (a link to the
    user's runtime folder would otherwise have its systemd or ssh-agent SIGTERMed)."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if not name.startswith(FOLDER_PREFIX):
            continue
        owner = name[len(FOLDER_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit() or os.path.exists(f"/proc/{owner}"):
            continue
        folder = os.path.join(root, name)
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # a link, not a folder, or not ours to open
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) != 0o700:
                continue
            _end_masters_in(fd, folder)
        except OSError:
            continue
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)  # rmtree never follows a link inside


def _end_masters_in(fd: int, folder: str) -> None:
    """SIGTERM the ssh masters still listening in the control folder open as `fd`."""
    for entry in os.listdir(fd):
        if not stat.S_ISSOCK(os.lstat(entry, dir_fd=fd).st_mode):
            continue  # a link or anything else: never connected through
        pid = _peer_pid(f"/proc/self/fd/{fd}/{entry}")
        if pid is not None and is_own_master(pid, os.path.join(folder, entry)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)


def is_own_master(pid: int, control_path: str) -> bool:
    """True when `pid` is an ssh process of this user that names `control_path` on its command
    line (a master's title is `ssh: PATH [mux]`): the only process a reap may signal."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            uids = next(line for line in fh if line.startswith(b"Uid:")).split()[1:]
        if any(int(uid) != os.geteuid() for uid in uids):
            return False
        if not os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("ssh"):
            return False
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return os.fsencode(control_path) in fh.read()
    except (OSError, StopIteration, ValueError):
        return False
