"""Compile counters, rates and ETAs from synthetic timestamps; hostile and huge input."""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path

import pytest

from rocmtui.core.progress.ninja import ERROR_LINE
from rocmtui.core.progress.tracker import ProgressTracker, StepStatus, parse_log_file

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import gen_buildlog


def ninja_lines(start: int, stop: int, total: int, per_second: float) -> list[tuple[str, float]]:
    """Plain output of step 5 printing `[i/total]`, with BuildKit's seconds-since-start."""
    return [
        (f"#5 {i / per_second:.3f} [{i}/{total}] Building HIP object x{i}.hip.o", i / per_second)
        for i in range(start, stop)
    ]


def test_live_rate_and_eta() -> None:
    """Followed live (each line seen when printed): 10 edges/s, ETA from what is left."""
    tracker = ProgressTracker(window=30.0)
    tracker.feed_line("#5 [torch 6/9] RUN ninja", now=1000.0)
    for line, t in ninja_lines(1, 400, 1000, 10.0):
        tracker.feed_line(line, now=1000.0 + t)
    ninja = tracker.snapshot().ninja
    assert ninja is not None
    assert (ninja.done, ninja.total, ninja.step) == (399, 1000, 5)
    assert ninja.rate == pytest.approx(10.0, rel=0.02)
    assert ninja.eta_seconds == pytest.approx(60.1, rel=0.03)
    assert ninja.fraction == pytest.approx(0.399)
    # Silence afterwards: the rate falls with time instead of freezing.
    quiet = tracker.snapshot(now=1000.0 + 39.9 + 30.0)
    assert quiet.ninja is not None and quiet.ninja.rate is not None
    assert quiet.ninja.rate < 5.0
    assert quiet.last_output == pytest.approx(1039.9)


def test_replayed_log_uses_build_times() -> None:
    """A finished log read in one go (all lines at the same `now`) still gives the build's
    own rate, from BuildKit's per-line seconds."""
    tracker = ProgressTracker(window=30.0)
    tracker.feed_line("#5 [torch 6/9] RUN ninja", now=0.0)
    fast = ninja_lines(1, 200, 600, 20.0)
    slow = [
        (f"#5 {10 + (i - 200) / 2:.3f} [{i}/600] Building x", 0.0) for i in range(200, 300)
    ]  # then 2 edges/s for 50 s
    tracker.feed([line for line, _ in fast + slow], now=0.0)
    ninja = tracker.snapshot().ninja
    assert ninja is not None and ninja.rate is not None
    assert ninja.rate == pytest.approx(2.0, rel=0.05)  # the window holds the slow phase only
    assert ninja.eta_seconds == pytest.approx((600 - 299) / ninja.rate)


def test_counter_restart_and_parallel_steps() -> None:
    """A second ninja run restarts the window; each step keeps its own counter."""
    tracker = ProgressTracker(targets=["a", "b"])
    tracker.feed_line("#5 [a 2/3] RUN ninja", now=0.0)
    tracker.feed_line("#6 [b 2/3] RUN ninja", now=0.0)
    for i in range(1, 50):
        tracker.feed_line(f"#5 {i:.3f} [{i}/100] x", now=float(i))
        tracker.feed_line(f"#6 {i:.3f} [{2 * i}/500] y", now=float(i))
    tracker.feed_line("#5 50.000 [1/20] second ninja", now=50.0)
    snap = tracker.snapshot()
    a, b = snap.step(5), snap.step(6)
    assert a is not None and a.ninja is not None and (a.ninja.done, a.ninja.total) == (1, 20)
    assert a.ninja.rate is None  # one sample since the restart
    assert b is not None and b.ninja is not None and b.ninja.rate == pytest.approx(2.0, rel=0.05)
    assert snap.ninja is not None and snap.ninja.step == 5  # the latest counter to move
    assert {t.name: t.current for t in snap.targets} == {"a": 5, "b": 6}


