#!/usr/bin/env python3
"""Issue 28's moves, as a program: `python3 restructure.py TREE`.

Every move is a `git mv`; every reference to a moved module or file is rewritten from the
tables below, in every text file git tracks (plus untracked, unignored ones): `from X import`,
`import X`, `from PKG import name` where PKG.name moved, dotted strings ("rocmtui.core.x",
patch targets, `python -m` lines), file paths (`rocmtui/core/x.py`, `core/x.py`,
`tests/test_x.py`), and `Path(__file__)` / `os.path.dirname(__file__)` depths in moved files.

Idempotent, and safe on a tree that gained files after the moves (a branch merged later that
still imports the old paths): a module whose old file is gone is not moved again, and an old
name that is also a new package's name (`rocmtui.core.config` -> the package
`rocmtui/core/config/`) is decided per reference once its old file is gone: a submodule of the
package stays, anything else (`from rocmtui.core.config import FleetConfig`) goes to the old
module's new home (`config.fleetfile`). `NAMES` renames misleading names the same way in every
file that imports them. This program's own folder is never rewritten.

Tests: the files named in TESTS go where it says; a helper module that is no test
(`tests/x_support.py`, `tests/x.py`) goes to `tests/support/x.py`. A test file this program has
never seen goes by CONTENT RULE (see `test_kind`): mentions tmux -> e2e/; drives a Pilot
(`run_test(`, `snap_compare`: a snapshot lives beside its test) -> pilot/; mentions devfleet,
blackbox, realparts, `require(`, `run_cli`, the job helpers, subprocess or dockerd -> fleet/;
otherwise unit/ (pure, fast). Snapshots recorded since join `tests/pilot/__snapshots__/`.
"""

from __future__ import annotations

import ast
import io
import re
import shutil
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

# ---- the table: old module -> new module (rocmtui) -------------------------------------------
MODULES: dict[str, str] = {
    # bake/: the bake file as written and as buildx resolves it
    "rocmtui.core.bakefile": "rocmtui.core.bake.file",
    "rocmtui.core.bakefind": "rocmtui.core.bake.find",
    "rocmtui.core.bakejson": "rocmtui.core.bake.jsonform",
    "rocmtui.core.bakemerge": "rocmtui.core.bake.merge",
    "rocmtui.core.bakemodel": "rocmtui.core.bake.model",
    "rocmtui.core.bakeprint": "rocmtui.core.bake.resolve",
    "rocmtui.core.bakescan": "rocmtui.core.bake.scan",
    # config/: the fleet file
    "rocmtui.core.config": "rocmtui.core.config.fleetfile",
    "rocmtui.core.config_remote": "rocmtui.core.config.remote",
    "rocmtui.core.config_tables": "rocmtui.core.config.tables",
    "rocmtui.core.configfind": "rocmtui.core.config.find",
    # doctor/
    "rocmtui.core.doctor": "rocmtui.core.doctor.checks",
    "rocmtui.core.doctor_fleet": "rocmtui.core.doctor.fleet",
    "rocmtui.core.doctor_units": "rocmtui.core.doctor.units",  # i29's, when merged
    # progress/: what a build log says
    "rocmtui.core.progress": "rocmtui.core.progress.tracker",
    "rocmtui.core.progress_buildkit": "rocmtui.core.progress.buildkit",
    "rocmtui.core.progress_model": "rocmtui.core.progress.model",
    "rocmtui.core.progress_ninja": "rocmtui.core.progress.ninja",
    "rocmtui.core.sccache": "rocmtui.core.progress.sccache",
    # logs/: a log file on disk, indexed and searched
    "rocmtui.core.logindex": "rocmtui.core.logs.index",
    "rocmtui.core.logsearch": "rocmtui.core.logs.search",
    "rocmtui.core.logsearch_helper": "rocmtui.core.logs.search_helper",
    "rocmtui.core.logsearch_split": "rocmtui.core.logs.search_split",
    # text/: every string bound for a terminal
    "rocmtui.core.sanitize": "rocmtui.core.text.sanitize",
    "rocmtui.core.sanitize_sgr": "rocmtui.core.text.sgr",
    "rocmtui.core.redact": "rocmtui.core.text.redact",
    "rocmtui.core.units": "rocmtui.core.text.units",
    # probes/ssh/ and the probe round
    "rocmtui.core.probes.sshdial": "rocmtui.core.probes.ssh.dial",
    "rocmtui.core.probes.sshmaster": "rocmtui.core.probes.ssh.master",
    "rocmtui.core.probes.sshadapter": "rocmtui.core.probes.ssh.adapter",
    "rocmtui.core.monitor": "rocmtui.core.probes.fleet",
    # names that mislead
    "rocmtui.core.registry.loop": "rocmtui.core.registry.pushcheck",
    "rocmtui.core.hostmonitor.links": "rocmtui.core.hostmonitor.sources",
    "rocmtui.core.jobs.logout": "rocmtui.core.jobs.linger",
    # console/backend/: the console's door to the core and its workers
    "rocmtui.console.core_access": "rocmtui.console.backend.access",
    "rocmtui.console.core_adapters": "rocmtui.console.backend.adapters",
    "rocmtui.console.model": "rocmtui.console.backend.model",
    "rocmtui.console.jobextras": "rocmtui.console.backend.jobextras",
    "rocmtui.console.refresh_loops": "rocmtui.console.backend.refresh",
    "rocmtui.console.matrix_loop": "rocmtui.console.backend.matrix_refresh",
    "rocmtui.console.matrix_child": "rocmtui.console.backend.matrix_child",
    "rocmtui.console.userthreads": "rocmtui.console.backend.userthreads",
}

