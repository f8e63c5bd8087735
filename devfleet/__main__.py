"""`python -m devfleet up|down|status|screenshots --dir DIR`: the dev fleet from a shell.

`up` returns while the fleet keeps running: every process is in its own session with its output
in log files under DIR, so the shell that ran `make fleet-up` can go away.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from devfleet.assembly import fleet_status, start_fleet, stop_fleet
from devfleet.handle import DevFleet
from devfleet.processes import FleetError


def _summary(fleet: DevFleet) -> str:
    lines = []
    for e in fleet.engines:
        where = f"netns {e.netns}" if e.netns else "host netns"
        lines.append(
            f"  node {e.name:<12} {e.gfx or '-':<8} {e.docker_host}  ({where}, pid {e.pid},"
            f" engine {e.kind})"
        )
    if fleet.registry:
        lines.append(f"  registry {fleet.registry.url}  (pid {fleet.registry.pid})")
    if fleet.webdav:
        lines.append(f"  webdav   {fleet.webdav.url}  (pid {fleet.webdav.pid})")
    for f in fleet.forwarders:
        ports = ", ".join(str(p[0]) for p in f.ports)
        lines.append(f"  forward  {f.netns}: 127.0.0.1:{{{ports}}} -> host (pid {f.pid})")
    for r in fleet.remotes:
        sshd = f"sshd pid {r.sshd.pid}" if r.sshd else "no sshd"
        lines.append(
            f"  remote   {r.name:<12} {r.address} over {r.link.host_if}: {r.ssh_host} ({sshd}),"
            f" {r.tls_host} (TLS); fleet file: {r.reach}"
        )
    return "\n".join(lines)


def _all_alive(fleet: DevFleet) -> bool:
    sshds = [r.sshd for r in fleet.remotes]
    parts = [*fleet.engines, *fleet.forwarders, fleet.registry, fleet.webdav, *sshds]
    return all(p is not None and p.alive() for p in parts)


def cmd_up(workdir: Path, bake_file: Path | None = None) -> int:
    """Start the fleet (or report the one already running) and print where its config is."""
    existing = DevFleet.load(workdir)
    if existing is not None:
        if _all_alive(existing):
            print(f"dev fleet already up in {workdir}:\n{_summary(existing)}")
            print(f"config: {existing.config_path}")
            return 0
        print("a previous dev fleet is partly gone: stopping what is left", file=sys.stderr)
        stop_fleet(workdir)
    try:
        fleet = start_fleet(workdir, bake_file=bake_file)
    except FleetError as exc:
        print(f"devfleet up failed: {exc}", file=sys.stderr)
        return 1
    print(f"dev fleet up in {fleet.started_seconds:.1f}s (logs under {workdir}):")
    print(_summary(fleet))
    print(f"config: {fleet.config_path}")
    print(f"try:    rocmtui --config {fleet.config_path}")
    if fleet.remotes:
        print(f"docker by hand over ssh: PATH={fleet.ssh.bin}:$PATH docker -H ssh://ci@NODE ...")
        print(f"its docker contexts:     DOCKER_CONFIG={fleet.docker_config} docker context ls")
    print(f"stop:   python -m devfleet down --dir {workdir}")
    return 0


def cmd_down(workdir: Path) -> int:
    """Stop everything recorded in DIR and remove its network namespaces."""
    try:
        stopped = stop_fleet(workdir)
    except FleetError as exc:
        print(f"devfleet down: {exc}", file=sys.stderr)
        return 1
    print("dev fleet stopped" if stopped else f"no dev fleet recorded in {workdir}")
    return 0


def cmd_status(workdir: Path) -> int:
    """Show each recorded part and whether it runs; exit 1 unless all are ok."""
    status = fleet_status(workdir)
    if status is None:
        print(f"no dev fleet recorded in {workdir}")
        return 1
    healthy = True
    for kind, name, pid, state, where in status["parts"]:
        healthy &= state == "ok"
        print(f"{kind:<9} {name:<24} pid {pid:<8} {state:<8} {where}")
    print(f"config: {status['config_path']}")
    return 0 if healthy else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["screenshots"]:
        # Imported only here: it pulls in Textual, which up/down/status never need.
        from devfleet import screenshots

        return int(screenshots.main(argv[1:]) or 0)
    ap = argparse.ArgumentParser(prog="python -m devfleet", description=__doc__)
    ap.add_argument("command", choices=["up", "down", "status", "screenshots"])
    ap.add_argument("--dir", type=Path, default=Path(".fleet"), help="fleet dir (default .fleet)")
    ap.add_argument(
        "--bake-file",
        type=Path,
        default=None,
        help="bake_file of the written rocmtui.toml (default: the repository's bake/rocm-bake.hcl)",
    )
    args = ap.parse_args(argv)
    workdir = args.dir.resolve()
    if args.command in ("up", "down") and os.geteuid() != 0:
        print("the dev fleet needs root (dockerd, network namespaces)", file=sys.stderr)
        return 2
    if args.command == "up":
        return cmd_up(workdir, args.bake_file.resolve() if args.bake_file else None)
    return {"down": cmd_down, "status": cmd_status}[args.command](workdir)


if __name__ == "__main__":
    raise SystemExit(main())
