"""The rules `rocmtui serve` keeps, with no web library: where it may listen, who may act.

- A bind address is loopback unless told otherwise; a non-loopback bind needs TLS or an
  explicit `--insecure` (`bind_problem`).
- `--allow-actions` needs a login: a token made at start (`ServeToken`), kept in the state
  folder with mode 0600 and printed once; never a default password. The browser sends it in a
  form body (POST), never in a URL, and gets back a session cookie (`SessionBook`).
- Or the fleet file's `[serve]` users, each with a scrypt hash (`rocmtui serve
  --hash-password` makes one): `[serve] users = { alice = "scrypt$16384$8$1$SALT$HASH" }`.
- A websocket is accepted only from a page of this server (`origin_allowed`): a page of any
  other site the operator has open cannot drive the console through the operator's browser.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import secrets
import time
from pathlib import Path

from msgspec import Struct

from rocmtui.core.config.tables import SCRYPT_HASH as _HASH

DEFAULT_LISTEN = "127.0.0.1:8765"
TOKEN_FILE = "serve-token"
COOKIE = "rocmtui_session"


class ListenError(ValueError):
    """A `--listen` value that is not HOST:PORT."""


class Listen(Struct, frozen=True):
    """Where the server binds."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """True for 127.0.0.0/8, ::1 and `localhost`."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a host name: it may resolve anywhere


def parse_listen(text: str) -> Listen:
    """`HOST:PORT` or `[V6]:PORT` (ListenError naming the value when it is neither)."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ListenError(f"--listen {text!r}: expected HOST:PORT (e.g. {DEFAULT_LISTEN})")
    return Listen(host, int(port))


def bind_problem(listen: Listen, tls: bool, insecure: bool) -> str | None:
    """Why the server must not listen there, or None."""
    if listen.loopback or tls or insecure:
        return None
    return (
        f"--listen {listen.host}:{listen.port} is not a loopback address: the console would be "
        "served in clear text to the network. Give --tls-cert and --tls-key, or say --insecure "
        f"on purpose; or keep the default ({DEFAULT_LISTEN}) and use an ssh tunnel"
    )


def tunnel_hint(listen: Listen, hostname: str) -> str:
    """One line: how to reach a loopback server from another machine."""
    port = listen.port
    return (
        f"from another machine: ssh -L {port}:localhost:{port} {hostname}, "
        f"then open http://localhost:{port}/"
    )


def origin_allowed(origin: str | None, host: str | None, scheme: str) -> bool:
    """True when a websocket's Origin is this server as the browser reached it (`Host`)."""
    if not origin or not host:
        return False
    return hmac.compare_digest(origin.lower().rstrip("/"), f"{scheme}://{host}".lower())


class ServeToken:
    """The login token of one `serve` run, in `<state>/serve-token` (0600, replaced each run)."""

    def __init__(self, value: str, path: Path) -> None:
        self.value = value
        self.path = path

    @classmethod
    def create(cls, folder: Path) -> ServeToken:
        """A fresh token written where only its owner reads it (OSError naming the file)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / TOKEN_FILE
        value = secrets.token_urlsafe(32)
        temp = folder / f".{TOKEN_FILE}.{os.getpid()}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, (value + "\n").encode())
        finally:
            os.close(fd)
        os.replace(temp, path)
        return cls(value, path)

    def matches(self, given: str) -> bool:
        """Constant-time comparison (a wrong guess learns nothing from the time taken)."""
        return hmac.compare_digest(given.strip().encode(), self.value.encode())

    def remove(self) -> None:
        """Forget it when the server stops: a stale token opens nothing."""
        try:
            if self.path.read_text().strip() == self.value:
                self.path.unlink()
        except OSError:
            pass


class SessionBook:
    """Logged-in browsers: random cookie values held in memory only (a restart logs all out)."""

    def __init__(self, lifetime: float = 12 * 3600.0) -> None:
        self.lifetime = lifetime
        self._expiry: dict[str, float] = {}

    def open(self, now: float | None = None) -> str:
        """A new session's cookie value."""
        now = time.monotonic() if now is None else now
        self._expiry = {k: v for k, v in self._expiry.items() if v > now}
        value = secrets.token_urlsafe(32)
        self._expiry[value] = now + self.lifetime
        return value

    def valid(self, value: str | None, now: float | None = None) -> bool:
        """True for a cookie this run handed out that has not expired."""
        if not value:
            return False
        expiry = self._expiry.get(value)
        return expiry is not None and expiry > (time.monotonic() if now is None else now)

    def close(self, value: str | None) -> None:
        """Log a browser out."""
        if value:
            self._expiry.pop(value, None)


# scrypt at n=2**14, r=8, p=1: ~16 MB and ~50 ms a check here; a stolen fleet file's hash costs
# a guesser as much per try
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


def hash_password(password: str, salt: bytes | None = None) -> str:
    """The `[serve]` users entry for `password` (a new random salt each time)."""
    salt = secrets.token_bytes(16) if salt is None else salt
    digest = hashlib.scrypt(
        password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32
    )
    b64 = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def password_matches(password: str, stored: str) -> bool:
    """True when `password` hashes to `stored` (False for a malformed entry)."""
    found = _HASH.match(stored)
    if found is None:
        return False
    n, r, p = (int(found.group(i)) for i in (1, 2, 3))
    if n > 2**20 or r > 32 or p > 16:  # a hostile entry must not take the server's memory
        return False
    salt, want = base64.b64decode(found.group(4)), base64.b64decode(found.group(5))
    try:
        got = hashlib.scrypt(
            password.encode(), salt=salt, n=n, r=r, p=p, dklen=len(want), maxmem=2**26
        )
    except ValueError:
        return False
    return hmac.compare_digest(got, want)
