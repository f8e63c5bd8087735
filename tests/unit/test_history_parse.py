"""BuildKit history JSON with missing, odd or hostile fields: parsed into clear facts, never a
crash, never an escape sequence or a secret in what is stored (pure units)."""

from __future__ import annotations

import json

from rocmtui.core.history.buildx import BuildxAnswer
from rocmtui.core.history.discover import answer_note
from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.history.parse import finished_state, outside_build, parse_inspect, parse_ls
from rocmtui.core.history.rebuild import rebuild_request
from rocmtui.core.states import JobState
from tests.support.jobs import job_record

GOOD = {
    "ref": "default/default/3txt21em2c6yiiopj5a1gc88f",
    "name": "bake/rocm-bake (pytorch)",
    "status": "Running",
    "created_at": "2026-12-03T18:35:47.655309646Z",
    "total_steps": 0,
    "completed_steps": 0,
    "cached_steps": 0,
}


def test_ls_lines_that_are_odd_are_skipped_or_left_unknown() -> None:
    lines = [
        json.dumps(GOOD),
        "not json at all",
        json.dumps({"ref": 5, "status": "Running"}),  # a ref of the wrong type: skipped
        json.dumps({"ref": "../../etc/passwd\x1b[2J"}),  # not an id: skipped
        json.dumps([1, 2]),
        json.dumps(
            {
                "ref": "b/n/abc",
                "status": "Exploded",
                "total_steps": -3,
                "created_at": "yesterday",
                "name": {"x": 1},
            }
        ),
        '{"ref": "b/n/trunc',  # cut mid-line (the process was killed)
    ]
    entries = parse_ls("\n".join(lines))
    assert [e.ref for e in entries] == ["3txt21em2c6yiiopj5a1gc88f", "abc"]
    first, odd = entries
    assert first.running and first.created_at and first.completed_at is None
    assert odd.status == "error"  # an unknown word is never read as running
    assert odd.total_steps is None and odd.created_at is None and odd.name is None


def test_inspect_with_hostile_args_is_sanitised_and_redacted() -> None:
    data = {
        "Name": "bake/x (pytorch)\x1b]0;owned\x07",
        "Target": None,
        "Status": "error",
        "Duration": "soon",
        "NumTotalSteps": True,
        "BuildArgs": [
            {"Name": "GFX_ARCH", "Value": "gfx1201"},
            {"Name": "HF_TOKEN", "Value": "hf_abcdefgh"},
            {"Name": "NOTE", "Value": "copy hf_abcdefgh \x1b]52;c;aGk=\x07\x9b2J done"},
            {"Name": "EMPTY"},
            "junk",
            {"Value": "no name"},
        ],
        "Error": {"Message": "process \x1b[31mdid\x1b[0m not complete: context canceled"},
    }
    facts = outside_build("abc", None, data)
    blob = json.dumps(facts.build_args) + (facts.name or "") + (facts.error or "")
    assert "hf_abcdefgh" not in blob and "\x1b" not in blob and "\x07" not in blob
    assert "\x9b" not in blob
    assert facts.build_args["HF_TOKEN"] == "<redacted:HF_TOKEN>"
    assert facts.build_args["EMPTY"] == "" and facts.arch == "gfx1201"
    assert facts.target == "pytorch"  # from bake's record name when Target is missing
    assert facts.duration is None and facts.total_steps is None
    assert finished_state(facts.status, facts.error) is JobState.CANCELLED
    assert finished_state("error", "exit code 1") is JobState.FAILED
    assert finished_state("completed", None) is JobState.SUCCEEDED
    assert parse_inspect("[]") is None and parse_inspect("{") is None


def test_a_build_of_another_rocmtui_names_its_client() -> None:
    data = {"BuildArgs": [{"Name": "ROCMTUI_JOB", "Value": "20261203-1800-ab12"}]}
    facts = outside_build("abc", None, data)
    assert facts.client and "20261203-1800-ab12" in facts.client
    assert "20261203-1800-ab12" in facts.cancel_refusal()
    assert "only the client that started it" in OutsideBuild(ref="x").cancel_refusal()


def test_notes_say_why_history_is_not_visible() -> None:
    old = answer_note(BuildxAnswer("", "history ls: unknown method ListenBuildHistory", "no-api"))
    assert old and "not visible here" in old
    assert "no `history`" in (answer_note(BuildxAnswer("", "x", "no-command")) or "")
    broken = answer_note(BuildxAnswer("", 'history ls: ERROR: no builder "x" found', None))
    assert broken and broken.startswith("build history unavailable")
    assert answer_note(BuildxAnswer("{}", None)) is None


def test_rebuild_request_turns_an_outside_build_into_a_launch() -> None:
    facts = OutsideBuild(
        ref="abc",
        target="demo-pytorch",
        pushes=True,
        build_args={
            "GFX_ARCH": "gfx1201",
            "DEMO_STEPS": "400",
            "HF_TOKEN": "<redacted:HF_TOKEN>",
            "ROCMTUI_JOB": "x",
        },
    )
    record = job_record(
        "20261203-1800-ab12", target="demo-pytorch", node="cur", push=True, outside=facts
    )
    request = rebuild_request(record)
    assert (request.target, request.arch, request.node, request.push) == (
        "demo-pytorch", "gfx1201", "cur", True,
    )  # fmt: skip
    assert request.overrides == (("DEMO_STEPS", "400"),)
    assert request.left_out == ("HF_TOKEN",)
