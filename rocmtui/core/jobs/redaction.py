"""Redaction for what the job layer stores and prints, through the project's `core.text.redact`.

Job records keep overrides and the command line for people to read. Secrets in the launching
environment are never copied into bake's environment at all (it is scrubbed); what is stored is
the explicit overrides and the argument list, redacted by name (a secret-named variable) and by
value (any secret value of the launching environment, wherever it appears).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rocmtui.core.text.redact import Redactor


def redact_mapping(
    values: Mapping[str, str], env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A copy with secret-named entries and secret values of `env` masked."""
    return Redactor(env).redact_mapping(values)


def redact_argv(argv: Iterable[str], env: Mapping[str, str] | None = None) -> list[str]:
    """An argument list safe to record: secret `NAME=value` items, secret flags' values, URL
    passwords and secret values of `env` masked."""
    return Redactor(env).redact_argv(argv)
