"""The stall verdict: each kind from the evidence that decides it, and the window it reads."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from rocmtui.core.verdicts.judge import judge, span
from rocmtui.core.verdicts.verdict import (
    Reading,
    SilentBuild,
    Thresholds,
    Usual,
    VerdictKind,
)
from rocmtui.core.verdicts.window import VitalsWindow, spacing_for
from rocmtui.core.vitals.nodevitals import EngineProcess, NodeVitals

NOW = 1_800_000_000.0
SIZE_CLIP = "#8 12.031 [output clipped, log limit 2MiB reached]"  # dockerd 28.5.2's words
T = Thresholds(stall_after=900, stall_busy_after=3600)
GiB = 1024**3


def vit(at: float, **kw: object) -> NodeVitals:
    return NodeVitals(node="think", source=kw.pop("source", "ssh"), taken_at=at, **kw)  # type: ignore[arg-type]


def readings(silent: float, every: float, **kw: object) -> list[Reading]:
    """Readings every `every` seconds through a silence of `silent` seconds, each with `kw`."""
    out = []
    t = NOW - silent
    while t <= NOW:
        out.append(Reading(taken_at=t, vitals=vit(t, **kw)))
        t += every
    return out


def build(silent: float, **kw: object) -> SilentBuild:
    return SilentBuild(node="think", silent_seconds=silent, **kw)  # type: ignore[arg-type]


def test_busy_linker_is_quiet_not_stalled() -> None:
    busy = EngineProcess(name="ld.lld", cpu_percent=100.0)
    v = judge(build(22 * 60), readings(22 * 60, 30, engine_cpu_percent=104.0, busiest=busy), T, NOW)
    assert not v.stalled and v.kind is VerdictKind.BUSY
    assert v.line == "quiet 22m, ld.lld at 100% CPU (linking?)"


def test_clipped_output_and_many_cores() -> None:
    v = judge(
        build(2 * 3600 - 1, clipped_at="2MiB"),
        readings(3000, 60, engine_cpu_percent=1580.0),
        Thresholds(900, 4 * 3600),
        NOW,
    )
    assert not v.stalled and v.line == "quiet 1h59m, output clipped at 2MiB, 1580% CPU"


def test_idle_through_the_silence_is_stalled() -> None:
    v = judge(build(9 * 60), readings(9 * 60, 10, engine_cpu_percent=0.4), T, NOW)
    assert v.stalled and v.kind is VerdictKind.IDLE
    assert v.line == "idle: 0% CPU for 9m00s of silence"


def test_one_reading_says_so() -> None:
    one = [Reading(taken_at=NOW, vitals=vit(NOW, engine_cpu_percent=1.0))]
    v = judge(build(1000), one, T, NOW)
    assert v.kind is VerdictKind.IDLE and "at the one reading, silent 16m" in v.line


def test_cpu_that_just_fell_idle_is_given_a_moment() -> None:
    rs = readings(600, 10, engine_cpu_percent=300.0)
    rs[-2:] = [Reading(r.taken_at, vit(r.taken_at, engine_cpu_percent=2.0)) for r in rs[-2:]]
    v = judge(build(600), rs, T, NOW)
    assert not v.stalled and "CPU fell to 2%" in v.line


def test_busy_past_the_busy_threshold_stalls() -> None:
    v = judge(build(4200), readings(4200, 60, engine_cpu_percent=400.0), T, NOW)
    assert v.stalled and v.kind is VerdictKind.BUSY_TOO_LONG
    assert v.line.startswith("busy but silent 1h10m (400% CPU), past stall_busy_after_seconds")


def test_busy_past_its_usual_time_stalls() -> None:
    usual = Usual(p90_seconds=18 * 60, builds=12)
    v = judge(build(1900, usual=usual), readings(1900, 60, engine_cpu_percent=400.0), T, NOW)
    assert v.kind is VerdictKind.BUSY_TOO_LONG
    assert v.line == "busy but silent 31m; this build took at most 18m (p90) in 12 earlier builds"
    few = Usual(p90_seconds=60, builds=2)  # too few to go by
    v = judge(build(1900, usual=few), readings(1900, 60, engine_cpu_percent=400.0), T, NOW)
    assert v.kind is VerdictKind.BUSY


def test_io_wait() -> None:
    v = judge(
        build(1200), readings(1200, 60, engine_cpu_percent=1.0, psi_io_some_avg10=63.0), T, NOW
    )
    assert (
        v.stalled
        and v.kind is VerdictKind.IO
        and v.line.startswith("waiting on I/O: io pressure 63%")
    )


def test_oom_kill_since_start() -> None:
    rs = readings(1200, 60, engine_cpu_percent=200.0, oom_kills_total=4)
    v = judge(build(1200, oom_kills_at_start=3), rs, T, NOW)
    assert v.stalled and v.kind is VerdictKind.MEMORY
    assert v.line.startswith("memory: 1 OOM kill on think since the build began")
    assert judge(build(1200, oom_kills_at_start=4), rs, T, NOW).kind is VerdictKind.BUSY


def test_thrashing() -> None:
    rs = readings(1200, 60, engine_cpu_percent=200.0, swap_in_pages_per_second=5000.0)
    v = judge(build(1200), rs, T, NOW)
    assert v.kind is VerdictKind.MEMORY and "thrashing" in v.line


def test_full_data_root() -> None:
    rs = readings(
        1200,
        60,
        engine_cpu_percent=0.0,
        data_root="/var/lib/docker",
        data_root_free_bytes=4096,
        data_root_total_bytes=64 * 1024 * 1024,
    )
    v = judge(build(1200), rs, T, NOW)
    assert v.kind is VerdictKind.DISK
    assert v.line.startswith("disk: /var/lib/docker full (4.0K free of 64.0M)")
    roomy = readings(1200, 60, engine_cpu_percent=0.0, data_root_free_bytes=10 * GiB)
    assert judge(build(1200), roomy, T, NOW).kind is VerdictKind.IDLE


def test_link_down_since_the_silence_began() -> None:
    rs = [Reading(taken_at=NOW - s, unreachable="ssh: timed out") for s in (900, 600, 300, 0)]
    v = judge(build(1000), rs, T, NOW)
    assert v.stalled and v.kind is VerdictKind.LINK
    assert v.line == "link: think unreachable since the silence began 16m ago (ssh: timed out)"
    # reachable for part of the silence: the figures it gave decide
    rs[0] = Reading(taken_at=NOW - 900, vitals=vit(NOW - 900, engine_cpu_percent=0.0))
    assert judge(build(1000), rs, T, NOW).kind is VerdictKind.IDLE
    sup = judge(build(1000, link_down_since=NOW - 1000), [], T, NOW)
    assert sup.kind is VerdictKind.LINK


def test_no_evidence_says_what_the_node_told() -> None:
    rs = readings(
        600,
        60,
        source="engine",
        data_root_free_bytes=12 * GiB,
        missing=("engine cpu: the engine API gives none",),
    )
    v = judge(build(600), rs, T, NOW)
    assert v.stalled and v.kind is VerdictKind.NO_EVIDENCE
    assert v.line == (
        "no evidence from this node: silent 10m, no CPU figure (from engine; data root 12.0G "
        "free; engine cpu: the engine API gives none)"
    )
    assert "no vitals from any source" in judge(build(600), [], T, NOW).line


def test_host_cpu_when_the_engine_gives_none() -> None:
    v = judge(build(1000), readings(1000, 60, host_cpu_percent=300.0), T, NOW)
    assert not v.stalled and v.line == "quiet 16m, host 300% CPU (no engine figure)"


def test_readings_before_the_silence_do_not_count() -> None:
    rs = readings(3000, 60, engine_cpu_percent=500.0)  # busy long before
    rs = [r for r in rs if r.taken_at < NOW - 1000] + readings(900, 60, engine_cpu_percent=0.0)
    assert judge(build(1000), rs, T, NOW).kind is VerdictKind.IDLE


def test_span() -> None:
    assert [span(s) for s in (8, 65, 1320, 4200, 90000)] == ["8s", "1m05s", "22m", "1h10m", "1d01h"]


def test_window_is_bounded_and_keeps_the_latest() -> None:
    w = VitalsWindow(spacing=10, max_readings=4)
    for i in range(100):  # every 2 s: most replaced, the newest always kept
        w.add("n", Reading(taken_at=NOW + 2 * i, vitals=vit(NOW + 2 * i, oom_kills_total=i)))
    kept = w.readings("n")
    assert len(kept) <= 4 and kept[-1].taken_at == NOW + 198
    assert all(b.taken_at - a.taken_at >= 10 for a, b in pairwise(kept[:-1]))
    w.add("n", Reading(taken_at=NOW, vitals=None))  # older than the last: ignored
    assert w.readings("n")[-1].taken_at == NOW + 198
    assert spacing_for(8) == 1.0 and spacing_for(900) == 900 / 32 and spacing_for(86400) == 60


def test_window_oom_at_start() -> None:
    w = VitalsWindow(spacing=1)
    for i, count in enumerate((None, 2, 2, 3)):
        w.add("n", Reading(taken_at=NOW + 10 * i, vitals=vit(NOW + 10 * i, oom_kills_total=count)))
    assert w.oom_kills_at("n", NOW + 15) == 2
    assert w.oom_kills_at("n", NOW) == 2  # the first count after it
    assert w.oom_kills_at("n", NOW + 99) == 3
    assert w.oom_kills_at("other", NOW) is None
    w.forget_except({"other"})
    assert w.readings("n") == []


def test_the_judge_reads_rounds_and_the_build_log(tmp_path: Path) -> None:
    """StallJudge: each round's node snapshot kept, the log's clipping read (once per change),
    the OOM count at the build's start kept from the first window that reached back to it."""
    from rocmtui.core.config.fleetfile import parse_config
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.snapshots import NodeSnapshot
    from rocmtui.core.states import NodeState
    from rocmtui.core.verdicts.context import StallJudge

    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        "stall_after_seconds = 60\nstall_busy_after_seconds = 3600\n"
        '[[nodes]]\nname = "think"\ndocker_host = "ssh://ci@think"\n'
    )
    judge = StallJudge(parse_config(fleet), usual=lambda t, a, now: Usual(600.0, 5))
    for at, cpu, oom in ((NOW - 300, 500.0, 2), (NOW - 200, 480.0, 2), (NOW - 100, 510.0, 2)):
        vitals = vit(at, engine_cpu_percent=cpu, oom_kills_total=oom)
        snap = NodeSnapshot("think", None, "ssh://ci@think", NodeState.OK, at, vitals=vitals)
        judge.observe(snap)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "log").write_text("#8 [demo 2/2] RUN fake-compile\n" + SIZE_CLIP + "\n")
    record = JobRecord(
        id="20270115-0800-abcd", target="pytorch", arch="gfx1201", node="think", endpoint="",
        push=False, overrides={}, command=(), user="ci", host="h", bake_file="b",
        job_dir=str(job_dir), started_at=NOW - 400,
    )  # fmt: skip
    said = judge.verdict(record, 250, NOW)
    assert not said.stalled and said.line == "quiet 4m10s, output clipped at 2MiB, 510% CPU"
    # the node went down: the readings since the silence began say so
    for at in (NOW + 100, NOW + 200):
        down = NodeSnapshot("think", None, "ssh://", NodeState.DOWN, at, reason="ssh: timed out")
        judge.observe(down)
    assert judge.verdict(record, 650, NOW + 200).kind is VerdictKind.BUSY_TOO_LONG  # p90 600
    assert judge.verdict(record, 250, NOW + 200).kind is VerdictKind.LINK
    # an OOM kill after the start
    judge.observe(
        NodeSnapshot("think", None, "ssh://", NodeState.OK, NOW + 300,
                     vitals=vit(NOW + 300, engine_cpu_percent=0.0, oom_kills_total=3))
    )  # fmt: skip
    assert judge.verdict(record, 250, NOW + 300).kind is VerdictKind.MEMORY
    judge.forget_except(set())
