"""Redaction by name and by value: names, free text, mappings and command lines."""

from __future__ import annotations

import pytest

from rocmtui.core.text.redact import Redactor, is_secret_name, redact_environment

ENV = {
    "HF_TOKEN": "hf_abcdefghijklmnop",
    "GITHUB_TOKEN": "ghp_0123456789",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
    "REGISTRY_AUTH": "Y2k6c2VjcmV0cGFzcw==",
    "DOCKER_PASSWORD": "hunter22",
    "USE_AUTH": "true",
    "SHORT_TOKEN": "abc",
    "PYTORCH_VERSION": "2.7.0",
    "MONKEY": "banana-split",
    "HOME": "/root",
}


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "REGISTRY_AUTH", "DOCKER_PASSWORD",
        "db_passwd", "API_KEY", "apiKey", "ghToken", "HFTOKEN", "CLIENT_SECRET", "SSH_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS", "registry-pass", "GITHUB_PAT", "x.args.HF_TOKEN",
        "Authorization", "AWS_ACCESSKEY", "token",
    ],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    """Name parts and suffixes that carry credentials are caught."""
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["MONKEY", "TURKEY", "KEYBOARD", "AUTHOR", "PWD", "PATH", "GFX_ARCH", "PYTORCH_VERSION",
     "PASSTHROUGH", "TOKENIZERS_PARALLELISM", "HOCKEY_TEAM"],
)  # fmt: skip
def test_ordinary_names(name: str) -> None:
    """Words that merely contain a secret word are not secret."""
    assert not is_secret_name(name)


def test_redact_text_by_value_longest_first() -> None:
    """Known values vanish anywhere in text; a value that contains another is hidden whole."""
    r = Redactor(ENV, {"INNER": "hf_abcd"})
    line = "pushing with hf_abcdefghijklmnop and ghp_0123456789 then hf_abcd"
    assert r.redact_text(line) == (
        "pushing with <redacted:HF_TOKEN> and <redacted:GITHUB_TOKEN> then <redacted:INNER>"
    )
    assert "hunter22" not in r.redact_text("login -p hunter22")


def test_short_and_harmless_values_are_not_hunted() -> None:
    """`true` and 3-character values would blank every line: they are left alone."""
    r = Redactor(ENV)
    assert r.redact_text("enabled: true, abc") == "enabled: true, abc"
    assert "USE_AUTH" not in r.secret_names
    assert "SHORT_TOKEN" not in r.secret_names
    assert "banana-split" in r.redact_text("banana-split")  # MONKEY is not secret


def test_redact_text_by_name() -> None:
    """Assignments to secret names are hidden even when the value is unknown."""
    r = Redactor({})
    assert r.redact_text("env HF_TOKEN=xyz123 GFX_ARCH=gfx950") == (
        "env HF_TOKEN=<redacted:HF_TOKEN> GFX_ARCH=gfx950"
    )
    assert r.redact_text('--set pytorch.args.API_KEY="a b c"') == (
        "--set pytorch.args.API_KEY=<redacted:API_KEY>"
    )
    assert r.redact_text("Authorization: Bearer abcdefghijkl") == (
        "Authorization: Bearer <redacted:authorization>"
    )
    assert r.redact_text("http://ci:s3cr3tpass@snoc-strix:8080/v2/") == (
        "http://ci:<redacted:password>@snoc-strix:8080/v2/"
    )
    assert r.redact_text("basic operations and token embeddings") == (
        "basic operations and token embeddings"
    )


def test_placeholder_without_names() -> None:
    """A placeholder can hide which secret it was."""
    r = Redactor(ENV, placeholder="•••")
    assert r.redact_text("x hf_abcdefghijklmnop y") == "x ••• y"


def test_redact_mapping() -> None:
    """Secret names are masked whatever their value; other values lose embedded secrets."""
    r = Redactor(ENV)
    out = r.redact_mapping({"HF_TOKEN": "anything", "NOTE": "uses ghp_0123456789", "A": "b"})
    assert out == {"HF_TOKEN": "<redacted:HF_TOKEN>", "NOTE": "uses <redacted:GITHUB_TOKEN>",
                   "A": "b"}  # fmt: skip
    env = redact_environment(ENV)
    assert env["PYTORCH_VERSION"] == "2.7.0"
    assert env["USE_AUTH"] == "<redacted:USE_AUTH>"
    assert "hunter22" not in repr(env)


def test_redact_argv() -> None:
    """Every command-line form a launch uses keeps names and loses values."""
    r = Redactor(ENV)
    argv = [
        "docker", "buildx", "bake", "--set", "pytorch.args.HF_TOKEN=plainvalue",
        "--set=vllm.args.GITHUB_TOKEN=x", "--build-arg", "DOCKER_PASSWORD=y", "-e", "A_KEY=z",
        "--password", "hunter22", "--token=tok", "--set", "pytorch.args.GFX_ARCH=gfx1201",
        "--metadata-file", "/tmp/ghp_0123456789/meta.json", "--", "pytorch",
    ]  # fmt: skip
    assert r.redact_argv(argv) == [
        "docker", "buildx", "bake", "--set", "pytorch.args.HF_TOKEN=<redacted:HF_TOKEN>",
        "--set=vllm.args.GITHUB_TOKEN=<redacted:GITHUB_TOKEN>", "--build-arg",
        "DOCKER_PASSWORD=<redacted:DOCKER_PASSWORD>", "-e", "A_KEY=<redacted:A_KEY>",
        "--password", "<redacted:password>", "--token=<redacted:token>", "--set",
        "pytorch.args.GFX_ARCH=gfx1201", "--metadata-file",
        "/tmp/<redacted:GITHUB_TOKEN>/meta.json", "--", "pytorch",
    ]  # fmt: skip


def test_no_secrets_is_cheap_and_identity() -> None:
    """With nothing to hide, text passes unchanged."""
    r = Redactor({"HOME": "/root"})
    line = "[1/2] Building HIP object caffe2/foo.hip.o"
    assert r.redact_text(line) == line
    assert r.secret_names == ()
