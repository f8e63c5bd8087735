"""The newest upstream release of each pin, from the sources the fleet file names.

Two API shapes, at base URLs the fleet file gives (`[upstream]`: a mirror or proxy may serve
them; no host is built in):
- a PyPI JSON API: `GET {pypi}/{package}/json`, whose `releases` maps each version to its files
  (a version whose files are all yanked is left out; one with no files too);
- a GitHub releases API: `GET {github}/repos/{owner}/{repo}/releases` (drafts left out; the
  version is read from the tag: `v0.1.7`, `rocm-7.2.2`).

Versions are ordered with `packaging.version` (never as text: "2.10" > "2.9"), and pre-releases
(`rc`, `a`, `b`, `dev`, or marked so on GitHub) are told apart: the newest final release is the
answer, the newest pre-release beyond it is shown beside it.

Every request has a deadline; answers are kept under the state folder with their age and reused
while younger than `max_age_seconds`. An upstream that cannot be reached is a state
(`offline`), shown with the age of the last answer kept; one that answers something else than
the API (HTML from a captive portal, a 404, a 500) is `error`, with why.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx
from msgspec import Struct, field
from packaging.version import InvalidVersion, Version

from rocmtui.core.config.tables import UpstreamConfig, UpstreamPin
from rocmtui.core.probes._http import describe_http_error, origin
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

MAX_BODY = 64 << 20  # a PyPI JSON answer for a big project runs to megabytes
KEEP_RELEASES = 40
_VERSION_IN_TAG = re.compile(
    r"(\d+(?:\.\d+)*(?:[.-]?(?:a|b|rc|alpha|beta|pre|preview|dev|post)\.?\d*)*)", re.IGNORECASE
)


class UpstreamError(Exception):
    """An answer that is not the API's; `offline` when nothing answered at all."""

    def __init__(self, reason: str, offline: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offline = offline


class Release(Struct, frozen=True):
    """One upstream release."""

    version: str
    prerelease: bool


class UpstreamAnswer(Struct, frozen=True):
    """What upstream says of one pin: its state, newest final and pre-release, the answer's age."""

    variable: str
    source: str | None = None  # pypi / github (None: not configured)
    name: str | None = None
    state: str = "not configured"  # ok, offline, error, not configured
    newest: str | None = None
    newest_pre: str | None = None  # a pre-release newer than `newest`
    age: float | None = None  # seconds since the answer shown was fetched
    reason: str | None = None
    releases: tuple[Release, ...] = field(default_factory=tuple)


def parse_version(text: str | None) -> Any | None:
    """A `packaging` Version from a pin or a tag (`v0.1.7`, `rocm-7.2.2`), or None."""
    if not text:
        return None
    for candidate in (text.strip(), *(m.group(1) for m in _VERSION_IN_TAG.finditer(text))):
        try:
            return Version(candidate.lstrip("vV"))
        except InvalidVersion:
            continue
    return None


def pypi_releases(data: Any) -> list[Release]:
    """Releases from a PyPI JSON answer (`releases`: version -> files)."""
    if not isinstance(data, dict) or not isinstance(data.get("releases"), dict):
        raise UpstreamError("answer has no `releases` object: not a PyPI JSON API")
    out = []
    for version, files in data["releases"].items():
        if not isinstance(files, list) or not files:
            continue
        if all(isinstance(f, dict) and f.get("yanked") for f in files):
            continue
        parsed = parse_version(str(version))
        if parsed is not None:
            out.append(Release(str(parsed), bool(parsed.is_prerelease)))
    return out


def github_releases(data: Any) -> list[Release]:
    """Releases from a GitHub releases answer (a list of releases)."""
    if not isinstance(data, list):
        raise UpstreamError("answer is not a list of releases: not a GitHub releases API")
    out = []
    for item in data:
        if not isinstance(item, dict) or item.get("draft"):
            continue
        parsed = parse_version(str(item.get("tag_name") or item.get("name") or ""))
        if parsed is not None:
            out.append(
                Release(str(parsed), bool(item.get("prerelease")) or bool(parsed.is_prerelease))
            )
    return out


def newest(releases: list[Release]) -> tuple[str | None, str | None]:
    """(newest final release, newest pre-release newer than it)."""
    finals = sorted((Version(r.version) for r in releases if not r.prerelease), reverse=True)
    pres = sorted((Version(r.version) for r in releases if r.prerelease), reverse=True)
    final = finals[0] if finals else None
    pre = next((p for p in pres if final is None or p > final), None)
    return (str(final) if final else None, str(pre) if pre else None)


async def _get_json(client: Any, url: str, timeout: float) -> Any:
    """GET `url` within `timeout` in all; the parsed JSON, or UpstreamError with why not."""

    async def go() -> tuple[int, str, bytes]:
        async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_BODY:
                    raise UpstreamError(f"answer larger than {MAX_BODY >> 20} MB")
            return response.status_code, response.headers.get("content-type", ""), bytes(body)

    try:
        status, kind, body = await asyncio.wait_for(go(), timeout)
    except TimeoutError:
        raise UpstreamError(f"no complete answer in {fmt_seconds(timeout)}", offline=True) from None
    except UpstreamError:
        raise
    except (httpx.HTTPError, OSError) as exc:
        raise UpstreamError(describe_http_error(exc, timeout), offline=True) from None
    if status != 200:
        raise UpstreamError(f"HTTP {status}")
    if "html" in kind.lower() or body.lstrip()[:1] == b"<":
        raise UpstreamError("answered HTML, not JSON (a login page or proxy in the way?)")
    try:
        return json.loads(body)
    except ValueError:
        raise UpstreamError("answer is not JSON") from None


def _url(config: UpstreamConfig, pin: UpstreamPin) -> str:
    base = config.base_for(pin.source) or ""
    if pin.source == "pypi":
        return f"{base}/{pin.name}/json"
    return f"{base}/repos/{pin.name}/releases?per_page=100"


async def _fetch(
    config: UpstreamConfig, pin: UpstreamPin, clients: dict[str, Any]
) -> list[Release]:
    url = _url(config, pin)
    key = origin(url)
    if key not in clients:  # one client per upstream host
        clients[key] = httpx.AsyncClient(
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(config.timeout_seconds),
            limits=httpx.Limits(max_connections=4),  # a few at a time: upstream is shared
            headers={"User-Agent": "rocmtui-versions"},
        )
    data = await _get_json(clients[key], url, config.timeout_seconds)
    return pypi_releases(data) if pin.source == "pypi" else github_releases(data)


def _answer(
    variable: str,
    pin: UpstreamPin,
    releases: list[Release],
    state: str,
    age: float | None,
    reason: str | None,
) -> UpstreamAnswer:
    final, pre = newest(releases)
    return UpstreamAnswer(
        variable, pin.source, pin.name, state, final, pre, age, reason, tuple(releases)
    )


async def ask_upstream(
    config: UpstreamConfig,
    variables: list[str],
    cache: Any | None,
    *,
    now: float | None = None,
    fresh: bool = False,
) -> dict[str, UpstreamAnswer]:
    """Each variable's answer: from `cache` (a JsonCache) while young, else asked now (all at
    once, each under the timeout); a failed ask falls back to the kept answer and says so."""
    now = time.time() if now is None else now
    out: dict[str, UpstreamAnswer] = {}
    todo: list[tuple[str, UpstreamPin, Any]] = []
    for variable in variables:
        pin = config.pins.get(variable)
        if pin is None or not config.base_for(pin.source):
            out[variable] = UpstreamAnswer(variable)
            continue
        key = f"upstream:{_url(config, pin)}"
        kept = cache.get(key, now) if cache is not None else None
        if kept is not None and not fresh and kept[1] < config.max_age_seconds:
            out[variable] = _answer(variable, pin, _releases(kept[0]), "ok", kept[1], None)
        else:
            todo.append((variable, pin, kept))
    clients: dict[str, Any] = {}
    try:
        results = await asyncio.gather(
            *(_fetch(config, pin, clients) for _, pin, _ in todo), return_exceptions=True
        )
    finally:
        for client in clients.values():
            await client.aclose()
    for (variable, pin, kept), result in zip(todo, results, strict=True):
        if isinstance(result, list):
            trimmed = _trim(result)
            if cache is not None:
                cache.put(
                    f"upstream:{_url(config, pin)}", [[r.version, r.prerelease] for r in trimmed]
                )
            out[variable] = _answer(variable, pin, trimmed, "ok", 0.0, None)
            continue
        offline = isinstance(result, UpstreamError) and result.offline
        why = (
            result.reason
            if isinstance(result, UpstreamError)
            else f"{type(result).__name__}: {result}"
        )
        state = "offline" if offline else "error"
        reason = one_line(
            f"{'upstream unreachable' if offline else 'upstream answered wrong'}: {why}"
        )
        if kept is not None:
            out[variable] = _answer(variable, pin, _releases(kept[0]), state, kept[1], reason)
        else:
            out[variable] = UpstreamAnswer(variable, pin.source, pin.name, state, reason=reason)
    return out


def _trim(releases: list[Release]) -> list[Release]:
    """The newest releases only (what is kept and shown)."""
    return sorted(releases, key=lambda r: Version(r.version), reverse=True)[:KEEP_RELEASES]


def _releases(kept: Any) -> list[Release]:
    if not isinstance(kept, list):
        return []
    return [
        Release(str(v), bool(p))
        for v, p in (x for x in kept if isinstance(x, list) and len(x) == 2)
    ]


def compare(pinned: str | None, answer: UpstreamAnswer) -> str:
    """`newest`, `behind` (a newer final release exists), `ahead` (pinned past it, e.g. a
    pre-release) or `unknown`."""
    mine, theirs = parse_version(pinned), parse_version(answer.newest)
    if mine is None or theirs is None:
        return "unknown"
    if mine == theirs:
        return "newest"
    return "behind" if mine < theirs else "ahead"


def registry_pins(
    labels: Mapping[str, Mapping[str, str]], prefix: str
) -> dict[str, dict[str, int]]:
    """Pin label values across images (`image -> labels`): variable -> value -> count."""
    out: dict[str, dict[str, int]] = {}
    for image_labels in labels.values():
        for key, value in image_labels.items():
            if key.startswith(prefix):
                counts = out.setdefault(key[len(prefix) :], {})
                counts[value] = counts.get(value, 0) + 1
    return out
