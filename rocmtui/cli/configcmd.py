"""`rocmtui config [--json]`: the fleet file in effect, why, and every setting it makes.

Says which file is read and which step of the lookup found it (`--config`, `$ROCMTUI_CONFIG`,
`./rocmtui.toml`, the user's, the system-wide one of `$XDG_CONFIG_DIRS`, or the built-in
default); the files further down the lookup that exist but are not read (one that would not
parse is named with its line: it is not used, the file in effect is); the bake file and how
it was found; the state, lock and log folders; then every setting with where its value comes
from (the file or the built-in default). Credentials in URLs and secret-named values are
redacted. Exit 0; 2 when the file in effect cannot be used (named with its line).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from rocmtui.cli.main import EXIT_OK, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `config` subcommand."""
    parser = sub.add_parser(
        "config",
        help="the fleet file in effect, why, and its settings",
        description="Print the fleet file in effect, which step of the lookup found it, and "
        "the merged settings (the file's, else the built-in defaults), secrets redacted.",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")


def _file_keys(path: Any) -> set[str]:
    """The top-level keys the fleet file itself sets (the rest are built-in defaults)."""
    # on first use: kept off `--help`
    import tomllib

    if path is None:
        return set()
    try:
        return set(tomllib.loads(path.read_text(encoding="utf-8-sig")))
    except (OSError, ValueError):
        return set()


def config_facts(args: argparse.Namespace) -> dict[str, Any]:
    """Everything `config` prints, as data (ConfigError for an unusable file in effect)."""
    # on first use: kept off `--help`
    from rocmtui.core.config.find import lookup
    from rocmtui.core.config.fleetfile import ConfigError, parse_config
    from rocmtui.core.debuglog import DEBUG_LOG, debug_wanted, log_dir, monitor_log
    from rocmtui.core.jobs.locks import lock_dir
    from rocmtui.core.paths import state_dir
    from rocmtui.core.text.redact import Redactor

    found = lookup(getattr(args, "config", None))
    config = config_from(args)
    hide = Redactor(os.environ).redact_text
    shadowed = []
    for path, step in found.shadowed:
        try:
            parse_config(path)
            verdict = "not read: the file in effect comes first"
        except ConfigError as exc:
            verdict = f"not read, and would not load: {exc}"
        shadowed.append({"path": str(path), "step": step, "verdict": hide(verdict)})
    in_file = _file_keys(config.source)

    def origin(key: str) -> str:
        return "fleet file" if key in in_file else "built-in default"

    settings: dict[str, Any] = {}
    for key in (
        "refresh_seconds",
        "stall_after_seconds",
        "stall_busy_after_seconds",
        "probe_deadline_seconds",
        "read_only",
        "theme",
        "disk_warn_percent",
    ):
        settings[key] = {"value": getattr(config, key), "from": origin(key)}
    settings["bake_file"] = {"value": str(config.bake_file), "from": config.bake_found_by}
    for key in ("registry", "webdav"):
        settings[key] = {"value": {"url": hide(getattr(config, key).url)}, "from": origin(key)}
    settings["nodes"] = {
        "value": [
            {
                "name": n.name,
                "endpoint": hide(n.endpoint),
                "builder": n.builder,
                "gfx": n.gfx,
                "local": n.local,
            }
            for n in config.nodes
        ],
        "from": origin("nodes"),
    }
    settings["keys"] = {"value": dict(config.keys), "from": origin("keys")}
    settings["webdav"]["value"]["path"] = str(config.webdav.path) if config.webdav.path else None
    settings.update(_published_settings(config, hide, origin))
    # on first use: kept off `--help`
    from rocmtui.core.bake.find import bake_files

    env_state = "$ROCMTUI_STATE_DIR" if os.environ.get("ROCMTUI_STATE_DIR") else None
    state_from = env_state or (
        "the fleet file's state_dir" if config.state_dir else "$XDG_STATE_HOME/rocmtui"
    )
    return {
        "fleet_file": str(config.source) if config.source else None,
        "found_by": found.step,
        "not_read": shadowed,
        "bake_file": str(config.bake_file),
        "bake_files": [str(f) for f in bake_files(config.bake_file)],
        "bake_found_by": config.bake_found_by,
        "bake_problem": config.bake_problem,
        "state_dir": {"path": str(state_dir(config)), "from": state_from},
        "lock_dir": str(lock_dir(config)),
        "debug_log": {"path": str(log_dir(config) / DEBUG_LOG), "on": debug_wanted()},
        "monitor_log": str(monitor_log(config)),
        "settings": settings,
    }


def _published_settings(config: Any, hide: Any, origin: Any) -> dict[str, Any]:
    """`[variables]` (secret-named ones redacted), `[matrix]` and `[upstream]`."""
    # on first use: kept off `--help`
    from rocmtui.core.text.redact import is_secret_name

    up = config.upstream
    return {
        "variables": {
            "value": {
                k: f"<redacted:{k}>" if is_secret_name(k) else hide(v)
                for k, v in config.variables.items()
            },
            "from": origin("variables"),
        },
        "matrix": {
            "value": {
                "refresh_seconds": config.matrix.refresh_seconds,
                "deadline_seconds": config.matrix.deadline_seconds,
                "concurrency": config.matrix.concurrency,
            },
            "from": origin("matrix"),
        },
        "upstream": {
            "value": {
                "pypi": hide(up.pypi) if up.pypi else None,
                "github": hide(up.github) if up.github else None,
                "timeout_seconds": up.timeout_seconds,
                "max_age_seconds": up.max_age_seconds,
                "pins": {k: f"{p.source}:{p.name}" for k, p in up.pins.items()},
            },
            "from": origin("upstream"),
        },
    }


def run(args: argparse.Namespace) -> int:
    """Print it."""
    # on first use: kept off `--help`
    from rocmtui.core.text.sanitize import sanitize_line

    data = config_facts(args)
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    out: list[str] = []
    out.append(f"fleet file    {data['fleet_file'] or '(none: the built-in default)'}")
    out.append(f"  found by    {data['found_by']}")
    for other in data["not_read"]:
        out.append(f"  also found  {other['path']} ({other['step']}): {other['verdict']}")
    out.append(f"bake file     {data['bake_file']}")
    if data["bake_files"] != [data["bake_file"]] and data["bake_files"]:
        out.append(f"  reads       {' + '.join(data['bake_files'])}")
    out.append(f"  found by    {data['bake_found_by']}")
    if data["bake_problem"]:
        out.append(f"  problem     {data['bake_problem']}")
    out.append(f"state folder  {data['state_dir']['path']} ({data['state_dir']['from']})")
    out.append(f"lock folder   {data['lock_dir']}")
    debug = data["debug_log"]
    out.append(f"debug log     {debug['path']} ({'on' if debug['on'] else 'off: --debug'})")
    out.append(f"monitor log   {data['monitor_log']}")
    out.append("settings (from the fleet file, else the built-in default):")
    for key, entry in data["settings"].items():
        value = entry["value"]
        if key == "nodes":
            out.append(f"  nodes  ({entry['from']})")
            for node in value:
                extra = "".join(
                    f" {k}={node[k]}" for k in ("builder", "gfx") if node[k] is not None
                )
                local = " local" if node["local"] else ""
                out.append(f"    {node['name']}: {node['endpoint']}{extra}{local}")
            continue
        shown = json.dumps(value) if not isinstance(value, str) else value
        out.append(f"  {key} = {shown}  ({entry['from']})")
    for line in out:
        print(sanitize_line(line, 400))
    return EXIT_OK
