"""The OOM count a build's supervisor keeps in the job's folder (verdicts/atstart.py): read back
tolerantly, never failing a build, and the one-shot judge's memory verdict from it (its own
window starts after the kill, so without the kept count it cannot tell)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmtui.core.verdicts import atstart
from rocmtui.core.verdicts.atstart import AT_START_FILE, oom_at_start, record_oom_at_start
from rocmtui.core.verdicts.verdict import Reading, VerdictKind
from rocmtui.core.vitals.nodevitals import NodeVitals

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ('{"oom_kills_total": 4, "taken_at": 1}', 4),
        ('{"oom_kills_total": 0}', 0),
        ('{"oom_kills_total": -1}', None),
        ('{"oom_kills_total": true}', None),
        ('{"oom_kills_total": "4"}', None),
        ("[4]", None),
        ("not json \x1b[31m", None),
    ],
)
def test_the_kept_count_is_read_back_or_none(tmp_path: Path, text: str, count: int | None) -> None:
    assert oom_at_start(tmp_path) is None  # none kept
    (tmp_path / AT_START_FILE).write_text(text)
    assert oom_at_start(tmp_path) == count


def test_the_supervisor_keeps_the_count_and_never_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocmtui.core.config.fleetfile import NodeConfig

    node = NodeConfig(name="think", docker_host="ssh://ci@think")

    async def seven(node: NodeConfig, deadline: float) -> int | str:
        return 7

    async def broken(node: NodeConfig, deadline: float) -> int | str:
        raise OSError("ssh: connection \x1b[31mrefused")

    async def unknown(node: NodeConfig, deadline: float) -> int | str:
        return "oom_kills: the engine API does not give it"

    cases = (
        (broken, "a", None, "OSError: ssh: connection"),
        (unknown, "b", None, "oom_kills: the engine API does not give it"),
        (seven, "c", 7, None),
    )
    for how, dest, kept, why in cases:
        monkeypatch.setattr(atstart, "_read_oom_count", how)
        (tmp_path / dest).mkdir()
        record_oom_at_start(node, tmp_path / dest)  # never raises
        assert oom_at_start(tmp_path / dest) == kept
        said = json.loads((tmp_path / dest / AT_START_FILE).read_text())
        if why is None:
            assert "why" not in said
        else:  # why there is no count, on one clean line
            assert said["why"].startswith(why) and "\x1b" not in said["why"], said


def test_the_one_shot_judge_reads_the_kept_count(tmp_path: Path) -> None:
    """A one-shot's window holds only readings taken now, after the kill: with the count the
    launch kept, the kill is the build's (memory); without it, it cannot be seen."""
    from rocmtui.core.config.fleetfile import parse_config
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.verdicts.context import StallJudge

    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        'stall_after_seconds = 60\n[[nodes]]\nname = "think"\ndocker_host = "ssh://ci@think"\n'
    )
    verdicts = {}
    for kept in (True, False):
        job_dir = tmp_path / f"job-{kept}"
        job_dir.mkdir()
        (job_dir / "log").write_text("#8 [demo 2/2] RUN fake-compile\n")
        if kept:
            (job_dir / AT_START_FILE).write_text('{"oom_kills_total": 2}')
        judge = StallJudge(parse_config(fleet))
        for at in (NOW - 1, NOW):
            vitals = NodeVitals(
                node="think", source="ssh", taken_at=at, engine_cpu_percent=0.0, oom_kills_total=3
            )
            judge.window.add("think", Reading(at, vitals))
        record = JobRecord(
            id=f"20270115-0800-{'abcd' if kept else 'ef01'}", target="pytorch", arch="gfx1201",
            node="think", endpoint="", push=False, overrides={}, command=(), user="ci", host="h",
            bake_file="b", job_dir=str(job_dir), started_at=NOW - 400,
        )  # fmt: skip
        verdicts[kept] = judge.verdict(record, 300, NOW)
    assert verdicts[True].kind is VerdictKind.MEMORY and verdicts[True].stalled
    assert verdicts[False].kind is VerdictKind.IDLE
