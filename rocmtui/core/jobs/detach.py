"""The first process of a job's supervisor: fork at once and exit, so the launcher can return.

`launch_job` starts `python -S -m rocmtui.core.jobs.detach ...` (no `site`, nothing but `os`
and `sys` imported: it lives a few milliseconds) in a new session and waits for it to exit.
The forked child, re-parented away from the launcher (a long-lived console never collects a
zombie), turns `site` back on and becomes the supervisor (`supervisor.main`). Both inherit the
job's locks from the launcher, so the locks are held without a gap.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

# The supervisor is imported in `main`, after the fork and `site`: this module starts as
# `python -S` (no site-packages) and imports the standard library only before it forks.


def run_detached(body: Callable[[list[str]], int]) -> None:
    """Fork; the parent exits 0 at once, the child turns `site` back on (started with -S for
    speed; the body needs site-packages) and exits with `body(argv)`'s code. The job's
    supervisor and the follower of a build started elsewhere both start this way."""
    if os.fork():
        os._exit(0)
    if sys.flags.no_site:
        import site  # this process starts with -S: site turns on only here

        site.main()
    code = 1
    try:
        code = body(sys.argv[1:])
    finally:
        os._exit(code)


def main() -> None:
    """Fork; the parent exits 0, the child supervises the job."""

    def supervise(argv: list[str]) -> int:
        # after site is on: the supervisor needs site-packages
        from rocmtui.core.jobs.supervisor import main as supervisor_main

        return supervisor_main(argv)

    run_detached(supervise)


if __name__ == "__main__":
    main()
