"""`rocmtui serve`: the console in a browser, through textual-serve (Textualize's own).

One console process per browser session (`session.ConsoleSession`), each attached to the
host's `rocmtui monitor`; the server (`server.ConsoleServer`) decides who gets one: the
session limit, the websocket's Origin, the login when actions are allowed, the idle timeout.
The rules themselves are the core's (rocmtui/core/serveauth.py).
"""
