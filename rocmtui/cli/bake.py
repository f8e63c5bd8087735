"""`rocmtui bake TARGET [--arch GFX] [--node NAME] [--push] [--yes] [--allow ENT ...]
[--set VAR=VALUE ...]`.

Starts the build detached and returns at once: the job id goes to stdout (one line, for
scripts: `rocmtui logs -f "$(rocmtui bake demo-vllm)"`), a human summary to stderr.
Exit codes: 0 started, 1 refused (already building, push not confirmed, no registry login,
privileges bake asks for not granted with `--allow`, read-only),
2 usage or configuration error (unknown target, arch, node or variable; bad bake file).
TARGET is any name `docker buildx bake` accepts: a target, a group or a matrix-generated name.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import pickle
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmtui import __version__
from rocmtui.cli.bake_auto import AUTO, choose_node, placement_json, say
from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from

if TYPE_CHECKING:
    from rocmtui.core.bake.file import BakeFile


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `bake` subcommand."""
    parser = sub.add_parser(
        "bake",
        help="start a build detached; print its job id",
        description="Start `docker buildx bake` for one target on one node, detached from "
        "this terminal, and print the job id at once.",
    )
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="any name bake accepts: a target, a group (default, all) or a matrix name "
        "(pytorch-gfx1201)",
    )
    parser.add_argument("--arch", metavar="GFX", help="GFX_ARCH (default: the bake file's)")
    parser.add_argument(
        "--node",
        metavar="NAME",
        help="fleet node (default: the local one); `auto`: the node that would finish first, "
        "from each node's cache condition, cost history, running builds and free disk",
    )
    parser.add_argument("--push", action="store_true", help="push the image (needs --yes)")
    parser.add_argument(
        "--yes",
        action="store_true",
        help="confirm a build that pushes, or is granted a privilege that changes the node",
    )
    parser.add_argument(
        "--allow",
        metavar="ENT",
        action="append",
        default=[],
        help="grant bake a privilege the build asks for, as rocmtui names it (repeatable): "
        "fs.read=PATH, fs.write=PATH, fs=PATH (paths relative to the bake file's folder), "
        "network.host, security.insecure (with --yes), device[=NAME], ssh",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object on stdout: the job (id, log path ...), or the refusal with its "
        "reason and the blocking job",
    )
    parser.add_argument(
        "--set",
        metavar="VAR=VALUE",
        action="append",
        default=[],
        dest="overrides",
        help="override a variable the bake file declares (repeatable)",
    )


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rocmtui"


def load_bake_cached(path: Path) -> BakeFile:
    """`bake.file.load_bake`, remembered per user by the file's exact bytes.

    Parsing with python-hcl2 costs 0.2-0.6 s, most of `rocmtui bake`'s time to return; the
    result is a small frozen value, so it is kept in `$XDG_CACHE_HOME/rocmtui` (a folder only
    this user can write: a cache entry is trusted only when the user owns it and nobody else
    can write it). A file that fails to parse is never cached, so its error shows every time.
    """
    # on first use: kept off `--help`
    from rocmtui.core.bake.file import load_bake
    from rocmtui.core.bake.find import bake_bytes

    try:
        data = bake_bytes(path)  # a folder: every default file in it, each with its name
    except OSError:
        return load_bake(path)  # let the reader report it
    # on first use: kept off `--help`
    import rocmtui.core.bake.file as reader

    # the reader's own code is part of the key: a changed reader never sees an old result
    # (every module of its package, whatever they are called: a list of names went stale once)
    code = sorted(Path(reader.__file__).parent.glob("*.py"))
    stamps = [f"{p.name}:{p.stat().st_mtime_ns}:{p.stat().st_size}" for p in code]
    material = f"{__version__}\0{stamps}\0{Path(path).absolute()}\0".encode() + data
    key = hashlib.sha256(material).hexdigest()[:32]
    entry = _cache_dir() / f"bake-{key}.pickle"
    # anything at all going wrong with a kept result (a class moved since it was written: an
    # ImportError) is only a miss: the file is read again
    with contextlib.suppress(Exception):
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                kept = pickle.load(fh)
                if isinstance(kept, reader.BakeFile):  # anything else: read the file again
                    return kept
    bake = load_bake(path)
    with contextlib.suppress(OSError, pickle.PickleError):
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = entry.with_name(f".{entry.name}.{os.getpid()}")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
            pickle.dump(bake, fh)
        os.replace(tmp, entry)
    return bake


