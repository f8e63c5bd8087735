"""The fleet file's one error type and the validator every table's reader shares.

`ConfigError` is one line naming the file, the line and the key; `Validator` finds that line
for a key of a table (best effort: TOML parsers give values, not positions).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_HTTP_URL = re.compile(r"^https?://[^/\s]+")


def _without_userinfo(value: object) -> object:
    """A URL as it may be said in an error: `scheme://…@host` in place of any user or
    password (anything else unchanged)."""
    if isinstance(value, str):
        return re.sub(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s]*@", r"\1…@", value)
    return value


class ConfigError(Exception):
    """A fleet file that cannot be used. `str()` is one line naming file, line and key."""

    def __init__(
        self,
        message: str,
        path: Path | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.key = key
        where = str(path) if path else "<built-in default>"
        if line:
            where += f":{line}"
        super().__init__(f"{where}: {key + ': ' if key else ''}{message}")


class Validator:
    """Reads one fleet file's values, with errors that name its line (`line_of`)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str, table: str | None = None, index: int = 0) -> int | None:
        """Best-effort line of `key` inside `[table]` (the index-th `[[table]]`), else None."""
        current: str | None = None
        seen = -1
        key_re = re.compile(rf"^\s*(?:[\w\"-]+\.)*\"?{re.escape(key)}\"?\s*=")
        header_re = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?")
        for number, line in enumerate(self.lines, 1):
            header = header_re.match(line)
            if header:
                current = header.group(1)
                if current == table and line.lstrip().startswith("[["):
                    seen += 1
                elif current == table:
                    seen = 0
                continue
            if current == table and (table is None or seen == index) and key_re.match(line):
                return number
        if table is not None:  # the key is missing: point at the table's header
            seen = -1
            for number, line in enumerate(self.lines, 1):
                header = header_re.match(line)
                if header and header.group(1) == table:
                    seen += 1
                    if seen == index:
                        return number
        return None

    def fail(self, message: str, key: str, table: str | None = None, index: int = 0) -> ConfigError:
        """The error for `key` (dotted), at its line."""
        leaf = key.rsplit(".", 1)[-1]
        return ConfigError(message, self.path, self.line_of(leaf, table, index), key)

    def http_url(self, value: object, key: str, table: str | None = None) -> str:
        """An http:// or https:// URL with a host and no `user:pass@`: a URL's credentials
        would be shown on screen, written to records and put on the supervisor's command line
        (every user's `ps` sees it), so the file is refused here, and the error does not
        repeat what it refused."""
        if not isinstance(value, str) or not _HTTP_URL.match(value):
            raise self.fail(
                f"must be an http:// or https:// URL, not {_without_userinfo(value)!r}", key, table
            )
        if "@" in urllib.parse.urlsplit(value).netloc:
            raise self.fail(
                "must not hold a user or password (user:pass@): it would be shown and put on "
                f"command lines; log in with `docker login` instead ({_without_userinfo(value)})",
                key,
                table,
            )
        return value

    def number(
        self,
        data: Mapping[str, Any],
        key: str,
        default: float,
        minimum: float,
        maximum: float,
        table: str | None = None,
    ) -> float:
        """`data[key]` (else `default`), a number between `minimum` and `maximum`."""
        value = data.get(key, default)
        name = f"{table}.{key}" if table else key
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"must be a number, not {type(value).__name__}", name, table)
        if not minimum <= value <= maximum:
            raise self.fail(
                f"must be between {minimum:g} and {maximum:g}, not {value}", name, table
            )
        return float(value)

    def unknown(
        self,
        data: Mapping[str, Any],
        allowed: set[str],
        prefix: str,
        table: str | None = None,
        index: int = 0,
    ) -> None:
        """Refuse a key of `data` that is not `allowed`, naming the ones that are."""
        for key in data:
            if key not in allowed:
                hint = ", ".join(sorted(allowed))
                raise self.fail(
                    f"unknown key (expected one of: {hint})", prefix + key, table, index
                )
