"""A running bake group's targets from bake's printed progress (`core.runs.livetargets`): real
group bakes recorded on buildx 0.29 and 0.13 (tests/data/buildkit/README.md), fed as the
supervisor feeds them (cut anywhere), names that are no target, a target that printed nothing,
10,000 vertices; the live file written and read back; a running group drawn a bar per target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.book import RunBook
from rocmtui.core.runs.chart import chart
from rocmtui.core.runs.livetargets import (
    LIVE_FILE,
    LiveFile,
    LiveTargets,
    live_file_for,
    read_live,
)
from rocmtui.core.runs.run import Run, RunBuild, TargetSpan
from rocmtui.core.runs.targetspans import keep_printed_spans, load_spans, save_spans
from rocmtui.core.states import JobState
from tests.support.jobs import job_record

DATA = Path(__file__).parent.parent / "data" / "buildkit"
DEMO = ["demo-base", "demo-pytorch", "demo-vllm"]
T0 = 1_800_000_000.0


def by_lines(name: str, targets: list[str] = DEMO) -> dict[str, TargetSpan]:
    """The log fed a line at a time, the clock at T0 + the line's index."""
    live = LiveTargets(targets)
    for i, line in enumerate((DATA / name).read_bytes().splitlines(keepends=True)):
        live.feed(line, now=T0 + i)
    return {s.target: s for s in live.spans()}


@pytest.mark.parametrize("name", ["group_029_plain.log", "group_013_plain.log"])
def test_each_target_runs_from_its_first_vertex_to_its_last(name: str) -> None:
    spans = by_lines(name)
    assert sorted(spans) == DEMO
    assert all(s.ended is not None and not s.failed for s in spans.values())
    lines = (DATA / name).read_bytes().decode().splitlines()
    first = {  # it starts at the first vertex named for it
        t: min(i for i, ln in enumerate(lines) if ln.startswith("#") and f" [{t}" in ln)
        for t in DEMO
    }
    assert {t: s.started for t, s in spans.items()} == {t: T0 + i for t, i in first.items()}
    assert spans["demo-vllm"].ended == max(s.ended or 0 for s in spans.values())


def test_buildx_0_29_ends_a_target_with_its_provenance_vertex() -> None:
    name = "group_029_plain.log"
    spans = by_lines(name)
    lines = (DATA / name).read_bytes().decode().splitlines()
    provenance = max(i for i, ln in enumerate(lines) if ln == "#16 DONE 0.0s")
    assert spans["demo-vllm"].ended == T0 + provenance


def test_buildx_0_13_one_export_vertex_ends_two_targets_at_once() -> None:
    name = "group_013_plain.log"
    spans = by_lines(name)
    lines = (DATA / name).read_bytes().decode().splitlines()
    done = [i for i, ln in enumerate(lines) if ln.startswith("#15 DONE")]
    assert spans["demo-base"].ended == spans["demo-pytorch"].ended == T0 + done[0]
    assert spans["demo-vllm"].ended == T0 + done[1]


def test_a_failed_target_and_one_left_unended() -> None:
    new = by_lines("group_029_fail_plain.log")
    assert new["demo-pytorch"].failed and new["demo-pytorch"].ended is not None
    assert new["demo-base"].ended is not None and not new["demo-base"].failed
    assert new["demo-vllm"].ended is None  # cancelled with the bake: never ended
    old = by_lines("group_013_fail_plain.log")  # the shared failed RUN printed as demo-vllm's
    assert old["demo-vllm"].failed and old["demo-pytorch"].ended is None


@pytest.mark.parametrize("size", [1, 7, 500, 4096, 1 << 16])
def test_cut_anywhere_it_reads_the_same(size: int) -> None:
    for name in ("group_029_plain.log", "group_013_fail_plain.log"):
        data = (DATA / name).read_bytes()
        live = LiveTargets(DEMO)
        for at in range(0, len(data), size):
            live.feed(data[at : at + size], now=T0)
        whole = by_lines(name)
        assert {s.target: (s.ended is not None, s.failed) for s in live.spans()} == {
            t: (s.ended is not None, s.failed) for t, s in whole.items()
        }


