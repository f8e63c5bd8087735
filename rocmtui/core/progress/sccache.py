"""sccache's statistics, read from a build log: did the build hit the cache?

A build step that compiles through sccache ends with `sccache --show-stats`, printed as text or
as one line of JSON (`--stats-format=json`). Both forms are read exactly as Debian's sccache 0.4
prints them (tests/data/sccache holds real recordings, cold and warm). In a BuildKit log every
line carries its step (`#12 3.456 Compile requests   5`): each step's last statistics count
(a server counts from its start, so a later report includes an earlier one) and the steps add up
(each RUN starts its own server).

Only the statistics are parsed; nothing in the log decides a job's status.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Struct

_PREFIX = re.compile(r"^#(\d+) (?:\d+\.\d+ )?")
_COUNT = re.compile(r"^(?P<name>[A-Z][A-Za-z/+()\- ]*?)\s+(?P<value>\d+)$")
_LOCATION = re.compile(r"^Cache location\s+(?P<value>\S.*)$")
_TEXT_START = "Compile requests"
_JSON_START = '{"stats":'
_NEEDLES = (_TEXT_START.encode(), _JSON_START.encode())
CHUNK = 8 << 20
BLOCK_LINES = 40  # a text report is ~23 lines; past this, a block has ended


class CacheStats(Struct, frozen=True):
    """One build's compile cache statistics (summed over its steps)."""

    requests: int  # compile requests
    executed: int  # compile requests executed (cache hits or misses)
    hits: int
    misses: int
    errors: int = 0
    location: str | None = None  # `Local disk: "/root/.cache/sccache"`
    reports: int = 1  # how many statistics reports were added up

    @property
    def rate(self) -> float | None:
        """Hits per looked-up compile (0..1), None when nothing was looked up."""
        total = self.hits + self.misses
        return self.hits / total if total else None

    @property
    def backend(self) -> str | None:
        """The storage sccache reports: `Local disk`, `Redis`, `webdav` ..."""
        if not self.location:
            return None
        return re.split(r"[:,]", self.location, maxsplit=1)[0].strip() or None

    def describe(self) -> str:
        """`sccache 30/40 hits (75%), Local disk`."""
        rate = self.rate
        text = f"sccache {self.hits}/{self.hits + self.misses} hits"
        text += f" ({rate * 100:.0f}%)" if rate is not None else ""
        return text + (f", {self.backend}" if self.backend else "")

    def __add__(self, other: CacheStats) -> CacheStats:
        return CacheStats(
            requests=self.requests + other.requests,
            executed=self.executed + other.executed,
            hits=self.hits + other.hits,
            misses=self.misses + other.misses,
            errors=self.errors + other.errors,
            location=self.location or other.location,
            reports=self.reports + other.reports,
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what a job folder's sccache.json holds): the fields with the
        computed rate and backend, in `CacheStatsView`'s order."""
        rate = self.rate
        view = CacheStatsView(
            requests=self.requests,
            executed=self.executed,
            hits=self.hits,
            misses=self.misses,
            errors=self.errors,
            rate=None if rate is None else round(rate, 4),
            backend=self.backend,
            location=self.location,
            reports=self.reports,
        )
        data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(view))
        return data

    @classmethod
    def from_json(cls, data: Any) -> CacheStats:
        """Read back `to_json` (its computed fields are ignored); ValueError on anything else."""
        try:
            return msgspec.convert(data, cls, strict=False)
        except (msgspec.ValidationError, TypeError) as exc:
            raise ValueError(f"not cache statistics: {exc}") from None


class CacheStatsView(Struct, frozen=True, kw_only=True):
    """`CacheStats` as printed: the computed `rate` (0..1, 4 places) and `backend` stand
    between the counts and the location, where readers of sccache.json have always found
    them."""

    requests: int
    executed: int
    hits: int
    misses: int
    errors: int
    rate: float | None
    backend: str | None
    location: str | None
    reports: int


def _counts(value: Any) -> int:
    """`{"counts": {"C/C++": 2}}` (or a bare number) as one total."""
    if isinstance(value, int):
        return value
    counts = value.get("counts") if isinstance(value, dict) else None
    if isinstance(counts, dict):
        return sum(v for v in counts.values() if isinstance(v, int))
    return 0


