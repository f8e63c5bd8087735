"""Records with fields that are no part of what they say (rocmtui.core.records): where a bake
declaration was read from, the core plan a dialog's view was made from, the environment (and
its secrets) a launch plan carries."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from rocmtui.console.backend.views import BakePlan
from rocmtui.core.bake.targets import BakeTarget, BakeVariable


def test_a_declaration_is_what_it_says_wherever_it_was_read() -> None:
    here = BakeVariable("ROCM_VERSION", "7.2.2", '"7.2.2"', 3, Path("docker-bake.hcl"))
    there = BakeVariable("ROCM_VERSION", "7.2.2", '"7.2.2"', 3, Path("override.hcl"))
    other = BakeVariable("ROCM_VERSION", "7.2.3", '"7.2.3"', 3, Path("docker-bake.hcl"))
    assert here == there and hash(here) == hash(there)
    assert here != other
    assert "override.hcl" in repr(there)  # shown, only not compared
    target = BakeTarget("base", 5, (), (), False, None, path=Path("a.hcl"))
    assert target == BakeTarget("base", 5, (), (), False, None, path=Path("b.hcl"))
    assert target != BakeTarget("base", 5, (), (), True, None, path=Path("a.hcl"))
    assert target != here  # another type never equals


def test_a_plan_view_is_what_it_shows_not_the_core_plan_behind_it() -> None:
    shown = BakePlan("demo-base", "gfx1201", "snoc-think", False, ready=True)
    behind = replace(shown, core_plan=object())  # the core's Plan it was made from
    assert shown == behind and hash(shown) == hash(behind)
    assert "core_plan" not in repr(behind)
    assert shown != replace(shown, push=True)