def test_rawjson_log_chunks_and_timestamps() -> None:
    """Log data split mid-line across objects is reassembled; timestamps give the rate."""

    def obj(payload: dict[str, object]) -> list[str]:
        return json.dumps(payload, indent=2).split("\n")

    vertex = {"digest": "sha256:aa", "name": "[t 2/2] RUN ninja",
              "started": "2026-01-01T00:00:00.000000001Z"}  # fmt: skip
    tracker = ProgressTracker()
    tracker.feed(obj({"vertexes": [vertex]}), now=0.0)
    text = "".join(f"[{i}/100] obj{i}\n" for i in range(1, 41))
    data = text.encode()
    for k, start in enumerate(range(0, len(data), 37)):  # 37-byte chunks split lines
        chunk = base64.b64encode(data[start : start + 37]).decode()
        stamp = f"2026-01-01T00:00:{k // 4:02d}.{k % 4 * 25:02d}0000000Z"
        tracker.feed(obj({"logs": [{"vertex": "sha256:aa", "stream": 1, "data": chunk,
                                    "timestamp": stamp}]}), now=0.0)  # fmt: skip
    done = dict(vertex, completed="2026-01-01T00:01:00Z")
    tracker.feed(obj({"vertexes": [done]}), now=0.0)
    snap = tracker.snapshot()
    step = snap.steps[0]
    assert step.output_lines == 40 and step.status is StepStatus.DONE
    assert step.duration == pytest.approx(60.0, abs=0.01)
    assert snap.ninja is not None and snap.ninja.done == 40 and snap.ninja.rate is not None
    assert snap.format == "rawjson"


def test_malformed_lines_never_raise() -> None:
    """Garbage of every kind is survived; the model stays usable."""
    rng = random.Random(99)
    tracker = ProgressTracker()
    hostile = [
        "#", "# ", "#x y", "#99999999999999999999 DONE 1s", "#5 DONE xs", "#5 DONE 1e400s",
        "#5 99999999999.99999999999 [1/0] x", "#5 1.0 [0/0] ", "#5 1.0 [5/3] over", "{",
        '  "vertexes": [{"digest": 5}]', "}", "{", "  not json", "}", '{"logs": [{"data": 1}]}',
        '{"vertexes": "no"}', '{"vertexes": [{"digest": "d", "started": "garbage",'
        ' "completed": 7, "error": ["x"]}]}', "[]", "{}", "#6 [", "#6 [a b c d 1/2] x",
        "#7 [ 1/2]", "#8 ERROR:", "#9 CANCELED", "#0", "\x00\x1b]0;x\x07", "ERROR: ",
        '{"logs": [{"vertex": "v", "data": "!!!notbase64"}]}',
    ]  # fmt: skip
    for i, line in enumerate(hostile):
        tracker.feed_line(line, now=float(i))
    pool = "#0123456789 .[]/{}\"':,DONECACHEDERRORtv\n\x1b\x00é"
    for i in range(3000):
        line = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        tracker.feed_line(line, now=float(i))
    snap = tracker.snapshot()
    assert snap.lines == len(hostile) + 3000
    assert tracker.internal_errors == 0  # handled by rules, none by the last-resort guard
    assert tracker.malformed >= 1  # the vertex without a string digest


def test_unterminated_json_object_gives_way_to_text() -> None:
    """A rawjson object cut off by a killed client does not swallow the plain text after."""
    tracker = ProgressTracker()
    tracker.feed(["{", '  "vertexes": [', "ERROR: failed to solve: boom"], now=0.0)
    assert tracker.snapshot().final_error == "failed to solve: boom"


def test_memory_is_per_step_not_per_line(tmp_path: Path) -> None:
    """200,000 lines of one step leave a handful of lines and samples behind."""
    tracker = ProgressTracker(window=60.0)
    tracker.feed_line("#5 [t 2/3] RUN ninja", now=0.0)
    for i in range(1, 200_001):
        tracker.feed_line(f"#5 {i / 1000:.3f} [{i}/200000] obj", now=i / 1000)
    state = tracker._book.steps[5]
    assert state.tail is not None and len(state.tail) == 5
    assert state.ninja is not None and len(state.ninja.rate._samples) <= 66
    assert len(tracker._line_rate._samples) <= 66
    snap = tracker.snapshot()
    assert snap.ninja is not None and snap.ninja.eta_seconds == pytest.approx(0.0)


