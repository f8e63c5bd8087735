"""ssh:// engines without paramiko: `ssh ... docker system dial-stdio` over a socketpair.

The docker SDK's own ssh:// support needs paramiko (not installed here), ignores the client
timeout, and its shell-out mode may prompt on the operator's tty. This adapter starts

    ssh -o BatchMode=yes -o ConnectTimeout=N -T -x [-l USER] [-p PORT] -- HOST \
        docker system dial-stdio

in a session of its own (no controlling tty, so it can never prompt) with one end of a
`socket.socketpair()` as its stdin/stdout. The SDK talks HTTP over the other end, which is a
real socket, so the client timeout applies to every read; `kill()` ends the ssh children when
a probe is abandoned, which unblocks the probe thread. This module imports nothing heavy (it is
used on the event loop); the requests adapter lives in `sshadapter`, used in probe threads.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import threading
import urllib.parse

from rocmtui.core.probes._common import one_line


def ssh_argv(url: str, timeout: float) -> list[str]:
    """The ssh command line that dials the engine behind `ssh://[user@]host[:port]`."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "ssh" or not parsed.hostname:
        raise ValueError(f"not an ssh:// URL: {url!r}")
    argv = [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={max(1, math.ceil(timeout))}",
        "-o",
        f"ServerAliveInterval={max(1, math.ceil(timeout))}",
        "-o",
        "ServerAliveCountMax=1",
        "-T",
        "-x",
    ]
    if parsed.username:
        argv += ["-l", parsed.username]
    if parsed.port:
        argv += ["-p", str(parsed.port)]
    return [*argv, "--", parsed.hostname, "docker", "system", "dial-stdio"]


class SSHDialer:
    """Starts and tracks the ssh children of one probe."""

    def __init__(self, url: str, timeout: float) -> None:
        self.argv = ssh_argv(url, timeout)
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()

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

    def stderr_line(self, wait: float = 0.5) -> str | None:
        """What an ssh child that exited said on stderr. Called after the connection broke,
        so the child is exiting: give it up to `wait` seconds to be reaped, then read only
        what its pipe already holds."""
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
            if proc.poll() is None or proc.stderr is None:
                continue
            os.set_blocking(proc.stderr.fileno(), False)
            with contextlib.suppress(OSError, TypeError):
                data = proc.stderr.read(4096) or b""
                lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
                if lines:
                    return one_line("ssh: " + lines[-1])
        return None

    def kill(self) -> None:
        """End every ssh child (and anything it started) now."""
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)

    def reap(self) -> None:
        """Kill and wait for every child, closing its pipes."""
        self.kill()
        with self._lock:
            procs, self._procs = self._procs, []
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
            if proc.stderr is not None:
                proc.stderr.close()
