"""Run every figure of the project, each beside its anchor, and write bench/RESULTS.md.

    python bench/run.py [--quick] [--only NAME ...] [--timeout SECONDS]

Each bench/bench_*.py runs as a subprocess of its own (a crash or a hang is that script's
failure, shown in the table, never the suite's), with BENCH_RESULTS naming a JSON file for its
rows (and `--json FILE` too when the script takes that flag) and BENCH_QUICK=1 under --quick
(and `--quick` when the script takes it). Rows follow bench/README.md; rows of other shapes are
shown as well as they can be. The combined table goes to stdout and to bench/RESULTS.md; each
script's own output is kept in bench/results/NAME.log.tmp.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Row, fmt, table  # noqa: E402


def scripts(only: list[str]) -> list[Path]:
    """bench_*.py, in name order (or those named)."""
    found = sorted(HERE.glob("bench_*.py"))
    if only:
        found = [p for p in found if p.stem in only or p.stem.removeprefix("bench_") in only]
    return found


def _flatten(tree: dict[str, Any], prefix: str) -> list[Row]:
    """Rows from a nested dict of numbers: {"follow": {"tail -F": {"lag (s)": 0.1}}} gives
    the row "follow: tail -F: lag (s)" = 0.1; lists of rows inside are taken as rows."""
    out: list[Row] = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and "figure" not in value:
            out.extend(_flatten(value, name + ": "))
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            out.extend(normalise(value, ""))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out.append({"figure": name, "rocmtui": value})
    return out


def normalise(raw: Any, script: str) -> list[Row]:
    """Rows of the contract from whatever a script wrote (lists of rows, or nested dicts)."""
    out: list[Row] = []
    if isinstance(raw, dict):
        out.extend(_flatten(raw, ""))
        raw = []
    for r in raw if isinstance(raw, list) else []:
        if not isinstance(r, dict) or "figure" not in r:
            continue
        ok = r.get("pass", r.get("ok"))
        if ok is None and isinstance(r.get("result"), str):
            ok = {"pass": True, "fail": False}.get(r["result"].lower())
        rocm = r.get("rocmtui", r.get("rocmtui_lines_per_s", r.get("seconds")))
        anchor = r.get("anchor", r.get("anchor_lines_per_s"))
        ratio = r.get("ratio")
        if ratio is None and isinstance(rocm, int | float) and isinstance(anchor, int | float):
            ratio = round(rocm / anchor, 3) if anchor else None
        out.append(
            {
                **r,
                "rocmtui": rocm,
                "anchor": anchor,
                "ratio": ratio,
                "target": r.get("target") or "",
                "pass": ok,
            }
        )
    for r in out:
        r["script"] = script
    return out


def run_one(path: Path, quick: bool, timeout: float, results: Path) -> tuple[list[Row], float]:
    """Run one script; its rows (or one failure row) and how long it took."""
    out_json = results / f"{path.stem}.json.tmp"
    out_json.unlink(missing_ok=True)
    source = path.read_text(encoding="utf-8", errors="replace")
    argv = [sys.executable, str(path)]
    # the flag is passed only to a script that declares it: a script that merely runs a
    # command with --json (rocmtui history --json) would refuse an argument it does not know
    if 'add_argument("--json"' in source:
        argv += ["--json", str(out_json)]
    if quick and '"--quick"' in source:
        argv.append("--quick")
    env = dict(os.environ, BENCH_RESULTS=str(out_json), PYTHONUNBUFFERED="1")
    if quick:
        env["BENCH_QUICK"] = "1"
    log = results / f"{path.stem}.log.tmp"
    started = time.monotonic()
    print(f"\n=== {path.name} {'(quick)' if quick else ''}", flush=True)
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=HERE.parent,
            start_new_session=True,
        )  # fmt: skip
        assert proc.stdout is not None
        deadline = started + timeout
        timed_out = False
        os.set_blocking(proc.stdout.fileno(), False)
        while True:
            done = proc.poll() is not None
            chunk = proc.stdout.read()  # non-blocking: None when nothing is there
            if chunk:
                sink.write(chunk)
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
            if done:
                break
            if time.monotonic() > deadline:
                timed_out = True
                os.killpg(proc.pid, 9)
            time.sleep(0.05)
    took = time.monotonic() - started
    rows: list[Row] = []
    if out_json.exists() and out_json.stat().st_size:
        try:
            rows = normalise(json.loads(out_json.read_text(encoding="utf-8")), path.stem)
        except ValueError as exc:
            rows = []
            print(f"{path.name}: unreadable results: {exc}", flush=True)
    if proc.returncode != 0 or not rows:
        why = "timed out" if timed_out else f"exit {proc.returncode}"
        if proc.returncode == 0 and not rows:
            why = "no rows"
        tail = log.read_bytes()[-300:].decode("utf-8", "replace").strip().splitlines()
        rows.append(
            {
                "script": path.stem,
                "figure": f"{path.name} failed ({why})",
                "rocmtui": None,
                "anchor": None,
                "ratio": None,
                "target": "",
                "pass": False,
                # paths as the repository names them: results never hold this machine's
                "note": tail[-1].replace(str(HERE.parent) + "/", "")[:120] if tail else "",
            }
        )
    return rows, took


def engines_line() -> str:
    """Which engine each dev fleet node runs in this run (`ROCMTUI_FLEET_ENGINES` applied)."""
    sys.path.insert(0, str(HERE.parent))
    from devfleet.assembly import DEFAULT_NODES, engine_kinds

    kinds = engine_kinds([name for name, _, _ in DEFAULT_NODES])
    current = Path("/usr/local/lib/rocmtui-engines/current/bin/dockerd")
    version = (
        subprocess.run(
            [str(current) if current.exists() else "dockerd", "--version"],
            capture_output=True,
            text=True,
            check=False,
        )
        .stdout.split(",")[0]
        .removeprefix("Docker version ")
    )
    words = {
        k.name: (f"dockerd {version}" if k.current else "dockerd 20.10")
        + (", containerd store" if k.containerd_store else "")
        + (f", minimum API {k.min_api}" if k.min_api else "")
        for k in kinds.values()
    }
    return "; ".join(f"{node} {words[kind.name]}" for node, kind in kinds.items())


def markdown(rows: list[Row], quick: bool, took: dict[str, float]) -> str:
    """bench/RESULTS.md."""
    head = [
        "# Benchmark results",
        "",
        f"Run by `python bench/run.py{' --quick' if quick else ''}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average at end "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        "Each figure is measured beside its anchor in the same run; ratio is rocmtui / anchor.",
        f"Dev fleet engines (every script that starts a fleet): {engines_line()}.",
        "See bench/README.md for what each script measures and how.",
        "",
        "| script | figure | rocmtui | anchor | ratio | target | result | note |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        anchor = fmt(r.get("anchor"))
        if r.get("anchor_name") and r.get("anchor") is not None:
            anchor += f" ({r['anchor_name']})"
        cells = [
            r.get("script", ""),
            r.get("figure", ""),
            fmt(r.get("rocmtui")),
            anchor,
            fmt(r.get("ratio")),
            r.get("target") or "",
            {True: "pass", False: "**FAIL**", None: "info"}[r.get("pass")],
            str(r.get("note") or ""),
        ]
        head.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    head += ["", "Time per script: " + ", ".join(f"{k} {v:.0f} s" for k, v in took.items()), ""]
    return "\n".join(head)


def main(argv: list[str] | None = None) -> int:
    """Run the suite; exit 0 unless a script failed to produce rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short versions of every figure")
    parser.add_argument("--only", nargs="*", default=[], help="script names (bench_x or x)")
    parser.add_argument("--timeout", type=float, default=None, help="per script, seconds")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    timeout = args.timeout or (900.0 if args.quick else 2400.0)
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    rows: list[Row] = []
    took: dict[str, float] = {}
    for path in scripts(args.only):
        got, seconds = run_one(path, args.quick, timeout, results)
        rows.extend(got)
        took[path.stem] = seconds
    print("\n" + table(rows))
    args.out.write_text(markdown(rows, args.quick, took), encoding="utf-8")
    print(f"\nwrote {args.out}")
    crashed = [r for r in rows if " failed (" in str(r.get("figure", ""))]
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())
