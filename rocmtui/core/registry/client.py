"""An async client for one registry: manifests (HEAD and GET), blobs and tag lists.

Designed against HAZARDS.md ("HTTP", "Speed traps"):
- one `httpx.AsyncClient` per registry host, never one shared by every host (a shared pool's
  bookkeeping stalled the event loop), with at most `concurrency` requests in flight;
- every request finishes within `min(timeout, deadline)` in total, whatever the server does
  (a server dripping one byte every 0.5 s held a `timeout=2` request for 20 s), and the body is
  capped;
- redirects are not followed, proxies and .netrc from the environment are not used, and no
  credential is ever sent: a 401 or 403 is a state (`auth`) with the challenge as its reason;
- the media types asked for are all four modern kinds, and the kind answered is kept.

Answers are values, never exceptions: each says found, not found, no repository, auth, error,
unreachable or timeout, with a one-line reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
import urllib.parse
from enum import StrEnum

import httpx
from msgspec import Struct

from rocmtui.core.probes._http import _no_sniffio, describe_http_error
from rocmtui.core.registry.media import ACCEPT_ALL, normal_type
from rocmtui.core.registry.refs import DIGEST_RE
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

MAX_MANIFEST = 4 << 20  # the distribution spec's own cap on a manifest
MAX_CONFIG = 8 << 20
MAX_TAGS_PAGE = 4 << 20
TAGS_PAGE = 1000
MAX_TAG_PAGES = 100
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?', re.IGNORECASE)
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')


class Lookup(StrEnum):
    """What one registry question came to."""

    FOUND = "found"
    NOT_FOUND = "not found"  # the tag (or, for a HEAD, perhaps the repository) is not there
    NO_REPOSITORY = "no repository"
    AUTH = "auth"  # 401/403: credentials needed (rocmtui sends none)
    ERROR = "error"  # an answer, but not a usable one (5xx, 429, an odd status, a bad body)
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"


class ManifestAnswer(Struct, frozen=True):
    """A manifest HEAD or GET: the digest and kind the registry holds under that reference."""

    state: Lookup
    digest: str | None = None
    media_type: str | None = None
    size: int | None = None
    reason: str | None = None
    body: bytes | None = None  # GET only


class TagList(Struct, frozen=True):
    """A repository's tags, through every page (`complete` False when the pages were cut)."""

    state: Lookup
    tags: tuple[str, ...] = ()
    complete: bool = True
    pages: int = 0
    reason: str | None = None


class _Answer(Struct, frozen=True):
    status: int
    headers: dict[str, str]
    body: bytes