# ---- names that mislead: (new module, old name) -> new name ------------------------------------
# A file that imports the name from that module (or the module that defines it) has every
# Python name token `old` renamed, but for attributes of other objects (`x.old`); strings and
# comments are left alone, but for the dotted `module.old` (a patch target).
NAMES: dict[tuple[str, str], str] = {
    ("rocmtui.core.jobs.plan", "Plan"): "LaunchPlan",
    ("rocmtui.core.matrix.plan", "Plan"): "MatrixPlan",
    ("rocmtui.core.probes.failure", "Step"): "ReachStep",
    ("rocmtui.core.hostmonitor.service", "AlreadyRunning"): "MonitorAlreadyRunning",
    ("rocmtui.core.jobs.follow", "LogFollower"): "FileTail",
    ("rocmtui.core.bake.find", "describe"): "bake_file_names",
    ("rocmtui.console.backend.refresh", "describe"): "failure_text",
    ("rocmtui.cli.configcmd", "describe"): "config_facts",
    # "link" is a network link (jobs.linkwatch); where the snapshots come from is a source
    ("rocmtui.core.hostmonitor.sources", "ProbeLink"): "ProbeSource",
    ("rocmtui.core.hostmonitor.sources", "ChildLink"): "ChildSource",
    ("rocmtui.core.hostmonitor.sources", "SocketLink"): "SocketSource",
    ("rocmtui.core.hostmonitor.sources", "open_link"): "open_source",
    ("rocmtui.core.hostmonitor.sources", "as_link"): "as_source",
}

