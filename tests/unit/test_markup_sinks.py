"""No outside text reaches a markup parser: the console's source, read as a tree (issue 37).

Textual parses a plain `str` as markup wherever it is shown: border titles and subtitles,
tooltips, Static and Label contents, `update`, notifications (unless `markup=False`), select
options, palette hits. A build's name holding `x[/]` ended the console there; `[@click=...]`
became an action. The rule, one mechanism for the whole console: such a place is given a string
literal or an object no parser reads (a rich `Text` or a Textual `Content`, which outside text
becomes through `rocmtui.console.outside_text.safe`/`literal`); `notify` and a widget made with
`markup=False` may take a `str`. This test walks every module of `rocmtui/console` for those
places and fails on one fed anything it cannot show to be a literal or such an object: a new
call site either follows the rule or is named here with its reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import rocmtui.console

CONSOLE = Path(rocmtui.console.__file__).parent

# attributes whose setter parses a str as markup
SINK_ATTRIBUTES = {"border_title", "border_subtitle", "tooltip", "label", "sub_title"}
# keyword arguments that take what is shown
SINK_KEYWORDS = {"border_title", "border_subtitle", "tooltip", "label", "prompt"}
# constructors and methods whose first argument is shown (markup unless `markup=False`)
SINK_CALLS = {
    "Static", "Label", "Button", "Option", "Hit", "DiscoveryHit", "SystemCommand", "TabPane",
    "Tab", "update", "notify", "add_row", "add_column", "update_cell", "from_markup", "write",
    "add_option", "Notification", "Tree", "add_leaf", "set_label",
}  # fmt: skip
# ... and those whose first argument is a list of (prompt, value) pairs
OPTION_CALLS = {"Select", "set_options"}
# what makes an object no markup parser reads (or a literal-only string)
SAFE_MAKERS = {"safe", "literal", "markup_escaped", "Text", "Content", "assemble", "from_rich_text"}
# calls named like a sink that show nothing: (module, receiver as written, method)
NOT_WIDGETS = {
    ("stylesheets.py", "sheet", "update"),  # a Stylesheet re-applied to the app
    ("screens/fleet.py", "self.alarms", "update"),  # the alarms' bookkeeping, fed job views
    ("performance.py", "TEXTUAL_STRIP", "update"),  # a dict
    ("widgets/logview/follower.py", "self", "notify"),  # the follower's callback, given events
}


@dataclass(frozen=True)
class Finding:
    """One place that takes markup and is fed something the walk cannot show to be safe."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _returns_object(modules: dict[str, ast.Module]) -> set[str]:
    """Names of the console's functions whose return annotation is a Text or a Content (and
    never a str): a call to one is safe."""
    names: set[str] = set()
    for tree in modules.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
                ann = ast.unparse(node.returns)
                if ("Text" in ann or "Content" in ann) and "str" not in ann:
                    names.add(node.name)
    return names


