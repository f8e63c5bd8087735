"""What the bake dialog says about the privileges a build asks bake for, and the question its
Start asks: pure functions over a `BakePlan`, no Textual (each tested on its own).

A privilege is named with what it lets the build do; one that changes the node
(`security.insecure`, a device, a write outside the bake folder) is marked and said louder. A
rebuild (`r`) says what the earlier build was granted: nothing is granted again unasked.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from rocmtui.console.backend.views import BakePlan
from rocmtui.console.outside_text import clean

__all__ = ["privileges_note", "start_question"]

LOUD = "bold red"


def privileges_note(plan: BakePlan | None, resolving: bool, earlier: Sequence[str]) -> Text:
    """What bake will ask for, as the resolved plan says (a line only when it asks for
    something: at 80x24 the resolved definition needs the rows); what an earlier build was
    granted when this is its rebuild (a line of its own)."""
    note = Text()
    if not resolving and plan is not None and plan.privileges:
        note.append("asks bake for: ")
        for index, privilege in enumerate(plan.privileges):
            if index:
                note.append(", ")
            if privilege.loud:
                note.append(f"⚠ {clean(privilege.grant, 120)}", style=LOUD)
            else:
                note.append(clean(privilege.grant, 120), style="bold")
        note.append("; Start asks first")
    if earlier:
        words = " ".join(clean(word, 120) for word in earlier)
        note.append("\n" if note else "")
        note.append(f"the earlier build was granted: {words} (asked again)", style="italic")
    return note


def start_question(plan: BakePlan) -> tuple[Text, str, str]:
    """(question, the yes key's label, details) for Start on a plan that pushes or asks for
    privileges: each privilege named with what it does, the loud ones first and in red."""
    question = Text()
    what = f"{clean(plan.target)} for {clean(plan.arch)} on {clean(plan.node)}"
    if plan.privileges:
        question.append(f"Grant {what}:\n", style="bold")
        for privilege in sorted(plan.privileges, key=lambda p: not p.loud):
            style = LOUD if privilege.loud else ""
            mark = "⚠ " if privilege.loud else "  "
            question.append(f"{mark}--allow {clean(privilege.grant, 120)}", style=style or "bold")
            question.append(f"  {privilege.why}\n", style=style)
    if plan.push:
        hosts = ", ".join(clean(h, 60) for h in plan.push_hosts) or "the registry"
        question.append(f"Push {clean(plan.target)} for {clean(plan.arch)} to {hosts}?")
    else:
        question.append("Start it with these granted?")
    details = []
    if any(p.loud for p in plan.privileges):
        details.append("⚠ marks what can change the node or its files, not only the image.")
    if plan.privileges:
        details.append("bake is given exactly these; the job keeps what it was granted.")
    if plan.push:
        details.append("Pushing replaces the published tags of this target.")
    if plan.privileges:
        label = "Grant, build and push" if plan.push else "Grant and build"
    else:
        label = "Build and push"
    return question, label, " ".join(details)