# new packages' __init__ docstrings (written only when the __init__ does not exist yet); the
# __init__s import nothing, so importing one module of a package loads only that module
PACKAGES: dict[str, str] = {
    "rocmtui/core/bake": "The bake file: as written (`file`: variables, targets, groups; `scan`, "
    "`jsonform`, `merge`, `model`), where it is (`find`), and as buildx resolves it (`resolve`: "
    "`docker buildx bake --print`).",
    "rocmtui/core/config": "The fleet file (TOML): where it is (`find`), its settings "
    "(`fleetfile`: `FleetConfig`, `load_config`), its tables (`tables`, `remote`), validated "
    "with one-line errors that name the file, the line and the key (`validate`).",
    "rocmtui/core/doctor": "`rocmtui doctor`: each check a one-line verdict (`checks`: "
    "`Finding`, `run_checks`; the fleet's checks in `fleet`).",
    "rocmtui/core/progress": "What a build log says: BuildKit steps (`buildkit`), ninja's counter "
    "and rates (`ninja`), sccache's statistics (`sccache`), fed line by line into "
    "`tracker.ProgressTracker`, which publishes the frozen `model`.",
    "rocmtui/core/logs": "A log file on disk: a line index that never holds the lines (`index`), "
    "regex search over the whole file (`search`), shared with a helper process "
    "(`search_split`, `search_helper`).",
    "rocmtui/core/text": "Every string bound for a terminal: the one sanitiser (`sanitize`, its "
    "SGR state in `sgr`), redaction of secrets (`redact`), how every unit reads (`units`).",
    "rocmtui/core/probes/ssh": "ssh:// engines over the system's OpenSSH: one kept master "
    "connection per node (`master`), dial-stdio sessions over it (`dial`), and the requests "
    "adapter that lets the docker SDK use them (`adapter`).",
    "rocmtui/console/backend": "The console's backend: its one door to the core (`access`), the "
    "core's records as the console's views (`adapters`, `model`, `jobextras`), the workers' "
    "loops (`refresh`, `matrix_refresh`, `matrix_child`) and their threads (`userthreads`). "
    "No Textual widget lives here.",
    "tests/unit": "Core units: pure and fast (`make test-unit`).",
    "tests/pilot": "The console driven by Textual's Pilot, and SVG snapshots.",
    "tests/fleet": "Tests against real parts: dockerd, buildx, the registry, nginx, the CLI as a "
    "process.",
    "tests/e2e": "End-to-end: the console in tmux, the wheel, the monitor on the real fleet.",
    "tests/support": "Helpers that hold no tests: black-box drivers, real parts, stand-ins.",
}

# ---- tests: old -> new (module paths under tests) --------------------------------------------
SUPPORT: dict[str, str] = {
    "tests.blackbox": "tests.support.blackbox",
    "tests.realparts": "tests.support.realparts",
    "tests.registry_support": "tests.support.registry",
    "tests.upstream_standin": "tests.support.upstream_standin",
    "tests.test_jobs_support": "tests.support.jobs",
    "tests.snapshots": "tests.support.snapshots",  # a folder
}
RENAMED_TESTS: dict[str, str] = {  # files named after review rounds, named for what they test
    "test_console_trust": "test_console_refusals",
    "test_console_clarity": "test_console_wording",
    "test_console_walks": "test_console_key_walks",
}
UNIT = """app_model bake_reader digests logindex logindex_search logsearch_split logview_cache
logview_follower logview_render logview_search logview_status monitor_metrics performance
probe_gate progress progress_ninja records redact sanitize sccache units config
layering textual_private versions remote_units"""
PILOT = """app_faults app_fleet app_footer app_logpane_fleet app_prefs app_published app_snapshots
app_status app_table console_clarity console_intents console_layout console_trust console_walks
fleet_first_frame fleet_without_nodes logview logview_keys logview_many"""
E2E = """console_log_panes e2e_monitor e2e_published e2e_tmux remote_tmux wheel"""
TESTS: dict[str, str] = {}
for _kind, _names in (("unit", UNIT), ("pilot", PILOT), ("e2e", E2E)):
    TESTS.update({f"test_{n}": _kind for n in _names.split()})
# every other test_*.py that exists today goes to fleet/ (they start real parts); one that
# appears later goes by test_kind()
DIR_MOVES: dict[str, str] = {"tests/__snapshots__": "tests/pilot/__snapshots__"}


def test_kind(text: str) -> str:
    """The folder of a test file this table does not name, from what it uses."""
    if "tmux" in text:
        return "e2e"
    if "run_test(" in text or "snap_compare" in text:  # a snapshot's folder is the test's
        return "pilot"
    if re.search(
        r"devfleet|blackbox|realparts|require\(|run_cli|test_jobs_support|support\.jobs|"
        r"subprocess|dockerd",
        text,
    ):
        return "fleet"
    return "unit"


