"""`normalise_printed` reads `bake --print` as buildx 0.13.1 and 0.29.1 print it (recorded in
tests/data/bakeprint/ from tests/bakefiles and bake/*.hcl) into one shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocmtui.core.bake.resolve import normalise_printed, printed_entry
from rocmtui.core.jobs.printed import printed_pushes

DATA = Path(__file__).parents[1] / "data" / "bakeprint"
NAMES = sorted({p.name.rsplit("-", 1)[0] for p in DATA.glob("*.json")})
VERSIONS = ("0.13.1", "0.29.1")


def _load(name: str, version: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}-{version}.json").read_text("utf-8"))
    return data


def test_entries_in_both_shapes_read_alike() -> None:
    assert printed_entry("type=registry,ref=r/c:x,mode=max") == "type=registry,ref=r/c:x,mode=max"
    assert printed_entry({"mode": "max", "ref": "r/c:x", "type": "registry"}) == (
        "type=registry,ref=r/c:x,mode=max"
    )
    assert printed_entry({"push": "true", "type": "image"}) == "type=image,push=true"
    assert printed_entry({"type": "image", "name": "a,b"}) == 'type=image,"name=a,b"'


def test_escaped_interpolation_is_unescaped() -> None:
    printed = {"target": {"t": {"args": {"X": "a $${b} %%{c}"}, "output": [{"type": "cacheonly"}]}}}
    body = normalise_printed(printed)["target"]["t"]
    assert body == {"args": {"X": "a ${b} %{c}"}, "output": ["type=cacheonly"]}


@pytest.mark.parametrize("name", NAMES)
def test_both_versions_normalise_to_the_same_outputs_and_pushes(name: str) -> None:
    old, new = (normalise_printed(_load(name, v)) for v in VERSIONS)
    assert set(old["target"]) == set(new["target"])
    pushing = 0
    for target, body in old["target"].items():
        other = new["target"][target]
        for key in ("output", "cache-to", "cache-from", "args", "tags", "contexts"):
            assert body.get(key) == other.get(key), (target, key)
        assert all(isinstance(o, str) for o in other.get("output", []))
        assert printed_pushes(body) == printed_pushes(other)
        pushing += printed_pushes(other)
    if name in ("rocm-bake", "demo", "inherits", "matrix"):
        assert pushing  # the push targets are still seen as pushing on both
