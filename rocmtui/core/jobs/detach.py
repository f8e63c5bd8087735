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


def main() -> None:
    """Fork; the parent exits 0, the child supervises the job."""
    if os.fork():
        os._exit(0)
    if sys.flags.no_site:  # started with -S for speed; the supervisor needs site-packages
        import site

        site.main()
    from rocmtui.core.jobs.supervisor import main as supervise

    code = 1
    try:
        code = supervise(sys.argv[1:])
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
