"""What `--help` tells a new user: an option that acts on a value when not given says that
value (`rocmtui jobs` showed 50 jobs and `cancel` waited 10 s, and neither help said so)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from rocmtui.cli.main import build_parser


def options(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    """Every option of every command, with the command's words."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from options(sub, f"{path} {name}")
        elif action.option_strings:
            yield path, action


def test_every_option_with_a_number_by_default_says_it() -> None:
    unsaid = []
    for path, action in options(build_parser(), "rocmtui"):
        default = action.default
        if isinstance(default, bool) or not isinstance(default, int | float):
            continue  # flags, lists, words (choices, each described), None
        help_text = action.help or ""
        if f"default {default:g}" not in help_text and "%(default)" not in help_text:
            unsaid.append(f"{path} {'/'.join(action.option_strings)}: {action.help}")
    assert not unsaid, "\n".join(unsaid)


def test_an_optional_action_reads_optional_in_the_usage() -> None:
    """`rocmtui history` lists builds with no action; its usage read `... ACTION ...`, as if
    one were needed."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    usage = sub.choices["history"].format_usage()
    assert "[ACTION] ..." in usage and " ACTION ..." not in usage, usage


def test_an_unknown_command_is_answered_with_a_near_one_only() -> None:
    from rocmtui.cli.main import unknown_command

    for typo, meant in (("stauts", "status"), ("bkae", "bake"), ("hisotry", "history")):
        assert f"(did you mean {meant}?)" in str(unknown_command([typo])), typo
    said = str(unknown_command(["bogus"]))  # shares o, g, s with logs: no guess
    assert said == "rocmtui: unknown command 'bogus'; `rocmtui --help` lists them", said
