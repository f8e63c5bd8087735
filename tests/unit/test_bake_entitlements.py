"""bake's entitlement rules as rocmtui applies them to `bake --print`'s JSON (both shapes:
buildx 0.29's objects and 0.13's `type=...,k=v` strings), and the grants that cover them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmtui.core.bake.entitlements import (
    Privilege,
    bake_checks,
    check_grants,
    granted_by,
    requested_privileges,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/proj/bk (bake's folder), tmp/pytorch (one level out of proj), tmp/cache."""
    (tmp_path / "proj" / "bk").mkdir(parents=True)
    (tmp_path / "pytorch").mkdir()
    return tmp_path


def grants(printed: dict[str, object], wd: Path) -> list[str]:
    return [p.grant for p in requested_privileges(printed, str(wd))]


TODAY = {
    "target": {
        "t": {
            "context": "../../pytorch",
            "contexts": {"other": "../../pytorch/sub", "img": "docker-image://busybox"},
            "dockerfile": "Dockerfile",
            "cache-from": [{"type": "local", "src": "../../cache"}],
            "cache-to": [{"type": "local", "dest": "../../cache"}],
            "secret": [{"id": "s", "src": "../../s.txt"}, {"id": "e", "env": "HOME"}],
            "ssh": [{"id": "k", "paths": ["../../k"]}, {"id": "default"}],
            "output": [{"type": "local", "dest": "out"}, {"type": "tar", "dest": "../t.tar"}],
            "network": "host",
            "entitlements": ["security.insecure", "device=nvidia.com/gpu=all"],
        }
    }
}
OLD = {
    "target": {
        "t": {
            "context": "../../pytorch",
            "contexts": {"other": "../../pytorch/sub"},
            "cache-from": ["type=local,src=../../cache"],
            "cache-to": ["type=local,dest=../../cache"],
            "secret": ["id=s,src=../../s.txt", "id=e,env=HOME"],
            "ssh": ["k=../../k", "default"],
            "output": ["type=local,dest=out", "type=tar,dest=../t.tar"],
        }
    }
}


def test_every_path_bake_checks_is_named_as_bake_names_it(tree: Path) -> None:
    wd = tree / "proj" / "bk"
    assert grants(TODAY, wd) == [
        "device=nvidia.com/gpu=all",
        f"fs.read={tree}/cache",  # two levels out: absolute, as bake prints it
        f"fs.read={tree}/k",
        f"fs.read={tree}/pytorch",  # the sub-context and the dockerfile are under it
        f"fs.read={tree}/s.txt",
        "fs.write=../t.tar",  # one level out: relative; out/ is inside: granted by default
        f"fs.write={tree}/cache",
        "network.host",
        "security.insecure",
        "ssh",
    ]
    # 0.13 prints no network or entitlements: the paths come out the same
    assert [g for g in grants(OLD, wd) if g.startswith(("fs", "ssh"))] == [
        g for g in grants(TODAY, wd) if g.startswith(("fs", "ssh"))
    ]


def test_loud_ones_change_the_node(tree: Path) -> None:
    loud = {p.grant for p in requested_privileges(TODAY, str(tree / "proj" / "bk")) if p.loud}
    assert loud == {
        "device=nvidia.com/gpu=all",
        "security.insecure",
        f"fs.write={tree}/cache",
        "fs.write=../t.tar",
    }


def test_a_build_inside_its_folder_asks_nothing(tree: Path) -> None:
    inside = {"target": {"a": {"context": ".", "dockerfile": "x/Dockerfile"}, "b": {}}}
    assert grants(inside, tree / "proj") == []
    remote = {"target": {"r": {"context": "https://example.invalid/repo.git"}}}
    assert grants(remote, tree / "proj") == []
    assert grants({"target": "odd"}, tree) == [] and grants({}, tree) == []


def test_a_link_into_the_folder_is_inside_and_a_link_out_is_outside(tree: Path) -> None:
    wd = tree / "proj"
    (wd / "in").symlink_to(tree / "proj" / "bk")
    (wd / "out").symlink_to(tree / "pytorch")
    assert grants({"target": {"a": {"context": "in"}}}, wd) == []
    assert grants({"target": {"a": {"context": "out"}}}, wd) == ["fs.read=../pytorch"]


def test_grants_cover_what_they_name_and_below(tree: Path) -> None:
    wd = str(tree / "proj")
    read = Privilege("fs.read", "../pytorch")
    assert granted_by(read, ["fs.read=../pytorch"], wd)
    assert granted_by(read, [f"fs.read={tree}"], wd)  # a parent
    assert granted_by(read, ["fs=../pytorch"], wd)  # read and write
    assert granted_by(read, ["fs.read=*"], wd)
    assert not granted_by(read, ["fs.write=../pytorch"], wd)
    assert not granted_by(read, ["fs.read=../pytorch/sub"], wd)  # a child grants less
    assert not granted_by(read, ["fs.read=../pytorc"], wd)  # a prefix is not a parent
    assert granted_by(Privilege("device", "a"), ["device"], wd)
    assert not granted_by(Privilege("device", "a"), ["device=b"], wd)
    assert granted_by(Privilege("network.host"), ["network.host"], wd)
    assert not granted_by(Privilege("security.insecure"), ["network.host"], wd)


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["fs.everything"], "unknown privilege 'fs.everything'"),
        (["network.host=1"], "network.host takes no value"),
        (["fs.read"], "fs.read needs a path"),
    ],
)
def test_bad_grants_are_refused_in_one_line(words: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        check_grants(words)


def test_good_grants_pass_once_each() -> None:
    words = ["fs.read=../pytorch", "network.host", "device", "fs.read=../pytorch", "fs=*"]
    assert check_grants(words) == ("fs.read=../pytorch", "network.host", "device", "fs=*")


def test_which_buildx_takes_allow_and_checks_folders() -> None:
    assert bake_checks((0, 13, 1), {}) == (False, False)  # no --allow: never pass it
    assert bake_checks((0, 19, 0), {}) == (True, False)  # folder checks only warn
    assert bake_checks((0, 29, 1), {}) == (True, True)
    assert bake_checks(None, {}) == (True, True)  # unknown: as today's
    assert bake_checks((0, 29, 1), {"BUILDX_BAKE_ENTITLEMENTS_FS": "0"}) == (True, False)
