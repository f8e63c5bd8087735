"""Fixtures of the end-to-end tests: a tmux terminal."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.realparts import require
from tests.support.terminal import (
    Terminal,
)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    require("tmux")
    term = Terminal()
    try:
        yield term
    finally:
        term.close()
    assert not os.path.exists(term.home), "the tmux socket's directory was left behind"
