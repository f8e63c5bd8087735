"""The layers are a contract, read from the source (every import, at any depth, TYPE_CHECKING
ones included) and checked at run time:

- the core (`rocmtui.core`) imports neither Textual nor the CLI nor the console, so the CLI,
  the tests and the console can all share it;
- the CLI (`rocmtui.cli`) imports no Textual and the console only as `rocmtui.console.run`, only
  inside a function, to start it;
- widgets (`rocmtui.console.widgets`) render snapshots and post intents: they import no screen;
- intents go up to the App (one handler each; the flows they start are in
  `rocmtui.console.actions`): no screen imports another screen (the shared base
  `screens.catalog` aside), no screen, dialog or widget imports the App or the flows, and none
  reaches another screen through the App (`app.fleet_screen`, `app.logs_screen` ...);
- the console calls the core through one door (`rocmtui.console.backend`, and the launcher
  `rocmtui.console.run`); any other console module imports from the core only the
  vocabularies in `VOCABULARY` (records, words, pure rules), each with its reason;
- nothing in `rocmtui` imports the dev fleet (`devfleet`, never installed);
- neither `rocmtui` nor the dev fleet has an import cycle: every import counts, at module level,
  inside a function and under `TYPE_CHECKING` alike (a cycle hidden in a function import or
  in a type annotation is still two modules that cannot be read apart). Importing a package's
  submodule counts as importing that submodule, not the package's `__init__`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, pkgutil, sys
import rocmtui.core as core
names = [m.name for m in pkgutil.walk_packages(core.__path__, "rocmtui.core.")]
for name in names:
    importlib.import_module(name)
import rocmtui.cli.main
leaked = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print(len(names), ",".join(leaked))
"""


@dataclass(frozen=True)
class Import:
    """One import statement's target, where it is, and whether it runs only in a function."""

    module: str  # the importing module
    target: str  # what it imports (a module, or module.name)
    path: Path
    line: int
    in_function: bool

    def __str__(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}: {self.module} imports {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(package: str) -> Iterator[Import]:
    """Every import in `package`'s source, with `from X import Y` as X.Y when X.Y is a module
    of the tree (a submodule), else as X."""
    known = {module_name(p) for p in (REPO / package).rglob("*.py")}
    for path in sorted((REPO / package).rglob("*.py")):
        name = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        nested = {id(inner) for f in functions for inner in ast.walk(f) if inner is not f}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolved against this module's package
                    here = (
                        name.split(".")[: -node.level]
                        if path.name != "__init__.py"
                        else name.split(".")[: len(name.split(".")) - node.level + 1]
                    )
                    base = ".".join([*here, *([node.module] if node.module else [])])
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t for t in subs if t in known] or [base]
            else:
                continue
            for target in targets:
                yield Import(name, target, path, node.lineno, id(node) in nested)


