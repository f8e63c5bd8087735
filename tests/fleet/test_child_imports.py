"""The processes rocmtui starts import rocmtui itself, never a `rocmtui/` folder that happens to
lie in their working folder (`python -m` puts the working folder first on sys.path)."""

from __future__ import annotations

import json
import select
import shutil
import time
from pathlib import Path

import pytest

from rocmtui.core.hostmonitor import ownchild
from tests.support.jobs import engineless_fleet, run_cli, wait_state

DEMO_BAKE = Path(__file__).resolve().parents[2] / "bake" / "demo.hcl"


def impostor(folder: Path) -> Path:
    """A `rocmtui` package in `folder` that leaves a mark when imported; the mark's path."""
    mark = folder / "impostor-imported"
    package = folder / "rocmtui"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    return mark


def test_the_monitor_child_ignores_a_rocmtui_folder_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = impostor(tmp_path)
    config = engineless_fleet(tmp_path)
    monkeypatch.chdir(tmp_path)
    child = ownchild.start(config)
    try:
        assert child.stdout is not None
        # a real round from the real package; on a loaded machine the first rounds may end at
        # their deadline with the node still "unknown": read on until one decides
        deadline = time.monotonic() + 60
        states = ["unknown"]
        while states == ["unknown"] and time.monotonic() < deadline:
            ready, _, _ = select.select([child.stdout], [], [], deadline - time.monotonic())
            if not ready:
                break
            states = [node["state"] for node in json.loads(child.stdout.readline())["nodes"]]
        assert states == ["down"]
    finally:
        ownchild.stop(child)
    assert not mark.exists()


def test_a_build_supervisor_ignores_a_rocmtui_folder_beside_the_bake_file(
    tmp_path: Path,
) -> None:
    bake_dir = tmp_path / "checkout"
    bake_dir.mkdir()
    shutil.copy(DEMO_BAKE, bake_dir / "demo.hcl")
    mark = impostor(bake_dir)  # the supervisor runs in the bake file's folder
    config = engineless_fleet(tmp_path, bake_file=bake_dir / "demo.hcl")
    started = run_cli(config, "bake", "demo-base", "--json")
    assert started.returncode == 0, started.stderr
    job = json.loads(started.stdout)["id"]
    wait_state(config, job, ["failed", "succeeded"], timeout=120)
    assert not mark.exists()


def test_the_search_helper_ignores_a_rocmtui_folder_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import time

    from rocmtui.core.logs import search_split as logsearch_split
    from rocmtui.core.logs.search import SearchState, compile_query

    mark = impostor(tmp_path)
    log = tmp_path / "build.log"
    log.write_bytes(b"".join(b"line %d %s\n" % (n, b"hit" if n % 7 else b"") for n in range(9000)))
    monkeypatch.setattr(logsearch_split, "SPLIT_BYTES", 1 << 10)  # split even this
    monkeypatch.setattr(logsearch_split, "cores", lambda: 2)
    monkeypatch.chdir(tmp_path)
    fd = os.open(log, os.O_RDONLY)
    try:
        state = SearchState(compile_query("hit"))
        helper = logsearch_split._Helper(fd, state)
        answers: list[tuple[int, int]] = []  # the helper's own, not a search made up for here
        assert helper.ask(0, os.fstat(fd).st_size)
        deadline = time.monotonic() + 30
        while not answers and helper.alive() and time.monotonic() < deadline:
            helper.poll(lambda lines, found: answers.append((lines, len(found))), 0.1)
        helper.close()
    finally:
        os.close(fd)
    assert answers == [(9000, 9000 - 9000 // 7 - 1)]
    assert not mark.exists()
