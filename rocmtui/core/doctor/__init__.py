"""`rocmtui doctor`: each check a one-line verdict (`checks`: `Finding`, `run_checks`; the fleet's
checks in `fleetchecks`; the installed systemd units in `systemd`).
"""
