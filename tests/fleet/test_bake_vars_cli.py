"""`rocmtui vars`: what people and scripts see equals what buildx resolves, for every variable
of the project's bake files and the fixtures, with overrides, secrets and hostile values."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rocmtui.cli.main import main
from rocmtui.core.bake.file import load_bake
from rocmtui.core.bake.resolve import bake_environment, resolved_variables
from tests.support.realparts import require

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "bakefiles"
FILES = {
    "rocm-bake.hcl": REPO / "bake" / "rocm-bake.hcl",
    "demo.hcl": REPO / "bake" / "demo.hcl",
    "functions.hcl": FIXTURES / "functions.hcl",
    "inherits.hcl": FIXTURES / "inherits.hcl",
    "matrix.hcl": FIXTURES / "matrix.hcl",
    "overrides.hcl": FIXTURES / "overrides.hcl",
}
# Set in the process environment, as an operator's shell would have them.
OVERRIDES = {
    "rocm-bake.hcl": {"GFX_ARCH": "gfx1201", "ROCM_VERSION": "7.9.0"},
    "demo.hcl": {"DEMO_STEPS": "5", "REGISTRY": "127.0.0.1:5000"},
    "functions.hcl": {"REGISTRY": "127.0.0.1:5999", "JOBS": "20", "HF_TOKEN": "hf_env_secret_1"},
    "inherits.hcl": {"GFX_ARCH": "gfx950"},
    "matrix.hcl": {"GFX_ARCH": "gfx950", "PYTHONS": "3.13"},
    "overrides.hcl": {
        "STRING_VAR": "from-env",
        "NUMBER_VAR": "12",
        "BOOL_VAR": "0",
        "UNSET_VAR": "set",
        "NULL_VAR": "no-longer-null",
        "DERIVED_OVERRIDDEN": "replaced",
    },
}


def fleet_file(tmp_path: Path, bake_file: Path) -> Path:
    path = tmp_path / "rocmtui.toml"
    path.write_text(f'bake_file = "{bake_file}"\n\n[[nodes]]\nname = "local"\n')
    return path


def run_vars(capsys: pytest.CaptureFixture[str], config: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["vars", "--config", str(config), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def vars_json(capsys: pytest.CaptureFixture[str], config: Path, *extra: str) -> list[Any]:
    code, out, err = run_vars(capsys, config, "--json", *extra)
    assert code == 0, err
    rows = json.loads(out)
    assert isinstance(rows, list)
    return rows


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("overridden", [False, True], ids=["defaults", "env"])
def test_vars_json_equals_what_bake_resolves(
    name: str,
    overridden: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require("docker-buildx")
    path = FILES[name]
    overrides = OVERRIDES[name] if overridden else {}
    for key, value in overrides.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("UNRELATED_TOKEN", "not-a-bake-variable")
    rows = vars_json(capsys, fleet_file(tmp_path, path))

    bake = load_bake(path)
    env = bake_environment(
        {k: v for k, v in os.environ.items() if k not in bake.variables}, overrides
    )
    truth = resolved_variables(path, bake.variables, env)
    assert [r["name"] for r in rows] == list(bake.variables)
    for row in rows:
        var = bake.variables[row["name"]]
        assert set(row) >= {"name", "default", "value", "source", "line", "secret"}
        assert row["line"] == var.line
        assert row["resolved"] is True
        assert row["source"] == ("environment" if row["name"] in overrides else "default")
        if row["secret"]:  # an empty secret may say so; any other value is hidden
            hidden = f"<redacted:{row['name']}>" if truth.get(row["name"]) else ""
            assert row["value"] == hidden
        else:
            assert row["default"] == var.default_source
            assert row["value"] == truth.get(row["name"]), row["name"]


def test_token_values_never_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = fleet_file(tmp_path, FILES["functions.hcl"])
    for resolve in ([], ["--no-resolve"]):
        rows = {r["name"]: r for r in vars_json(capsys, config, *resolve)}
        assert rows["HF_TOKEN"]["secret"] is True
        assert rows["HF_TOKEN"]["value"] == rows["HF_TOKEN"]["default"] == "<redacted:HF_TOKEN>"
        code, out, _ = run_vars(capsys, config, *resolve)
        assert code == 0 and "<redacted:HF_TOKEN>" in out
        assert "hf_fixture_default_secret" not in out
    monkeypatch.setenv("HF_TOKEN", "hf_env_secret_value_2")
    for fmt in (["--json"], []):
        code, out, err = run_vars(capsys, config, *fmt)
        assert code == 0
        assert "hf_env_secret_value_2" not in out + err
        assert "hf_fixture_default_secret" not in out + err


def test_overrides_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require("docker-buildx")
    config = fleet_file(tmp_path, FILES["rocm-bake.hcl"])
    rows = {r["name"]: r for r in vars_json(capsys, config, "--env", "ROCM_VERSION=7.1.0")}
    assert rows["ROCM_VERSION"]["source"] == "environment"
    assert rows["ROCM_VERSION"]["value"] == "7.1.0"
    assert (
        rows["ROCM_BASE_IMAGE"]["value"] == "snoc-strix:8080/rocm/dev-ubuntu-24.04:7.1.0-complete"
    )
    assert rows["ROCM_BASE_IMAGE"]["source"] == "default"


def test_without_buildx_values_are_static_or_unresolved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = fleet_file(tmp_path, FILES["rocm-bake.hcl"])
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker here
    rows = {r["name"]: r for r in vars_json(capsys, config)}
    assert rows["ROCM_VERSION"]["value"] == "7.2.2" and not rows["ROCM_VERSION"]["resolved"]
    assert rows["ROCM_BASE_IMAGE"]["value"] is None  # built from variables: never guessed
    code, out, _ = run_vars(capsys, config)
    assert code == 0
    assert "(unresolved)" in out and "not resolved" in out
    rows = {r["name"]: r for r in vars_json(capsys, config, "--no-resolve")}
    assert not rows["GFX_ARCH"]["resolved"]


@pytest.mark.parametrize("bad", ["unterminated.hcl", "duplicate.hcl", "syntax.hcl"])
def test_bad_bake_file_exits_2_with_one_line(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = FIXTURES / "bad" / bad
    code, out, err = run_vars(capsys, fleet_file(tmp_path, path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"rocmtui: {path}:") and err.split(":")[2].isdigit()


def test_buildx_rejection_exits_2_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require("docker-buildx")
    path = FILES["overrides.hcl"]
    monkeypatch.setenv("NUMBER_VAR", "twelve")
    code, _, err = run_vars(capsys, fleet_file(tmp_path, path), "--json")
    assert code == 2 and err.count("\n") == 1
    # buildx names the declaration or a use, whichever it evaluates first (Go map order)
    uses = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if "NUMBER_VAR" in ln]
    assert any(err.startswith(f"rocmtui: {path}:{line}: ") for line in uses), err


def test_hostile_values_never_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = fleet_file(tmp_path, FIXTURES / "hostile.hcl")
    for resolve in (["--no-resolve"], []):
        code, out, err = run_vars(capsys, config, *resolve)
        assert code == 0, err
        for raw in ("\x1b", "\x9b", "\x07", "\u202e"):
            assert raw not in out
        assert "[/]" in out  # shown as text, never taken as markup
        assert " beforeafter " in out and " xyz " in out and " abevil " in out
    rows = {r["name"]: r for r in vars_json(capsys, config, "--no-resolve")}
    assert "\x1b" in rows["CLIPBOARD"]["value"]  # JSON keeps the data, escaped by json.dumps
