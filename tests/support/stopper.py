"""What a factory fixture made during one test, stopped newest first at the test's end."""

from __future__ import annotations

from typing import Any


class Stopper:
    """Collects handles made during one test and stops them all (newest first) at its end."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, item: Any) -> Any:
        self.items.append(item)
        return item

    def stop_all(self) -> None:
        errors = []
        for item in reversed(self.items):
            try:
                item.stop()
            except Exception as exc:  # stop the rest, then report
                errors.append(exc)
        self.items.clear()
        if errors:
            raise errors[0]
