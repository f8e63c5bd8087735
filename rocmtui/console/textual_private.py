"""Every use of Textual's private API, in one place, each with why the public API does not do.

Textual (8.2 when written) keeps these names private; a minor release may rename or change any
of them. Nothing else in rocmtui touches a `_name` of Textual's: it calls the functions here,
or (where a private hook must be overridden in a subclass) names the hook in `USES`, so that
`tests/unit/test_textual_private.py` fails naming the one that changed, and what uses it, as soon
as a Textual upgrade changes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import Struct
from textual.app import App
from textual.geometry import Size
from textual.message_pump import MessagePump
from textual.notifications import Notification
from textual.screen import Screen
from textual.widget import Widget
from textual.worker import Worker

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

__all__ = [
    "USES",
    "FooterKey",
    "PrivateUse",
    "breakpoint_classes",
    "footer_ready",
    "forget_dead_watchers",
    "render_stack",
    "update_scroll",
    "withdraw",
]


class PrivateUse(Struct, frozen=True):
    """One private name of Textual's that rocmtui relies on: where it lives, what kind of
    thing it must be ("method", "property", "attribute", "class"), and who uses it, why."""

    owner: str  # "textual.app.App", or a module for a class
    name: str
    kind: str
    used_by: str
    params: tuple[str, ...] = ()  # a method's parameters after self, as rocmtui passes them


USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "textual.app.App",
        "_background_screens",
        "property",
        "app.py overrides it: screens under an opaque one are not composited (a busy log "
        "under help repainted the page 138 KB/s for nothing)",
    ),
    PrivateUse(
        "textual.app.App",
        "_unnotify",
        "method",
        "alarms.py withdraws a stall's notification when the build prints again (`notify` "
        "returns nothing to take back)",
        ("notification",),
    ),
    PrivateUse(
        "textual.screen.Screen",
        "_get_breakpoint_classes",
        "method",
        "screens/fleet.py sets the breakpoint classes before the first frame (set after "
        "mount, they re-styled every widget twice, ~20 ms)",
        ("dimension", "breakpoints"),
    ),
    PrivateUse(
        "textual.message_pump.MessagePump",
        "_dispatch_message",
        "method",
        "tests/support/hops.py wraps it to follow a key from pump to pump (the key-hop test)",
        ("message",),
    ),
    PrivateUse(
        "textual.message_pump.MessagePump",
        "_start_messages",
        "method",
        "tests/support/hops.py wraps it: a pump's loop carries the path of who started it",
    ),
    PrivateUse(
        "textual.screen.Screen",
        "_compositor",
        "attribute",
        "tests/support/blackbox.py renders the screen stack as text, as Textual's screenshot does",
    ),
    PrivateUse(
        "textual._compositor.Compositor",
        "render_update",
        "method",
        "render_stack: the whole visible stack as one renderable (Textual's screenshot's way)",
        ("full", "screen_stack", "simplify"),
    ),
    PrivateUse(
        "textual.widget.Widget",
        "_scroll_update",
        "method",
        "the log view changes its scrollable size without a layout pass of the whole screen "
        "(~30 ms a frame while following)",
        ("virtual_size",),
    ),
    PrivateUse(
        "textual.widget.Widget",
        "_on_mouse_scroll_up",
        "method",
        "the log view's body overrides it: scrolling up by wheel pauses follow",
        ("event",),
    ),
    PrivateUse(
        "textual.widget.Widget",
        "_on_scroll_up",
        "method",
        "the log view's body overrides it: scrolling up by key pauses follow",
        ("event",),
    ),
    PrivateUse(
        "textual.widget.Widget",
        "_on_scroll_to",
        "method",
        "the log view's body overrides it: a jump upwards pauses follow",
        ("message",),
    ),
    PrivateUse(
        "textual.widgets._footer",
        "FooterKey",
        "class",
        "widgets/footer.py draws each key as Textual's footer does (not exported publicly)",
    ),
    PrivateUse(
        "textual.widgets.Footer",
        "_bindings_ready",
        "attribute",
        "widgets/footer.py rebuilds its keys only once Textual's footer would",
    ),
    PrivateUse(
        "textual.reactive",
        "__watchers",
        "source",
        "widgets/footer.py drops the watchers of footer keys a recompose removed (Textual "
        "kept them, and their styles, alive)",
    ),
)


def __getattr__(name: str) -> Any:
    """`FooterKey`, imported when first asked for: the footer is mounted after the first frame,
    and Textual's footer module is not worth importing before it (~11 M instructions)."""
    if name == "FooterKey":
        # on first use: kept off the console's start
        from textual.widgets._footer import FooterKey

        return FooterKey
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def message_hooks() -> tuple[Any, Any, Any]:
    """MessagePump's dispatch of one message, its message loop's start, and Worker's start:
    the key-hop test (tests/support/hops.py) wraps them to follow a key across queues, tasks
    and workers. (`Worker._start` is not in `USES`: rocmtui's own classes have a `_start` too,
    which the name check would then flag; the key-hop test fails by itself if it goes.)"""
    return MessagePump._dispatch_message, MessagePump._start_messages, Worker._start


def withdraw(app: App[Any], notice: Notification) -> None:
    """Take back a notification posted earlier (KeyError: it is gone already)."""
    app._unnotify(notice)


def breakpoint_classes(
    screen: Screen[Any], size: int, points: Sequence[tuple[int, str]]
) -> set[str]:
    """The breakpoint classes Textual gives `screen` at `size` cells for `points`."""
    return set(screen._get_breakpoint_classes(size, list(points)))


def update_scroll(widget: Widget, virtual: Size) -> None:
    """Scrollbars and scroll limits for a new virtual size, without a layout pass."""
    widget._scroll_update(virtual)


def footer_ready(footer: Footer) -> bool:
    """Whether Textual's footer has its bindings (it composes nothing before)."""
    return bool(footer._bindings_ready)


def forget_dead_watchers(node: Widget) -> None:
    """Drop the data-binding watchers of children that are no longer attached.

    Textual keeps a node's reactive watchers as (node, callback) pairs under the attribute
    "__watchers", pruned only when the watched value changes; see widgets/footer.py for
    what that cost."""
    watchers: dict[str, list[tuple[Any, Any]]] = getattr(node, "__watchers", {})
    for pairs in watchers.values():
        pairs[:] = [(n, call) for n, call in pairs if getattr(n, "is_attached", True)]


def render_stack(app: App[Any]) -> Any:
    """The whole visible screen stack as one renderable, dialogs over the screens below them
    (what Textual's own screenshot renders)."""
    return app.screen._compositor.render_update(
        full=True, screen_stack=app._background_screens, simplify=True
    )
