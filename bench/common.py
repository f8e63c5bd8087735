"""What every bench/bench_*.py shares: the row contract, `emit`, and where the results go.

A row is one figure measured beside its anchor (see bench/README.md):

    {"figure": "open 1M-line log: last screen (s)", "unit": "s",
     "rocmtui": 0.41, "anchor": 2.2, "anchor_name": "toolong 1.5",
     "ratio": 0.19, "target": "< 0.6 s", "pass": true, "note": "median of 3"}

`emit(rows)` prints them as a table and, when `run.py` set `BENCH_RESULTS`, appends them to
that JSON file. `quick()` says whether `run.py --quick` asked for short versions.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

Row = dict[str, Any]


def compile_package() -> None:
    """Write the package's bytecode, as an installed package has it. Where
    PYTHONDONTWRITEBYTECODE is set (CI images, this machine) an editable install never caches
    it, and every console start would compile ~10,000 lines first (~0.1 s): a start-up figure
    would measure the compiler, not the console."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "rocmtui"), quiet=1)


compile_package()


def quick() -> bool:
    """True under `run.py --quick` (or BENCH_QUICK=1): run short versions of the figures."""
    return os.environ.get("BENCH_QUICK", "") not in ("", "0")


def cache_dir() -> Path:
    """Where generated logs and anchor venvs are kept between runs (outside the work tree)."""
    default = Path(tempfile.gettempdir()) / "rocmtui-bench"
    path = Path(os.environ.get("ROCMTUI_BENCH_DIR") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def row(
    figure: str,
    rocmtui: float | None,
    anchor: float | None = None,
    *,
    unit: str = "",
    anchor_name: str = "",
    target: str = "",
    ok: bool | None = None,
    lower_is_better: bool = True,
    note: str = "",
) -> Row:
    """One figure; `ratio` is rocmtui/anchor (below 1 is better when lower is better)."""
    ratio = None
    if rocmtui is not None and anchor:
        ratio = round(rocmtui / anchor, 3)
    return {
        "figure": figure,
        "unit": unit,
        "rocmtui": None if rocmtui is None else round(rocmtui, 4),
        "anchor": None if anchor is None else round(anchor, 4),
        "anchor_name": anchor_name,
        "ratio": ratio,
        "target": target,
        "pass": ok,
        "lower_is_better": lower_is_better,
        "note": note,
    }


def p95(values: Sequence[float]) -> float:
    """95th percentile (nearest rank)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def median(values: Iterable[float]) -> float:
    """Median, NaN for none."""
    got = list(values)
    return statistics.median(got) if got else float("nan")


def fmt(value: object) -> str:
    """A number as a short string."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "pass" if value else "FAIL"
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def table(rows: Sequence[Row]) -> str:
    """A plain fixed-width table of rows."""
    lines = [f"{'figure':52} {'rocmtui':>9} {'anchor':>9} {'ratio':>7}  {'target':14} result"]
    for r in rows:
        lines.append(
            f"{str(r.get('figure'))[:52]:52} {fmt(r.get('rocmtui')):>9} {fmt(r.get('anchor')):>9} "
            f"{fmt(r.get('ratio')):>7}  {r.get('target') or ''!s:14} {fmt(r.get('pass'))}"
        )
    return "\n".join(lines)


def emit(rows: Sequence[Row], path: str | os.PathLike[str] | None = None) -> None:
    """Print the rows; append them to `path` or $BENCH_RESULTS (a JSON list) when set."""
    print(table(rows), flush=True)
    target = path or os.environ.get("BENCH_RESULTS")
    if not target:
        return
    out = Path(target)
    old: list[Row] = []
    if out.exists() and out.stat().st_size:
        try:
            loaded = json.loads(out.read_text(encoding="utf-8"))
            old = loaded if isinstance(loaded, list) else []
        except ValueError:
            old = []
    out.write_text(json.dumps([*old, *rows], indent=2) + "\n", encoding="utf-8")


@contextlib.contextmanager
def fleet_at(fleet_dir: Path | None, tmp: Path) -> Iterator[Path]:
    """The fleet file of a running dev fleet: the one in `fleet_dir`, or one started here in
    `tmp` (and stopped after)."""
    if fleet_dir is not None:
        yield fleet_dir / "rocmtui.toml"
        return
    from devfleet import start_fleet

    fleet = start_fleet(tmp / "fleet")
    try:
        # three dockerd/containerd pairs finish starting up in the background for a few
        # seconds: start-up figures taken meanwhile measured their CPU, not the console's
        time.sleep(5)
        yield fleet.config_path
    finally:
        fleet.stop()
