"""The contributor's map names only modules that exist: CONTRIBUTING.md and README.md point a
reader at files (`core/matrix/views.py`, `probes/round.py`) and modules (`rocmtui.core.text`),
and a move that forgets them leaves a reader looking for a file that is not there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("CONTRIBUTING.md", "README.md")
EXAMPLES = {"thing.py"}  # "Add a probe" / "Add a command" name the module a reader would write

PY_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.py)\b")
DOTTED = re.compile(r"(?<![\w./-])(rocmtui(?:\.[a-z_][a-z0-9_]*)+)")
SOURCES = sorted(
    str(p.relative_to(ROOT))
    for top in ("rocmtui", "devfleet", "bench", "tests", "deploy", ".ci")
    if (ROOT / top).is_dir()
    for p in (ROOT / top).rglob("*.py")
    if "__pycache__" not in p.parts
)


def defined_names(module: Path) -> set[str]:
    """The names a module's top level binds (definitions, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def module_exists(dotted: str) -> bool:
    """`rocmtui.a.b`, or a name bound at the top of it (`rocmtui.a.b.Name`)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:n])
        for module in (base.with_suffix(".py"), base / "__init__.py"):
            if module.is_file():
                return n == len(parts) or parts[n] in defined_names(module)
    return False


@pytest.mark.parametrize("doc", DOCS)
def test_every_python_path_a_doc_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    missing = sorted(
        {
            path
            for path in PY_PATH.findall(text)
            if Path(path).name not in EXAMPLES
            and not any(src == path or src.endswith("/" + path) for src in SOURCES)
        }
    )
    assert missing == [], f"{doc} names Python files that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_module_a_doc_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    missing = sorted({name for name in DOTTED.findall(text) if not module_exists(name)})
    assert missing == [], f"{doc} names modules that do not exist: {missing}"
