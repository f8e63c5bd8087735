"""The progress tracker on real recorded buildx 0.13.1 logs (tests/data/buildkit)."""

from __future__ import annotations

from pathlib import Path

from rocmtui.core.progress.tracker import (
    JobProgress,
    ProgressTracker,
    StepStatus,
    parse_log_file,
)

DATA = Path(__file__).parents[1] / "data" / "buildkit"


def lines_of(name: str) -> list[str]:
    """A recorded log split on \\n only, as the tracker wants it."""
    return (DATA / name).read_text(encoding="utf-8", errors="replace").split("\n")


def by_target(progress: JobProgress) -> dict[str | None, list[tuple[int | None, str]]]:
    """Numbered steps of each target as (index, title)."""
    out: dict[str | None, list[tuple[int | None, str]]] = {}
    for step in progress.steps:
        if step.index is not None:
            out.setdefault(step.target, []).append((step.index, step.title))
    return {k: sorted(v) for k, v in out.items()}


def test_multi_target_plain() -> None:
    """Two targets: each its own stream, all steps done, no error, the shared vertex known."""
    p = parse_log_file(DATA / "multi_plain.log")
    assert p.format == "plain"
    assert p.builder == "default"
    assert p.error_step is None and p.final_error is None
    assert all(s.status is StepStatus.DONE for s in p.steps)
    targets = {t.name: t for t in p.targets}
    assert set(targets) == {"alpha", "beta"}
    assert (targets["alpha"].steps_done, targets["alpha"].steps_total) == (4, 4)
    assert (targets["beta"].steps_done, targets["beta"].steps_total) == (4, 4)
    assert (p.steps_done, p.steps_total) == (8, 8)
    streams = by_target(p)
    assert [i for i, _ in streams["alpha"]] == [2, 3, 4]  # 1/4 was printed under beta
    assert [i for i, _ in streams["beta"]] == [1, 2, 3, 4]
    assert streams["beta"][2] == (3, "COPY Dockerfile.beta /x")
    exporting = p.step(13)
    assert exporting is not None and exporting.targets == ("beta", "alpha")
    step9 = p.step(9)
    assert step9 is not None and step9.duration == 0.8 and step9.output_lines == 1
    assert p.current is None  # nothing running at the end


def test_line_ranges_point_at_the_steps_lines() -> None:
    """first_line/last_line are line numbers in the log; line_count counts the step's own."""
    lines = lines_of("multi_plain.log")
    p = parse_log_file(DATA / "multi_plain.log")
    step = p.step(14)
    assert step is not None and step.first_line is not None and step.last_line is not None
    assert lines[step.first_line].startswith("#14 [alpha 3/4] RUN")
    assert lines[step.last_line] == "#14 DONE 1.3s"
    assert step.line_count == 7 and step.output_lines == 5
    paused = p.step(9)  # interrupted by `#9 ...` and resumed further down
    assert paused is not None and paused.first_line is not None and paused.last_line is not None
    assert paused.last_line - paused.first_line + 1 > paused.line_count


def test_echoed_status_is_just_output() -> None:
    """`#10 0.318 #9 DONE` is text printed by step 10: step 9 stays running until its own
    `#9 DONE`, and `#3 ERROR: fake` fails nothing."""
    lines = lines_of("multi_plain.log")
    cut = next(i for i, line in enumerate(lines) if line == "#10 0.318 #9 DONE")
    tracker = ProgressTracker()
    tracker.feed(lines[: cut + 2], now=1.0)  # through `#10 0.318 #3 ERROR: fake`
    mid = tracker.snapshot()
    step9 = mid.step(9)
    assert step9 is not None and step9.status is StepStatus.RUNNING
    step3 = mid.step(3)
    assert step3 is not None and step3.status is StepStatus.DONE and step3.error is None
    assert mid.error_step is None
    assert mid.current is not None and mid.current.number == 10
    tracker.feed(lines[cut + 2 :], now=2.0)
    end = tracker.snapshot()
    done9 = end.step(9)
    assert done9 is not None and done9.status is StepStatus.DONE and done9.duration == 0.8
    assert end.error_step is None
    assert tracker.internal_errors == 0 and tracker.malformed == 0


def test_cached_rebuild() -> None:
    """A second run: every RUN cached, counted per target and in total."""
    p = parse_log_file(DATA / "multi_plain_cached.log")
    assert p.steps_cached == 6
    assert {t.name: t.cached for t in p.targets} == {"alpha": 3, "beta": 3}
    assert (p.steps_done, p.steps_total) == (8, 8)


def test_failed_build_names_the_step() -> None:
    """The failing step, its message, its first error line and its last lines."""
    p = parse_log_file(DATA / "fail_plain.log")
    err = p.error_step
    assert err is not None and err.number == 7 and err.status is StepStatus.ERROR
    assert err.title.startswith('RUN echo "compiling..."')
    assert err.error is not None and err.error.endswith("exit code: 3")
    assert p.error_line == "error: something broke"
    assert err.error_tail == ("compiling...", "error: something broke")
    assert p.final_error is not None and p.final_error.startswith("failed to solve:")
    assert (p.steps_done, p.steps_total, p.steps_cached) == (2, 4, 1)
    assert p.targets[0].name is None and p.targets[0].error_step == 7


