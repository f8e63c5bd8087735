"""Pure parts of the console: formatting, state folding, the key catalog."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from rocmtui.console import keys
from rocmtui.console.backend.views import (
    LATENCY_FLOOR,
    effective_node_state,
    fmt_counter,
    keep_running,
    running_job_on,
    sparkline,
)
from rocmtui.console.outside_text import clean
from tests.support.snapshots import recorded


def test_sparkline_has_a_fixed_width() -> None:
    assert sparkline([], 8) == " " * 8
    line = sparkline([1, 2, 4, 8], 8)
    assert len(line) == 8 and line.endswith("█") and line.startswith("    ")


def test_latency_jitter_is_not_drawn_as_spikes() -> None:
    """6-10 ms answers stay near the bottom; a 0.5 s answer among them reaches the top."""
    steady = [0.008, 0.006, 0.010, 0.007, 0.009]
    assert set(sparkline(steady, 5, floor=LATENCY_FLOOR)) <= set("▁▂")
    assert sparkline([*steady, 0.5], 6, floor=LATENCY_FLOOR).endswith("▁█")
    assert "█" in sparkline(steady, 5)  # with no floor the largest jitter is full height


def test_counter_with_rate_and_eta() -> None:
    job = recorded.jobs()[0]
    assert fmt_counter(job.progress) == "[12345/23456] 11.4/s ETA 16m15s"
    assert fmt_counter(job.progress, running=False) == "[12345/23456]"  # ended: no stale ETA


def test_jobs_fold_into_node_states() -> None:
    fleet, jobs = recorded.fleet(), recorded.jobs(stalled=True)
    think = fleet.node("snoc-think")
    gaming = fleet.node("snoc-gaming")
    assert think is not None and gaming is not None
    assert effective_node_state(think, jobs) == "stalled"
    assert effective_node_state(gaming, jobs) == "ok"  # only finished jobs there
    down = replace(think, state="down")
    assert effective_node_state(down, jobs) == "down"  # a dead engine outranks its job
    assert running_job_on("snoc-think", jobs) is jobs[0]
    assert [j.record.id for j in keep_running(jobs)] == [jobs[0].record.id, jobs[1].record.id]


def test_outside_text_is_cleaned() -> None:
    assert clean("a\x1b]52;c;aGk=\x07b\x1bcc\u202ed[/]") == "abcd[/]"
    assert len(clean("x" * 10_000_000, 50)) == 50


def test_outside_text_has_one_sanitiser(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the sanitiser ever fail, no second filter stands in for it: one that drops only
    control characters keeps a sequence's tail (`]52;c;aGk=`) on screen."""
    from rocmtui.console import outside_text
    from rocmtui.core.jobs import evidence

    def broken(s: str, *args: object, **kw: object) -> str:
        raise RuntimeError("a sanitiser bug")

    monkeypatch.setattr(outside_text, "sanitize_line", broken)
    shown = clean("a\x1b]52;c;aGk=\x07b")
    assert "52;" not in shown and "aGk=" not in shown and "unreadable" in shown
    assert evidence._clean("x \x1b\x1c]52;c;aGk=\x07 y") == "x y"


def test_keymap_is_checked_against_the_catalog() -> None:
    good, bad = keys.check_keymap({"fleet.bake": "B", "nope": "x", "fleet.log": " "})
    assert good == {"fleet.bake": "B"}
    assert any("nope" in b for b in bad) and any("fleet.log" in b for b in bad)
    assert all(k.dangerous for k in keys.CATALOG if k.action in ("bake", "rebuild", "cancel_job"))
    ids = [k.id for k in keys.CATALOG]
    assert len(ids) == len(set(ids))
