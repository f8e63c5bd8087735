"""The JSON shapes of job records, fleet snapshots and build steps, held byte for byte (issue
40): a job record as `rocmtui jobs --json`, `status --json`'s `builds` and `bake --json` print
it and as each job folder's record.json holds it; a fleet snapshot (with a node's vitals) as
`status --json` prints it and the monitor's wire carries it; `history show --json`'s steps and
`history diff --json`. The expected files were written by the hand-written encoders these
shapes came from; an encoder by the library must print the same bytes, and read back what it
printed (a malformed one is a clear error naming the field).
"""

from __future__ import annotations

import json
from pathlib import Path

from msgspec.structs import replace

from rocmtui.core.history.buildfacts import BuildFacts
from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.history.stepdiff import diff_builds, step_key
from rocmtui.core.history.stepgraph import Step
from rocmtui.core.history.stepreport import StepReport
from rocmtui.core.history.stepviews import diff_json, steps_json
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.views import record_json
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.snapshotviews import snapshot_json
from rocmtui.core.states import JobState
from rocmtui.core.vitals.nodevitals import EngineProcess, NodeVitals, VitalsCounters
from tests.support.snapshots import recorded
from tests.support.timeline import recorded_steps

DATA = Path(__file__).resolve().parents[1] / "data" / "json_shapes"
T0 = 1_765_000_000.0


def sample_records() -> list[JobRecord]:
    """A build started elsewhere with every field set, and a bare one left running."""
    outside = OutsideBuild(
        ref="qk3x",
        builder_ref="default/default/qk3x",
        name="bake/rocm-bake (pytorch)",
        target="pytorch",
        platforms=("linux/amd64",),
        build_args={"ROCM_VERSION": "7.2.2", "HF_TOKEN": "<redacted:HF_TOKEN>"},
        vcs_revision="abc123",
        vcs_source="https://example.invalid/rocm-bake.git",
        context=".",
        status="error",
        total_steps=31,
        completed_steps=20,
        cached_steps=7,
        error='process "/bin/sh -c make" did not complete',
        client="20261206-0001-ab12",
        duration=812.25,
        pushes=True,
        inspected=True,
        follow_note="the engine is gone",
        seen_at=T0 + 900.5,
    )
    full = JobRecord(
        id="20261206-0002-cd34",
        target="pytorch",
        arch="gfx1201",
        node="snoc-think",
        endpoint="ssh://ci@snoc-think",
        push=True,
        overrides={"ROCM_VERSION": "7.2.2", "HF_TOKEN": "<redacted:HF_TOKEN>"},
        command=("ROCM_VERSION=7.2.2", "docker", "buildx", "bake", "pytorch"),
        user="op",
        host="snoc-strix",
        bake_file="bake/rocm-bake.hcl",
        job_dir="jobs/20261206-0002-cd34",
        started_at=T0,
        state=JobState.FAILED,
        ended_at=T0 + 812.5,
        supervisor_pid=4242,
        supervisor_start=99,
        bake_pid=4243,
        bake_start=100,
        exit_code=1,
        digest="sha256:" + "c" * 64,
        error_step="[final 3/3] RUN make",
        message="bake exited 1",
        evidence="silent 16m; engine busy 180% CPU",
        evidence_at=T0 + 800.0,
        cancel_requested_at=T0 + 810.0,
        link_down_since=T0 + 700.0,
        buildkit_ref="qk3x",
        outside=outside,
        allowed=("network.host", "security.insecure"),
        verdict="busy",
        verdict_line="quiet: engine busy 180% CPU",
    )
    bare = JobRecord(
        id="20261206-0003-ef56",
        target="demo-base",
        arch="",
        node="snoc-strix",
        endpoint="unix:///run/docker.sock",
        push=False,
        overrides={},
        command=(),
        user="op",
        host="snoc-strix",
        bake_file="bake/demo.hcl",
        job_dir="jobs/20261206-0003-ef56",
        started_at=T0 + 1000.0,
        outside=OutsideBuild(ref="zz9"),
    )
    plain = replace(bare, id="20261206-0004-0000", outside=None)
    return [full, bare, plain]


def printed_records(records: list[JobRecord]) -> str:
    """As `rocmtui jobs --json` prints the records' own fields."""
    return json.dumps([record_json(r) for r in records], indent=2) + "\n"


def stored_record(record: JobRecord) -> str:
    """As a job folder's record.json holds it (`store.write_json_atomic`)."""
    return json.dumps(record_json(record), indent=2, sort_keys=True) + "\n"


