"""Why a build failed: the rule (`verdicts.failure.explain`) on the words BuildKit, bake and
compilers really print, and the tail reader on a real recorded log."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmtui.core.verdicts.failure import MAX_LINES, FailureCause, explain, tail_text

DATA = Path(__file__).resolve().parents[1] / "data" / "buildkit"

SNAPSHOT = (
    'failed to prepare extraction snapshot "extract-296202435-S2zM sha256:b7a6c27335": parent '
    "snapshot sha256:f0cf9e3ee647ea6dc7f712458e6f16 does not exist: not found"
)


@pytest.mark.parametrize(
    ("lines", "cause"),
    [
        ([f"#11 ERROR: {SNAPSHOT}", f"ERROR: failed to solve: {SNAPSHOT}"], "engine-bug"),
        (
            [
                "ERROR: failed to solve: failed to copy: write /var/lib/docker/buildkit/content/"
                "ingest/1/data: no space left on device"
            ],
            "disk",
        ),
        (
            [
                "c++: fatal error: Killed signal terminated program cc1plus",
                "compilation terminated.",
                'process "/bin/sh -c make -j64" did not complete successfully: exit code: 1',
            ],
            "memory",
        ),
        (
            ['process "/bin/sh -c ./build.sh" did not complete successfully: exit code: 137'],
            "memory",
        ),
        (
            [
                "ERROR: failed to solve: failed to push 127.0.0.1:5000/rocm-bake/pytorch:x: "
                "unexpected status from HEAD request to http://127.0.0.1:5000/v2/rocm-bake/"
                "pytorch/blobs/sha256:aa: 401 Unauthorized"
            ],
            "registry-auth",
        ),
        (
            [
                "ERROR: failed to solve: failed to push 127.0.0.1:1/rocm-bake/pytorch:x: failed "
                'to do request: Head "http://127.0.0.1:1/v2/rocm-bake/pytorch/blobs/sha256:aa":'
                " dial tcp 127.0.0.1:1: connect: connection refused"
            ],
            "registry-down",
        ),
        (
            [
                "sccache: error: Server startup failed: Connection to server timed out",
                'process "/bin/sh -c sccache --start-server" did not complete successfully: '
                "exit code: 2",
            ],
            "sccache",
        ),
        (
            [
                "ERROR: failed to solve: Unavailable: error reading from server: EOF",
            ],
            "link",
        ),
        (  # the supervisor's own word in the record, when the link watch gave up
            [
                "link to snoc-think down since 20:10:22 (42s): given up (the remote engine "
                "cancels the build when its connection closes)"
            ],
            "link",
        ),
        (
            [
                "ERROR: failed to solve: failed to compute cache key: failed to calculate checksum"
                ' of ref 1b2c::x: "/patches/fix.patch": not found'
            ],
            "context",
        ),
        (
            [
                "ERROR: additional privileges requested",
            ],
            "privileges",
        ),
        (
            [
                "aten/src/ATen/native/Foo.hip:12:5: error: use of undeclared identifier 'bar'",
                'process "/bin/sh -c ninja" did not complete successfully: exit code: 1',
            ],
            "command",
        ),
        (["something nobody has seen before"], "unknown"),
        ([], "unknown"),
    ],
)
def test_each_cause_from_the_words_really_printed(lines: list[str], cause: str) -> None:
    why = explain(lines, 1, "snoc-think")
    assert why.cause == FailureCause(cause)
    assert why.why and why.next and why.short
    if why.evidence is not None:  # a line that was printed, its command elided, cut
        said = why.evidence.removeprefix("…").split(" … [")[0].split("…")[-1]
        assert any(said in line for line in lines), why.evidence


def test_the_command_s_own_words_are_not_a_cause() -> None:
    """A RUN script that greps for "no space left" and exits 3 failed on its own."""
    line = (
        'process "/bin/sh -c grep -q \\"no space left on device\\" /x && exit 3" did not '
        "complete successfully: exit code: 3"
    )
    why = explain([line], 1)
    assert why.cause is FailureCause.COMMAND
    assert "(exit 3)" in why.why


def test_the_compiler_s_error_line_is_the_evidence_not_the_first_output_line() -> None:
    lines = [
        "[12/400] Building HIP object caffe2/Foo.o",
        "Foo.hip:3:1: error: expected ';' after class",
        'process "/bin/sh -c ninja" did not complete successfully: exit code: 1',
    ]
    why = explain(lines, 1)
    assert why.cause is FailureCause.COMMAND
    assert why.evidence == "Foo.hip:3:1: error: expected ';' after class"
    assert "command failed (exit 1): Foo.hip:3:1" in why.why


def test_outside_text_is_sanitised_and_cut() -> None:
    hostile = "\x1b]52;c;aGk=\x07\x1b[31m[bold]error[/bold]: " + "x" * 5000
    why = explain([hostile, "exit code: 1 did not complete"], 1)
    for text in (why.why, why.next, why.evidence or ""):
        assert "\x1b" not in text and "\x07" not in text
    assert "[bold]error[/bold]" in (why.evidence or "")  # literal, never markup
    assert len(why.evidence or "") < 260 and "bytes cut]" in (why.evidence or "")


def test_a_long_line_keeps_the_words_that_decided() -> None:
    line = "ERROR: failed to solve: failed to push " + "r/" * 200 + ": connect: connection refused"
    why = explain([line], 1)
    assert why.cause is FailureCause.REGISTRY_DOWN
    assert (why.evidence or "").startswith("…") and "connection refused" in (why.evidence or "")


def test_an_exit_137_without_words_is_memory_without_evidence() -> None:
    why = explain([], 137)
    assert why.cause is FailureCause.MEMORY and why.evidence is None


def test_at_most_max_lines_are_read() -> None:
    lines = ["ok"] * MAX_LINES + ["no space left on device"]
    assert explain(lines, 1).cause is FailureCause.UNKNOWN


def test_the_tail_reader_on_a_real_recorded_log() -> None:
    """tests/data/buildkit/fail_plain.log: a real buildx 0.13 build whose RUN exits 3."""
    lines = (DATA / "fail_plain.log").read_text().splitlines()
    text = tail_text(lines)
    assert "error: something broke" in text  # the summary's output, time stamps removed
    assert not any(line.startswith(" > ") for line in text)
    why = explain(text, 1)
    assert why.cause is FailureCause.COMMAND and why.evidence == "error: something broke"
    assert "(exit 3)" in why.why


def test_a_warning_that_names_failed_is_not_the_error_line() -> None:
    """clang's `-Wpass-failed` warning came before the real error in a real demo build."""
    lines = [
        "/src/kernels.hip:412:5: warning: loop not unrolled [-Wpass-failed=transform-warning]",
        "/src/kernels.hip:87:12: error: use of undeclared identifier 'hipLaunchKernelGGLX'",
        'process "/bin/sh -c /fake-compile.sh base" did not complete successfully: exit code: 1',
    ]
    why = explain(lines, 1)
    assert why.evidence is not None and "error: use of undeclared identifier" in why.evidence
