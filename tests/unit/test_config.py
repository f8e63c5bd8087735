"""The fleet file: lookup order, the built-in default, and errors that name file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmtui.cli.main import main
from rocmtui.core.config.fleetfile import ConfigError, find_config, load_config, parse_config

REPO = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


GOOD = """
bake_file = "bake/x.hcl"
refresh_seconds = 5
stall_after_seconds = 60

[registry]
url = "http://snoc-strix:8080"

[webdav]
url = "http://snoc-strix:8081/"

[[nodes]]
name = "snoc-think"
docker_host = "ssh://ci@snoc-think"
gfx = "gfx1201"

[[nodes]]
name = "snoc-gaming"
context = "snoc-gaming"
builder = "fleet"
"""


def test_example_fleet_file_loads() -> None:
    config = parse_config(REPO / "examples" / "snoc-fleet.toml")
    assert [n.name for n in config.nodes] == ["snoc-strix", "snoc-think", "snoc-gaming"]
    assert config.bake_file == (REPO / "bake" / "rocm-bake.hcl").resolve()
    strix, think, gaming = config.nodes
    assert strix.local and not think.local and not gaming.local
    assert gaming.context == "snoc-gaming" and gaming.docker_host is None
    assert config.registry.url == "http://snoc-strix:8080"


def test_values_and_relative_paths(tmp_path: Path) -> None:
    path = write(tmp_path / "conf" / "fleet.toml", GOOD)
    config = parse_config(path)
    assert config.source == path
    assert config.bake_file == tmp_path / "conf" / "bake" / "x.hcl"
    assert config.refresh_seconds == 5.0 and config.stall_after_seconds == 60.0
    assert config.node("snoc-gaming") is not None
    assert config.node("snoc-gaming").builder == "fleet"  # type: ignore[union-attr]
    assert config.nodes[0].endpoint == "ssh://ci@snoc-think"
    assert config.nodes[1].endpoint == "context:snoc-gaming"


def test_lookup_order(tmp_path: Path) -> None:
    explicit = write(tmp_path / "explicit.toml", GOOD)
    from_env = write(tmp_path / "env.toml", GOOD)
    cwd = tmp_path / "cwd"
    local = write(cwd / "rocmtui.toml", GOOD)
    xdg = tmp_path / "xdg"
    user = write(xdg / "rocmtui" / "config.toml", GOOD)
    env = {"ROCMTUI_CONFIG": str(from_env), "XDG_CONFIG_HOME": str(xdg)}
    assert find_config(explicit, env, cwd) == explicit
    assert find_config(None, env, cwd) == from_env
    del env["ROCMTUI_CONFIG"]
    assert find_config(None, env, cwd) == local
    local.unlink()
    assert find_config(None, env, cwd) == user
    user.unlink()
    assert find_config(None, env, cwd) is None


def test_built_in_default(tmp_path: Path) -> None:
    config = load_config(None, {"XDG_CONFIG_HOME": str(tmp_path / "none")}, tmp_path)
    assert config.source is None
    assert len(config.nodes) == 1 and config.nodes[0].local
    assert config.nodes[0].docker_host is None
    # no bake file in the current folder: the project's own (tests/fleet/test_config_lookup.py)
    assert config.bake_file == REPO / "bake" / "rocm-bake.hcl"
    assert config.registry.url == "http://localhost:8080"
    assert config.webdav.url == "http://localhost:8081/"


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such fleet file"):
        find_config(tmp_path / "nope.toml", {}, tmp_path)


@pytest.mark.parametrize(
    ("text", "line", "key", "words"),
    [
        ("refresh_seconds = 2\n[[nodes]]\nname = 'a'\ngfx = 'gpu9'\n", 4, "nodes.a.gfx", "gfx950"),
        ("[[nodes]]\nname = 'a'\n\n[[nodes]]\nname = 'a'\n", 5, "nodes.a.name", "duplicate"),
        ("refresh_seconds = 'fast'\n[[nodes]]\nname = 'a'\n", 1, "refresh_seconds", "number"),
        ("bogus = 1\n[[nodes]]\nname = 'a'\n", 1, "bogus", "unknown key"),
        ("[[nodes]]\nname = 'a'\ndocker_host = 'http://x'\n", 3, "nodes.a.docker_host", "unix://"),
        ("[[nodes]]\nname = 'a'\n[registry]\nurl = 'ftp://x'\n", 4, "registry.url", "http"),
        ("[[nodes]]\nname = 'a'\ncolour = 'red'\n", 3, "nodes[0].colour", "unknown key"),
        ("[[nodes]]\nname = 'a'\ncontext = 'c'\ndocker_host = 'tcp://h:1'\n", 3, None, "not both"),
        ("nodes = 3\n", 1, "nodes", "must be [[nodes]] tables"),
        ("a = [1,\n\n= 3\n", 3, None, "not valid TOML"),
    ],
)
def test_bad_fleet_file_names_file_line_key(
    tmp_path: Path, text: str, line: int | None, key: str | None, words: str
) -> None:
    path = write(tmp_path / "fleet.toml", text)
    with pytest.raises(ConfigError) as caught:
        parse_config(path)
    err = caught.value
    assert err.path == path
    assert words in str(err)
    if line is not None:
        assert err.line == line, str(err)
        assert f"{path}:{line}:" in str(err)
    if key is not None:
        assert err.key == key


@pytest.mark.parametrize(
    ("table", "key", "url"),
    [
        ("registry", "url", "http://ci:hunter2@snoc-strix:8080"),
        ("webdav", "url", "https://ci:hunter2@snoc-strix:8081/"),
        ("upstream", "pypi", "https://ci:hunter2@pypi.example/simple"),
        ("registry", "url", "ftp://ci:hunter2@snoc-strix"),
    ],
)
def test_a_password_in_a_url_is_refused_and_never_repeated(
    tmp_path: Path, table: str, key: str, url: str
) -> None:
    """A URL holding `user:pass@` would be shown on screen and put on the supervisor's command
    line: the fleet file is refused at that line and key, and the error does not repeat it."""
    path = write(tmp_path / "fleet.toml", f"[[nodes]]\nname = 'a'\n\n[{table}]\n{key} = '{url}'\n")
    with pytest.raises(ConfigError) as caught:
        parse_config(path)
    err = caught.value
    assert (err.path, err.line, err.key) == (path, 5, f"{table}.{key}"), str(err)
    assert "hunter2" not in str(err), str(err)
    assert "user or password" in str(err) or "http:// or https://" in str(err), str(err)


def test_bom_and_invalid_utf8(tmp_path: Path) -> None:
    bom = tmp_path / "bom.toml"
    bom.write_bytes("\ufeff[[nodes]]\nname = 'a'\n".encode())
    assert parse_config(bom).nodes[0].name == "a"
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"[[nodes]]\nname = '\xff'\n")
    with pytest.raises(ConfigError, match=r"bad\.toml:2: not UTF-8"):
        parse_config(bad)


def test_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "fleet.toml", "[[nodes]]\nname = 'a'\ngfx = 'nope'\n")
    code = main(["vars", "--config", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{path}:3: nodes.a.gfx:" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_keys_table_accepts_dotted_and_quoted_ids(tmp_path: Path) -> None:
    text = '[[nodes]]\nname = "a"\n\n[keys]\nfleet.rebuild = "R"\n"fleet.bake" = "B"\n'
    config = parse_config(write(tmp_path / "fleet.toml", text))
    assert dict(config.keys) == {"fleet.rebuild": "R", "fleet.bake": "B"}
    bad = write(tmp_path / "bad.toml", '[[nodes]]\nname = "a"\n\n[keys]\nfleet.rebuild = 3\n')
    with pytest.raises(ConfigError) as caught:
        parse_config(bad)
    assert caught.value.key == "keys.fleet.rebuild"
    assert caught.value.line == 5


def test_stall_busy_after_defaults_to_four_stall_thresholds(tmp_path: Path) -> None:
    config = parse_config(write(tmp_path / "f.toml", GOOD))
    assert config.stall_busy_after_seconds == 240.0
    text = GOOD.replace(
        "stall_after_seconds = 60", "stall_after_seconds = 60\nstall_busy_after_seconds = 600"
    )
    assert parse_config(write(tmp_path / "g.toml", text)).stall_busy_after_seconds == 600.0


def test_stall_busy_after_below_stall_after_is_refused(tmp_path: Path) -> None:
    text = GOOD.replace(
        "stall_after_seconds = 60", "stall_after_seconds = 60\nstall_busy_after_seconds = 30"
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(write(tmp_path / "b.toml", text))
    assert "b.toml:5" in str(caught.value) and "stall_busy_after_seconds" in str(caught.value)
    assert "at least stall_after_seconds (60)" in str(caught.value)