def test_what_a_build_prints_is_never_a_vertex() -> None:
    """multi_plain.log's RUN echoes `#9 DONE` and `#3 ERROR: fake`; its output lines start
    `#N 0.123`. beta's #9 ends only with its own DONE."""
    spans = by_lines("multi_plain.log", ["alpha", "beta"])
    assert sorted(spans) == ["alpha", "beta"]
    assert not spans["alpha"].failed and not spans["beta"].failed
    assert spans["beta"].ended is not None and spans["alpha"].ended is not None


def test_names_with_escapes_or_markup_are_no_target() -> None:
    live = LiveTargets(["demo-base", "demo-vllm"])
    live.feed(
        b"#3 [\x1b]52;c;aGk=\x07 base 1/3] RUN x\n"
        b"#4 [[/]demo-base 1/3] RUN y\n"
        b"#5 [demo-base\x1b[2J 1/3] RUN z\n"
        b"#6 0.1 #7 [demo-base] exporting to image\n"
        b"#8 [demo-vllm [bold]x[/] 1/1] RUN [link=http://x]\n",
        now=T0,
    )
    spans = live.spans()
    assert [s.target for s in spans] == ["demo-vllm"]  # its name's first word is the target
    live.feed(b"#3 DONE 0.1s\n#8 DONE 0.1s\n", now=T0 + 1)
    assert live.spans()[0].ended is None  # no export yet: not done


def test_a_target_that_printed_no_vertex_has_no_bar_yet() -> None:
    spans = by_lines("group_029_plain.log", [*DEMO, "demo-absent"])
    assert sorted(spans) == DEMO


def test_ten_thousand_vertices() -> None:
    live = LiveTargets(["a", "b"])
    chunk = bytearray()
    for v in range(1, 10_001):
        chunk += f"#{v} [{'ab'[v % 2]} stage {v}/10000] RUN step\n#{v} 0.1 output\n".encode()
    live.feed(bytes(chunk), now=T0)
    assert all(s.ended is None for s in live.spans())
    done = b"".join(f"#{v} DONE 0.1s\n".encode() for v in range(1, 10_001))
    live.feed(done + b"#10001 [a] exporting to image\n#10002 [b] exporting to image\n", now=T0 + 5)
    live.feed(b"#10001 DONE 0.2s\n#10002 DONE 0.2s\n", now=T0 + 9)
    assert {(s.target, s.started, s.ended) for s in live.spans()} == {
        ("a", T0, T0 + 9),
        ("b", T0, T0 + 9),
    }


def test_the_live_file_is_written_at_most_once_a_second_and_read_back(tmp_path: Path) -> None:
    (tmp_path / "targets.json").write_text(json.dumps({"targets": {t: {} for t in DEMO}}))
    said: list[str] = []
    live = live_file_for(tmp_path, said.append)
    assert live is not None
    data = (DATA / "group_029_plain.log").read_bytes()
    half = data.index(b"#12 [demo-vllm")
    cut = data.index(b"#3 [")
    live.feed(data[:cut])  # the first change: written at once
    first = (tmp_path / LIVE_FILE).read_bytes()
    live.feed(data[cut:half])  # within the second: not again
    assert (tmp_path / LIVE_FILE).read_bytes() == first
    live.write()  # the build's end: its last word now
    spans = {s.target: s for s in read_live(tmp_path)}
    assert sorted(spans) == ["demo-base", "demo-pytorch"]  # demo-vllm printed nothing yet
    assert spans["demo-pytorch"].ended is not None  # its export ended (#11 DONE) ...
    assert spans["demo-base"].ended is None  # ... demo-base's (#9) still runs
    assert not said


def test_one_target_or_no_targets_file_follows_nothing(tmp_path: Path) -> None:
    assert live_file_for(tmp_path, print) is None
    (tmp_path / "targets.json").write_text(json.dumps({"targets": {"demo-vllm": {}}}))
    assert live_file_for(tmp_path, print) is None
    (tmp_path / "targets.json").write_text("{not json")
    assert live_file_for(tmp_path, print) is None
    (tmp_path / LIVE_FILE).write_text('{"targets": [{"target": 1}]}')
    assert read_live(tmp_path) == []