# this program's own folder: its tables name the old modules on purpose
SELF = "tools/restructure/"
TEXT_SUFFIXES = {".py", ".toml", ".md", ".cfg", ".ini", ".txt", ".sh", ".yml", ".yaml", ".hcl"}
TEXT_NAMES = {"Makefile", "run", "install-system"}


def git(tree: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), *args], check=True, capture_output=True, text=True
    ).stdout


def mod_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def plan_moves(tree: Path) -> tuple[dict[str, str], list[tuple[str, str]], set[str]]:
    """The module table for this tree (rocmtui and tests), the file moves to make, and the old
    names to rewrite (all but those that are also a new package's name once the old file is
    gone)."""
    table = dict(MODULES)
    moves: list[tuple[str, str]] = []
    for old, new in MODULES.items():
        if (tree / mod_path(old)).is_file():
            moves.append((mod_path(old), mod_path(new)))
    # tests
    for old, new in SUPPORT.items():
        table[old] = new
        src = old.replace(".", "/")
        if (tree / (src + ".py")).is_file():
            moves.append((src + ".py", new.replace(".", "/") + ".py"))
        elif (tree / src).is_dir():
            moves += dir_move(tree, src, new.replace(".", "/"))
    tests = tree / "tests"
    for path in sorted(tests.glob("*.py")):  # a helper added later: support/, named for its job
        stem = path.stem
        if stem.startswith("test_") or stem in ("conftest", "__init__") or f"tests.{stem}" in table:
            continue
        new = f"tests.support.{stem.removesuffix('_support')}"
        table[f"tests.{stem}"] = new
        moves.append((f"tests/{stem}.py", new.replace(".", "/") + ".py"))
    for path in sorted(tests.glob("test_*.py")):
        stem = path.stem
        if f"tests.{stem}" in table:
            continue
        kind = TESTS.get(stem) or ("fleet" if stem in KNOWN_FLEET else None)
        if kind is None:
            kind = test_kind(path.read_text(encoding="utf-8", errors="replace"))
        new_stem = RENAMED_TESTS.get(stem, stem)
        table[f"tests.{stem}"] = f"tests.{kind}.{new_stem}"
        moves.append((f"tests/{stem}.py", f"tests/{kind}/{new_stem}.py"))
    # tests already moved by an earlier run: their old names still rewrite (idempotent)
    for stem, kind in TESTS.items():
        table.setdefault(f"tests.{stem}", f"tests.{kind}.{RENAMED_TESTS.get(stem, stem)}")
    for stem in KNOWN_FLEET:
        table.setdefault(f"tests.{stem}", f"tests.fleet.{stem}")
    for old, new in DIR_MOVES.items():
        if (tree / old).is_dir():
            moves += dir_move(tree, old, new)
    new_names = set(table.values())
    new_packages = {n.rsplit(".", 1)[0] for n in new_names}
    active = {old for old in table if old not in new_packages or (tree / mod_path(old)).is_file()}
    return table, moves, active