class _Failed(Exception):
    def __init__(self, state: Lookup, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


def challenge_reason(status: int, header: str | None) -> str:
    """A 401/403 as one line: which kind of credentials, and from where a token would come."""
    if status == 403:
        return "access denied (HTTP 403)"
    if not header:
        return "credentials required (HTTP 401, no challenge)"
    scheme = header.strip().split(" ", 1)[0].lower()
    params = dict(_CHALLENGE_PARAM.findall(header))
    if scheme == "bearer":
        realm = params.get("realm", "")
        where = urllib.parse.urlsplit(realm).netloc or realm or "an unnamed realm"
        scope = f", scope {params['scope']}" if params.get("scope") else ""
        return one_line(f"bearer token required (from {where}{scope}); rocmtui sends none")
    if scheme == "basic":
        return "basic credentials required; rocmtui sends none"
    return one_line(f"credentials required ({scheme or 'unknown'} challenge)")


def _error_code(body: bytes) -> str | None:
    """The first `errors[].code` of a distribution error body."""
    try:
        data = json.loads(body)
        return str(data["errors"][0]["code"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


class RegistryClient:
    """Questions to one registry (`base_url`: scheme, host and port), answered as values."""

    def __init__(self, base_url: str, *, concurrency: int = 8, timeout: float = 5.0) -> None:
        self.base = base_url.rstrip("/")
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.requests = 0  # how many requests were sent (figures and tests read it)
        self._client: httpx.AsyncClient | None = None
        self._gate: asyncio.Semaphore | None = None

    async def __aenter__(self) -> RegistryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            _no_sniffio()
            self._client = httpx.AsyncClient(
                verify=self.base.startswith("https://"),
                follow_redirects=False,
                trust_env=False,
                timeout=httpx.Timeout(self.timeout),
                limits=httpx.Limits(
                    max_connections=self.concurrency, max_keepalive_connections=self.concurrency
                ),
                headers={"User-Agent": "rocmtui-matrix"},
            )
        return self._client

    async def _send(
        self, method: str, path: str, deadline_at: float, accept: str | None, cap: int
    ) -> _Answer:
        """One request under min(timeout, deadline), its body capped; raises _Failed."""
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.concurrency)
        left = deadline_at - time.monotonic()
        if left <= 0:
            raise _Failed(Lookup.TIMEOUT, "no time left before the deadline")
        try:
            await asyncio.wait_for(self._gate.acquire(), left)
        except TimeoutError:
            raise _Failed(Lookup.TIMEOUT, "no free connection before the deadline") from None
        try:
            budget = min(self.timeout, deadline_at - time.monotonic())
            if budget <= 0:
                raise _Failed(Lookup.TIMEOUT, "no time left before the deadline")
            self.requests += 1
            try:
                return await asyncio.wait_for(self._go(method, path, accept, cap), budget)
            except TimeoutError:
                raise _Failed(
                    Lookup.TIMEOUT, f"no complete answer in {fmt_seconds(budget)}"
                ) from None
            except _Failed:
                raise
            except Exception as exc:
                raise _Failed(Lookup.UNREACHABLE, describe_http_error(exc, budget)) from None
        finally:
            self._gate.release()

    async def _go(self, method: str, path: str, accept: str | None, cap: int) -> _Answer:
        headers = {"Accept": accept} if accept else {}
        async with self._http().stream(method, self.base + path, headers=headers) as response:
            body = bytearray()
            # read to the end even for a HEAD (nothing comes): httpcore keeps a connection
            # only once it has seen the response end, else every request opened a new one
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > cap:
                    raise _Failed(Lookup.ERROR, f"answer larger than {cap} bytes")
            return _Answer(
                response.status_code,
                {k.lower(): v for k, v in response.headers.items()},
                bytes(body),
            )

    @staticmethod
    def _refused(answer: _Answer, what: str) -> _Failed:
        """A status other than 200, as a state and a reason."""
        status = answer.status
        if status in (401, 403):
            return _Failed(
                Lookup.AUTH, challenge_reason(status, answer.headers.get("www-authenticate"))
            )
        code = _error_code(answer.body) if answer.body else None
        if status == 404:
            if code == "NAME_UNKNOWN":
                return _Failed(Lookup.NO_REPOSITORY, "repository not in the registry")
            return _Failed(Lookup.NOT_FOUND, f"{what} not in the registry")
        where = answer.headers.get("location")
        said = f"HTTP {status}" + (f" {code}" if code else "") + (f" to {where}" if where else "")
        return _Failed(Lookup.ERROR, one_line(f"registry answered {said}"))

    async def manifest(
        self, repository: str, reference: str, deadline_at: float, *, method: str = "HEAD"
    ) -> ManifestAnswer:
        """HEAD (or GET) a manifest by tag or digest, naming all four kinds in Accept.

        A HEAD answer without `Docker-Content-Digest` is asked again with GET, and the digest
        computed from the body (the body is what the digest is of)."""
        path = f"/v2/{repository}/manifests/{reference}"
        try:
            answer = await self._send(method, path, deadline_at, ACCEPT_ALL, MAX_MANIFEST)
            if answer.status != 200:
                raise self._refused(
                    answer, "tag" if not reference.startswith("sha256:") else "manifest"
                )
            digest = answer.headers.get("docker-content-digest", "").strip().lower()
            if method == "HEAD" and not DIGEST_RE.match(digest):
                return await self.manifest(repository, reference, deadline_at, method="GET")
            if method == "GET":
                computed = "sha256:" + hashlib.sha256(answer.body).hexdigest()
                if digest and DIGEST_RE.match(digest) and digest != computed:
                    raise _Failed(Lookup.ERROR, f"body digest {computed[:19]} is not {digest[:19]}")
                digest = computed
            length = answer.headers.get("content-length", "")
            return ManifestAnswer(
                state=Lookup.FOUND,
                digest=digest,
                media_type=normal_type(answer.headers.get("content-type")),
                size=int(length) if length.isdigit() else (len(answer.body) or None),
                body=answer.body if method == "GET" else None,
            )
        except _Failed as failed:
            return ManifestAnswer(state=failed.state, reason=failed.reason)

    async def blob(self, repository: str, digest: str, deadline_at: float) -> bytes:
        """A (config) blob's bytes, checked against its digest; raises LookupFailed."""
        try:
            answer = await self._send(
                "GET", f"/v2/{repository}/blobs/{digest}", deadline_at, None, MAX_CONFIG
            )
        except _Failed as failed:
            raise LookupFailed(failed.state, failed.reason) from None
        if answer.status != 200:
            refused = self._refused(answer, "blob")
            raise LookupFailed(refused.state, refused.reason)
        if "sha256:" + hashlib.sha256(answer.body).hexdigest() != digest:
            raise LookupFailed(Lookup.ERROR, f"blob {digest[:19]} does not match its digest")
        return answer.body

    async def tags(
        self,
        repository: str,
        deadline_at: float,
        *,
        page: int = TAGS_PAGE,
        max_pages: int = MAX_TAG_PAGES,
    ) -> TagList:
        """Every tag of `repository`, following `Link: <...>; rel="next"` (the `n` and `last`
        parameters) page after page; a cut list says so (`complete` False) with why."""
        path = f"/v2/{repository}/tags/list?n={page}"
        tags: list[str] = []
        pages = 0
        while path:
            if pages >= max_pages:
                return TagList(
                    Lookup.FOUND, tuple(tags), False, pages, f"stopped after {pages} pages"
                )
            try:
                answer = await self._send("GET", path, deadline_at, None, MAX_TAGS_PAGE)
                if answer.status != 200:
                    raise self._refused(answer, "repository")
            except _Failed as failed:
                if pages and failed.state in (Lookup.TIMEOUT, Lookup.UNREACHABLE):
                    return TagList(Lookup.FOUND, tuple(tags), False, pages, failed.reason)
                state = Lookup.NO_REPOSITORY if failed.state == Lookup.NOT_FOUND else failed.state
                return TagList(state, tuple(tags), False, pages, failed.reason)
            pages += 1
            try:
                data = json.loads(answer.body)
                listed = data.get("tags") or []
            except (ValueError, AttributeError):
                return TagList(Lookup.ERROR, tuple(tags), False, pages, "tag list is not JSON")
            tags.extend(t for t in listed if isinstance(t, str))
            path = self._next_page(answer.headers.get("link"), path)
        return TagList(Lookup.FOUND, tuple(tags), True, pages)

    def _next_page(self, link: str | None, current: str) -> str:
        """The next page's path from a Link header ("" when there is none); only on this
        registry's own origin, and never the page just read (a loop)."""
        m = _LINK_NEXT.search(link or "")
        if m is None:
            return ""
        target = urllib.parse.urljoin(self.base + current, m.group(1))
        here = urllib.parse.urlsplit(self.base)
        there = urllib.parse.urlsplit(target)
        if (there.scheme, there.netloc) != (here.scheme, here.netloc):
            return ""
        following = there.path + (f"?{there.query}" if there.query else "")
        return "" if following == current else following


class LookupFailed(Exception):
    """A blob could not be read; `state` and `reason` as in the answers."""

    def __init__(self, state: Lookup, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason
