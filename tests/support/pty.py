"""A pseudo-terminal for the tests that read what a process writes to a real terminal."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time


class Pty:
    """A child process on a pty of a fixed size, its output collected."""

    def __init__(self, argv: list[str], cols: int = 100, rows: int = 30) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor")
        env.pop("NO_COLOR", None)
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.out = bytearray()

    def read_until(self, needle: bytes, timeout: float = 20) -> None:
        """Collect output until `needle` was seen (or fail)."""
        deadline = time.monotonic() + timeout
        start = 0
        while needle not in self.out[start:]:
            left = deadline - time.monotonic()
            assert left > 0, f"{needle!r} never appeared; got {bytes(self.out[-2000:])!r}"
            ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if ready:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:
                    break

    def drain(self, wait: float) -> None:
        """Collect what is written within `wait` seconds (nothing awaited)."""
        ready, _, _ = select.select([self.master], [], [], wait)
        if ready:
            with contextlib.suppress(OSError):  # the child closed its side
                self.out += os.read(self.master, 65536)

    def mark(self) -> int:
        """Where the output is now (to check only what comes after)."""
        return len(self.out)

    def send(self, keys: bytes) -> None:
        """Type keys."""
        os.write(self.master, keys)

    def close(self) -> None:
        """Quit, or kill what does not quit."""
        if self.proc.poll() is None:
            self.send(b"q")
            deadline = time.monotonic() + 10
            while self.proc.poll() is None and time.monotonic() < deadline:
                ready, _, _ = select.select([self.master], [], [], 0.1)
                if ready:
                    try:
                        self.out += os.read(self.master, 65536)
                    except OSError:
                        break
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


def run_in_pty(argv: list[str], timeout: float = 60.0, **extra_env: str) -> tuple[int, bytes]:
    """Run `argv` with a pty as stdin/stdout/stderr (and `extra_env`); return its exit code
    and every byte the terminal side received."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    env.update(extra_env)
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    received = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: the child closed the pty
                    break
                if not chunk:
                    break
                received += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        code = proc.wait(timeout=30)
    return code, bytes(received)
