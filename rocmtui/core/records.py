"""Frozen records are msgspec Structs: a Struct class is made in C at import, where a frozen
slots dataclass on Python 3.11 compiles five or six methods from generated source (about 5M
instructions a class; the console's first frame needed ~50 of them before it could be drawn).

A few records carry a field that is not part of what they say (where a declaration was read
from, the core object a view was made from): they are `Unsaid` records, whose equality and hash
leave those fields out.
"""

from __future__ import annotations

from typing import ClassVar

from msgspec import Struct


def said(record: Struct, *besides: str) -> tuple[object, ...]:
    """The record's field values in order, without the fields named in `besides`: what two
    records must share to be equal when those fields are not part of what they say."""
    return tuple(getattr(record, name) for name in record.__struct_fields__ if name not in besides)


def repr_without(record: Struct, *besides: str) -> str:
    """The record's repr without the fields named in `besides` (secrets, or an object the
    record was made from)."""
    shown = ", ".join(
        f"{name}={getattr(record, name)!r}"
        for name in record.__struct_fields__
        if name not in besides
    )
    return f"{type(record).__name__}({shown})"


class Unsaid(Struct, frozen=True):
    """A record whose fields named in `UNSAID` are no part of what it says: two records of one
    type that say the same are equal (and hash alike) whatever those fields hold."""

    UNSAID: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, Unsaid):
            return False
        return said(self, *self.UNSAID) == said(other, *self.UNSAID)

    def __hash__(self) -> int:
        return hash(said(self, *self.UNSAID))
