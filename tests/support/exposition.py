"""The monitor's metrics read back as Prometheus reads them: one recorded round's figures, every
sample of an exposition parsed with prometheus-client's own text parser, one sample looked up
by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from rocmtui.core.hostmonitor.metrics import MonitorFigures
from tests.support.snapshots import recorded

FIGURES = MonitorFigures(rounds=7, failed_rounds=0, started_at=recorded.NOW - 60)


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample as (name, sorted labels) -> value."""
    out = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))
