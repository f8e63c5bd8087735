"""A build's steps from rawjson (issue 38): merged by digest, bounded, sanitised; the critical
path through `inputs`; faults (a cycle, a missing parent, clocks that disagree, a cut stream)
bounded and said, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

from rocmtui.core.history.stepgraph import MAX_STEPS, Step, StepCollector, collect, critical_path
from rocmtui.core.history.stepreport import StepReport

DATA = Path(__file__).parents[1] / "data" / "buildkit"
T0 = "2026-12-06T10:00:00"


def at(seconds: float) -> str:
    whole = int(seconds)
    return f"{T0[:-2]}{whole:02d}.{round((seconds - whole) * 1e9):09d}Z"


def vertex(digest: str, name: str, start: float | None, end: float | None, *inputs: str,
           cached: bool = False, error: str | None = None) -> dict[str, object]:  # fmt: skip
    v: dict[str, object] = {"digest": digest, "name": name, "inputs": list(inputs)}
    if start is not None:
        v["started"] = at(start)
    if end is not None:
        v["completed"] = at(end)
    if cached:
        v["cached"] = True
    if error:
        v["error"] = error
    return v


def four_steps() -> list[dict[str, object]]:
    """FROM; A serial 10 s; B 15 s and C 10 s in parallel after A; D 10 s after both."""
    return [
        vertex("sha256:f", "[1/5] FROM base", 0.0, 0.1),
        vertex("sha256:a", "[2/5] RUN a", 0.1, 10.1, "sha256:f"),
        vertex("sha256:b", "[3/5] RUN b", 10.2, 25.2, "sha256:a"),
        vertex("sha256:c", "[4/5] RUN c", 10.2, 20.2, "sha256:a"),
        vertex("sha256:d", "[5/5] RUN d", 25.3, 35.3, "sha256:b", "sha256:c"),
        vertex("sha256:e", "exporting to image", 35.4, 36.0),
    ]


def stream(vertexes: list[dict[str, object]], one_line: bool = True) -> str:
    """What buildx 0.29 writes (one object per status, several on a line) or 0.13 (each object
    pretty-printed)."""
    objs = [{"vertexes": [v]} for v in vertexes]
    if one_line:
        return "".join(json.dumps(o, separators=(",", ":")) for o in objs) + "\n"
    return "".join(json.dumps(o, indent=2) + "\n" for o in objs)


def test_the_critical_path_names_the_serial_steps_and_the_longer_parallel_one() -> None:
    steps = collect([stream(four_steps())]).steps()
    path = critical_path(steps)
    names = [s.name for d in path.digests for s in steps if s.digest == d]
    assert names == [
        "[1/5] FROM base", "[2/5] RUN a", "[3/5] RUN b", "[5/5] RUN d", "exporting to image"
    ]  # fmt: skip
    assert abs(path.run - (0.1 + 10 + 15 + 10 + 0.6)) < 1e-3 and path.note is None
    report = StepReport.build(steps)
    by = {s.name: s for s in report.steps}
    assert by["[4/5] RUN c"].critical is False and by["[3/5] RUN b"].critical
    assert abs(by["[5/5] RUN d"].wait - 0.1) < 1e-3  # from B's end, its last input
    assert abs(by["exporting to image"].wait - 0.1) < 1e-3  # after D, by the path
    assert abs(report.span - 36.0) < 1e-3


def test_any_cut_of_either_format_gives_the_same_steps() -> None:
    for one_line in (True, False):
        text = stream(four_steps(), one_line).encode()
        whole = collect([text]).steps()
        for size in (1, 3, 17, 256):
            cut = collect(text[i : i + size] for i in range(0, len(text), size)).steps()
            assert cut == whole
    for name in ("multi_rawjson.log", "fail_rawjson.log", "odd_rawjson.log"):
        data = (DATA / name).read_bytes()
        whole = collect([data])
        assert whole.dropped_objects == 0 and whole.steps()
        assert collect(data[i : i + 5] for i in range(0, len(data), 5)).steps() == whole.steps()


def test_updates_merge_by_digest_first_start_last_end() -> None:
    c = StepCollector()
    c.feed(stream([vertex("sha256:x", "[1/1] RUN x", 1.0, None)]))
    assert c.steps()[0].completed is None
    c.feed("ERROR: text between objects { not json\n")
    c.feed(stream([vertex("sha256:x", "[1/1] RUN x", 3.0, 4.0, cached=True)]))
    (step,) = c.steps()
    assert step.started is not None and step.completed is not None
    assert step.completed - step.started == 3.0 and step.cached


def test_escape_sequences_and_markup_in_names_are_sanitised() -> None:
    evil = "[1/1] RUN \x1b]52;c;aGk=\x07\x1b[31mred[/] [bold]x\x1b]0;title\x07"
    (step,) = collect([stream([vertex("sha256:x", evil, 0, 1, error="boom\x1b[2J\nline")])]).steps()
    assert "\x1b" not in step.name and "\x07" not in step.name
    assert "[bold]x" in step.name  # kept as text: never parsed as markup by any reader
    assert step.error is not None and "\x1b" not in step.error and "\n" not in step.error


def test_a_cycle_a_missing_parent_and_skewed_clocks_are_said() -> None:
    cyc = [
        vertex("sha256:a", "a", 0, 1, "sha256:b"),
        vertex("sha256:b", "b", 1, 2, "sha256:a"),
    ]
    path = critical_path(collect([stream(cyc)]).steps())
    assert path.note is not None and "cycle" in path.note and len(path.digests) == 2
    lost = [vertex("sha256:a", "a", 0, 1, "sha256:gone")]
    assert "never reported" in str(critical_path(collect([stream(lost)]).steps()).note)
    skew = [vertex("sha256:a", "a", 5, 2)]  # ends before it starts
    (timed,) = StepReport.build(collect([stream(skew)]).steps()).steps
    assert timed.skewed and timed.run is None
    assert critical_path([]).note == "no step has started"


def test_a_running_build_grows_until_now() -> None:
    open_step = [vertex("sha256:a", "a", 0, 1), vertex("sha256:b", "b", 1, None, "sha256:a")]
    steps = collect([stream(open_step)]).steps()
    origin = steps[0].started
    assert origin is not None
    early = StepReport.build(steps, now=origin + 5, running=True)
    later = StepReport.build(steps, now=origin + 9, running=True)
    assert early.steps[1].open and early.steps[1].run == 4.0 and later.steps[1].run == 8.0
    assert later.span > early.span and later.path.digests[-1] == "sha256:b"


def test_ten_thousand_steps_and_a_bound() -> None:
    chain = [vertex("sha256:0", "step 0", 0, 0.001)]
    chain += [
        vertex(f"sha256:{i}", f"step {i}", i * 0.001, (i + 1) * 0.001, f"sha256:{i - 1}")
        for i in range(1, 10_000)
    ]
    c = collect([stream(chain)])
    steps = c.steps()
    assert len(steps) == 10_000 and c.dropped_steps == 0
    assert len(critical_path(steps).digests) == 10_000  # no recursion, no quadratic walk
    more = StepCollector()
    more.feed(stream([vertex(f"sha256:{i}", "s", 0, 1) for i in range(MAX_STEPS + 5)]))
    assert len(more.steps()) == MAX_STEPS and more.dropped_steps == 5
    assert isinstance(steps[0], Step)


def test_odd_and_missing_fields_are_kept_as_far_as_they_go() -> None:
    odd: list[object] = [
        {"digest": "sha256:n", "name": 42, "started": "yesterday", "inputs": "sha256:x"},
        {"digest": "odd\x1b[2J digest", "name": "kept, its digest made safe"},
        {"digest": None, "name": "no digest"},
        {"name": "no digest at all", "started": at(0)},
        {"digest": "sha256:t", "name": "[t 1/1] RUN t", "started": at(1), "completed": 7},
        {"digest": "sha256:i", "name": "[i 1/1] RUN i", "inputs": [1, None, "sha256:t", "x y"]},
        "not an object",
    ]
    c = collect([json.dumps({"vertexes": odd}) + "\n", '{"vertexes": {"a": 1}}\n', "[1,2]\n"])
    by = {s.digest: s for s in c.steps()}
    assert len(by) == 4 and {"sha256:n", "sha256:t", "sha256:i"} < set(by)
    assert not any("\x1b" in d for d in by)
    assert by["sha256:n"].name == "" and by["sha256:n"].started is None
    assert by["sha256:n"].inputs == ()
    assert by["sha256:t"].started is not None and by["sha256:t"].completed is None
    assert by["sha256:i"].inputs[0] == "sha256:t" and len(by["sha256:i"].inputs) == 2
    report = StepReport.build(c.steps())  # drawn as far as it goes, no crash
    assert len(report.steps) == 4 and report.path.digests == ()
    assert report.path.note == "no step reported its end"  # one started: never "none started"