def test_generated_pytorch_log(tmp_path: Path) -> None:
    """The bench generator's log: the failing pytorch step, its compile error, the counter."""
    path = tmp_path / "build.log"
    gen_buildlog.generate(path, lines=20_000, seed=3)
    assert sum(1 for _ in path.open(encoding="utf-8", newline="\n")) == 20_000
    p = parse_log_file(path)
    assert p.error_step is not None and p.error_step.title.startswith("RUN cd /opt/pytorch")
    assert p.error_step.target == "pytorch"
    assert p.error_line is not None and p.error_line.startswith("FAILED: caffe2/")
    assert p.ninja is not None and p.ninja.total > 10_000 and p.ninja.done > 10_000
    assert {t.name for t in p.targets} == {"pytorch", "triton"}
    assert p.final_error is not None and "exit code: 1" in p.final_error
    again = tmp_path / "again.log"
    gen_buildlog.generate(again, lines=20_000, seed=3)
    assert again.read_bytes() == path.read_bytes()  # deterministic


def test_error_lines_are_errors_and_warnings_are_not() -> None:
    """`e` in a log pane and a step's "failed at" both use ERROR_LINE. On a HIP build clang's
    `-Wpass-failed` warning comes long before the real error; `e` used to land on it."""
    errors = [
        "#10 1.090 /src/vllm/csrc/rocm/activation_kernels.hip:128:18: error: use of undeclared",
        "#10 1.090 FAILED: CMakeFiles/_rocm_C.dir/csrc/rocm/activation_kernels.hip.o",
        "FAILED: CMakeFiles/_rocm_C.dir/csrc/rocm/activation_kernels.hip.o",
        "#10 ERROR: executor failed running [/bin/sh -c fake-compile vllm]: exit code: 1",
        "ERROR: failed to solve: process did not complete successfully: exit code: 1",
        "src/lib.rs:3:5: error[E0425]: cannot find value",
        "#16 41.2 fatal error: 'hip/hip_runtime.h' file not found",
        "#16 41.2 RuntimeError: HIP error: invalid device function",
    ]
    not_errors = [
        "#8 0.800 /src/base/src/kernels.hip:412:5: warning: loop not unrolled: the optimizer was "
        "unable to perform the requested transformation [-Wpass-failed=transform-warning]",
        "#8 0.385 /opt/rocm/llvm/bin/clang++ -Wno-error=deprecated -Werror=return-type",
        "#8 0.281 -- Performing Test HAVE_ERROR_H",
        "#12 3.1 2 warnings and 0 errors generated",
    ]
    assert [line for line in errors if not ERROR_LINE.search(line)] == []
    assert [line for line in not_errors if ERROR_LINE.search(line)] == []


def test_every_reader_of_one_log_gets_one_rate_and_eta() -> None:
    """Two consoles showed different rates for one job: each timed the lines by when it read
    them. With the log's silence (its age, the same for everyone) the rate is the build's own:
    a console following it live and one reading it all later agree, and both fall alike while
    the log is silent."""
    lines = [line for line, _ in ninja_lines(1, 400, 1000, 10.0)]
    live = ProgressTracker(window=30.0)
    live.feed_line("#5 [torch 6/9] RUN ninja", now=1000.0)
    for n, line in enumerate(lines):
        live.feed_line(line, now=1000.0 + n * 0.1 + (n % 7) * 0.03)  # read with jitter
    late = ProgressTracker(window=30.0)
    late.feed(["#5 [torch 6/9] RUN ninja", *lines[:150]], now=5000.0)
    late.feed(lines[150:], now=5009.0)  # in two reads, an hour later
    for silence in (0.0, 5.0, 25.0):
        a = live.snapshot(1100.0, silence=silence).ninja
        b = late.snapshot(6000.0, silence=silence).ninja
        assert a is not None and b is not None
        assert a.rate == pytest.approx(b.rate, rel=1e-9), silence  # the anchors' rounding only
        assert a.eta_seconds == pytest.approx(b.eta_seconds, rel=1e-9), silence
    fresh = live.snapshot(silence=0.0).ninja
    quiet = live.snapshot(silence=25.0).ninja
    assert fresh is not None and quiet is not None and fresh.rate and quiet.rate
    assert fresh.rate == pytest.approx(10.0, rel=0.02) and quiet.rate < fresh.rate
