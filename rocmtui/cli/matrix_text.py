"""The matrix as text for people: a table of verdicts, then one line per cell that needs work.

Every cell is rich `Text` (never markup) and every outside string is sanitised: tags, reasons
and labels come from the bake file and the registry.
"""

from __future__ import annotations

import time

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rocmtui.core.matrix.cells import NEEDS_WORK, VERDICT_SYMBOLS, Cell, Matrix
from rocmtui.core.text.sanitize import sanitize_line
from rocmtui.core.text.units import fmt_age, fmt_seconds
from rocmtui.core.webdavstore import describe_store

STYLES = {
    "published": "green",
    "building": "cyan bold",
    "stale": "yellow",
    "moved": "magenta bold",
    "missing": "red",
    "failed": "red bold",
    "never built": "dim",
    "unknown": "yellow",
}


def cell_word(cell: Cell) -> str:
    """`✓ published`, or `—` where the row builds nothing for the arch."""
    if not cell.applies:
        return "—"
    mark = " !" if cell.regressions else ""  # slower builds: listed below the table
    return f"{VERDICT_SYMBOLS.get(cell.verdict, '?')} {cell.verdict}{mark}"


def cell_line(row: str, cell: Cell) -> str:
    """One line for a cell that needs work: what, why, and the last job."""
    text = f"{row} {cell.arch}: {cell_word(cell)}"
    if cell.reason:
        text += f": {cell.reason}"
    if cell.job is not None and cell.verdict not in ("building", "failed"):
        text += f" (job {cell.job.id}: {cell.job.last_built()})"
    return sanitize_line(str(text), 300)


def render(matrix: Matrix, width: int | None = None) -> None:
    """Print the matrix (piped output is drawn 160 columns wide, as `status` does)."""
    console = Console(highlight=False, soft_wrap=False, width=width)
    if width is None and not console.is_terminal:
        console.width = 160
    age = fmt_age(time.time() - matrix.taken_at)
    bake_file, registry = (sanitize_line(str(x), 200) for x in (matrix.bake_file, matrix.registry))
    title = f"published — {bake_file} · registry {registry}"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("target", no_wrap=True)
    for arch in matrix.arches:
        table.add_column(sanitize_line(str(arch), 20), no_wrap=True)
    for row in matrix.rows:
        cells = [
            Text(cell_word(c), style=STYLES.get(str(c.verdict), "") if c.applies else "dim")
            for c in row.cells
        ]
        table.add_row(Text(sanitize_line(str(row.name), 60), style="bold"), *cells)
    console.print(table)
    counts = ", ".join(f"{n} {word}" for word, n in sorted(matrix.counts().items()))
    cost = f"{matrix.requests} registry requests in {fmt_seconds(matrix.seconds)}"
    console.print(Text(f"{counts or 'no cells'} · {cost} · {age} ago", style="dim"))
    for row in matrix.rows:
        for cell in row.cells:
            if cell.applies and cell.verdict in NEEDS_WORK:
                console.print(Text(cell_line(row.name, cell)))
            for regression in cell.regressions:
                said = f"{row.name} {cell.arch}: ! {regression}"
                console.print(Text(sanitize_line(str(said), 300), style="red"))
    for error in matrix.errors:
        console.print(Text(sanitize_line(str(error), 300), style="red"))
    if matrix.store is not None:
        console.print(Text(sanitize_line(str(describe_store(matrix.store)), 300), style="dim"))
