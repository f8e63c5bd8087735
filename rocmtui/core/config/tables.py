"""The fleet file's tables: `[variables]`, `[matrix]`, `[upstream]` (and `[webdav] path`) for
what the fleet has published, `[serve]` users for the browser console; typed and validated with
the same one-line errors as the rest of the file (`validate.Validator` locates the line).

```toml
[variables]                         # bake variables this fleet sets; the environment still wins
REGISTRY = "127.0.0.1:5000"

[matrix]
refresh_seconds = 300               # the console asks the registry this often (and on demand)
deadline_seconds = 30               # one fill of the whole matrix never takes longer
concurrency = 8                     # requests in flight to one registry

[upstream]                          # where `rocmtui versions` finds the newest releases
pypi = "https://pypi.example/pypi"  # PyPI's JSON API: GET {pypi}/{package}/json
github = "https://api.github.example"  # GitHub's releases API: GET {github}/repos/{repo}/releases
timeout_seconds = 5
max_age_seconds = 21600             # an answer younger than this is reused

[upstream.pins]                     # variable = "pypi:PACKAGE" or "github:OWNER/REPO"
PYTORCH_VERSION = "pypi:torch"
ROCM_VERSION = "github:ROCm/ROCm"
```

No upstream host is built in: with no `[upstream]`, `rocmtui versions` says upstream is not
configured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from rocmtui.core.config.validate import ConfigError

if TYPE_CHECKING:
    from rocmtui.core.config.validate import Validator

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PIN = re.compile(r"^(pypi):([A-Za-z0-9][A-Za-z0-9._-]*)$|^(github):([\w.-]+/[\w.-]+)$")
SOURCES = ("pypi", "github")


class UpstreamPin(Struct, frozen=True):
    """Where one pinned variable's releases are listed."""

    source: str  # "pypi" or "github"
    name: str  # the package, or OWNER/REPO


class UpstreamConfig(Struct, frozen=True):
    """`[upstream]`: API base URLs and which package or repository each pin follows."""

    pypi: str | None = None
    github: str | None = None
    pins: Mapping[str, UpstreamPin] = field(default_factory=dict)
    timeout_seconds: float = 5.0
    max_age_seconds: float = 6 * 3600.0

    @property
    def configured(self) -> bool:
        """Whether any pin can be asked about at all."""
        return bool(self.pins) and bool(self.pypi or self.github)

    def base_for(self, source: str) -> str | None:
        """The API base URL of `source`."""
        return self.pypi if source == "pypi" else self.github if source == "github" else None


class MatrixConfig(Struct, frozen=True):
    """`[matrix]`: how often and how hard the registry is asked."""

    refresh_seconds: float = 300.0
    deadline_seconds: float = 30.0
    concurrency: int = 8


def variables(v: Validator, data: Mapping[str, Any]) -> dict[str, str]:
    """`[variables]`: NAME = "value" strings."""
    table = data.get("variables", {})
    if not isinstance(table, dict):
        raise v.fail('must be a table of NAME = "value"', "variables")
    out: dict[str, str] = {}
    for name, value in table.items():
        if not _NAME.match(name):
            raise v.fail("not a bake variable name", f"variables.{name}", "variables")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise v.fail("must be a string or a number", f"variables.{name}", "variables")
        out[name] = value if isinstance(value, str) else str(value)
    return out


def matrix(v: Validator, data: Mapping[str, Any]) -> MatrixConfig:
    """`[matrix]`."""
    table = data.get("matrix", {})
    if not isinstance(table, dict):
        raise v.fail("must be a table", "matrix")
    v.unknown(table, {"refresh_seconds", "deadline_seconds", "concurrency"}, "matrix.", "matrix")
    concurrency = v.number(table, "concurrency", 8, 1, 64, "matrix")
    if concurrency != int(concurrency):
        raise v.fail("must be a whole number", "matrix.concurrency", "matrix")
    return MatrixConfig(
        refresh_seconds=v.number(table, "refresh_seconds", 300, 10, 86400, "matrix"),
        deadline_seconds=v.number(table, "deadline_seconds", 30, 1, 600, "matrix"),
        concurrency=int(concurrency),
    )