def test_job_records_print_byte_for_byte_what_they_did() -> None:
    records = sample_records()
    assert printed_records(records) == (DATA / "records.json").read_text(encoding="utf-8")
    assert stored_record(records[0]) == (DATA / "record-stored.json").read_text(encoding="utf-8")


def sample_snapshot() -> FleetSnapshot:
    """The recorded fleet, one node down, one with every vitals figure and one with few."""
    snap = recorded.fleet(think_down=True)
    full = NodeVitals(
        node="snoc-strix",
        source="local",
        taken_at=recorded.NOW - 1.25,
        cpu_count=32,
        host_cpu_percent=812.5,
        engine_cpu_percent=180.25,
        engine_processes=14,
        busiest=EngineProcess("cc1plus", 98.5),
        load1=9.1,
        mem_used_percent=41.0,
        mem_total_bytes=128 << 30,
        swap_used_percent=0.5,
        swap_in_pages_per_second=0.0,
        psi_cpu_some_avg10=12.5,
        psi_io_some_avg10=1.25,
        psi_io_full_avg10=0.5,
        psi_memory_some_avg10=0.0,
        psi_memory_full_avg10=0.0,
        data_root="/var/lib/docker",
        data_root_free_bytes=300 << 30,
        data_root_total_bytes=900 << 30,
        build_cache_bytes=123 << 30,
        oom_kills_total=2,
        engine_oom_kills_total=1,
        counters=VitalsCounters(taken_at=recorded.NOW - 1.25, oom_kills=2),
        missing=(),
        error=None,
    )
    few = NodeVitals(
        node="snoc-gaming",
        source="engine",
        taken_at=recorded.NOW - 2.0,
        cpu_count=16,
        missing=("psi: /proc/pressure not on this kernel",),
        error="node_exporter: connect: refused",
    )
    strix, think, gaming = snap.nodes
    return replace(
        snap,
        nodes=(replace(strix, vitals=full), think, replace(gaming, vitals=few)),
        problems=("snoc-think: down",),
        pending=("webdav",),
        probing=("webdav", "snoc-think"),
        failed_rounds=1,
    )


def printed_snapshot(snapshot: FleetSnapshot) -> str:
    """As `rocmtui status --json` prints it (before its `monitor` and `builds`)."""
    return json.dumps(snapshot_json(snapshot, now=recorded.NOW), indent=2) + "\n"


def test_a_fleet_snapshot_prints_byte_for_byte_what_it_did() -> None:
    expected = (DATA / "snapshot.json").read_text(encoding="utf-8")
    assert printed_snapshot(sample_snapshot()) == expected


def cached_after(steps: list[Step], key: str, flavour: str) -> list[Step]:
    out, ran = [], False
    for s in steps:
        ran = ran or step_key(s.name) == key
        name = s.name.replace("begin two", f"begin two {flavour}")
        out.append(Step(s.digest, name, s.started, s.completed, cached=not ran, inputs=s.inputs))
    return out


def sample_steps() -> tuple[StepReport, StepReport]:
    """A finished build all cached, and one still running with a miss and dropped steps."""
    then = StepReport.build(cached_after(recorded_steps(T0), "nothing", "vanilla"))
    now = StepReport.build(
        cached_after(recorded_steps(T0, open_last=True), "[final 3/3] RUN", "chocolate"),
        now=T0 + 4000.123456,
        running=True,
        dropped=3,
    )
    return then, now


def test_build_steps_print_byte_for_byte_what_they_did() -> None:
    then, now = sample_steps()
    printed = json.dumps([steps_json(then), steps_json(now)], indent=2) + "\n"
    assert printed == (DATA / "steps.json").read_text(encoding="utf-8")


def test_a_build_diff_prints_byte_for_byte_what_it_did() -> None:
    then, now = sample_steps()
    facts_now = BuildFacts(args={"FLAVOUR": "chocolate"}, known=("build args", "materials"))
    facts_then = BuildFacts(args={"FLAVOUR": "vanilla"}, known=("build args", "materials"))
    diffs = [
        diff_builds(now, then, facts_now, facts_then, "20261206-0002", "20261205-0001"),
        diff_builds(then, then, facts_then, facts_then),
    ]
    printed = json.dumps([diff_json(d) for d in diffs], indent=2) + "\n"
    assert printed == (DATA / "stepdiff.json").read_text(encoding="utf-8")
