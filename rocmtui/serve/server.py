"""The web server: textual-serve's, with the gates a fleet console needs.

textual-serve serves any websocket that reaches it a new app process: no limit, no login, no
check of where the page came from, no end for a session nobody uses. `ConsoleServer` keeps its
page, its static files and its protocol, and decides before a console is started:
- every route: the Host must name this server (`limits.HostAllowlist`: DNS rebinding);
- the Origin of the websocket must be this server (`serveauth.origin_allowed`);
- with actions allowed, the browser must have logged in (a cookie from POST /login);
- a client's console starts are rate-limited (`limits.StartRate`, 429 past a burst);
- at most `max_sessions` consoles at once (503 past that);
and after: window sizes are clamped, a session with no key, click or resize for
`idle_timeout` seconds is closed, logging out closes that login's consoles, and a closed
websocket (the tab closed, the browser killed) ends its console's process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from msgspec import Struct
from textual_serve.server import Server, to_int

from rocmtui.core.serveauth import (
    COOKIE,
    ServeToken,
    SessionBook,
    origin_allowed,
    password_matches,
)
from rocmtui.core.text.sanitize import one_line
from rocmtui.serve.downloads import BoundedDownloads
from rocmtui.serve.limits import HostAllowlist, LimitedChecks, StartRate, clamp_size
from rocmtui.serve.pages import login_page, refusal_page
from rocmtui.serve.session import ConsoleSession
from rocmtui.serve.spares import SparePool

log = logging.getLogger("rocmtui.serve")
TEMPLATES = Path(__file__).resolve().parent / "templates"
FAILED_LOGIN_DELAY = 1.0  # seconds: a guesser gets one try a second per connection


class ServeSettings(Struct, frozen=True):
    """What `rocmtui serve` was told."""

    argv: list[str]  # the console each session runs
    env: dict[str, str]  # added to the server's own environment
    allow_actions: bool
    max_sessions: int
    idle_timeout: float  # seconds; 0: never
    tls: bool
    title: str = "rocmtui"
    users: dict[str, str] = {}  # the fleet file's [serve] users: name -> scrypt hash
    spares: int = 1  # consoles kept started for the next browser (rocmtui/serve/spares.py)
    bind: str = "127.0.0.1"  # the --listen address: a Host the server answers to
    allowed_hosts: list[str] = []  # --allow-host: more names it answers to


class ConsoleServer(Server):
    """textual-serve's server with origin, login, session-limit and idle gates."""

    def __init__(self, settings: ServeSettings, token: ServeToken | None) -> None:
        super().__init__(" ".join(settings.argv), title=settings.title, templates_path=TEMPLATES)
        self.settings = settings
        self.token = token
        self.download_manager = BoundedDownloads()  # deliveries nobody fetches are dropped
        self.book = SessionBook()
        self.sessions: dict[int, ConsoleSession] = {}
        self.reserved = 0  # sessions admitted whose console is still starting
        self.refused = 0
        self._numbers = itertools.count(1)
        self.spares = SparePool(settings.spares, self._new_session)
        self.hosts = HostAllowlist(settings.bind, settings.allowed_hosts)
        self.starts = StartRate()
        self.checks = LimitedChecks()
        self.sockets: dict[int, tuple[str | None, web.WebSocketResponse]] = {}  # n -> login

    def _new_session(self) -> ConsoleSession:
        """A console not yet given a websocket (its writes go nowhere until then)."""

        async def nowhere(_data: object = None) -> None:
            return None

        return ConsoleSession(
            self.settings.argv,
            self.settings.env,
            write_bytes=nowhere,
            write_str=nowhere,
            close=nowhere,
            download_manager=self.download_manager,
        )

    @property
    def scheme(self) -> str:
        return "https" if self.settings.tls else "http"

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self.host_gate])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/login", self.handle_login_form, name="login"),
                web.post("/login", self.handle_login, name="login_post"),
                web.post("/logout", self.handle_logout, name="logout"),
                web.get("/ws", self.handle_console_socket, name="websocket"),
                web.get("/download/{key}", self.handle_delivery, name="download"),
                web.static("/static", self.statics_path, name="static"),
            ]
        )
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    @web.middleware
    async def host_gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Every route: refuse a Host this server does not answer to (421)."""
        if not self.hosts.allows(request.headers.get("Host")):
            host = one_line(request.headers.get("Host", "(none)"))[:100]
            log.warning("request for host %s refused (from %s)", host, request.remote)
            return web.Response(status=421, text="this server does not answer to that name")
        response: web.StreamResponse = await handler(request)
        return response

    def logged_in(self, request: web.Request) -> bool:
        """True when actions are off (nobody needs to log in) or the cookie is this run's."""
        return not self.settings.allow_actions or self.book.valid(request.cookies.get(COOKIE))

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The console's page; with actions allowed and no login, the login form."""
        if not self.logged_in(request):
            raise web.HTTPSeeOther("/login")
        ws_scheme = "wss" if self.settings.tls else "ws"
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            # from the Host the browser used: through an ssh tunnel it is not our bind address
            "app_websocket_url": f"{ws_scheme}://{request.host}/ws",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        return response

    async def handle_delivery(self, request: web.Request) -> web.StreamResponse:
        """A file a console delivered (the palette's Screenshot), fetched by its page: only by
        a logged-in browser when actions are allowed (the key is random, one fetch each)."""
        if not self.logged_in(request):
            raise web.HTTPUnauthorized(text="log in first")
        return await self.handle_download(request)

    async def handle_login_form(self, request: web.Request) -> web.Response:
        if not self.settings.allow_actions:
            raise web.HTTPSeeOther("/")
        page = login_page(socket.gethostname(), users=bool(self.settings.users))
        return web.Response(text=page, content_type="text/html")

    async def handle_login(self, request: web.Request) -> web.Response:
        """POST /login with `token` in the body: a session cookie, or the form again."""
        if not self.settings.allow_actions or self.token is None:
            raise web.HTTPSeeOther("/")
        origin = request.headers.get("Origin")
        if origin is not None and not origin_allowed(origin, request.host, self.scheme):
            log.warning("login refused: a page of %s posted it", origin[:100])
            raise web.HTTPForbidden(text="a login from a page of another site is refused")
        form = await request.post()
        given, user = form.get("token"), form.get("user")
        who = await self._who(given, user)
        if who is None:
            log.warning("login refused from %s: wrong token or password", request.remote)
            await asyncio.sleep(FAILED_LOGIN_DELAY)
            said = "That is not the token this server printed" + (
                ", nor that user's password." if self.settings.users else "."
            )
            page = login_page(socket.gethostname(), said, users=bool(self.settings.users))
            return web.Response(status=401, text=page, content_type="text/html")
        log.info("login from %s: %s", request.remote, who)
        response = web.HTTPSeeOther("/")
        response.set_cookie(
            COOKIE,
            self.book.open(),
            httponly=True,
            samesite="Strict",
            secure=self.settings.tls,
            path="/",
        )
        raise response

    async def _who(self, given: object, user: object) -> str | None:
        """Who logged in ("the token", or the user's name), or None."""
        if not isinstance(given, str) or not given:
            return None
        if isinstance(user, str) and user.strip():
            stored = self.settings.users.get(user.strip())
            if stored is None:
                return None
            # scrypt takes tens of ms: off the loop, so other sessions keep their keys
            good = await self.checks.run(password_matches, given, stored)
            return f"user {user.strip()}" if good else None
        assert self.token is not None
        return "the token" if self.token.matches(given) else None

    async def handle_logout(self, request: web.Request) -> web.Response:
        """Forget the login and close its open consoles."""
        cookie = request.cookies.get(COOKIE)
        if cookie and self.book.valid(cookie):
            mine = [ws for login, ws in self.sockets.values() if login == cookie]
            await asyncio.gather(*(ws.close(message=b"logged out") for ws in mine))
        self.book.close(cookie)
        response = web.HTTPSeeOther("/login" if self.settings.allow_actions else "/")
        response.del_cookie(COOKIE, path="/")
        raise response

    def refuse(self, request: web.Request, status: int, why: str) -> web.Response:
        """Say no before any console starts (logged: who, and why)."""
        self.refused += 1
        log.warning("websocket refused (%d) from %s: %s", status, request.remote, why)
        return web.Response(status=status, text=refusal_page("rocmtui: refused", why))

    async def handle_console_socket(self, request: web.Request) -> web.StreamResponse:
        """A browser session: the gates, then a console of its own until either side ends."""
        if not origin_allowed(request.headers.get("Origin"), request.host, self.scheme):
            return self.refuse(request, 403, "the websocket does not come from this server's page")
        if not self.logged_in(request):
            return self.refuse(request, 401, "log in first (actions are allowed on this server)")
        if not self.starts.allow(request.remote):
            why = f"too many console starts from {request.remote}"
            count = self.starts.worth_saying(request.remote)
            if count is None:  # said lately: counted, not logged again
                self.refused += 1
                return web.Response(status=429, text=refusal_page("rocmtui: refused", why))
            return self.refuse(request, 429, f"{why} ({count} refused since the last line)")
        if len(self.sessions) + self.reserved >= self.settings.max_sessions:
            why = f"{self.settings.max_sessions} consoles are open: the server's limit"
            return self.refuse(request, 503, why)
        self.reserved += 1  # before any await: twenty at once cannot all pass the check
        number = next(self._numbers)
        websocket = web.WebSocketResponse(heartbeat=15)
        session: ConsoleSession | None = None
        idle: asyncio.Task[None] | None = None
        try:
            await websocket.prepare(request)
            self.sockets[number] = (request.cookies.get(COOKIE), websocket)
            width, height = clamp_size(request.query.get("width"), request.query.get("height"))
            session = self.spares.take()
            if session is not None:
                await session.adopt(websocket, width, height)
            else:
                session = self._new_session()
                await session.prestart(width, height)
                await session.adopt(websocket, width, height)
            self.sessions[number] = session
            self.reserved -= 1
            log.info("session %d opened: console pid %s", number, session.pid)
            if self.settings.idle_timeout > 0:
                idle = asyncio.create_task(self._close_when_idle(websocket, session, number))
            await self._process_messages(websocket, session)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # a broken browser never takes the server down
            log.warning("session %d: %s: %s", number, type(error).__name__, error)
        finally:
            if number not in self.sessions:
                self.reserved -= 1
            if idle is not None:
                idle.cancel()
            if session is not None:
                await session.stop()
            self.sessions.pop(number, None)
            self.sockets.pop(number, None)
            log.info("session %d closed (%d open)", number, len(self.sessions))
        return websocket

    async def _close_when_idle(
        self, websocket: web.WebSocketResponse, session: ConsoleSession, number: int
    ) -> None:
        timeout = self.settings.idle_timeout
        while True:
            left = session.last_input + timeout - time.monotonic()
            if left <= 0:
                log.info("session %d idle for %.0f s: closed", number, timeout)
                await websocket.close(message=b"idle")
                return
            await asyncio.sleep(left)

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: Any) -> None:
        session: ConsoleSession = app_service
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            with contextlib.suppress(ValueError, TypeError, KeyError, IndexError):
                envelope = message.json()
                kind, data = envelope[0], envelope[1]
                if kind == "stdin" and isinstance(data, str):
                    session.touched()
                    await session.send_bytes(data.encode("utf-8"))
                elif kind == "resize" and isinstance(data, dict):
                    session.touched()
                    await session.set_terminal_size(*clamp_size(data["width"], data["height"]))
                elif kind == "ping":  # the page's own keep-alive: not a sign of a person
                    await websocket.send_json(["pong", data])
                elif kind == "blur":
                    await session.blur()
                elif kind == "focus":
                    session.touched()
                    await session.focus()

    async def on_startup(self, app: web.Application) -> None:
        """The first spare console starts with the server."""
        self.spares.fill()

    async def on_shutdown(self, app: web.Application) -> None:
        """Every console ends with the server."""
        await self.spares.close()
        await asyncio.gather(*(s.stop() for s in list(self.sessions.values())))

    def pids(self) -> Mapping[int, int | None]:
        """Session number -> console pid (for the log and the tests' orphan check)."""
        return {number: s.pid for number, s in self.sessions.items()}


def console_argv(python: str, config: Path | None, read_only: bool) -> Sequence[str]:
    """The console a session runs: this rocmtui, the same fleet file, read-only unless asked."""
    argv = [python, "-P", "-m", "rocmtui"]  # -P: never a rocmtui/ folder in the working folder
    if config is not None:
        argv += ["--config", str(config)]
    if read_only:
        argv.append("--read-only")  # refused in the core (jobs.refusals), as `rocmtui --read-only`
    return argv
