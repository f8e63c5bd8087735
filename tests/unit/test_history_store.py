"""The store's side of builds started elsewhere, and the local build sign (pure units)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.history.localbuilds import LocalBuilds, build_reaches
from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from tests.support.jobs import job_record


def _make(job_id: str, job_dir: Path) -> JobRecord:
    return job_record(
        job_id,
        job_dir,
        target="demo-pytorch",
        node="n0",
        started_at=1.0,
        buildkit_ref="abc",
        outside=OutsideBuild(ref="abc", build_args={"GFX_ARCH": "gfx1201"}),
    )


def test_one_job_per_history_ref_whoever_discovers_it(tmp_path: Path) -> None:
    first, second = JobStore(tmp_path), JobStore(tmp_path)  # two discoverers, one state folder
    made = first.create_for_ref("abc", "n0", _make)
    assert made is not None and made.started_elsewhere
    assert second.create_for_ref("abc", "n0", _make) is None
    assert len(second.list()) == 1
    again = second.get(made.id)
    assert again.outside == made.outside and again.outside is not None
    assert again.outside.arch == "gfx1201"
    data = json.loads(made.record_path.read_text())
    assert data["started_elsewhere"] is True and data["outside"]["ref"] == "abc"
    # an own job tied to a ref is never made an outside job later
    assert first.tie_ref("own1", made.id, "n0") is True
    assert first.tie_ref("own1", made.id, "n0") is False
    assert first.create_for_ref("own1", "n0", _make) is None


def test_a_store_of_the_previous_schema_gains_the_new_columns(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    store.list()  # made at the current schema; now roll it back to version 2
    with sqlite3.connect(tmp_path / "jobs.sqlite") as conn:
        conn.execute("DROP TABLE history_refs")
        conn.execute("ALTER TABLE jobs DROP COLUMN outside")
        conn.execute("ALTER TABLE jobs DROP COLUMN buildkit_ref")
        conn.execute("PRAGMA user_version=2")
    reopened = JobStore(tmp_path)
    assert reopened.create_for_ref("abc", "n0", _make) is not None
    assert reopened.list()[0].outside is not None


def test_a_damaged_outside_column_reads_as_a_bare_outside_build(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    made = store.create_for_ref("abc", "n0", _make)
    assert made is not None
    with sqlite3.connect(tmp_path / "jobs.sqlite") as conn:
        conn.execute("UPDATE jobs SET outside = ?", ('{"ref": 5, "total_steps": "x"}',))
    got = store.get(made.id)
    assert got.started_elsewhere and got.outside is not None and got.outside.follow_note


def test_local_builds_sees_new_buildx_build_processes_only(tmp_path: Path) -> None:
    def proc(pid: int, *words: str, host: str = "") -> None:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(w.encode() for w in words))
        env = f"PATH=/bin\0DOCKER_HOST={host}\0" if host else "PATH=/bin\0"
        (tmp_path / str(pid) / "environ").write_bytes(env.encode())

    proc(1, "/sbin/init")
    proc(2, "/usr/libexec/docker/cli-plugins/docker-buildx", "buildx", "bake", "-f", "x")
    local = LocalBuilds(tmp_path)
    assert local.new_builds() == []  # what ran before the first look is not news
    proc(3, "/usr/local/lib/docker/cli-plugins/docker-buildx", "buildx", "bake", "--", "t",
         host="ssh://ci@snoc-think")  # fmt: skip
    proc(4, "/usr/local/lib/docker/cli-plugins/docker-buildx", "buildx", "ls")
    proc(5, "/usr/bin/docker", "buildx", "bake")  # the CLI itself: its plugin child counts
    assert local.new_builds() == [("ssh://ci@snoc-think", None)]
    assert local.new_builds() == []


def test_a_build_process_reaches_the_node_its_environment_names() -> None:
    think = NodeConfig(name="snoc-think", docker_host="ssh://ci@snoc-think")
    local = NodeConfig(name="snoc-strix")
    assert build_reaches(think, "ssh://ci@snoc-think", None)
    assert not build_reaches(think, "unix:///tmp/other.sock", None)
    assert not build_reaches(think, None, None)
    assert build_reaches(local, None, None)  # no DOCKER_HOST: the default engine
