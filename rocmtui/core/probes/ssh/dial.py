"""ssh:// engines without paramiko: OpenSSH, dial-stdio sessions over a kept connection.

The docker SDK's own ssh:// support needs paramiko (not installed here), ignores the client
timeout, and its shell-out mode may prompt on the operator's tty. Instead each probe is

    ssh [-F CONFIG] -o BatchMode=yes ... -o ControlMaster=no -o ControlPath=... HOST \
        docker system dial-stdio

a session over the node's kept connection (`master.SSHMasters`: one login per node, not
one per refresh), started in a session of its own (no controlling tty: it can never prompt)
with one end of a `socket.socketpair()` as its stdin/stdout. The SDK talks HTTP over the other
end, a real socket, so the client timeout applies to every read; `kill()` ends the ssh
children when a probe is abandoned, which unblocks the probe thread. What an ssh child said on
stderr is classified (`failure.ssh_failure`: dns, connect, host key, auth, engine).

Every ssh rocmtui runs takes `base_argv`'s options: `BatchMode=yes`; an unknown or changed host
key is refused (`StrictHostKeyChecking=yes`, not `accept-new`: a console polling unattended
must not trust a first key by itself, the key a reinstalled or impostor host shows; a person
checks it once) and reported as such; `UpdateHostKeys=no` (rocmtui never writes the
operator's known_hosts); and the fleet file's `ssh_config` as `-F`, without which OpenSSH reads
~/.ssh/config of the passwd entry's home, as docker's own ssh does.

This module imports nothing heavy (it is used on the event loop); the requests adapter lives in
`sshadapter`, used in probe threads.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import signal
import socket
import subprocess
import threading
import urllib.parse
from typing import Protocol

from msgspec import Struct

from rocmtui.core.probes.failure import ReachError, ssh_failure


class MasterPool(Protocol):
    """The kept connections a dialer opens its sessions over (`master.SSHMasters` is one);
    declared here because the masters import this module's `SshTarget`."""

    def ensure(
        self, target: SshTarget, ssh_config: str | None, timeout: float
    ) -> tuple[str, int | None]:
        """A live master for `target`: (its control path, its pid)."""
        ...


class SshTarget(Struct, frozen=True):
    """Where `ssh://[user@]host[:port][/socket]` points."""

    host: str
    user: str | None = None
    port: int | None = None
    socket_path: str | None = None  # the remote engine's socket, when the URL names one

    @property
    def label(self) -> str:
        """`user@host` as people write it."""
        return f"{self.user}@{self.host}" if self.user else self.host


