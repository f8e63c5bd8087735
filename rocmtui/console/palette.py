"""What the App's command palette runs: each catalog action on its target (the App, the
screen, or the focused widget whose keys they are), and where its Screenshot is saved."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from platformdirs import user_downloads_path
from textual.app import App
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget

from rocmtui.console import keys
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.paths import state_dir


def screenshot_folder(config: FleetConfig) -> Path:
    """Where the palette's Screenshot is saved (see `RocmTui.deliver_screenshot`)."""
    downloads = user_downloads_path()
    if downloads.is_dir():
        return downloads
    if os.access(Path.cwd(), os.W_OK):
        return Path.cwd()
    folder = state_dir(config) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def target(app: App[Any], screen: Screen[Any], scope: str) -> App[Any] | Widget | None:
    """Where an action of `scope` runs: the app, the screen, or the focused widget (or its
    ancestor) whose `KEY_SCOPE` it is."""
    if scope == "app":
        return app
    if scope not in keys.WIDGET_SCOPES.get(str(getattr(screen, "SCOPE", "")), ()):
        return screen
    node: DOMNode | None = screen.focused
    while isinstance(node, Widget) and getattr(node, "KEY_SCOPE", None) != scope:
        node = node.parent
    return node if isinstance(node, Widget) else None


def runner(target: App[Any] | Widget, action: str) -> Callable[[], object]:
    async def run() -> None:
        await target.run_action(action)

    return run
