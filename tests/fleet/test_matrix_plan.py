"""The matrix plan from `docker buildx bake --print` (real buildx, no daemon): rows, columns,
matrix-generated names, groups; the print kept for the same file and environment; and the
WebDAV store's local sample."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rocmtui.core.bake.file import load_bake
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.diskcache import JsonCache
from rocmtui.core.matrix.plan import launch_environment, make_plan
from rocmtui.core.webdavstore import describe_store, sample_store, walk_size
from tests.support.jobs import DEMO_BAKE, ROCM_BAKE, offline_config
from tests.support.realparts import require

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"}


def test_rocm_bake_rows_are_its_eight_images_for_every_arch(tmp_path: Path) -> None:
    require("docker-buildx")
    config = load_config(offline_config(tmp_path, ROCM_BAKE))  # one node: gfx1201
    bake = load_bake(ROCM_BAKE)
    plan = make_plan(config, bake, launch_environment(config, bake, ENV))
    assert plan.errors == ()
    assert plan.arches == ("gfx950", "gfx1201", "gfx1250")
    names = [name for name, _, _ in plan.rows]
    assert names == ["base", "pytorch", "triton", "aiter", "cupy", "nixl", "vllm", "lmcache"]
    _, targets, cells = plan.rows[1]
    # the plain target, its push variant and the matrix names are one row; groups are not rows
    assert set(targets) == {
        "pytorch",
        "pytorch-push",
        "pytorch-gfx950",
        "pytorch-gfx1201",
        "pytorch-gfx1250",
    }
    cell = cells["gfx1201"]
    assert cell.tag == "snoc-strix:8080/rocm-bake/pytorch:2.15.0-rocm7.2.2-gfx1201"
    assert set(cell.targets) == {"pytorch", "pytorch-push", "pytorch-gfx1201"}
    assert cell.push_target == "pytorch-push"
    assert dict(cell.pins) == {
        "ROCM_VERSION": "7.2.2",
        "PYTHON_VERSION": "3.12",
        "PYTORCH_VERSION": "2.15.0",
    }
    assert plan.groups["gfx950"]["gfx1201"] >= {"pytorch-gfx1201", "lmcache-gfx1201"}
    assert "push" in plan.groups["gfx950"] and "default" not in plan.groups["gfx950"]


def test_the_environment_and_the_fleet_file_decide_the_tags(tmp_path: Path) -> None:
    require("docker-buildx")
    path = offline_config(tmp_path, DEMO_BAKE)
    path.write_text(path.read_text() + '\n[variables]\nREGISTRY = "127.0.0.1:5999"\n')
    config = load_config(path)
    bake = load_bake(DEMO_BAKE)
    plan = make_plan(config, bake, launch_environment(config, bake, ENV))
    assert all(tag.startswith("127.0.0.1:5999/") for tag in plan.tags())
    mine = make_plan(
        config, bake, launch_environment(config, bake, {**ENV, "REGISTRY": "10.0.0.1:5000"})
    )
    assert all(tag.startswith("10.0.0.1:5000/") for tag in mine.tags())  # the shell wins
    pinned = make_plan(
        config, bake, launch_environment(config, bake, {**ENV, "PYTORCH_VERSION": "2.16.0"})
    )
    _, _, cells = next(r for r in pinned.rows if r[0] == "demo-pytorch")
    assert cells["gfx950"].pins["PYTORCH_VERSION"] == "2.16.0"


def test_bake_is_asked_again_only_when_file_or_environment_change(tmp_path: Path) -> None:
    require("docker-buildx")
    from rocmtui.core.bake import resolve as bakeprint

    config = load_config(offline_config(tmp_path, DEMO_BAKE))
    bake = load_bake(DEMO_BAKE)
    cache = JsonCache(tmp_path / "prints")
    calls: list[int] = []
    real = bakeprint.bake_print

    def counting(*args: object, **kwargs: object) -> dict[str, object]:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    bakeprint.bake_print = counting  # type: ignore[assignment]
    try:
        first = make_plan(config, bake, launch_environment(config, bake, ENV), cache=cache)
        asked = len(calls)
        again = make_plan(config, bake, launch_environment(config, bake, ENV), cache=cache)
        assert len(calls) == asked == len(first.arches)
        assert again == first
        make_plan(
            config,
            bake,
            launch_environment(config, bake, {**ENV, "VLLM_VERSION": "0.40.0"}),
            cache=cache,
        )
        assert len(calls) == 2 * asked
    finally:
        bakeprint.bake_print = real  # type: ignore[assignment]


def test_the_store_is_sampled_locally_and_slowly(tmp_path: Path) -> None:
    store = tmp_path / "dav" / "rocm-bake"
    (store / "a" / "b").mkdir(parents=True)
    for i in range(30):
        (store / "a" / "b" / f"obj{i}").write_bytes(b"x" * 1000)
    assert walk_size(store) == (30_000, 30, True)
    cache = JsonCache(tmp_path / "cache")
    first = sample_store(store, cache, now=time.time())
    assert (first["bytes"], first["files"], first["complete"]) == (30_000, 30, True)
    assert first["disk_free"] > 0 and first["age"] == 0.0
    (store / "more").write_bytes(b"y" * 5000)
    kept = sample_store(store, cache, now=time.time() + 60)
    assert kept["bytes"] == 30_000 and kept["age"] >= 59  # reused while young
    fresh = sample_store(store, cache, max_age=0, now=time.time() + 120)
    assert fresh["bytes"] == 35_000
    assert describe_store(fresh).startswith("sccache store 34.2K (31 objects), ")
    assert sample_store(tmp_path / "nope")["error"] == "not a folder on this host"
    many = tmp_path / "many"
    many.mkdir()
    for i in range(2000):
        (many / f"d{i}").mkdir()
    _, _, complete = walk_size(many, deadline=0.0)
    assert not complete  # a deadline cuts a huge walk; the sample says it is partial


def test_a_kept_parse_is_the_parse(tmp_path: Path) -> None:
    from rocmtui.core.bake.file import BakeError
    from rocmtui.core.matrix.bakecache import load_bake_kept

    cache = JsonCache(tmp_path / "kept")
    for path in (ROCM_BAKE, DEMO_BAKE):
        fresh = load_bake_kept(path, cache)
        kept = load_bake_kept(path, cache)
        assert kept == fresh == load_bake(path)
        assert kept.arches == fresh.arches and kept.pushing_targets == fresh.pushing_targets
    copy = tmp_path / "demo.hcl"
    copy.write_text(DEMO_BAKE.read_text())
    load_bake_kept(copy, cache)
    copy.write_text(DEMO_BAKE.read_text() + '\nvariable "X" {\n  default = "1"\n')  # broken now
    try:
        load_bake_kept(copy, cache)
    except BakeError as exc:
        assert str(exc).startswith(f"{copy}:")
    else:
        raise AssertionError("a changed file must be parsed again")
