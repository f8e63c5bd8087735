"""A node_exporter's /metrics text, read defensively into a `Reading`.

The Prometheus text exposition format is one sample a line: `name{label="value",...} value
[timestamp]`, `#` lines being help and type. The body comes from outside: only the families
the vitals use are kept (`WANTED`), a line that does not parse is skipped and counted, label
values are unescaped and sanitised (an exporter may put escape sequences in a mountpoint),
and the number of samples kept is capped. The size of the body and the time to fetch it are
the fetcher's (`exporter.py`) to bound.

node_exporter gives no per-process CPU, so the engine's tree is left to the ssh source and
named in `missing` when nothing else gives it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from rocmtui.core.text.sanitize import sanitize_line
from rocmtui.core.vitals.reading import Reading

WANTED = frozenset(
    {
        "node_cpu_seconds_total",
        "node_load1",
        "node_memory_MemTotal_bytes",
        "node_memory_MemAvailable_bytes",
        "node_memory_SwapTotal_bytes",
        "node_memory_SwapFree_bytes",
        "node_vmstat_pswpin",
        "node_vmstat_oom_kill",
        "node_pressure_cpu_waiting_seconds_total",
        "node_pressure_io_waiting_seconds_total",
        "node_pressure_io_stalled_seconds_total",
        "node_pressure_memory_waiting_seconds_total",
        "node_pressure_memory_stalled_seconds_total",
        "node_filesystem_avail_bytes",
        "node_filesystem_size_bytes",
    }
)
MAX_SAMPLES = 20_000  # kept samples: a host with 256 CPUs has ~2,000 cpu ones
MAX_LABEL = 256  # characters of a label value kept
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

Labels = dict[str, str]


class Samples:
    """The kept samples by family, and how many lines were skipped as garbage."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[tuple[Labels, float]]] = {}
        self.count = 0
        self.skipped = 0

    def values(self, name: str) -> list[tuple[Labels, float]]:
        """Every sample of `name` (empty when the exporter gave none)."""
        return self.by_name.get(name, [])

    def one(self, name: str) -> float | None:
        """The value of an unlabelled family's sample, or None."""
        found = self.by_name.get(name)
        return found[0][1] if found else None


def _unescape(value: str) -> str:
    return re.sub(r'\\[\\"n]', lambda m: _ESCAPES[m.group(0)], value)


def _sample(line: str) -> tuple[str, Labels, float] | None:
    """One sample line parsed, or None when it is not one."""
    m = _NAME.match(line)
    if m is None:
        return None
    name, rest = m.group(0), line[m.end() :]
    labels: Labels = {}
    if rest.startswith("{"):
        close = rest.find("}")
        body_end = len(rest)
        pos = 1
        while pos < body_end and rest[pos] != "}":
            lm = _LABEL.match(rest, pos)
            if lm is None:
                return None
            labels[lm.group(1)] = sanitize_line(_unescape(lm.group(2)), MAX_LABEL)
            pos = lm.end()
        if close < 0 or pos >= body_end:
            return None
        rest = rest[pos + 1 :]
    parts = rest.split()
    if not parts or len(parts) > 2:
        return None
    try:
        value = float(parts[0])
    except ValueError:
        return None
    if math.isnan(value):
        return None
    return name, labels, value


def parse(lines: Iterable[str], wanted: frozenset[str] = WANTED) -> Samples:
    """The samples of `wanted` families in exposition-format `lines` (never raises)."""
    out = Samples()
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _NAME.match(line)
        if m is None:
            out.skipped += 1
            continue
        if m.group(0) not in wanted:
            continue
        sample = _sample(line)
        if sample is None:
            out.skipped += 1
            continue
        if out.count >= MAX_SAMPLES:
            break
        name, labels, value = sample
        out.by_name.setdefault(name, []).append((labels, value))
        out.count += 1
    return out


def _int(value: float | None) -> int | None:
    return int(value) if value is not None and math.isfinite(value) and value >= 0 else None


def _filesystem(samples: Samples, data_root: str | None) -> tuple[int | None, int | None]:
    """(free, total) bytes of the mount that holds `data_root`: the longest mountpoint that is
    its prefix (the engine's data root on its own disk, else the root filesystem)."""
    if not data_root:
        return None, None
    best: tuple[int, str, str] | None = None  # (length, mountpoint, device)
    for labels, _ in samples.values("node_filesystem_size_bytes"):
        mount = labels.get("mountpoint", "")
        if not mount or not (data_root == mount or data_root.startswith(mount.rstrip("/") + "/")):
            continue
        if best is None or len(mount) > best[0]:
            best = (len(mount), mount, labels.get("device", ""))
    if best is None:
        return None, None

    def pick(name: str) -> int | None:
        for labels, value in samples.values(name):
            if labels.get("mountpoint") == best[1] and labels.get("device", "") == best[2]:
                return _int(value)
        return None

    return pick("node_filesystem_avail_bytes"), pick("node_filesystem_size_bytes")


def to_reading(samples: Samples, data_root: str | None) -> Reading:
    """A `Reading` of what node_exporter's samples say (see the module docstring)."""
    reading = Reading(data_root=data_root)
    cpus: set[str] = set()
    busy = total = 0.0
    for labels, value in samples.values("node_cpu_seconds_total"):
        if not math.isfinite(value):
            continue
        cpus.add(labels.get("cpu", ""))
        total += value
        if labels.get("mode") not in ("idle", "iowait"):
            busy += value
    if cpus:
        reading.cpu_count = len(cpus)
        reading.cpu_busy_seconds, reading.cpu_total_seconds = busy, total
    else:
        reading.missing.append("host cpu: node_exporter gave no node_cpu_seconds_total")
    reading.load1 = samples.one("node_load1")
    reading.mem_total_bytes = _int(samples.one("node_memory_MemTotal_bytes"))
    reading.mem_available_bytes = _int(samples.one("node_memory_MemAvailable_bytes"))
    reading.swap_total_bytes = _int(samples.one("node_memory_SwapTotal_bytes"))
    reading.swap_free_bytes = _int(samples.one("node_memory_SwapFree_bytes"))
    reading.swap_in_pages = _int(samples.one("node_vmstat_pswpin"))
    reading.oom_kills = _int(samples.one("node_vmstat_oom_kill"))
    reading.psi_cpu_some_seconds = samples.one("node_pressure_cpu_waiting_seconds_total")
    reading.psi_io_some_seconds = samples.one("node_pressure_io_waiting_seconds_total")
    reading.psi_io_full_seconds = samples.one("node_pressure_io_stalled_seconds_total")
    reading.psi_memory_some_seconds = samples.one("node_pressure_memory_waiting_seconds_total")
    reading.psi_memory_full_seconds = samples.one("node_pressure_memory_stalled_seconds_total")
    if reading.psi_cpu_some_seconds is None and reading.psi_io_some_seconds is None:
        reading.missing.append("psi: node_exporter has no node_pressure_* (no /proc/pressure?)")
    if reading.mem_total_bytes is None:
        reading.missing.append("memory: node_exporter gave no node_memory_MemTotal_bytes")
    free, size = _filesystem(samples, data_root)
    reading.data_root_free_bytes, reading.data_root_total_bytes = free, size
    if data_root and size is None:
        reading.missing.append(f"data root: node_exporter has no filesystem holding {data_root}")
    return reading