def upstream(v: Validator, data: Mapping[str, Any]) -> UpstreamConfig:
    """`[upstream]` and `[upstream.pins]`."""
    table = data.get("upstream", {})
    if not isinstance(table, dict):
        raise v.fail("must be a table", "upstream")
    v.unknown(
        table,
        {"pypi", "github", "pins", "timeout_seconds", "max_age_seconds"},
        "upstream.",
        "upstream",
    )
    urls: dict[str, str | None] = {}
    for source in SOURCES:
        url = table.get(source)
        if url is not None:
            url = v.http_url(url, f"upstream.{source}", "upstream")
        urls[source] = url.rstrip("/") if isinstance(url, str) else None
    raw = table.get("pins", {})
    if not isinstance(raw, dict):
        raise v.fail(
            'must be a table of VARIABLE = "pypi:NAME" or "github:OWNER/REPO"', "upstream.pins"
        )
    pins: dict[str, UpstreamPin] = {}
    for name, value in raw.items():
        key = f"upstream.pins.{name}"
        m = _PIN.match(value) if isinstance(value, str) else None
        if m is None or not _NAME.match(name):
            raise v.fail(
                f'must be "pypi:PACKAGE" or "github:OWNER/REPO", not {value!r}',
                key,
                "upstream.pins",
            )
        source = m.group(1) or m.group(3)
        if urls[source] is None:
            raise v.fail(f"names {source} but [upstream] has no {source} URL", key, "upstream.pins")
        pins[name] = UpstreamPin(source=source, name=m.group(2) or m.group(4))
    return UpstreamConfig(
        pypi=urls["pypi"],
        github=urls["github"],
        pins=pins,
        timeout_seconds=v.number(table, "timeout_seconds", 5, 0.2, 120, "upstream"),
        max_age_seconds=v.number(table, "max_age_seconds", 6 * 3600, 0, 30 * 86400, "upstream"),
    )


#: a `[serve]` user's stored password: `rocmtui serve --hash-password` writes it (serveauth
#: checks it); here only its shape, so that reading the fleet file imports no hashing
SCRYPT_HASH = re.compile(r"^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$")
_SERVE_USER = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def serve_users(v: Validator, data: Mapping[str, Any]) -> dict[str, str]:
    """The fleet file's `[serve]` table: `users = { NAME = "scrypt$..." }` (never a password
    in clear: an entry that is not a hash is an error naming its line)."""
    table = data.get("serve", {})
    if not isinstance(table, dict):
        raise v.fail("must be a table", "serve")
    v.unknown(table, {"users"}, "serve.", "serve")
    users = table.get("users", {})
    if not isinstance(users, dict):
        raise v.fail('must be a table of NAME = "scrypt$..." hashes', "serve.users", "serve")
    # `[serve.users]` lines name each user; an inline `users = { ... }` is one line
    own_table = any(re.match(r"^\s*\[\s*serve\.users\s*\]", line) for line in v.lines)

    def fail(message: str, name: str) -> Exception:
        if own_table:
            return v.fail(message, f"serve.users.{name}", "serve.users")
        return ConfigError(message, v.path, v.line_of("users", "serve"), f"serve.users.{name}")

    out: dict[str, str] = {}
    for name, stored in users.items():
        if not _SERVE_USER.match(name):
            raise fail("not a user name (letters, digits, . _ -)", name)
        if not isinstance(stored, str) or SCRYPT_HASH.match(stored) is None:
            raise fail(
                "must be a scrypt hash from `rocmtui serve --hash-password`, never a password",
                name,
            )
        out[name] = stored
    return out
