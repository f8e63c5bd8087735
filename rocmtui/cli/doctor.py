"""`rocmtui doctor [--json]`: check everything rocmtui depends on, one verdict a line.

docker CLI and buildx (with the bake features this buildx lacks), the fleet file (and any
system-wide file it shadows that would not load), every node's engine (ssh agent and known
host for ssh:// nodes), the registry login of each pushing target's registry (never read:
presence, and whether the registry takes it), the bake file and `bake --print`, the state
folder, its disk and the lock folder, the terminal (colours, size, tmux), the systemd units of
deploy/systemd/ when installed (rocmtui/core/doctor/systemd.py). Each line: verdict,
what, detail, and the remedy when not ok. Every check runs at once under the fleet file's
probe deadline: a dead node is a `fail` line, never a hang.

Exit 0 when nothing failed (warnings allowed), 1 otherwise; 2 for an unusable fleet file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, config_from

MARKS = {"ok": "✓", "warn": "!", "fail": "✗"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `doctor` subcommand."""
    parser = sub.add_parser(
        "doctor",
        help="check docker, buildx, every node, logins, the bake file",
        description="Check docker, buildx, the fleet file, every node, registry logins, the "
        "bake file, the state folder and the terminal; one verdict a line with its remedy. "
        "Exit 0 when nothing failed, 1 otherwise.",
    )
    parser.add_argument("--json", action="store_true", help="a JSON list of findings")


def run(args: argparse.Namespace) -> int:
    """Run every check; print the findings."""
    # on first use: kept off `--help`
    from rocmtui.cli.status import probe_budget
    from rocmtui.core.doctor.checks import (
        FAIL,
        OK,
        WARN,
        Check,
        Finding,
        check_buildx,
        check_docker,
        check_state,
        check_terminal,
        run_checks,
    )
    from rocmtui.core.doctor.fleetchecks import NodesCheck, check_bake, check_ssh
    from rocmtui.core.doctor.systemd import check_units

    config = config_from(args)
    env = dict(os.environ)
    budget = probe_budget(config)  # the whole doctor answers within the probe deadline
    tool_timeout = max(0.5, budget - 0.2)

    def fleet_file() -> list[Finding]:
        # on first use: kept off `--help`
        from rocmtui.cli.configcmd import config_facts

        where = str(config.source) if config.source else "the built-in default"
        out = [Finding("fleet file", OK, f"{where} ({config.found_by})")]
        for other in config_facts(args)["not_read"]:
            if "would not load" in other["verdict"]:
                out.append(
                    Finding(
                        "fleet file",
                        WARN,
                        f"{other['path']}: {other['verdict']}",
                        "fix or remove it: it is read where no other file is",
                    )
                )
        return out

    checks: dict[str, Check] = {
        "fleet file": fleet_file,
        "docker CLI": lambda: check_docker(tool_timeout),
        "buildx": lambda: check_buildx(tool_timeout),
        "nodes": NodesCheck(config, budget),
        "ssh": lambda: check_ssh(config, env, tool_timeout),
        "bake file": lambda: check_bake(config, env, tool_timeout),
        "state": lambda: check_state(config, env),
        "units": lambda: check_units(env, tool_timeout),
        "terminal": lambda: check_terminal(env, sys.stdout.isatty(), tool_timeout),
    }
    findings = run_checks(checks, budget + 0.1)
    failed = any(f.verdict == FAIL for f in findings)
    if args.json:
        json.dump([_as_dict(f) for f in findings], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_UNHEALTHY if failed else EXIT_OK
    # on first use: kept off `--help`
    from rocmtui.core.text.sanitize import color_wanted, sanitize_line

    colour = color_wanted(sys.stdout)
    paint = {OK: "\x1b[32m", WARN: "\x1b[33m", FAIL: "\x1b[1;31m"}
    width = max(len(f.check) for f in findings)
    for f in findings:
        mark = f"{MARKS[f.verdict]} {f.verdict:<4}"
        if colour:
            mark = f"{paint[f.verdict]}{mark}\x1b[0m"
        line = sanitize_line(f"{f.check.ljust(width)}  {f.detail}", 300)
        remedy = f"  → {sanitize_line(f.remedy, 200)}" if f.remedy and f.verdict != OK else ""
        print(f"{mark}  {line}{remedy}")
    bad = sum(f.verdict == FAIL for f in findings)
    warned = sum(f.verdict == WARN for f in findings)
    print(f"{bad} failed, {warned} warnings, {len(findings) - bad - warned} ok")
    return EXIT_UNHEALTHY if failed else EXIT_OK


def _as_dict(finding: object) -> dict[str, str]:
    """A Finding as JSON-ready fields."""
    names = ("check", "verdict", "detail", "remedy")
    return {name: str(getattr(finding, name)) for name in names}