def test_error_and_canceled() -> None:
    """One target's step fails, the other's is cancelled: the failure is the error step."""
    p = parse_log_file(DATA / "multi_error_canceled_plain.log")
    assert p.error_step is not None and p.error_step.number == 10
    assert p.error_step.target == "alpha"
    canceled = p.step(9)
    assert canceled is not None and canceled.status is StepStatus.CANCELED
    assert canceled.target == "beta"
    assert p.error_line is not None and "exit code: 1" in p.error_line
    assert {t.name: t.error_step for t in p.targets} == {"beta": None, "alpha": 10}


def test_rawjson_matches_plain() -> None:
    """The rawjson recording yields the same per-target streams as the plain one."""
    raw = parse_log_file(DATA / "multi_rawjson.log")
    plain = parse_log_file(DATA / "multi_plain.log")
    assert raw.format == "rawjson"
    assert all(s.status in (StepStatus.DONE, StepStatus.CACHED) for s in raw.steps)
    # The shared FROM is printed under whichever target asked first, so compare the union.
    raw_streams, plain_streams = by_target(raw), by_target(plain)
    assert set(raw_streams) == set(plain_streams) == {"alpha", "beta"}
    raw_titles = {t.replace(" v2", "") for v in raw_streams.values() for _, t in v}
    assert raw_titles == {t for v in plain_streams.values() for _, t in v}
    assert [i for i, _ in raw_streams["beta"]] == [2, 3, 4]
    assert (raw.steps_done, raw.steps_total, raw.steps_cached) == (8, 8, 4)
    assert raw.ninja is not None and (raw.ninja.done, raw.ninja.total) == (5, 5)
    # Real timestamps 0.2 s apart: about 5 edges per second.
    assert raw.ninja.rate is not None and 3.5 < raw.ninja.rate < 6.5
    assert raw.step(7) is not None


def test_rawjson_failure() -> None:
    """Failure in rawjson: the error step, the first error line, the never-started step."""
    p = parse_log_file(DATA / "fail_rawjson.log")
    assert p.error_step is not None and p.error_step.index == 3
    assert p.error_line == "error: something broke"
    assert p.final_error is not None and "exit code: 3" in p.final_error
    never = [s for s in p.steps if s.title == "RUN echo never"]
    assert len(never) == 1 and never[0].status is StepStatus.PENDING


def test_odd_output_in_both_formats() -> None:
    """A 20 KB line, a bare CR and a last line without newline are three output lines, and
    the hostile escapes in names come out sanitised."""
    for name in ("odd_plain.log", "odd_rawjson.log"):
        p = parse_log_file(DATA / name)
        step = next(s for s in p.steps if s.index == 2)
        assert step.output_lines == 3, name
        escapes = next(s for s in p.steps if s.index == 3)
        assert escapes.output_lines == 1
        assert all("\x1b" not in s.name and "\x07" not in s.name for s in p.steps)
        assert p.error_step is None


def test_tracker_seeded_with_targets() -> None:
    """A stage-less word before i/n is a target when the job says so, a stage otherwise."""
    lines = ["#1 [pytorch 2/4] RUN make", "#1 DONE 1.0s"]
    seeded = ProgressTracker(targets=["pytorch"])
    seeded.feed(lines, now=0.0)
    assert seeded.snapshot().steps[0].target == "pytorch"
    unseeded = ProgressTracker()
    unseeded.feed(lines, now=0.0)
    step = unseeded.snapshot().steps[0]
    assert step.target is None and step.stage == "pytorch"
    staged = ProgressTracker()
    staged.feed(["#1 [torch builder 3/7] RUN x"], now=0.0)
    s = staged.snapshot().steps[0]
    assert (s.target, s.stage, s.index, s.total) == ("torch", "builder", 3, 7)


def test_crlf_log_reads_the_same() -> None:
    """A log captured through a pty (CR LF line ends) parses like the file BuildKit wrote."""
    tracker = ProgressTracker()
    tracker.feed((line + "\r\n" for line in lines_of("fail_plain.log")), now=0.0)
    crlf = tracker.snapshot()
    plain = parse_log_file(DATA / "fail_plain.log")
    assert crlf.steps == plain.steps
    assert crlf.error_line == plain.error_line == "error: something broke"


def status_of(progress: JobProgress, number: int) -> StepStatus:
    step = progress.step(number)
    assert step is not None, number
    return step.status


def test_an_ended_build_runs_no_step() -> None:
    """A log cut before a step's DONE line (a progress writer closed first): while the job runs
    the step is running; once the job has ended it is done after a success and cancelled after
    a failure — never a finished build still at work in the outline."""
    lines = lines_of("multi_plain.log")
    done_at = max(i for i, line in enumerate(lines) if line.startswith("#") and " DONE " in line)
    number = int(lines[done_at].split()[0][1:])
    tracker = ProgressTracker()
    tracker.feed(lines[:done_at], 1.0)  # the last DONE never came
    running = tracker.snapshot(2.0)
    assert status_of(running, number) is StepStatus.RUNNING
    assert running.current is not None

    ok = tracker.snapshot(2.0, succeeded=True)
    assert {s.status for s in ok.steps} <= {StepStatus.DONE, StepStatus.CACHED}
    assert ok.current is None
    assert status_of(ok, number) is StepStatus.DONE

    cut = tracker.snapshot(2.0, succeeded=False)
    assert status_of(cut, number) is StepStatus.CANCELED
    assert StepStatus.RUNNING not in {s.status for s in cut.steps}
    # the tracker itself is untouched: fed on, the step still finishes by its own line
    tracker.feed(lines[done_at:], 3.0)
    assert status_of(tracker.snapshot(4.0), number) is StepStatus.DONE
