"""The idle cell's short form of a node's history note: the what, never the long why."""

from __future__ import annotations

import pytest

from rocmtui.console.widgets.nodes import short_note


@pytest.mark.parametrize(
    ("note", "short"),
    [
        (
            "builds started elsewhere are not visible here: dockerd 20.10.24+dfsg1, BuildKit "
            "v0.8 (needs dockerd 24+ for build history)",
            "outside builds not visible here",
        ),
        (
            "builds started elsewhere are not recorded: ERROR: permission denied",
            "outside builds not recorded",
        ),
        ("a note of another shape", "a note of another shape"),
        ("\x1b[31mred\x1b[0m: the why", "red"),  # outside text: escapes never reach the cell
    ],
)
def test_short_note(note: str, short: str) -> None:
    assert short_note(note) == short
