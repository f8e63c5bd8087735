"""Keys as data: one catalog feeds the footer, the `?` help screen and the command palette.

Every entry has an id (so the fleet file's `[keys]` table can remap it through Textual's keymap),
a default key, a description, the screen it belongs to, and a `dangerous` flag. Read-only mode
hides dangerous entries here and the backend refuses them where they are carried out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec import Struct
from textual.binding import Binding


class KeyAction(Struct, frozen=True):
    """One key of the console."""

    id: str
    key: str  # Textual key string; several keys separated by commas
    action: str  # Textual action on the scope's screen
    description: str
    scope: str  # a screen's ("app", "fleet", "logs", "matrix", "history", "timeline"), a
    # widget's ("logview", "logprompt", "waterfall") or a dialog's ("bake", "confirm", "quit",
    # "cell", "help")
    dangerous: bool = False
    show: bool = True  # shown in the footer (help and palette always list it)


CATALOG: tuple[KeyAction, ...] = (
    KeyAction("app.quit", "q", "quit", "Quit", "app"),
    KeyAction("app.help", "question_mark", "help", "Keys", "app"),
    KeyAction("fleet.bake", "b", "bake", "Bake…", "fleet", dangerous=True),
    KeyAction("fleet.rebuild", "r", "rebuild", "Rebuild", "fleet", dangerous=True),
    KeyAction("fleet.log", "l", "open_log", "Log", "fleet"),
    KeyAction("fleet.cancel", "c", "cancel_job", "Cancel", "fleet", dangerous=True),
    KeyAction("fleet.prune", "p", "prune", "Prune cache", "fleet", dangerous=True),
    # `L`, not `v`: inside a pane `v` selects lines (one meaning per key across the screens)
    KeyAction("fleet.logs", "L", "show_logs", "Log panes", "fleet"),
    KeyAction("fleet.refresh", "ctrl+r", "refresh", "Refresh now", "fleet", show=False),
    KeyAction("fleet.matrix", "m", "show_matrix", "Published", "fleet"),
    KeyAction("fleet.history", "h", "show_history", "History", "fleet"),
    KeyAction("fleet.timeline", "t", "show_timeline", "Timeline", "fleet"),
    KeyAction("fleet.runs", "u", "show_runs", "Runs", "fleet"),
    KeyAction(
        "fleet.new_run", "R", "new_run", "New fleet run…", "fleet", dangerous=True, show=False
    ),
    KeyAction("logs.back", "escape", "back", "Back", "logs"),
    KeyAction("logs.next", "right_square_bracket", "next_pane", "Next pane", "logs"),
    KeyAction("logs.prev", "left_square_bracket", "prev_pane", "Prev pane", "logs", show=False),
    KeyAction("logs.close", "x", "close_pane", "Close pane", "logs"),
    KeyAction("logs.outline", "o", "toggle_outline", "Steps", "logs"),
    KeyAction(
        "logs.narrower",
        "less_than_sign",
        "resize_outline(-4)",
        "Steps narrower",
        "logs",
        show=False,
    ),
    KeyAction(
        "logs.wider", "greater_than_sign", "resize_outline(4)", "Steps wider", "logs", show=False
    ),
    KeyAction("logs.cancel", "c", "cancel_job", "Cancel", "logs", dangerous=True),
    KeyAction("logs.rebuild", "r", "rebuild", "Rebuild", "logs", dangerous=True),
    KeyAction("logs.timeline", "t", "show_timeline", "Timeline", "logs"),
    # the published screen: target × arch matrix and pinned versions (screens/published.py)
    KeyAction("matrix.back", "escape", "back", "Back", "matrix"),
    KeyAction("matrix.detail", "enter", "detail", "Detail", "matrix"),
    KeyAction("matrix.rebuild", "r", "rebuild", "Rebuild", "matrix", dangerous=True),
    KeyAction("matrix.log", "l", "open_log", "Last log", "matrix"),
    KeyAction("matrix.refresh", "ctrl+r", "refresh", "Refresh now", "matrix"),
    KeyAction("matrix.history", "h", "show_history", "History", "matrix"),
    # the history screen: what builds cost, per target × arch × node (screens/history.py)
    KeyAction("history.back", "escape", "back", "Back", "history"),
    KeyAction("history.refresh", "ctrl+r", "refresh", "Refresh now", "history"),
    KeyAction("history.timeline", "t", "show_timeline", "Timeline (last build)", "history"),
    KeyAction("history.steps", "S", "toggle_steps", "Steps across builds", "history"),
    # the timeline screen: one build's steps on a time axis (screens/timeline.py)
    KeyAction("timeline.back", "escape", "back", "Back", "timeline"),
    KeyAction("timeline.refresh", "ctrl+r", "refresh", "Refresh now", "timeline"),
    KeyAction("timeline.diff", "D", "toggle_diff", "Against the last build", "timeline"),
    # its waterfall (widgets/waterfall.py), while it has the focus
    KeyAction("waterfall.up", "up", "cursor(-1)", "Up", "waterfall", show=False),
    KeyAction("waterfall.down", "down", "cursor(1)", "Down", "waterfall", show=False),
    KeyAction("waterfall.page_up", "pageup", "page(-1)", "Page up", "waterfall", show=False),
    KeyAction("waterfall.page_down", "pagedown", "page(1)", "Page down", "waterfall", show=False),
    KeyAction("waterfall.first", "home", "cursor_to(0)", "First step", "waterfall", show=False),
    KeyAction("waterfall.last", "end", "cursor_to(-1)", "Last step", "waterfall", show=False),
    KeyAction("waterfall.log", "enter", "choose", "Log at this step", "waterfall"),
    # the Runs screen: fleet runs, a lane per node, a bar per build (screens/runs.py)
    KeyAction("runs.back", "escape", "back", "Back", "runs"),
    KeyAction("runs.baseline", "k", "mark_baseline", "Compare with this", "runs"),
    KeyAction("runs.again", "r", "rebuild", "Run again", "runs", dangerous=True),
    KeyAction("runs.refresh", "ctrl+r", "refresh", "Refresh now", "runs"),
    KeyAction("runs.new", "R", "new_run", "New run…", "runs", dangerous=True),
    # the log view (rocmtui/console/widgets/logview), wherever it has the keys
    KeyAction("logview.follow", "f", "toggle_follow", "Follow", "logview"),
    KeyAction("logview.wrap", "w", "toggle_wrap", "Wrap", "logview"),
    KeyAction("logview.find", "slash", "prompt('find')", "Find", "logview"),
    KeyAction("logview.next", "n", "next_match(1)", "Next", "logview"),
    KeyAction("logview.prev", "N", "next_match(-1)", "Prev", "logview", show=False),
    KeyAction("logview.top", "g,home", "top", "Top", "logview", show=False),
    KeyAction("logview.bottom", "G,end", "bottom", "Bottom", "logview", show=False),
    KeyAction("logview.first_error", "e", "first_error", "First error", "logview"),
    KeyAction("logview.goto", "colon", "prompt('goto')", "Go to line", "logview", show=False),
    KeyAction("logview.step", "s", "prompt('step')", "Go to step", "logview", show=False),
    KeyAction("logview.filter", "F", "prompt('filter')", "Filter", "logview"),
    KeyAction(
        "logview.exclude", "exclamation_mark", "prompt('exclude')", "Exclude", "logview", show=False
    ),
    KeyAction("logview.dim", "d", "toggle_dim", "Dim others", "logview", show=False),
    KeyAction("logview.select", "v", "select", "Select", "logview", show=False),
    KeyAction("logview.copy", "y", "copy", "Copy", "logview"),
    KeyAction("logview.clear", "escape", "clear", "Clear", "logview", show=False),
    # its prompt (/, F, !, :, s), while open
    KeyAction("logprompt.close", "escape", "close", "Close prompt", "logprompt", show=False),
    KeyAction("logprompt.regex", "ctrl+r", "toggle_regex", "Regex/literal", "logprompt"),
    KeyAction("logprompt.case", "ctrl+t", "cycle_case", "Case: smart/Aa/aa", "logprompt"),
    # every table (widgets/table.py: the fleet's panels, the published grid), while it has the
    # focus: a widget's own moves, like a text field's
    KeyAction("table.up", "up", "cursor(-1)", "Up", "table", show=False),
    KeyAction("table.down", "down", "cursor(1)", "Down", "table", show=False),
    KeyAction("table.page_up", "pageup", "page(-1)", "Page up", "table", show=False),
    KeyAction("table.page_down", "pagedown", "page(1)", "Page down", "table", show=False),
    KeyAction("table.first", "home", "cursor_to(0)", "First row", "table", show=False),
    KeyAction("table.last", "end", "cursor_to(-1)", "Last row", "table", show=False),
    KeyAction("table.left", "left", "columns(-1)", "Scroll left", "table", show=False),
    KeyAction("table.right", "right", "columns(1)", "Scroll right", "table", show=False),
    KeyAction("table.select", "enter", "select", "Open (a job's log)", "table", show=False),
    # dialogs: their own keys, while they are open (dialogs/, screens/help.py)
    KeyAction("bake.start", "ctrl+s", "start", "Start", "bake", dangerous=True),
    KeyAction("bake.push", "p", "toggle_push", "Push on/off", "bake"),
    KeyAction("bake.back", "escape", "close", "Back", "bake"),
    KeyAction("newrun.start", "ctrl+s", "start", "Start the run", "newrun", dangerous=True),
    KeyAction("newrun.back", "escape", "close", "Back", "newrun"),
    KeyAction("confirm.yes", "y", "answer(True)", "Yes", "confirm", dangerous=True),
    KeyAction("confirm.no", "escape,n", "answer(False)", "No", "confirm"),
    KeyAction("quit.yes", "q", "answer(True)", "Quit", "quit"),
    KeyAction("quit.no", "escape,n", "answer(False)", "Stay", "quit"),
    KeyAction("cell.close", "escape,enter,q", "close", "Close", "cell"),
    KeyAction("help.close", "escape,q,question_mark", "dismiss_help", "Close", "help"),
    # the standalone log viewer (`python -m rocmtui.console.logviewer FILE`), not the console
    KeyAction("logviewer.quit", "q", "quit", "Quit", "logviewer"),
)
# scopes bound by widgets, listed (in help and the palette) with the screen they appear on
WIDGET_SCOPES: dict[str, tuple[str, ...]] = {
    "logs": ("logview", "logprompt"),
    "timeline": ("waterfall",),
}
# scopes of modal dialogs: their keys act only while the dialog is open, so a key there may
# mean something else than on the screens (y confirms in a question, copies in a log)
DIALOG_SCOPES: tuple[str, ...] = ("bake", "newrun", "confirm", "quit", "cell", "help")
# a focused widget's own moves (a table's cursor, a text field's editing keys)
FIELD_SCOPES: tuple[str, ...] = ("table", "logprompt", "waterfall")
BY_ID: dict[str, KeyAction] = {k.id: k for k in CATALOG}
# The order in which shown keys win the footer's room when not all of them fit (80 columns
# hold about seven): `?` first, since it lists every key; then the way back, the log's own
# follow and find, the build actions. Keys not named here come last, in their own order.
FOOTER_FIRST: tuple[str, ...] = (
    "app.help",
    "logs.back",
    "logview.follow",
    "logview.find",
    "fleet.bake",
    "fleet.rebuild",
    "logs.rebuild",
    "fleet.log",
    "fleet.cancel",
    "logs.cancel",
    "fleet.logs",
    "fleet.matrix",
    "fleet.history",
    "history.back",
    "timeline.back",
    "timeline.diff",
    "waterfall.log",
    "runs.back",
    "runs.baseline",
    "runs.again",
    "runs.new",
    "matrix.back",
    "matrix.rebuild",
    "matrix.log",
    "matrix.detail",
    "app.quit",
    "logview.first_error",
    "logs.next",
    "logs.close",
    "logview.next",
    "logview.filter",
)
FOOTER_RANK: dict[str, int] = {key_id: n for n, key_id in enumerate(FOOTER_FIRST)}
DANGEROUS_ACTIONS: dict[str, frozenset[str]] = {
    scope: frozenset(k.action for k in CATALOG if k.scope == scope and k.dangerous)
    for scope in {k.scope for k in CATALOG}
}


def bindings(scope: str) -> list[Binding]:
    """Textual bindings for one scope, each with its catalog id (the keymap's handle)."""
    return [
        Binding(k.key, k.action, k.description, show=k.show, id=k.id)
        for k in CATALOG
        if k.scope == scope
    ]


def entries(scopes: Iterable[str], read_only: bool) -> list[KeyAction]:
    """Catalog entries of the given scopes; read-only mode leaves out dangerous ones."""
    wanted = set(scopes)
    return [k for k in CATALOG if k.scope in wanted and not (read_only and k.dangerous)]


def read_only_notice(key: str, scope: str, keymap: Mapping[str, str]) -> str | None:
    """What to say when `key` is one of `scope`'s dangerous keys (as remapped) in read-only
    mode, which hides and refuses them: the operator learns why the key did nothing."""
    for entry in CATALOG:
        if entry.scope == scope and entry.dangerous:
            bound = keymap.get(entry.id, entry.key)
            if key in (part.strip() for part in bound.split(",")):
                what = entry.description.rstrip("…")
                return f"Read-only console: {what} ({display_key(bound)}) is off."
    return None


def check_keymap(keymap: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split the fleet file's `[keys]` table into usable entries and complaints about the rest."""
    good: dict[str, str] = {}
    bad: list[str] = []
    for binding_id, key in keymap.items():
        if binding_id not in BY_ID:
            bad.append(f"[keys] {binding_id}: no such key id (see ? for the list)")
        elif not key.strip() or any(not part.strip() for part in key.split(",")):
            bad.append(f"[keys] {binding_id}: empty key")
        else:
            good[binding_id] = key.strip()
    # a key remapped onto another of its scope's keys: the first in the catalog would win and
    # the other become unreachable; kept as asked, and said
    owner: dict[tuple[str, str], str] = {}
    for entry in CATALOG:
        for part in good.get(entry.id, entry.key).split(","):
            other = owner.setdefault((entry.scope, part.strip()), entry.id)
            if other != entry.id and entry.id in good:
                bad.append(f"[keys] {entry.id}: {part.strip()} is {other}'s key too; move one")
            elif other != entry.id and other in good:
                bad.append(f"[keys] {other}: {part.strip()} is {entry.id}'s key too; move one")
    return good, bad


def display_key(key: str, keymap: Mapping[str, str] | None = None, binding_id: str = "") -> str:
    """How a key reads on the help screen ("question_mark" -> "?")."""
    if keymap and binding_id in keymap:
        key = keymap[binding_id]
    names = {
        "question_mark": "?",
        "right_square_bracket": "]",
        "left_square_bracket": "[",
        "escape": "esc",
        "enter": "⏎",
        "slash": "/",
        "colon": ":",
        "exclamation_mark": "!",
        "less_than_sign": "<",
        "greater_than_sign": ">",
    }
    return ",".join(names.get(part, part) for part in key.split(","))
