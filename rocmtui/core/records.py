"""Frozen records are msgspec Structs: a Struct class is made in C at import, where a frozen
slots dataclass on Python 3.11 compiles five or six methods from generated source (about 5M
instructions a class; the console's first frame needed ~50 of them before it could be drawn).

A few records carry a field that is no part of their value (where a declaration was read from,
the core object a view was made from): they are `PartlyCompared` records, whose equality and
hash leave those fields out.
"""

from __future__ import annotations

from typing import ClassVar

from msgspec import Struct


def compared_values(record: Struct, *besides: str) -> tuple[object, ...]:
    """The record's field values in order, without the fields named in `besides`: what two
    records must share to be equal when those fields are no part of their value."""
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


class PartlyCompared(Struct, frozen=True):
    """A record whose fields named in `NOT_COMPARED` are no part of its value: two records of
    one type that agree on every other field are equal (and hash alike) whatever those hold."""

    NOT_COMPARED: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, PartlyCompared):
            return False
        return compared_values(self, *self.NOT_COMPARED) == compared_values(
            other, *self.NOT_COMPARED
        )

    def __hash__(self) -> int:
        return hash(compared_values(self, *self.NOT_COMPARED))