class Walk:
    """The walk of one module: where each name got its value, and whether that is safe."""

    def __init__(self, rel: str, tree: ast.Module, object_makers: set[str]) -> None:
        self.rel = rel
        self.tree = tree
        self.makers = SAFE_MAKERS | object_makers
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent

    def function_of(self, node: ast.AST) -> ast.AST:
        """The function (or the module) a node sits in."""
        at: ast.AST | None = node
        while at is not None and not isinstance(at, ast.FunctionDef | ast.AsyncFunctionDef):
            at = self.parents.get(at)
        return at if at is not None else self.tree

    def values_of(self, name: str, scope: ast.AST) -> list[ast.expr] | None:
        """Every value `name` is given in `scope` (None: a parameter or annotation says what
        it is; a `str` parameter gives a Constant-free marker)."""
        found: list[ast.expr] = []
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            for arg in (*scope.args.args, *scope.args.kwonlyargs, *scope.args.posonlyargs):
                if arg.arg == name:
                    ann = ast.unparse(arg.annotation) if arg.annotation else "str"
                    return None if ("Text" in ann or "Content" in ann) and "str" not in ann else []
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        found.append(node.value)
                    elif isinstance(target, ast.Tuple):
                        names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
                        if name in names:  # the matching element, else the whole value
                            value = node.value
                            if isinstance(value, ast.Tuple) and len(value.elts) == len(names):
                                found.append(value.elts[names.index(name)])
                            else:
                                found.append(value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.target.id == name:
                    ann = ast.unparse(node.annotation)
                    if ("Text" in ann or "Content" in ann) and "str" not in ann:
                        return None
                    if node.value is not None:
                        found.append(node.value)
            elif isinstance(node, ast.For | ast.comprehension):
                target = node.target
                if any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(target)):
                    return []  # a loop variable: its type is unknown
        return found

    def attribute_values(self, attr: str) -> list[ast.expr] | None:
        """Every value `self.<attr>` is given in the module (None: annotated as an object)."""
        found: list[ast.expr] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr == attr:
                        found.append(node.value)
            elif isinstance(node, ast.AnnAssign):
                target = node.target
                name = target.attr if isinstance(target, ast.Attribute) else None
                name = target.id if isinstance(target, ast.Name) else name
                if name == attr:
                    ann = ast.unparse(node.annotation)
                    if ("Text" in ann or "Content" in ann) and "str" not in ann:
                        return None
                    if node.value is not None:
                        found.append(node.value)
        return found

    def safe(self, expr: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` is a literal-only string or an object no markup parser reads."""
        if isinstance(expr, ast.Constant):
            return expr.value is None or isinstance(expr.value, str | int | float)
        if isinstance(expr, ast.JoinedStr):
            return not any(isinstance(v, ast.FormattedValue) for v in expr.values)
        if isinstance(expr, ast.IfExp):
            return self.safe(expr.body, seen) and self.safe(expr.orelse, seen)
        if isinstance(expr, ast.BoolOp):
            return all(self.safe(v, seen) for v in expr.values)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.safe(expr.left, seen) and self.safe(expr.right, seen)
        if isinstance(expr, ast.Call):
            func = expr.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "from_markup":
                return bool(expr.args) and self.safe(expr.args[0], seen)
            return name in self.makers
        if isinstance(expr, ast.Name):
            if expr.id in seen:
                return True
            values = self.values_of(expr.id, self.function_of(expr))
            if values is None:
                return True
            if not values and self.function_of(expr) is not self.tree:
                values = self.values_of(expr.id, self.tree)  # a module-level name
                if values is None:
                    return True
            return bool(values) and all(self.safe(v, seen | {expr.id}) for v in values)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            key = f"self.{expr.attr}"
            if expr.value.id != "self" or key in seen:
                return key in seen
            values = self.attribute_values(expr.attr)
            if values is None:
                return True
            return bool(values) and all(self.safe(v, seen | {key}) for v in values)
        return False

    def findings(self) -> Iterator[Finding]:
        """Every place in the module that takes markup and is fed something not safe."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    attr = target.attr if isinstance(target, ast.Attribute) else ""
                    if attr in SINK_ATTRIBUTES and not self.safe(node.value):
                        yield self.finding(node, f".{target.attr} = {ast.unparse(node.value)}")
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            no_markup = any(
                k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in node.keywords
            )
            for keyword in node.keywords:
                if keyword.arg in SINK_KEYWORDS and not self.safe(keyword.value):
                    yield self.finding(node, f"{name}({keyword.arg}=...)")
            if name in SINK_CALLS and node.args and not no_markup:
                receiver = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
                if (self.rel, receiver, name) in NOT_WIDGETS:
                    continue
                if not self.safe(node.args[0]):
                    yield self.finding(node, f"{name}({ast.unparse(node.args[0])})")
            if name in OPTION_CALLS and node.args:
                options = node.args[0]
                prompt = None
                if isinstance(options, ast.ListComp | ast.GeneratorExp):
                    element = options.elt
                    prompt = element.elts[0] if isinstance(element, ast.Tuple) else element
                if prompt is None or not self.safe(prompt):
                    yield self.finding(node, f"{name}({ast.unparse(options)}): prompts")

    def finding(self, node: ast.AST, what: str) -> Finding:
        """A finding at `node`."""
        return Finding(self.rel, getattr(node, "lineno", 0), str(what)[:120])


def console_findings(root: Path = CONSOLE) -> list[Finding]:
    """Every finding in the console's source under `root`."""
    modules = {
        path.relative_to(root).as_posix(): ast.parse(path.read_text(), str(path))
        for path in sorted(root.rglob("*.py"))
    }
    makers = _returns_object(modules)
    out: list[Finding] = []
    for rel, tree in modules.items():
        out.extend(Walk(rel, tree, makers).findings())
    return sorted(out, key=lambda f: (f.path, f.line))


def test_no_outside_text_reaches_a_markup_parser() -> None:
    findings = console_findings()
    assert not findings, "markup fed a str that is not a literal:\n" + "\n".join(map(str, findings))


def test_the_walk_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The walk itself: each kind of place is found when fed outside text, and passes when fed
    a literal, a `safe(...)` Text, or a str with `markup=False`."""
    (tmp_path / "bad.py").write_text(
        "def f(self, record, why: str):\n"
        "    self.border_title = f'Watching {clean(record.target)}'\n"
        "    title = 'Job ' + record.id\n"
        "    self.border_subtitle = title\n"
        "    self.notify(why)\n"
        "    Static(why)\n"
        "    self.query_one(Static).update(clean(why))\n"
        "    w.tooltip = why\n"
        "    Select([(clean(t), t) for t in record.targets])\n"
    )
    (tmp_path / "good.py").write_text(
        "def g(self, record, line: Text):\n"
        "    self.border_title = 'Watching'\n"
        "    self.border_title = literal(f'Watching {clean(record.target)}')\n"
        "    title = safe(record.id)\n"
        "    self.border_subtitle = title if record else 'none'\n"
        "    self.notify(record.why, markup=False)\n"
        "    Static(record.why, markup=False)\n"
        "    self.query_one(Static).update(line)\n"
        "    Select([(safe(t), t) for t in record.targets])\n"
    )
    found = console_findings(tmp_path)
    assert {f.path for f in found} == {"bad.py"}, found
    assert [f.line for f in found] == [2, 4, 5, 6, 7, 8, 9], found
