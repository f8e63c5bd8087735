"""The log view: a build log of any size, followed live, found in, filtered, copied from.

`LogView` (view.py) is the widget; the objects it is composed of are described there. The
messages it sends up are `LogView.Progress`, `.FindChanged`, `.FilterChanged`, `.FollowChanged`,
`.FileReset` and `.Copied` (messages.py).
"""

from rocmtui.console.widgets.logview.view import LogView

__all__ = ["LogView"]
