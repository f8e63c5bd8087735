"""What the README says, read by tests that hold the code to it."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_codes(command: str) -> str:
    """The exit column of the README's row for `rocmtui COMMAND`."""
    for line in README.read_text().splitlines():
        if line.startswith(f"| `rocmtui {command}"):
            return line.rstrip("|").rsplit("|", 1)[1].strip()
    raise AssertionError(f"no README row for {command}")
