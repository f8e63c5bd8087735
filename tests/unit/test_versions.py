"""The version check: each pin beside the newest upstream release, from a stand-in upstream that
speaks the PyPI JSON API and the GitHub releases API (tests/support/upstream_standin.py); ordering
by
`packaging.version`, pre-releases told apart, bad answers and no answer as states, answers kept
with their age."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from rocmtui.core.config.fleetfile import ConfigError, load_config
from rocmtui.core.diskcache import JsonCache
from rocmtui.core.versions.upstream import (
    UpstreamAnswer,
    ask_upstream,
    compare,
    github_releases,
    newest,
    parse_version,
    pypi_releases,
)
from tests.support.jobs import DEMO_BAKE, run_cli
from tests.support.registry import StandInRegistry
from tests.support.upstream_standin import DATA, UpstreamStandIn

PINS = ["ROCM_VERSION", "PYTORCH_VERSION", "TRITON_VERSION", "AITER_VERSION", "NIXL_VERSION"]


def test_versions_sort_as_versions_and_prereleases_are_apart() -> None:
    torch = pypi_releases(json.loads((DATA / "pypi" / "torch.json").read_text()))
    assert "2.16.1" not in {r.version for r in torch}  # yanked
    assert newest(torch) == ("2.16.0", "2.17.0rc1")  # not "2.9.1", which sorts last as text
    nixl = pypi_releases(json.loads((DATA / "pypi" / "nixl.json").read_text()))
    assert newest(nixl) == ("1.5.1", None)  # 1.6.0 has no files yet
    rocm = github_releases(json.loads((DATA / "github" / "ROCm__ROCm.json").read_text()))
    assert newest(rocm) == ("7.2.2", "7.10.0rc0")  # no draft; `-preview` is a pre-release
    python = github_releases(json.loads((DATA / "github" / "python__cpython.json").read_text()))
    assert newest(python) == ("3.14.0", "3.15.0a2")  # a pre-release by its version
    assert str(parse_version("v0.1.7")) == "0.1.7" and str(parse_version("rocm-7.2.2")) == "7.2.2"
    answer = UpstreamAnswer("X", newest="2.16.0")
    assert [compare(p, answer) for p in ("2.15.0", "2.16.0", "2.17.0rc1", "nightly")] == [
        "behind",
        "newest",
        "ahead",
        "unknown",
    ]


def _config(tmp_path: Path, upstream: str, registry: str = "http://127.0.0.1:9") -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(
        f'bake_file = "{DEMO_BAKE}"\nstate_dir = "{tmp_path / "state"}"\n\n'
        f'[registry]\nurl = "{registry}"\n\n'
        f'[[nodes]]\nname = "n"\ndocker_host = "unix://{tmp_path}/no.sock"\n{upstream}'
    )
    return path


def test_answers_states_and_ages(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "cache")
    with UpstreamStandIn() as upstream:
        config = load_config(_config(tmp_path, upstream.fleet_toml())).upstream
        first = asyncio.run(ask_upstream(config, [*PINS, "NOT_PINNED"], cache))
        assert (first["PYTORCH_VERSION"].state, first["PYTORCH_VERSION"].newest) == ("ok", "2.16.0")
        assert first["PYTORCH_VERSION"].newest_pre == "2.17.0rc1"
        assert (first["ROCM_VERSION"].newest, first["AITER_VERSION"].newest) == ("7.2.2", "0.1.8")
        assert first["NOT_PINNED"].state == "not configured"
        asked = len(upstream.hits)
        again = asyncio.run(ask_upstream(config, PINS, cache))  # young answers are reused
        assert len(upstream.hits) == asked and again["PYTORCH_VERSION"].age is not None
        # bad answers: HTML, a hang past the deadline, a 500, a package upstream lacks
        upstream.faults.update({"torch": "html", "triton": "hang", "ROCm/aiter": "500"})
        started = time.monotonic()
        bad = asyncio.run(ask_upstream(config, PINS, cache, fresh=True))
        assert time.monotonic() - started < 3.0  # the hang waited one timeout, not more
    torch, triton, aiter = bad["PYTORCH_VERSION"], bad["TRITON_VERSION"], bad["AITER_VERSION"]
    assert torch.state == "error" and "answered HTML" in str(torch.reason)
    assert torch.newest == "2.16.0" and torch.age is not None  # the last answer, with its age
    assert triton.state == "offline" and "upstream unreachable" in str(triton.reason)
    assert aiter.state == "error" and "HTTP 500" in str(aiter.reason)
    # the server gone: offline, and still the kept answer
    gone = asyncio.run(ask_upstream(config, ["NIXL_VERSION"], cache, fresh=True))
    assert gone["NIXL_VERSION"].state == "offline" and gone["NIXL_VERSION"].newest == "1.5.1"


def test_no_upstream_configured_is_a_clear_state(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "")).upstream
    answers = asyncio.run(ask_upstream(config, PINS, None))
    assert {a.state for a in answers.values()} == {"not configured"}
    assert not config.configured


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('[upstream]\npypi = "pypi.example"\n', "upstream.pypi: must be an http"),
        (
            '[upstream]\npypi = "https://pypi.example/pypi"\n[upstream.pins]\nX = "npm:x"\n',
            "upstream.pins.X",
        ),
        ('[upstream.pins]\nX = "github:a/b"\n', "names github but [upstream] has no github URL"),
        ('[upstream]\nmirror = "x"\n', "upstream.mirror: unknown key"),
        ("[matrix]\nconcurrency = 0\n", "matrix.concurrency: must be between 1 and 64"),
        ('[variables]\nREGISTRY = ["a"]\n', "variables.REGISTRY: must be a string or a number"),
        ('[webdav]\nurl = "http://x/"\npath = 3\n', "webdav.path: must be a path"),
    ],
)
def test_bad_tables_name_the_line_and_key(tmp_path: Path, table: str, says: str) -> None:
    path = _config(tmp_path, table)
    with pytest.raises(ConfigError, match=says.replace("[", r"\[").replace("]", r"\]")) as caught:
        load_config(path)
    assert f"{path}:" in str(caught.value)


def test_the_cli_answers_offline_and_in_json(tmp_path: Path) -> None:
    from tests.support.realparts import require

    require("docker-buildx")
    with StandInRegistry(404) as registry, UpstreamStandIn() as upstream:
        config = _config(tmp_path, upstream.fleet_toml(), registry.url)
        out = run_cli(
            config,
            "versions",
            "--json",
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)},
        )
        assert out.returncode == 1, out.stderr  # PyTorch is behind upstream
        data = json.loads(out.stdout)
        pins = {p["variable"]: p for p in data["pins"]}
        assert pins["PYTORCH_VERSION"]["pinned"] == "2.15.0"
        assert pins["PYTORCH_VERSION"]["upstream"]["newest"] == "2.16.0"
        assert pins["PYTORCH_VERSION"]["compared"] == "behind"
        assert pins["LMCACHE_VERSION"]["compared"] == "newest"
        assert data["upstream_configured"] is True
        text = run_cli(
            config, "versions", env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
        )
        assert "2.16.0 (pre 2.17.0rc1)" in text.stdout
    # upstream gone: the kept answers, said to be unreachable with their age
    out = run_cli(
        config,
        "versions",
        "--fresh",
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert "unreachable" in out.stdout and "old answer" in out.stdout, out.stdout


def test_the_cli_table_heads_every_column_and_says_nothing_twice(tmp_path: Path) -> None:
    """With no [upstream], each pin read "not configured   unknown" under one heading: the
    comparison column has a heading ("pin is") and nothing to compare is a dash."""
    from tests.support.realparts import require

    require("docker-buildx")
    with StandInRegistry(404) as registry:
        config = _config(tmp_path, "", registry.url)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
        out = run_cli(config, "versions", env=env)
    header = next(line for line in out.stdout.splitlines() if "newest upstream" in line)
    assert header.split() == ["pin", "pinned", "source", "newest", "upstream", "pin", "is",
                              "registry", "images"], header  # fmt: skip
    row = next(line for line in out.stdout.splitlines() if "PYTORCH_VERSION" in line)
    assert row.split()[3:6] == ["not", "configured", "—"], row
    assert "unknown" not in row, row
