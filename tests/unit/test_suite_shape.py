"""The suite's own shape: a test module imports helpers from tests/support/, never another
test module (importing one runs its module-level code and collects its fixtures twice, and
moving or splitting it then breaks a stranger's tests)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
KINDS = ("unit", "pilot", "fleet", "e2e")


def _imported(path: Path) -> set[str]:
    """Every module `path` imports, at module level or in a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_test_module_imports_another_test_module() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)} imports {name}"
        for kind in KINDS
        for path in sorted((TESTS / kind).rglob("*.py"))
        for name in sorted(_imported(path))
        if name.split(".")[:2] in (["tests", k] for k in KINDS)
    ]
    assert not found, "move what is shared to tests/support/:\n" + "\n".join(found)


def test_support_holds_no_tests() -> None:
    tests = [
        f"{path.relative_to(TESTS.parent)}: {node.name}"
        for path in sorted((TESTS / "support").rglob("*.py"))
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    ]
    assert not tests, tests
