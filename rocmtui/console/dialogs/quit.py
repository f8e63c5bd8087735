"""What quitting says: which builds keep running (they never belonged to the console)."""

from __future__ import annotations

from rich.text import Text

from rocmtui.console.backend.views import JobView
from rocmtui.console.outside_text import clean


def quit_question(running: list[JobView]) -> Text:
    """The question asked before quitting with builds running."""
    text = Text("Quit? These builds keep running after the console closes:\n", style="bold")
    for job in running[:10]:
        text.append(
            f"  {clean(job.record.id)}  {clean(job.record.target)} {clean(job.record.arch or '')} "
            f"on {clean(job.record.node)}  ({job.record.state})\n"
        )
    if len(running) > 10:
        text.append(f"  … and {len(running) - 10} more\n")
    text.append("Follow one later with: rocmtui logs JOB -f", style="dim")
    return text


def farewell(running: list[JobView]) -> str:
    """Printed on the terminal after the console closed."""
    if not running:
        return ""
    lines = [f"rocmtui: {len(running)} build(s) keep running:"]
    lines += [
        f"  {clean(r.id)}  {clean(r.target)} {clean(r.arch or '')} on {clean(r.node)}"
        for r in (j.record for j in running)
    ]
    lines.append("follow one with: rocmtui logs JOB -f")
    return "\n".join(lines)