def under(name: str, *roots: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def test_core_and_cli_never_import_textual() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert int(out[0]) >= 4  # the walk really found the core's modules
    assert len(out) == 1, f"textual imported by the core or the CLI: {out[1]}"


def test_the_layers_are_a_contract() -> None:
    broken = []
    found = list(imports("rocmtui"))
    assert len(found) > 500  # the walk really read the tree
    for imp in found:
        if under(imp.module, "rocmtui.core") and under(
            imp.target, "textual", "rocmtui.cli", "rocmtui.console"
        ):
            broken.append(f"{imp} (the core imports no Textual, CLI or console)")
        if under(imp.module, "rocmtui.cli"):
            if under(imp.target, "textual"):
                broken.append(f"{imp} (the CLI imports no Textual)")
            if under(imp.target, "rocmtui.console") and (
                not under(imp.target, "rocmtui.console.run") or not imp.in_function
            ):
                broken.append(f"{imp} (the CLI imports the console only to start it)")
        if under(imp.module, "rocmtui.console.widgets") and under(
            imp.target, "rocmtui.console.screens"
        ):
            broken.append(f"{imp} (widgets import no screen)")
        if under(imp.target, "devfleet"):
            broken.append(f"{imp} (the dev fleet is never installed)")
    assert not broken, "\n".join(broken)


SCREEN_BASE = "rocmtui.console.screens.catalog"  # what the full screens share: not a screen
OWNERS = ("rocmtui.console.app", "rocmtui.console.actions")
SCREEN_HANDLES = {
    "fleet_screen",
    "logs_screen",
    "published_screen",
    "open_logs_screen",
    "open_published_screen",
}


def test_no_screen_imports_or_reaches_another() -> None:
    broken = []
    views = ("rocmtui.console.screens", "rocmtui.console.dialogs", "rocmtui.console.widgets")
    found = [imp for imp in imports("rocmtui") if under(imp.module, *views)]
    assert any(under(imp.module, "rocmtui.console.screens") for imp in found)
    for imp in found:
        screen_target = under(imp.target, "rocmtui.console.screens") and imp.target not in (
            SCREEN_BASE,
            "rocmtui.console.screens",
        )
        if (
            under(imp.module, "rocmtui.console.screens")
            and screen_target
            and imp.target != imp.module
        ):
            broken.append(f"{imp} (a screen imports no other screen: send an intent)")
        if under(imp.module, "rocmtui.console.dialogs") and screen_target:
            broken.append(f"{imp} (a dialog imports no screen)")
        if under(imp.target, *OWNERS):
            broken.append(f"{imp} (intents go up: nothing below the App imports it)")
    for folder in ("screens", "dialogs", "widgets"):
        paths = sorted((REPO / "rocmtui" / "console" / folder).rglob("*.py"))
        assert paths, folder  # the walk really reads the views
        for path in paths:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr in SCREEN_HANDLES:
                    broken.append(
                        f"{path.relative_to(REPO)}:{node.lineno}: .{node.attr} "
                        "(a view reaches no other screen through the App)"
                    )
    assert not broken, "\n".join(broken)


def cycles(package: str) -> tuple[int, list[list[str]]]:
    """How many modules of `package` import another, and every import cycle among them."""
    graph: dict[str, set[str]] = {}
    for imp in imports(package):
        graph.setdefault(imp.module, set())
        if under(imp.target, package) and imp.target != imp.module:
            graph[imp.module].add(imp.target)
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    found: list[list[str]] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    return len(graph), found


def test_the_dev_fleet_has_no_import_cycle() -> None:
    modules, found = cycles("devfleet")
    assert modules > 10
    assert not found, "\n".join(" -> ".join(c) for c in found)


def test_rocmtui_has_no_import_cycle() -> None:
    modules, found = cycles("rocmtui")
    assert modules > 150  # the walk really read the tree
    assert not found, "\n".join(" -> ".join(c) for c in found)


DOOR = "rocmtui.console.backend"  # the console's one door to the core: it calls the core
LAUNCHER = "rocmtui.console.run"  # the console's start, before Textual: opens the feed it adopts
# What any console module may import from the core: records, words and pure rules over them,
# which read no file, start no process and open no socket or store (a widget shares them with
# the core and the CLI, so that a state or a unit reads the same everywhere).
VOCABULARY = {
    "rocmtui.core.text": "every string bound for a terminal: sanitise, SGR, units",
    "rocmtui.core.states": "the state words",
    "rocmtui.core.snapshots": "a probe round's records",
    "rocmtui.core.config.fleetfile": "the fleet file as loaded, and its tables",
    "rocmtui.core.vitals.nodevitals": "a node's vitals",
    "rocmtui.core.placement.facts": "where a build would finish first",
    "rocmtui.core.matrix.cells": "the published matrix's cells and verdict words",
    "rocmtui.core.matrix.rebuild": "which node a cell's rebuild goes to (a rule on the fleet file)",
    "rocmtui.core.versions.report": "the pinned versions' report",
    "rocmtui.core.registry.media": "media type words",
    "rocmtui.core.runs.run": "a fleet run",
    "rocmtui.core.runs.chart": "a run's bars laid out (pure)",
    "rocmtui.core.runs.scale": "a chart's scale (pure)",
    "rocmtui.core.costbook.cost": "cache conditions and cost points",
    "rocmtui.core.costbook.report": "the cost report's records",
    "rocmtui.core.history.stepreport": "a build's steps on a time axis",
    "rocmtui.core.history.stepdiff": "two builds' steps compared",
    "rocmtui.core.history.timeaxis": "a time axis's ticks (pure)",
    "rocmtui.core.history.steptrend": "a step trend's records (its loader: backend/books)",
    "rocmtui.core.progress.ninja": "ninja's line grammar",
    "rocmtui.core.jobs.command": "the bake command as shown, `--set` as typed (pure rules)",
    "rocmtui.core.jobs.checks": "the launch checks the dialog applies as the operator types",
    "rocmtui.core.jobs.refusals": "the core's refusals (exception types)",
    "rocmtui.core.paths": "where the state lives (a rule on the environment)",
    "rocmtui.core.diskroom": "a full or read-only disk, said in one line",
    # not a vocabulary: the one engine a widget drives itself. The log view reads its own
    # file on its own workers (its speed is benchmarked against tail -f and toolong)
    "rocmtui.core.logs": "the log view's engine: line index and search over a file on disk",
}


def test_the_backend_is_the_consoles_one_door_to_the_core() -> None:
    """Outside `console/backend/` (and the launcher), a console module imports from the core
    only its vocabularies; everything that reads a store, a file, an engine or a socket goes
    through the door."""
    broken = []
    found = [imp for imp in imports("rocmtui") if under(imp.module, "rocmtui.console")]
    assert any(under(imp.target, "rocmtui.core") for imp in found)  # the walk sees the core
    for imp in found:
        if not under(imp.target, "rocmtui.core") or under(imp.module, DOOR, LAUNCHER):
            continue
        if not under(imp.target, *VOCABULARY):
            broken.append(f"{imp} (through console/backend/: not a vocabulary)")
    assert not broken, "\n".join(broken)
