"""The performance measures (rocmtui.console.performance), each doing what it is there for.

Textual's Strip, as the console installs it: an operation that leaves a strip as it is returns
the strip itself without caching it on itself, so a drawn line is freed by its reference count,
not left in a cycle for the garbage collector."""

from __future__ import annotations

import gc

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from rocmtui.cli import main as cli_main
from rocmtui.console import performance


def refers_to_itself(strip: Strip, depth: int = 5) -> bool:
    """Whether `strip` can be reached from what it refers to (a reference cycle)."""
    seen: set[int] = set()
    layer: list[object] = list(gc.get_referents(strip))
    for _ in range(depth):
        following: list[object] = []
        for obj in layer:
            if obj is strip:
                return True
            if id(obj) not in seen and not isinstance(obj, (str, int, type)):
                seen.add(id(obj))
                following.extend(gc.get_referents(obj))
        layer = following
    return False


def line() -> Strip:
    return Strip([Segment("building HIP object "), Segment("k1.o", Style(bold=True))])


def used(how: str) -> Strip:
    """A strip after the calls the compositor makes on a full-width line."""
    strip = line()
    length = strip.cell_length
    if how == "divide":
        assert strip.divide([length]) == [strip]
        assert [s.text for s in strip.divide([9, length])] == ["building ", "HIP object k1.o"]
    else:
        assert strip.crop_extend(0, length, None) is strip
        assert strip.crop_extend(0, length + 3, None).text == strip.text + "   "
    return strip


def test_a_drawn_line_does_not_refer_to_itself() -> None:
    performance.install_strip_patch()
    performance.install_strip_patch()  # once is enough; twice changes nothing
    textual_divided, textual_extended = line(), line()
    performance.TEXTUAL_STRIP["divide"](textual_divided, [textual_divided.cell_length])
    performance.TEXTUAL_STRIP["crop_extend"](
        textual_extended, 0, textual_extended.cell_length, None
    )
    assert refers_to_itself(textual_divided) and refers_to_itself(textual_extended)  # why
    assert not refers_to_itself(used("divide"))
    assert not refers_to_itself(used("crop_extend"))


def test_settle_heap_freezes_what_start_up_left_alive() -> None:
    before = gc.get_freeze_count()
    try:
        performance.settle_heap()
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()


def test_the_console_comes_up_without_collections_and_settles_with_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`rocmtui` (the console) turns the collector off before it imports anything; a command
    leaves it on; the console's settle_heap turns it back on."""
    collecting: dict[str, bool] = {}

    def run(words: list[str], monitor: object) -> int:
        collecting[" ".join(words)] = gc.isenabled()
        return 0

    monkeypatch.setattr(cli_main, "start_monitor", lambda words: None)
    monkeypatch.setattr(cli_main, "_run", run)
    try:
        for words in (["--config", "fleet.toml"], [], ["status"], ["--help"], ["--version"]):
            gc.enable()
            assert cli_main.main(words) == 0
        assert collecting == {
            "--config fleet.toml": False,
            "": False,
            "status": True,
            "--help": True,
            "--version": True,
        }
        gc.disable()
        performance.settle_heap()
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_glibc_is_tuned_once_and_freed_heap_handed_back() -> None:
    libc = performance.tune_malloc()
    assert libc is not None  # glibc, as on every machine the console runs on
    assert performance.tune_malloc() is libc
    performance.release_freed_memory()  # malloc_trim(0): callable, harmless