def parse_ssh_url(url: str) -> SshTarget:
    """The parts of an ssh:// DOCKER_HOST (ValueError with a one-line reason when it is not)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "ssh":
        raise ValueError(f"not an ssh:// URL: {url!r}")
    if parsed.password is not None:
        raise ValueError(f"a password in an ssh:// URL is not used; use a key: {url!r}")
    if parsed.query or parsed.fragment:
        raise ValueError(f"an ssh:// URL takes no ?query or #fragment: {url!r}")
    try:
        port = parsed.port
    except ValueError:
        raise ValueError(f"bad port in {url!r}") from None
    host = parsed.hostname
    if not host:
        raise ValueError(f"no host in {url!r}")
    path = parsed.path if parsed.path not in ("", "/") else None
    return SshTarget(host=host, user=parsed.username or None, port=port, socket_path=path)


def base_argv(target: SshTarget, ssh_config: str | None, timeout: float) -> list[str]:
    """ssh and the options every one of our ssh runs takes (never a prompt, never a new key)."""
    argv = ["ssh"]
    if ssh_config:
        argv += ["-F", ssh_config]
    argv += [
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "UpdateHostKeys=no",
        "-o", f"ConnectTimeout={max(1, math.ceil(timeout))}",
        "-T", "-x",
    ]  # fmt: skip
    if target.user:
        argv += ["-l", target.user]
    if target.port:
        argv += ["-p", str(target.port)]
    return argv


def dial_command(target: SshTarget) -> list[str]:
    """The remote command that connects stdio to the engine. ssh joins these words with spaces
    and the remote user's shell parses the line, so the socket path (from the fleet file's URL)
    is quoted: a space or a `;` in it stays part of the path."""
    host = ["--host", shlex.quote(f"unix://{target.socket_path}")] if target.socket_path else []
    return ["docker", *host, "system", "dial-stdio"]


def ssh_argv(url: str, timeout: float, ssh_config: str | None = None) -> list[str]:
    """A stand-alone (no master) ssh command line dialing the engine behind `url`."""
    target = parse_ssh_url(url)
    alive = str(max(1, math.ceil(timeout)))
    argv = base_argv(target, ssh_config, timeout)
    argv += ["-o", f"ServerAliveInterval={alive}", "-o", "ServerAliveCountMax=1"]
    return [*argv, "--", target.host, *dial_command(target)]


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


class SSHDialer:
    """Starts and tracks the ssh children of one probe (sessions over the node's master)."""

    def __init__(
        self,
        url: str,
        timeout: float,
        masters: MasterPool | None = None,
        ssh_config: str | None = None,
    ) -> None:
        self.target = parse_ssh_url(url)
        self.timeout = timeout
        self.masters = masters
        self.ssh_config = ssh_config
        self.master_pid: int | None = None
        self._control: str | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()

    def prepare(self) -> None:
        """Make sure the node's master is up (blocking; raises ReachError)."""
        if self.masters is not None:
            self._control, self.master_pid = self.masters.ensure(
                self.target, self.ssh_config, self.timeout
            )

    @property
    def argv(self) -> list[str]:
        """The ssh command of one dial-stdio session."""
        if self._control is None:
            return ssh_argv(
                f"ssh://{self.target.label}"
                + (f":{self.target.port}" if self.target.port else "")
                + (self.target.socket_path or ""),
                self.timeout,
                self.ssh_config,
            )
        argv = base_argv(self.target, self.ssh_config, self.timeout)
        argv += ["-o", "ControlMaster=no", "-o", f"ControlPath={self._control}"]
        return [*argv, "--", self.target.host, *dial_command(self.target)]

    def dial(self, timeout: float) -> socket.socket:
        """A connected socket whose other end is a fresh `ssh ... dial-stdio`."""
        ours, theirs = socket.socketpair()
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=subprocess.PIPE,
                start_new_session=True,  # no controlling tty: ssh cannot prompt
                close_fds=True,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        with self._lock:
            self._procs.append(proc)
        ours.settimeout(timeout)
        return ours

    def stderr_text(self, wait: float = 0.5) -> tuple[str, int | None]:
        """What an ssh child that exited said on stderr, and its exit code. Called after the
        connection broke, so the child is exiting: give it up to `wait` seconds to be reaped,
        then read only what its pipe already holds."""
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
            if proc.poll() is None or proc.stderr is None:
                continue
            os.set_blocking(proc.stderr.fileno(), False)
            with contextlib.suppress(OSError, TypeError):
                data = proc.stderr.read(8192) or b""
                text = data.decode("utf-8", "replace")
                if text.strip() or proc.returncode:
                    return text, proc.returncode
        return "", None

    def failure(self) -> ReachError | None:
        """The classified failure of a session that ended, if it said anything."""
        text, code = self.stderr_text()
        if not text.strip() and not code:
            return None
        return ssh_failure(text, self.target.label, code)

    def kill(self) -> None:
        """End every ssh child (and anything it started) now. A login in progress is left to
        finish under its own timeout: the next round uses it."""
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            kill_group(proc)

    def reap(self) -> None:
        """Kill and wait for every child, closing its pipes."""
        with self._lock:
            procs, self._procs = self._procs, []
        for proc in procs:
            kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
            if proc.stderr is not None:
                proc.stderr.close()
