"""Which docker-buildx `docker buildx` runs: the docker CLI's own search order."""

from __future__ import annotations

import json
from pathlib import Path

from rocmtui.core.bake.plugin import buildx_plugin


def plugin(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "docker-buildx"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_extra_dirs_then_the_config_folder_then_the_system(tmp_path: Path) -> None:
    config = tmp_path / "docker"
    env = {"DOCKER_CONFIG": str(config), "HOME": str(tmp_path / "home")}
    own = plugin(config / "cli-plugins")
    assert buildx_plugin(env) == own
    extra = plugin(tmp_path / "extra")
    (config / "config.json").write_text(json.dumps({"cliPluginsExtraDirs": [str(extra.parent)]}))
    assert buildx_plugin(env) == extra
    (config / "config.json").write_text("{not json")  # docker would refuse it; we look on
    assert buildx_plugin(env) == own


def test_home_is_the_default_config_folder_and_a_file_that_cannot_run_is_passed_over(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    found = plugin(home / ".docker" / "cli-plugins")
    assert buildx_plugin({"HOME": str(home)}) == found
    found.chmod(0o644)
    assert buildx_plugin({"HOME": str(home)}) != found
