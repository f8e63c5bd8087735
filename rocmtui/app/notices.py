"""Notifications the console can take back: a stall's goes away when the build prints again.

Textual's `notify()` returns nothing to withdraw later; this posts the same `Notify` message
with a `Notification` kept by the caller, and withdraws it through `App._unnotify` (Textual's
own removal, private: kept here, in one place).
"""

from __future__ import annotations

import contextlib
from typing import Any

from textual.app import App
from textual.notifications import Notification, Notify


def post(app: App[Any], message: str, *, title: str, timeout: float) -> Notification:
    """Show an error notification (plain text, never markup); returns it for `withdraw`."""
    notification = Notification(message, title, "error", timeout, markup=False)
    app.post_message(Notify(notification))
    return notification


def withdraw(app: App[Any], notification: Notification | None) -> None:
    """Take a notification off the screen if it is still there."""
    if notification is not None:
        with contextlib.suppress(KeyError):  # it timed out, or was dismissed, already
            app._unnotify(notification)