def test_a_write_that_fails_stops_the_writing_and_says_it_once(tmp_path: Path) -> None:
    said: list[str] = []
    live = LiveFile(tmp_path / "gone", LiveTargets(DEMO), said.append)
    data = (DATA / "group_029_plain.log").read_bytes()
    live.feed(data[:2000])
    live.feed(data[2000:])
    live.write()
    assert live.stopped and len(said) == 1 and "no longer written" in said[0]


def test_a_running_group_is_a_bar_per_target_growing_to_now() -> None:
    spans = (
        TargetSpan("demo-base", T0 + 1, T0 + 5),
        TargetSpan("demo-pytorch", T0 + 2, None),
        TargetSpan("demo-vllm", T0 + 6, None),
    )
    job = RunBuild(job_id="j1", node="snoc-think", target="all", arch="gfx1201",
                   started_at=T0, ended_at=None, state="running", group=True,
                   targets=spans, live=True)  # fmt: skip
    run = Run(id="run-x", target="all", started_at=T0, origin="rocmtui", started_by="me",
              nodes=("snoc-think",), builds=(job,))  # fmt: skip
    for now in (T0 + 10, T0 + 20):
        drawn = chart(run, now)
        (lane,) = drawn.lanes
        bars = {b.build.target: b for b in lane.bars}
        assert sorted(bars) == DEMO
        assert bars["demo-base"].end == 4.0 and bars["demo-base"].build.state == "succeeded"
        assert bars["demo-vllm"].running and bars["demo-vllm"].end == now - T0 - 1  # from base
        assert {b.build.of_group for b in lane.bars} == {"all"}
        assert lane.note == "a group's target times as bake printed them"
        assert [b.target for b in drawn.links] == ["demo-base", "demo-vllm"]  # targets


def _group_job(store: JobStore, ended: float | None) -> JobRecord:
    def make(job_id: str, job_dir: Path) -> JobRecord:
        return job_record(job_id, job_dir, target="all", node="a", started_at=T0,
                          ended_at=ended, state=JobState.SUCCEEDED)  # fmt: skip

    return store.create(make)


def test_a_group_just_ended_is_drawn_from_its_live_file_until_spans_are_kept(
    tmp_path: Path,
) -> None:
    store = JobStore(tmp_path)
    job = _group_job(store, T0 + 100)
    printed = LiveTargets(DEMO)
    for i, line in enumerate((DATA / "group_029_plain.log").read_bytes().splitlines(True)):
        printed.feed(line, now=T0 + 1 + i * 0.5)
    LiveFile(job.path, printed, print).write()
    book = RunBook(store)
    book.create(Run("run-20271215-0800-ab12", "all", T0, "rocmtui", "me", ("a",)))
    book.add_jobs("run-20271215-0800-ab12", [(job.id, "a")])
    (lane,) = chart(book.get("ab12", now=T0 + 150), T0 + 150).lanes
    assert sorted(b.build.target for b in lane.bars) == DEMO
    assert lane.note == "a group's target times as bake printed them"
    (lane,) = chart(book.get("ab12", now=T0 + 1000), T0 + 1000).lanes  # past the grace
    assert len(lane.bars) == 1
    # the supervisor keeps the printed spans where no record gave any, and only there
    keep_printed_spans(store, job.id, printed.spans())
    (lane,) = chart(book.get("ab12", now=T0 + 1000), T0 + 1000).lanes
    assert sorted(b.build.target for b in lane.bars) == DEMO and lane.note is None
    records = [TargetSpan(t, T0 + 2, T0 + 90) for t in DEMO]
    save_spans(store, job.id, records)
    keep_printed_spans(store, job.id, printed.spans())
    with store.connect() as conn:
        assert load_spans(conn, [job.id])[job.id] == records
