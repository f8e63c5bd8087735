"""Textual's private names, each checked by name: when a Textual upgrade renames, removes or
changes one that rocmtui relies on (rocmtui/console/textual_private.py lists them and why), the
test that fails names it and what uses it. And no module but that one touches another.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import textual

from rocmtui.console import textual_private
from rocmtui.console.textual_private import USES, PrivateUse

REPO = Path(__file__).resolve().parents[2]
TEXTUAL = Path(textual.__file__).parent
# names Textual also happens to define that rocmtui meets elsewhere, never on a Textual object
NOT_TEXTUAL = {"_value", "_exit"}  # asyncio.Semaphore._value (a test), os._exit


def resolve(dotted: str) -> object:
    """A module, or a class in one, by its dotted name."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)


def source_of(owner: object) -> str:
    """The source of a module, or of a class and its bases from Textual (an attribute may be
    set in any of them)."""
    if not inspect.isclass(owner):
        return inspect.getsource(owner)  # type: ignore[arg-type]
    mro = inspect.getmro(owner)
    return "".join(inspect.getsource(c) for c in mro if c.__module__.startswith("textual"))


@pytest.mark.parametrize("use", USES, ids=[f"{u.owner}.{u.name}" for u in USES])
def test_each_private_name_is_still_there(use: PrivateUse) -> None:
    said = f"Textual {textual.__version__} changed {use.owner}.{use.name} ({use.kind}), which "
    said += f"{use.used_by}: see rocmtui/console/textual_private.py"
    owner = resolve(use.owner)
    if use.kind in ("method", "property", "class"):
        found = inspect.getattr_static(owner, use.name, None)
        assert found is not None, said
        if use.kind == "property":
            assert isinstance(found, property), said
        elif use.kind == "class":
            assert inspect.isclass(found), said
        else:
            assert callable(found), said
            params = list(inspect.signature(found).parameters.values())[1:]
            assert [p.name for p in params[: len(use.params)]] == list(use.params), said
            rest = params[len(use.params) :]
            assert all(p.default is not p.empty or p.kind is p.VAR_KEYWORD for p in rest), said
    elif use.kind == "attribute":
        assert f"self.{use.name} =" in source_of(owner) or f"self.{use.name}:" in source_of(
            owner
        ), said
    else:  # a name written as a string in Textual's source
        assert f'"{use.name}"' in source_of(owner), said


def textual_private_names() -> set[str]:
    """Every `_name` (not dunder) Textual defines: methods, functions, attributes, classes."""
    names: set[str] = set()
    for path in TEXTUAL.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            else:
                continue
            if name.startswith("_") and not name.startswith("__"):
                names.add(name)
    return names


def own_names(roots: list[Path]) -> set[str]:
    """Every `_name` rocmtui's own code defines (so that its own `_x` is never Textual's)."""
    names: set[str] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(node.name)
    return names


def is_super(node: ast.expr) -> bool:
    """`super()`."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def test_no_module_but_textual_private_touches_textual_internals() -> None:
    """Nowhere but textual_private.py is a private module of Textual's imported or a Textual
    `_name` used; a private hook listed in `USES` may be overridden (and call `super()`'s)."""
    roots = [REPO / "rocmtui", REPO / "tests", REPO / "bench", REPO / "devfleet"]
    theirs = textual_private_names() - NOT_TEXTUAL
    listed = {u.name for u in USES}
    ours = own_names(roots) - listed
    here = Path(textual_private.__file__)
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path == here:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = path.relative_to(REPO)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textual"):
                    if any(part.startswith("_") for part in (node.module or "").split(".")):
                        found.append(f"{where}:{node.lineno}: from {node.module} import")
                elif isinstance(node, ast.Attribute) and node.attr in theirs - ours:
                    if node.attr in listed and is_super(node.value):
                        continue  # a listed hook, overridden: it calls Textual's own
                    found.append(f"{where}:{node.lineno}: .{node.attr}")
    assert not found, "Textual's private API outside textual_private.py:\n" + "\n".join(found)
