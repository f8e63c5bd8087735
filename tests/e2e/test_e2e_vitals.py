"""Every node's vitals in the real console (tmux) on the fleet's real shape: snoc-strix read
from its node_exporter, snoc-think over its kept ssh connection, snoc-gaming (TLS) from its
engine API alone. The operator reads the Host column; nothing raw, one row per node."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import DevFleet
from tests.support.realparts import require
from tests.support.terminal import Terminal, console_env

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


@pytest.fixture
def wide_terminal() -> Iterator[Terminal]:
    require("tmux", "node-exporter")
    term = Terminal(240, 40)
    try:
        yield term
    finally:
        term.close()


def _fleet_file(fleet: DevFleet, tmp: Path) -> Path:
    text = fleet.config_path.read_text()
    text = re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 1.0", text)
    path = tmp / "fleet.toml"
    path.write_text("watch_history = false\n" + text)
    return path


def _host(shown: str, node: str) -> str:
    line = next((ln for ln in shown.splitlines() if re.search(rf"\b{node}\b", ln)), "")
    return line


def test_the_host_column_shows_each_node_s_vitals(
    fleet: DevFleet, wide_terminal: Terminal, tmp_path: Path
) -> None:
    term = wide_terminal
    env = console_env(tmp_path)
    term.start(env, _fleet_file(fleet, tmp_path))

    def every_node(shown: str) -> bool:
        strix, think, gaming = (_host(shown, n) for n in ("snoc-strix", "snoc-think",
                                                           "snoc-gaming"))  # fmt: skip
        return bool(
            re.search(r"cpu \d+% eng \d+% mem \d+% [\d.]+[KMGT]? free", strix)
            and re.search(r"cpu \d+% eng \d+% mem \d+% [\d.]+[KMGT]? free io \d+%", think)
            and re.search(r"cache [\d.]+[KMGT]?B?", gaming)
        )

    shown = term.wait(every_node, "vitals on every node's row", 90)
    assert "\x1b" not in shown
