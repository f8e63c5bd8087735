"""Two builds compared step by step (issue 38): steps matched by position despite expanded
args, the first miss and its reasons, "unknown" with what was compared, nothing named when
all is cached; baselines picked from the cost book; bake's metadata read for args and
materials."""

from __future__ import annotations

import json

import pytest

from rocmtui.core.costbook.book import CostRow
from rocmtui.core.costbook.cost import BuildEvidence
from rocmtui.core.history.baseline import NoBaseline, pick_baseline
from rocmtui.core.history.buildfacts import BuildFacts, from_metadata
from rocmtui.core.history.stepdiff import diff_builds
from rocmtui.core.history.stepreport import StepReport
from rocmtui.core.history.stepviews import diff_json
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.states import JobState
from tests.support.timeline import cached_after, chain, recorded_steps

T0 = 1_765_000_000.0


def facts(**args: str) -> BuildFacts:
    return BuildFacts(args=args, known=("build args", "materials"))


def test_an_arg_that_changed_is_named_with_the_first_missed_step() -> None:
    then = StepReport.build(cached_after(recorded_steps(T0), "nothing"))
    now = StepReport.build(cached_after(recorded_steps(T0), "[final 3/3] RUN", "chocolate"))
    diff = diff_builds(
        now, then, facts(FLAVOUR="chocolate", A="1"), facts(FLAVOUR="vanilla", A="1")
    )
    assert diff.first_miss is not None and diff.first_miss.key == "[final 3/3] RUN"
    assert [r.describe() for r in diff.reasons] == ["build arg FLAVOUR: vanilla → chocolate"]
    assert diff.reasons[0].in_step  # its value is in the step's (expanded) name
    assert "first miss: [final 3/3] RUN" in diff.verdict and "FLAVOUR" in diff.verdict
    missed = [s for s in diff.steps if s.missed]
    assert [s.key for s in missed] == ["[final 3/3] RUN", "exporting to image"]
    data = diff_json(diff)
    assert (
        data["first_miss"].startswith("[final 3/3] RUN")
        and data["reasons"][0]["now"] == "chocolate"
    )


def test_unchanged_is_all_cached_and_names_nothing() -> None:
    then = StepReport.build(cached_after(recorded_steps(T0), "nothing"))
    diff = diff_builds(then, then, facts(FLAVOUR="x"), facts(FLAVOUR="x"))
    assert diff.first_miss is None and diff.reasons == () and diff.all_cached
    assert diff.verdict == "all cached: nothing missed"


def test_a_miss_with_nothing_different_is_unknown_with_what_was_compared() -> None:
    then = StepReport.build(cached_after(recorded_steps(T0), "nothing"))
    now = StepReport.build(cached_after(recorded_steps(T0), "[long 1/1] RUN"))
    diff = diff_builds(now, then, facts(A="1"), facts(A="1"))
    assert diff.first_miss is not None and diff.first_miss.key == "[long 1/1] RUN"
    assert diff.verdict.endswith("why: unknown (compared build args, materials)")


def test_materials_and_sccache_are_reasons() -> None:
    then = StepReport.build(cached_after(recorded_steps(T0), "nothing"))
    now = StepReport.build(cached_after(recorded_steps(T0), "[base 2/2] RUN"))
    old = BuildFacts(materials={"pkg:docker/rocm-base@local": "sha256:aa"}, hit_rate=0.9)
    new = BuildFacts(materials={"pkg:docker/rocm-base@local": "sha256:bb"}, hit_rate=0.2)
    kinds = [(r.kind, r.then, r.now) for r in diff_builds(now, then, new, old).reasons]
    assert kinds == [("material", "sha256:aa", "sha256:bb"), ("sccache", "90%", "20%")]


def test_metadata_gives_args_redacted_and_materials() -> None:
    meta = {
        "timeline": {
            "buildx.build.provenance": {
                "materials": [{"uri": "pkg:docker/rocm-base@local", "digest": {"sha256": "ab"}}],
                "invocation": {"parameters": {"args": {
                    "build-arg:FLAVOUR": "vanilla", "build-arg:HF_TOKEN": "hf_s3cret",
                    "build-arg:NOTE": "\x1b]52;c;aGk=\x07ok", "target": "final",
                }}},
            }
        }
    }  # fmt: skip
    args, materials = from_metadata(json.dumps(meta))
    assert args["FLAVOUR"] == "vanilla" and "s3cret" not in json.dumps(args)
    assert "\x1b" not in args["NOTE"] and args["NOTE"].endswith("ok")
    assert materials == {"pkg:docker/rocm-base@local": "sha256:ab"}
    assert from_metadata("not json") == ({}, {})


def test_metadata_of_odd_shapes_gives_what_fits_and_never_raises() -> None:
    odd: list[object] = [
        {"t": {"buildx.build.provenance": {"invocation": ["not", "a", "dict"]}}},
        {"t": {"buildx.build.provenance": {"invocation": {"parameters": "args"}}}},
        {"t": {"buildx.build.provenance": {"materials": {"uri": "x"}}}},
        {"t": {"buildx.build.provenance": {"materials": 7, "invocation": None}}},
        {"t": {"buildx.build.provenance": {"materials": [
            {"uri": "pkg:a", "digest": {"sha256": 12}}, {"uri": 5, "digest": {}}, "x"]}}},
        {"t": {"buildx.build.provenance": {"invocation": {"parameters": {"args": {
            "build-arg:N": None, "build-arg:L": [1, 2]}}}}}},
        [1, 2],
        "text",
    ]  # fmt: skip
    got = [from_metadata(json.dumps(x)) for x in odd]
    assert got[4] == ({}, {"pkg:a": "sha256:12"})
    assert got[5][0] == {"N": "None", "L": "[1, 2]"}
    assert all(g == ({}, {}) for i, g in enumerate(got) if i not in (4, 5))


def row(job: str, node: str, start: float, outcome: str = "succeeded") -> CostRow:
    return CostRow(job, "timeline", "gfx1201", node, start, start + 9, 9.0, outcome, "rocmtui",
                   "ci", BuildEvidence())  # fmt: skip


def test_the_baseline_is_the_last_good_build_before_it_on_its_node() -> None:
    build = JobRecord(
        id="now", target="timeline", arch="gfx1201", node="n1", endpoint="", push=False,
        overrides={}, command=(), user="", host="", bake_file="", job_dir="/x",
        started_at=T0, state=JobState.SUCCEEDED,
    )  # fmt: skip
    rows = [
        row("old-n1", "n1", T0 - 300),
        row("newer-n2", "n2", T0 - 100),
        row("failed-n1", "n1", T0 - 50, "failed"),
        row("after", "n1", T0 + 50),
    ]
    assert pick_baseline(rows, build) == "old-n1"
    assert pick_baseline(rows[1:2], build) == "newer-n2"  # no build on its node: any node
    with pytest.raises(NoBaseline, match="no earlier successful build of timeline gfx1201"):
        pick_baseline(rows[2:], build)


def test_ten_thousand_steps_diff() -> None:
    a = StepReport.build(chain(10_000, T0))
    b = StepReport.build(chain(10_000, T0, cached_every=3))
    diff = diff_builds(a, b, BuildFacts(), BuildFacts())
    assert len(diff.steps) == 10_000
