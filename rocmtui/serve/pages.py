"""The pages `rocmtui serve` draws itself: the login form and the refusals a browser shows."""

from __future__ import annotations

import html

STYLE = """
body { background: #0c181f; color: #e8eef2; font-family: "Roboto Mono", menlo, monospace;
       display: flex; align-items: center; justify-content: center; height: 100vh; margin: 0; }
main { background: #12232d; padding: 32px 40px; width: 560px; }
h1 { font-size: 20px; margin-top: 0; }
input { font: inherit; width: 100%; padding: 8px; margin: 8px 0 16px; box-sizing: border-box; }
button { font: inherit; padding: 10px 28px; background: #5e0ba7; color: #fff; border: none; }
.error { color: #ff8f8f; }
p { line-height: 1.5; }
"""


def page(title: str, body: str, status_line: str = "") -> str:
    """A whole HTML page (`body` is already escaped HTML)."""
    line = f'<p class="error" id="error">{html.escape(status_line)}</p>' if status_line else ""
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><main><h1>{html.escape(title)}</h1>{line}{body}</main></body></html>\n"
    )


def login_page(host: str, error: str = "", users: bool = False) -> str:
    """The form that asks for the token, or a user's password (sent in the body of a POST,
    never in a URL)."""
    user_field = (
        '<label for="user">User (empty: the token)</label>'
        '<input id="user" name="user" autocomplete="username">'
        if users
        else ""
    )
    body = (
        "<p>This console may start and cancel builds, so it asks who you are. Paste the token "
        f"<code>rocmtui serve</code> printed on {html.escape(host)} (it is also in the state "
        "folder, file <code>serve-token</code>, readable by its owner only)"
        f"{', or give your user name and password' if users else ''}.</p>"
        '<form method="post" action="/login">'
        f"{user_field}"
        f'<label for="token">{"Token or password" if users else "Token"}</label>'
        '<input id="token" name="token" type="password" autocomplete="current-password" '
        "autofocus required>"
        '<button id="login" type="submit">Open the console</button></form>'
    )
    return page("rocmtui: log in", body, error)


def refusal_page(title: str, why: str) -> str:
    """A refusal a browser shows (too many sessions, a page of another site ...)."""
    return page(title, f"<p>{html.escape(why)}</p>")
