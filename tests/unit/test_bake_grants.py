"""What the bake dialog says of the privileges a build asks bake for, and its Start question:
each named with what it does, the ones that change the node marked and first."""

from __future__ import annotations

from rocmtui.console.backend.views import BakePlan
from rocmtui.console.dialogs.bake_grants import privileges_note, start_question
from rocmtui.core.bake.entitlements import Privilege

READ = Privilege("fs.read", "../pytorch")
HOST = Privilege("network.host")
INSECURE = Privilege("security.insecure")


def plan(*privileges: Privilege, push: bool = False) -> BakePlan:
    return BakePlan("host-net", "gfx1201", "snoc-think", push, privileges=privileges, ready=True)


def test_the_note_names_each_and_marks_the_loud_ones() -> None:
    note = privileges_note(plan(HOST, READ, INSECURE), False, ())
    assert note.plain == (
        "asks bake for: network.host, fs.read=../pytorch, ⚠ security.insecure; Start asks first"
    )
    loud = [span for span in note.spans if "red" in str(span.style)]
    assert [note.plain[s.start : s.end] for s in loud] == ["⚠ security.insecure"]


def test_nothing_asked_takes_no_line_and_a_rebuild_says_its_grants() -> None:
    assert privileges_note(plan(), False, ()).plain == ""
    assert privileges_note(plan(READ), True, ()).plain == ""  # resolving: not known yet
    said = privileges_note(plan(), False, ("fs.read=../pytorch",))
    assert said.plain == "the earlier build was granted: fs.read=../pytorch (asked again)"


def test_the_question_names_what_each_does_loud_first() -> None:
    question, label, details = start_question(plan(HOST, INSECURE))
    assert question.plain.splitlines() == [
        "Grant host-net for gfx1201 on snoc-think:",
        "⚠ --allow security.insecure  privileged build containers that can change the node",
        "  --allow network.host  build containers on the node's host network",
        "Start it with these granted?",
    ]
    assert label == "Grant and build"
    assert details.startswith("⚠ marks what can change the node")


def test_a_push_and_a_grant_are_one_question() -> None:
    question, label, _ = start_question(plan(READ, push=True))
    assert question.plain.endswith("Push host-net for gfx1201 to the registry?")
    assert label == "Grant, build and push"
    _, label, details = start_question(plan(push=True))
    assert label == "Build and push" and details == (
        "Pushing replaces the published tags of this target."
    )
