"""A TCP forwarder from inside a network namespace to the host's loopback.

A dockerd in namespace NS pushes to `127.0.0.1:PORT`, the same registry reference every node
uses. This process creates its listening socket inside NS (setns on /var/run/netns/NS through
libc — Python 3.11 has no os.setns), switches back to the host namespace, and connects each
accepted connection to 127.0.0.1:TARGET there. Traffic stays on loopback on both sides.

Run as `python -m devfleet.forward --netns NS --map PORT:HOST:TARGET [--map ...]`;
`start_port_forward` does that detached and returns a handle that stops it by pid.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet import ledger, processes
from devfleet.processes import FleetError

CLONE_NEWNET = 0x40000000
_BUF = 256 * 1024


def setns(fd: int) -> None:
    """Move the calling thread into the network namespace open at `fd`."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def listen_in_netns(netns: str, port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:`port` inside `netns`; the caller stays in its own."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
    try:
        setns(target)
        try:
            srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind(("127.0.0.1", port))
            srv.listen(64)
        finally:
            setns(home)  # sockets keep the namespace they were made in; we go back
    finally:
        os.close(home)
        os.close(target)
    return srv


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes one way until EOF, then half-close the other side."""
    try:
        while data := src.recv(_BUF):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _serve_one(client: socket.socket, host: str, port: int) -> None:
    try:
        upstream = socket.create_connection((host, port), timeout=10)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _accept_loop(srv: socket.socket, host: str, port: int) -> None:
    while True:
        try:
            client, _ = srv.accept()
        except OSError:
            return
        threading.Thread(target=_serve_one, args=(client, host, port), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the forwarder process."""
    ap = argparse.ArgumentParser(prog="python -m devfleet.forward")
    ap.add_argument("--netns", required=True)
    ap.add_argument("--map", action="append", required=True, help="LISTEN_PORT:HOST:PORT")
    ap.add_argument("--ready-fd", type=int, default=None, help="write 'ready' here once bound")
    args = ap.parse_args(argv)
    servers = []
    for spec in args.map:
        lport, host, tport = spec.split(":")
        servers.append((listen_in_netns(args.netns, int(lport)), host, int(tport)))
    for srv, host, tport in servers:
        threading.Thread(target=_accept_loop, args=(srv, host, tport), daemon=True).start()
    if args.ready_fd is not None:
        os.write(args.ready_fd, b"ready\n")
        os.close(args.ready_fd)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    threading.Event().wait()  # serve until signalled
    return 0


@dataclass
class ForwardHandle:
    """A running forwarder process: `ports` inside `netns` lead to the host's loopback."""

    netns: str
    ports: list[tuple[int, str, int]]  # (listen port in netns, target host, target port)
    pid: int
    start_time: int | None
    log: Path
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def pids(self) -> list[int]:
        """The forwarder's pid while it runs."""
        return [self.pid] if self.alive() else []

    def alive(self) -> bool:
        """Whether the forwarder still runs."""
        return processes.alive(self.pid, self.start_time)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, SIGKILL after `grace`."""
        try:
            processes.stop_pids([(self.pid, self.start_time)], grace=grace, popen=self._popen)
        finally:
            ledger.forget(self)

    def to_record(self) -> dict[str, Any]:
        """A JSON-able record for fleet.json."""
        return {
            "netns": self.netns,
            "ports": [list(p) for p in self.ports],
            "pid": self.pid,
            "start_time": self.start_time,
            "log": str(self.log),
        }

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> ForwardHandle:
        """The handle described by a `to_record` dict."""
        ports = [(int(a), str(b), int(c)) for a, b, c in rec["ports"]]
        return cls(rec["netns"], ports, rec["pid"], rec["start_time"], Path(rec["log"]))


def start_port_forward(
    netns: str,
    port: int,
    target_host: str = "127.0.0.1",
    target_port: int | None = None,
    *,
    extra_ports: tuple[int, ...] = (),
    log: Path | None = None,
    timeout: float = 15.0,
) -> ForwardHandle:
    """Make 127.0.0.1:`port` inside `netns` reach `target_host`:`target_port` (default: the
    same port) in the host namespace; `extra_ports` are forwarded to the same host unchanged.
    Returns once the listening sockets exist."""
    maps = [(port, target_host, target_port or port)] + [(p, target_host, p) for p in extra_ports]
    log = log or processes.short_dir("rtf") / "forward.log"
    rfd, wfd = os.pipe()
    pkg_root = str(Path(__file__).resolve().parents[1])  # devfleet is not installed
    env = processes.child_env()
    env["PYTHONPATH"] = pkg_root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    argv = [sys.executable, "-m", "devfleet.forward", "--netns", netns]
    for lp, host, tp in maps:
        argv += ["--map", f"{lp}:{host}:{tp}"]
    try:
        popen = processes.spawn([*argv, "--ready-fd", str(wfd)], log, env=env, pass_fds=[wfd])
    finally:
        os.close(wfd)
    handle = ForwardHandle(netns, maps, popen.pid, processes.start_time(popen.pid), log, popen)
    ledger.remember(handle, "forward")
    try:
        # The child writes "ready" once bound; EOF without it means it died.
        with os.fdopen(rfd, "rb") as ready:
            got = processes.wait_for(
                lambda: _read_ready(ready), timeout, f"forwarder in {netns}", interval=0.02
            )
        if got != b"ready\n":
            raise FleetError(f"forwarder in {netns} failed: {processes.log_tail(log)}")
    except BaseException:
        handle.stop(grace=2.0)
        raise
    return handle


def _read_ready(pipe: Any) -> bytes | None:
    """Non-blocking-ish read of the ready pipe: the line, b'eof' when closed, None to wait."""
    r, _, _ = select.select([pipe], [], [], 0.1)
    if not r:
        return None
    line: bytes = pipe.readline()
    return line or b"eof"


if __name__ == "__main__":
    raise SystemExit(main())