def package_children(tree: Path, table: dict[str, str]) -> dict[str, set[str]]:
    """For each old name that is also a new package's name (`rocmtui.core.config`) and whose
    old file is gone: the package's submodules (from the tree and from the table). A reference
    to one of them is to the package; any other is to the old module's new home."""
    new_packages = {n.rsplit(".", 1)[0] for n in table.values()}
    out: dict[str, set[str]] = {}
    for old in table:
        if old not in new_packages or (tree / mod_path(old)).is_file():
            continue
        folder = tree / old.replace(".", "/")
        kids = {n.rsplit(".", 1)[1] for n in table.values() if n.rsplit(".", 1)[0] == old}
        if folder.is_dir():
            kids |= {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
            kids |= {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
        out[old] = kids
    return out


def dir_move(tree: Path, old: str, new: str) -> list[tuple[str, str]]:
    """A folder's move; once moved, what came since at the old place joins it file by file."""
    if not (tree / new).is_dir():
        return [(old, new)]
    return [
        (str(f.relative_to(tree)), f"{new}/{f.relative_to(tree / old)}")
        for f in sorted((tree / old).rglob("*"))
        if f.is_file() and "__pycache__" not in f.parts
    ]


KNOWN_FLEET = """test_bake_buildx test_bake_demo test_bake_files test_config_lookup test_matrix_plan
test_bake_vars_cli test_child_imports
test_cli_exit_codes test_cli_main test_cli_policy test_cli_scripts test_deploy test_devfleet
test_doctor test_fleet_variables test_jobs_fleet test_jobs_fulldisk test_jobs_launch
test_jobs_logs test_jobs_noarch test_jobs_plan test_jobs_store test_jobs_supervisor
test_jobs_targets test_logsearch_grep test_logview_pty test_matrix_faults test_matrix_fleet
test_monitor_attach_imports test_monitor_host test_monitor_log test_monitor_ownchild
test_monitor_prometheus test_monitor_sccache test_probe_fleet test_probe_node
test_probe_services test_registry_client test_remote_jobs test_remote_probes
test_sanitize_pty test_status_cli""".split()


# ---- rewriting -------------------------------------------------------------------------------
def dotted_regex(names: set[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])({alts})(?![\w])")


def rewrite_from_imports(
    text: str, table: dict[str, str], active: set[str], children: dict[str, set[str]]
) -> str:
    """`from PKG import a, b as c` where PKG.a moved: one `from NEWPARENT import LEAF as a` line
    for each moved name; the rest keep their statement. Where PKG is an old module that is now a
    package of the same name (`children`): `from PKG import x` of a name that is no submodule
    comes from the old module's new home. Where PKG.a is such a package and the file reads
    `a.x` of a name that is no submodule, `a` is the old module's new home."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        moved, kept = [], []
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            local = alias.asname or alias.name
            if full in active and full in table:
                moved.append((alias, table[full]))
            elif full in children and _reads_old_module(text, local, children[full]):
                moved.append((alias, table[full]))
            elif node.module in children and alias.name not in children[node.module]:
                moved.append((alias, f"{table[node.module]}.{alias.name}"))
            else:
                kept.append(alias)
        if not moved:
            continue
        indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]
        out = []
        if kept:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
            out.append(f"{indent}from {node.module} import {names}\n")
        for alias, new in moved:
            parent, leaf = new.rsplit(".", 1)
            local = alias.asname or alias.name
            tail = "" if local == leaf else f" as {local}"
            out.append(f"{indent}from {parent} import {leaf}{tail}\n")
        assert node.end_lineno is not None
        edits.append((node.lineno - 1, node.end_lineno, "".join(out)))
    for start, end, new_text in sorted(edits, reverse=True):
        lines[start:end] = [new_text]
    return "".join(lines)


def _reads_old_module(text: str, local: str, kids: set[str]) -> bool:
    attrs = set(re.findall(rf"(?<![\w.]){re.escape(local)}\.(\w+)", text))
    return bool(attrs - kids)


def path_forms(table: dict[str, str], active: set[str]) -> list[tuple[re.Pattern[str], str]]:
    subs = []
    for old, new in table.items():
        if old not in active and not old.startswith("rocmtui."):  # `x.py` is never a package
            continue
        o, n = old.replace(".", "/"), new.replace(".", "/")
        if o.startswith("rocmtui/"):
            so, sn = o[len("rocmtui/") :], n[len("rocmtui/") :]
            subs.append((re.compile(rf"(?<![\w./-])(rocmtui/)?{re.escape(so)}\.py\b"), sn))
        else:
            subs.append((re.compile(rf"(?<![\w./-]){re.escape(o)}(\.py)?(?!\w)"), n))
    return subs


def joined_moves(table: dict[str, str]) -> list[tuple[re.Pattern[str], str]]:
    """A moved tests path written as joined parts (`"tests" / "snapshots"`): the new parts."""
    out = []
    pairs = [(o.replace(".", "/"), n.replace(".", "/")) for o, n in table.items()]
    pairs += list(DIR_MOVES.items())
    for o, n in pairs:
        if not o.startswith("tests/"):
            continue
        for suffix in (".py",) if not o.endswith("snapshots") and "__" not in o else ("",):
            old_parts = (o + suffix).split("/")
            new_parts = (n + suffix).split("/")
            rx = r"\s*/\s*".join(rf"([\"']){re.escape(p)}\{i + 1}" for i, p in enumerate(old_parts))
            out.append((re.compile(rx), " / ".join(f'"{p}"' for p in new_parts)))
    return out


def rewrite_text(
    text: str,
    table: dict[str, str],
    active: set[str],
    is_py: bool,
    children: dict[str, set[str]] | None = None,
) -> str:
    children = children or {}
    rx = dotted_regex(active)
    text = rx.sub(lambda m: table[m.group(1)], text)
    if children:  # `rocmtui.core.config.X`: the package's X, or the old module's X
        after = re.compile(r"\.(\w+)|\s+import\b")

        def sub_child(m: re.Match[str]) -> str:
            old = m.group(1)
            nxt = after.match(text, m.end())
            if nxt is None or nxt.group(1) is None:
                # `from PKG import` (the statement pass decides) or the bare name (the package)
                return old
            return old if nxt.group(1) in children[old] else table[old]

        text = dotted_regex(set(children)).sub(sub_child, text)
    for pattern, new in path_forms(table, active):
        text = pattern.sub(
            lambda m, new=new: (
                (m.group(1) or "") + new + ".py"
                if m.re.pattern.endswith(r"\.py\b")
                else new + (m.group(1) or "")
            ),
            text,
        )
    for o, n in joined_moves(table):  # ROOT / "tests" / "snapshots" / ...
        text = o.sub(n, text)
    for old, new in RENAMED_TESTS.items():  # a renamed test named bare in prose
        text = re.sub(rf"(?<![\w/.]){old}(?!\w)", new, text)
    if is_py:  # after the dotted names: a statement it writes holds only new names
        text = rewrite_from_imports(text, table, active, children)
    return text


def fstring_edits(
    tok: tokenize.TokenInfo, todo: dict[str, str]
) -> list[tuple[tuple[int, int], str, str]]:
    """The bare names to rename inside an f-string's `{...}` fields (one line only)."""
    if tok.start[0] != tok.end[0]:
        return []
    out = []
    body = re.sub(r"\{\{|\}\}", "__", tok.string)  # escaped braces are no fields
    for field in re.finditer(r"\{[^{}]*\}", body):
        for m in re.finditer(r"(?<![\w.])(\w+)(?!\w)", field.group()):
            if m.group(1) in todo:
                col = tok.start[1] + field.start() + m.start(1)
                out.append(((tok.start[0], col), m.group(1), todo[m.group(1)]))
    return out


def script_edits(tok: tokenize.TokenInfo) -> list[tuple[tuple[int, int], str, str]]:
    """In a string holding Python source (`python -c` in a test): the names it imports from a
    module in `NAMES`, renamed wherever the string uses them bare."""
    todo = {
        old: new
        for (where, old), new in NAMES.items()
        for m in re.finditer(rf"from {re.escape(where)} import ([^\n]+)", tok.string)
        if re.search(rf"(?<![\w.]){old}(?!\w)", m.group(1))
    }
    out = []
    for m in re.finditer(r"(?<![\w.])(\w+)(?!\w)", tok.string):
        if m.group(1) in todo:
            before = tok.string[: m.start()]
            row = tok.start[0] + before.count("\n")
            col = (
                m.start() - (before.rfind("\n") + 1) if "\n" in before else tok.start[1] + m.start()
            )
            out.append(((row, col), m.group(1), todo[m.group(1)]))
    return out


def rename_names(text: str, module: str | None) -> str:
    """`NAMES` applied to one Python file (`module`: its own dotted name)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    todo: dict[str, str] = {  # names used bare in this file
        old: new for (where, old), new in NAMES.items() if where == module
    }
    statements: list[tuple[int, int, dict[str, str]]] = []  # an import's own lines
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
            continue
        here = {
            a.name: NAMES[(node.module, a.name)]
            for a in node.names
            if (node.module, a.name) in NAMES
        }
        if here:
            assert node.end_lineno is not None
            statements.append((node.lineno, node.end_lineno, here))
            todo.update(
                {a.name: here[a.name] for a in node.names if a.name in here and not a.asname}
            )
    lines = text.splitlines(keepends=True)
    edits: list[tuple[tuple[int, int], str, str]] = []
    after_dot = False  # `x.old` is some other object's attribute
    own = {old for (where, old) in NAMES if where == module}  # `__all__ = ["old"]`
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and not after_dot:
            row = tok.start[0]
            scope = next((m for a, b, m in statements if a <= row <= b), todo)
            if tok.string in scope:
                edits.append((tok.start, tok.string, scope[tok.string]))
        elif tok.type == tokenize.STRING and tok.string[1:-1] in own and tok.string[0] in "\"'":
            name = tok.string[1:-1]
            edits.append(((tok.start[0], tok.start[1] + 1), name, todo[name]))
        elif tok.type == tokenize.STRING and todo and re.match(r"(?i)[rb]?f", tok.string):
            edits += fstring_edits(tok, todo)  # a 3.11 f-string is one token
        elif tok.type == tokenize.STRING and " import " in tok.string:
            edits += script_edits(tok)  # a script run by a test: its own imports decide
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            after_dot = tok.type == tokenize.OP and tok.string == "."
    for (row, col), old, new in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old) :]
    out = "".join(lines)
    for (where, old), new in NAMES.items():  # dotted: patch targets, `module.old` in prose
        out = re.sub(rf"(?<![\w.]){re.escape(where)}\.{old}(?!\w)", f"{where}.{new}", out)
    return out


PARENTS = re.compile(r"Path\(__file__\)(\.resolve\(\))?((?:\.parent(?!s))+|\.parents\[(\d+)\])")
DIRNAME = re.compile(r"((?:os\.path\.dirname\()+)(os\.path\.abspath\(__file__\))(\)+)")


def fix_depths(text: str, old: str, new: str, dir_moves: dict[str, str]) -> str:
    """`Path(__file__)...parents[N]` and `os.path.dirname(...(__file__))` in a file moved from
    `old` to `new`: the same folder as before (or its moved self)."""
    oldp, newp = Path(old), Path(new)

    def target_depth(levels: int) -> int | None:
        target = oldp.parents[levels - 1]
        t = str(target)
        for a, b in dir_moves.items():
            if t == a or t.startswith(a + "/"):
                t = b + t[len(a) :]
        for k, p in enumerate(newp.parents, start=1):
            if str(p) == t:
                return k
        return None

    def sub_path(m: re.Match[str]) -> str:
        levels = m.group(2).count(".parent") if m.group(3) is None else int(m.group(3)) + 1
        k = target_depth(levels)
        if k is None or k == levels:
            return m.group(0)
        return f"Path(__file__){m.group(1) or ''}.parents[{k - 1}]"

    def sub_dirname(m: re.Match[str]) -> str:
        levels = m.group(1).count("dirname(")
        k = target_depth(levels)
        if k is None or k == levels:
            return m.group(0)
        return "os.path.dirname(" * k + m.group(2) + ")" * (len(m.group(3)) - levels + k)

    return DIRNAME.sub(sub_dirname, PARENTS.sub(sub_path, text))


def wrap_long(text: str, before: set[str], width: int = 100) -> str:
    """A comment or docstring line this program made longer than `width`: broken at its last
    space (a comment goes on as a comment at the same indentation)."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    in_string: set[int] = set()
    for tok in toks:
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            in_string.update(range(tok.start[0], tok.end[0] + 1))
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        while len(line) > width and line not in before:
            stripped = line.lstrip()
            indent = line[: len(line) - len(stripped)]
            comment = stripped.startswith("#")
            if not comment and number not in in_string:
                break
            cut = line.rfind(" ", len(indent) + 4, width + 1)
            if cut <= len(indent) + 4:
                break
            out.append(line[:cut])
            line = indent + ("# " if comment else "") + line[cut + 1 :]
        out.append(line)
    return "\n".join(out)


def tracked_files(tree: Path) -> list[Path]:
    out = git(tree, "ls-files", "-co", "--exclude-standard")
    return [tree / p for p in out.splitlines() if (tree / p).is_file()]


def message() -> str:
    """The commit message of the moves: the table, and that a program made them."""
    lines = [
        "moves only: core in packages by concern, the console's backend in a folder, tests by kind",
        "",
        "Produced by a program; no hand edits: python3 tools/restructure/restructure.py TREE,",
        "which git-mv's each file and rewrites every import, dotted",
        "module path, patch target, python -m line, file path and __file__ depth from this table,",
        "then sorts imports and formats the files it changed with the project's ruff.",
        "",
    ]
    lines += [f"  {o} -> {n}" for o, n in {**MODULES, **SUPPORT}.items()]
    lines += [f"  tests.{o} -> {n} (named for what it tests)" for o, n in RENAMED_TESTS.items()]
    lines += [
        "  tests/test_*.py -> tests/{unit,pilot,fleet,e2e}/ by the program's TESTS table; a test",
        "  file it has never seen by its content (test_kind)",
        "  tests/__snapshots__ -> tests/pilot/__snapshots__",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["--message"]:
        print(message(), end="")
        return 0
    tree = Path(sys.argv[1]).resolve()
    table, moves, active = plan_moves(tree)
    children = package_children(tree, table)
    dir_moves = {a: b for a, b in moves if (tree / a).is_dir()} | {
        a: b for a, b in DIR_MOVES.items()
    }
    moved_files: dict[str, str] = {}
    for src, dst in moves:
        (tree / dst).parent.mkdir(parents=True, exist_ok=True)
        if (tree / src).is_dir():
            for f in (tree / src).rglob("*"):
                if f.is_file():
                    rel = str(f.relative_to(tree))
                    moved_files[dst + rel[len(src) :]] = rel
        else:
            moved_files[dst] = src
        git(tree, "mv", src, dst)
        print(f"git mv {src} {dst}")
    for folder, doc in PACKAGES.items():
        init = tree / folder / "__init__.py"
        if (tree / folder).is_dir() and not init.exists():
            body = textwrap.fill(doc, width=96)
            init.write_text(f'"""{body}"""\n' if "\n" not in body else f'"""{body}\n"""\n')
            git(tree, "add", str(init.relative_to(tree)))
            print(f"wrote {init.relative_to(tree)}")
    changed = 0
    changed_py: list[str] = []
    for path in tracked_files(tree):
        rel = str(path.relative_to(tree))
        if rel.startswith((".venv", ".fleet", "screenshots/", "bench/results", SELF)):
            continue
        if path.suffix not in TEXT_SUFFIXES and path.name not in TEXT_NAMES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite_text(text, table, active, path.suffix == ".py", children)
        if path.suffix == ".py":
            module = rel[:-3].replace("/", ".") if rel.startswith("rocmtui/") else None
            new = rename_names(new, module)
        if path.suffix == ".py" and rel in moved_files:
            new = fix_depths(new, moved_files[rel], rel, dir_moves)
        if path.suffix == ".py" and new != text:
            new = wrap_long(new, set(text.split("\n")))
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed_py += [rel] if path.suffix == ".py" else []
            changed += 1
    print(f"{len(moves)} moves, {changed} files rewritten")
    ruff = tree / ".venv" / "bin" / "ruff"
    ruff_cmd = str(ruff) if ruff.exists() else shutil.which("ruff")
    if ruff_cmd and changed_py:  # import order and wrapping as the project's own ruff has them
        subprocess.run([ruff_cmd, "check", "-q", "--select", "I", "--fix", *changed_py], cwd=tree)
        subprocess.run([ruff_cmd, "format", "-q", *changed_py], cwd=tree)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
