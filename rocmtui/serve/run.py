"""Run `rocmtui serve`: the host's monitor (started if none), the token, the listening socket.

Every console a browser opens attaches to the host's `rocmtui monitor` for the fleet file, so
eight viewers cost the engines what one does. When none runs, the server starts one
(`--no-metrics`) as its own child and stops it when it stops; one that was already running
(the systemd unit's) is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor.place import MonitorPlace
from rocmtui.core.paths import state_dir
from rocmtui.core.serveauth import Listen, ServeToken, tunnel_hint
from rocmtui.serve.server import ConsoleServer, ServeSettings
from rocmtui.serve.session import dying_with_server

log = logging.getLogger("rocmtui.serve")
MONITOR_START_DEADLINE = 20.0  # seconds for a monitor child to hold its lock
# an idle keep-alive connection is closed after this (aiohttp's default keeps it an hour: a
# few thousand idle connections would hold the server's sockets and memory)
KEEPALIVE_SECONDS = 10.0


class ServeError(RuntimeError):
    """The server cannot start (the text says why, naming the file or address)."""


class MonitorChild:
    """A `rocmtui monitor --no-metrics` the server started because none ran."""

    def __init__(self, config: FleetConfig) -> None:
        self.place = MonitorPlace.for_config(config)
        self.process: subprocess.Popen[bytes] | None = None
        if self.place.running():
            return
        argv = [sys.executable, "-P", "-m", "rocmtui"]
        if config.source is not None:
            argv += ["--config", str(config.source)]
        self.process = subprocess.Popen(
            [*argv, "monitor", "--no-metrics"],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=dying_with_server(signal.SIGTERM),  # it releases its lock and socket
        )
        deadline = time.monotonic() + MONITOR_START_DEADLINE
        while not self.place.socket.exists() or not self.place.running():
            if self.process.poll() is not None:
                raise ServeError(f"the monitor it started exited ({self.process.returncode})")
            if time.monotonic() > deadline:
                self.stop()
                raise ServeError(f"no monitor socket at {self.place.socket} after 20 s")
            time.sleep(0.05)  # waiting on another process's socket: no event to wait on

    def describe(self) -> str:
        if self.process is None:
            holder = self.place.holder()
            pid = f" (pid {holder.pid})" if holder is not None and holder.pid else ""
            return f"consoles attach to the host's monitor{pid}"
        return f"consoles attach to a monitor started for them (pid {self.process.pid})"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server context from the certificate and key files (ServeError naming them)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ServeError(f"--tls-cert {cert} / --tls-key {key}: {exc}") from exc
    return context


def serve(
    config: FleetConfig,
    settings: ServeSettings,
    listen: Listen,
    tls: ssl.SSLContext | None,
    say: Callable[[str], None],
) -> None:
    """Serve until SIGTERM or SIGINT."""
    monitor = MonitorChild(config)
    token = None
    try:
        if settings.allow_actions:
            token = ServeToken.create(state_dir(config))
        asyncio.run(_serve(settings, token, listen, tls, say, monitor.describe()))
    finally:
        if token is not None:
            token.remove()
        monitor.stop()


async def _serve(
    settings: ServeSettings,
    token: ServeToken | None,
    listen: Listen,
    tls: ssl.SSLContext | None,
    say: Callable[[str], None],
    monitor_line: str,
) -> None:
    server = ConsoleServer(settings, token)
    app = await server._make_app()
    runner = web.AppRunner(
        app, handle_signals=False, access_log=log, keepalive_timeout=KEEPALIVE_SECONDS
    )
    await runner.setup()
    site = web.TCPSite(runner, listen.host, listen.port, ssl_context=tls)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise ServeError(f"--listen {listen.host}:{listen.port}: {exc.strerror or exc}") from exc
    port = listen.port or _bound_port(site)
    bound = Listen(listen.host, port)
    host = f"[{bound.host}]" if ":" in bound.host else bound.host
    mode = "actions allowed after login" if settings.allow_actions else "read-only"
    idle = f"idle sessions close after {settings.idle_timeout:g} s" if settings.idle_timeout else ""
    say(
        f"rocmtui serve: {server.scheme}://{host}:{port}/ ({mode}; at most "
        f"{settings.max_sessions} sessions{'; ' + idle if idle else ''}; {monitor_line})"
    )
    if bound.loopback:
        say(tunnel_hint(bound, socket.gethostname()))
    if token is not None and sys.stdout.isatty():
        say(f"login token (also in {token.path}, mode 0600): {token.value}")
    elif token is not None:  # under systemd this is the journal, which others read
        say(f"login token: in {token.path} (mode 0600; not printed: output is no terminal)")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        say("rocmtui serve: stopping; every console ends")
        with contextlib.suppress(Exception):
            await runner.cleanup()  # on_shutdown ends every console's process group


def _bound_port(site: web.TCPSite) -> int:
    server = site._server
    sockets = getattr(server, "sockets", None) or []
    return int(sockets[0].getsockname()[1]) if sockets else 0
