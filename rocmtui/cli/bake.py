"""`rocmtui bake TARGET [--arch GFX] [--node NAME] [--push] [--yes] [--set VAR=VALUE ...]`.

Starts the build detached and returns at once: the job id goes to stdout (one line, for
scripts: `rocmtui logs -f "$(rocmtui bake demo-vllm)"`), a human summary to stderr.
Exit codes: 0 started, 1 refused (already building, push not confirmed, no registry login),
2 usage or configuration error (unknown target, arch, node or variable; bad bake file).
"""

from __future__ import annotations

import argparse
import os
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `bake` subcommand."""
    parser = sub.add_parser(
        "bake",
        help="start a build detached; print its job id",
        description="Start `docker buildx bake` for one target on one node, detached from "
        "this terminal, and print the job id at once.",
    )
    parser.add_argument("target", metavar="TARGET", help="a target of the bake file")
    parser.add_argument("--arch", metavar="GFX", help="GFX_ARCH (default: the bake file's)")
    parser.add_argument("--node", metavar="NAME", help="fleet node (default: the local one)")
    parser.add_argument("--push", action="store_true", help="push the image (needs --yes)")
    parser.add_argument("--yes", action="store_true", help="confirm a build that pushes")
    parser.add_argument(
        "--set",
        metavar="VAR=VALUE",
        action="append",
        default=[],
        dest="overrides",
        help="override a variable the bake file declares (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Validate and launch; print the job id."""
    from rocmtui.core.bakefile import BakeError, load_bake
    from rocmtui.core.jobs import AlreadyRunning, LaunchError, LaunchRefused, launch_job
    from rocmtui.core.jobs.launch import parse_overrides

    config = config_from(args)
    try:
        bake = load_bake(config.bake_file)
        overrides = parse_overrides(args.overrides)
        record = launch_job(
            config,
            bake,
            args.target,
            arch=args.arch,
            node_name=args.node,
            push=args.push,
            yes=args.yes,
            env=os.environ,
            overrides=overrides,
        )
    except AlreadyRunning as exc:
        print(f"rocmtui bake: refused: {exc}", file=sys.stderr)
        if exc.job_id:
            print(f"  follow it: rocmtui logs -f {exc.job_id}", file=sys.stderr)
        return EXIT_UNHEALTHY
    except LaunchRefused as exc:
        print(f"rocmtui bake: refused: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    except (LaunchError, BakeError) as exc:
        print(f"rocmtui bake: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from rocmtui.core.jobs.launch import logout_risk

    print(record.id, flush=True)
    risk = logout_risk()
    if risk:
        print(f"rocmtui bake: warning: {risk}", file=sys.stderr)
    print(
        f"started {record.target} for {record.arch} on {record.node}"
        f"{' (push)' if record.push else ''}: rocmtui logs -f {record.id}",
        file=sys.stderr,
    )
    return EXIT_OK