def _answer(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """With --json, the outcome as one JSON object on stdout (stderr keeps the human lines)."""
    if getattr(args, "json", False):
        print(json.dumps(data, sort_keys=True), flush=True)


def run(args: argparse.Namespace) -> int:
    """Validate and launch; print the job id."""
    # on first use: kept off `--help`
    from rocmtui.core.bake.entitlements import check_grants
    from rocmtui.core.bake.file import BakeError
    from rocmtui.core.bake.find import check_found
    from rocmtui.core.jobs.command import parse_overrides
    from rocmtui.core.jobs.launch import launch_job
    from rocmtui.core.jobs.refusals import (
        AlreadyRunning,
        LaunchError,
        LaunchRefused,
        PrivilegesRefused,
        ReadOnlyRefused,
    )

    config = config_from(args)
    try:
        allow = check_grants(args.allow)
    except ValueError as exc:
        print(f"rocmtui bake: {exc}", file=sys.stderr)
        _answer(args, {"started": False, "error": str(exc)})
        return EXIT_USAGE
    try:
        check_found(config)
        bake = load_bake_cached(config.bake_file)
        overrides = parse_overrides(args.overrides)
        placement = None
        if args.node == AUTO:
            placement = choose_node(config, bake, args.target, args.arch, overrides)
            say(placement)
            if placement.chosen is None:
                _answer(args, {"started": False, "refused": placement.why,
                               "placement": placement_json(placement)})  # fmt: skip
                return EXIT_UNHEALTHY
            args.node = placement.chosen
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
            allow=allow,
        )
    except AlreadyRunning as exc:
        print(f"rocmtui bake: refused: {exc}", file=sys.stderr)
        if exc.job_id:
            print(f"  follow it: rocmtui logs -f {exc.job_id}", file=sys.stderr)
        _answer(args, {"started": False, "refused": str(exc), "blocking_job": exc.job_id})
        return EXIT_UNHEALTHY
    except PrivilegesRefused as exc:
        print(f"rocmtui bake: refused: {exc}", file=sys.stderr)
        answer = {"started": False, "refused": str(exc), "blocking_job": None}
        _answer(args, {**answer, "privileges": list(exc.asked)})
        return EXIT_UNHEALTHY
    except (LaunchRefused, ReadOnlyRefused) as exc:
        print(f"rocmtui bake: refused: {exc}", file=sys.stderr)
        _answer(args, {"started": False, "refused": str(exc), "blocking_job": None})
        return EXIT_UNHEALTHY
    except (LaunchError, BakeError) as exc:
        print(f"rocmtui bake: {exc}", file=sys.stderr)
        _answer(args, {"started": False, "error": str(exc)})
        return EXIT_USAGE
    # on first use: kept off `--help`
    from rocmtui.core.jobs.linger import logout_risk

    if args.json:
        from rocmtui.core.jobs.views import record_json  # start-up: not for `bake --help`

        job = {k: v for k, v in record_json(record).items() if k != "command"}
        more = {"placement": placement_json(placement)} if placement is not None else {}
        _answer(
            args,
            {"started": True, **job, "job_id": record.id, "log": str(record.log_path), **more},
        )
    else:
        print(record.id, flush=True)
    risk = logout_risk()
    if risk:
        print(f"rocmtui bake: warning: {risk}", file=sys.stderr)
    # on first use: kept off `--help`
    from rocmtui.core.bake.file import ARCH_VARIABLE

    if ARCH_VARIABLE not in bake.variables:  # said plainly: nothing chose an arch
        own = f"; recorded as {record.node}'s own {record.arch}" if record.arch else ""
        print(
            f"rocmtui bake: {config.bake_file.name} declares no {ARCH_VARIABLE}: built as "
            f"written, for no particular arch{own}",
            file=sys.stderr,
        )
    if record.allowed:
        print(f"rocmtui bake: granted: {' '.join(record.allowed)}", file=sys.stderr)
    arch = f"for {record.arch} " if record.arch else ""
    print(
        f"started {record.target} {arch}on {record.node}"
        f"{' (push)' if record.push else ''}: rocmtui logs -f {record.id}",
        file=sys.stderr,
    )
    return EXIT_OK