def parse_json_stats(text: str) -> CacheStats | None:
    """The `--stats-format=json` line; None when it is not one."""
    try:
        data = json.loads(text)
        stats = data["stats"]
        requests = stats["compile_requests"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(requests, int):
        return None
    location = data.get("cache_location")
    return CacheStats(
        requests=requests,
        executed=_counts(stats.get("requests_executed", 0)),
        hits=_counts(stats.get("cache_hits")),
        misses=_counts(stats.get("cache_misses")),
        errors=_counts(stats.get("cache_errors")),
        location=location if isinstance(location, str) else None,
    )


def parse_text_stats(lines: Iterable[str]) -> CacheStats | None:
    """A text report (`Compile requests  5` ...), its lines without any log prefix."""
    values: dict[str, int] = {}
    location = None
    for line in lines:
        line = line.rstrip()
        m = _COUNT.match(line)
        if m:
            values.setdefault(m.group("name").strip(), int(m.group("value")))
            continue
        loc = _LOCATION.match(line)
        if loc:
            location = loc.group("value").strip()
    if _TEXT_START not in values or "Cache hits" not in values or "Cache misses" not in values:
        return None
    return CacheStats(
        requests=values[_TEXT_START],
        executed=values.get(
            "Compile requests executed", values["Cache hits"] + values["Cache misses"]
        ),
        hits=values["Cache hits"],
        misses=values["Cache misses"],
        errors=values.get("Cache errors", 0),
        location=location,
    )


class StatsScanner:
    """Fed a log's lines in order; `result()` is the build's statistics (None: no report).

    BuildKit interleaves the lines of steps that run at once, so a report being read is kept
    per step until it ends (its last line, a blank line, or `BLOCK_LINES` lines)."""

    def __init__(self) -> None:
        self._by_step: dict[str, CacheStats] = {}  # step -> its last report
        self._loose: list[CacheStats] = []  # reports with no BuildKit step
        self._open: dict[str | None, list[str]] = {}  # step -> the report being read

    def feed(self, line: str) -> None:
        """One line of the log (its BuildKit prefix, if any, is read and dropped)."""
        m = _PREFIX.match(line)
        step = m.group(1) if m else None
        text = (line[m.end() :] if m else line).rstrip("\r\n")
        block = self._open.get(step)
        if block is not None:
            if not text.strip() or len(block) >= BLOCK_LINES:
                self._close(step)
            else:
                block.append(text)
                if text.startswith("Max cache size"):
                    self._close(step)
                return
        if text.startswith(_JSON_START):
            stats = parse_json_stats(text)
            if stats is not None:
                self._keep(step, stats)
        elif text.startswith(_TEXT_START) and not text.startswith(_TEXT_START + " executed"):
            self._open[step] = [text]

    def _close(self, step: str | None) -> None:
        stats = parse_text_stats(self._open.pop(step, []))
        if stats is not None:
            self._keep(step, stats)

    def _keep(self, step: str | None, stats: CacheStats) -> None:
        if step is None:
            self._loose.append(stats)
        else:
            self._by_step[step] = stats

    def result(self) -> CacheStats | None:
        """The steps' last reports added up (and reports outside any step)."""
        for step in list(self._open):
            self._close(step)
        reports = [*self._by_step.values(), *self._loose]
        if not reports:
            return None
        total = reports[0]
        for more in reports[1:]:
            total = total + more
        return total


def _candidate_lines(path: Path) -> Iterator[str]:
    """The log's lines near a statistics report, read in big chunks and searched as bytes: a
    PyTorch log runs to hundreds of MB, and only a few KB of it are statistics."""
    with open(path, "rb") as fh:
        carry = b""
        while True:
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            whole, carry = data[:cut], data[cut:]
            if any(n in whole for n in _NEEDLES) or b"Max cache size" in whole:
                yield from whole.decode("utf-8", "replace").splitlines()
        if carry:
            yield carry.decode("utf-8", "replace")


def scan_log(path: Path) -> CacheStats | None:
    """The statistics of a whole build log (None: no report, or no log)."""
    scanner = StatsScanner()
    try:
        for line in _candidate_lines(path):
            scanner.feed(line)
    except OSError:
        return None
    return scanner.result()
