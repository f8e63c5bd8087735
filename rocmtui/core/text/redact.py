"""Redaction of secrets, by name and by value, for everything the console shows or records.

An environment variable named like a bake variable leaks into `bake --print` (HAZARDS.md,
"Secrets and commands"), so values are hidden wherever they appear -- screen, job records, our
own logs, tracebacks -- not only next to their names.

Name rule (`is_secret_name`): the name is split into parts at every non-alphanumeric character
and at camelCase boundaries, upper-cased. It is secret when a part is one of `SECRET_PARTS`
(TOKEN, SECRET, PASSWORD, PASSWD, PASS, PASSPHRASE, KEY, APIKEY, AUTH, AUTHORIZATION,
CREDENTIAL(S), CREDS, PAT, COOKIE, and plurals), or a part *ends* with one of `SECRET_SUFFIXES`
(TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL(S), APIKEY, ACCESSKEY, PRIVATEKEY) -- so
`HF_TOKEN`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `REGISTRY_AUTH`, `ghToken`, `HFTOKEN` are
secret while `MONKEY`, `TURKEY`, `KEYBOARD`, `AUTHOR` and `PWD` are not. A bare `KEY` suffix is
not enough because too many ordinary words end in it; erring towards redaction is otherwise
the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

SECRET_PARTS = frozenset(
    ("TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS",
     "PASSPHRASE", "KEY", "KEYS", "APIKEY", "AUTH", "AUTHORIZATION", "CREDENTIAL", "CREDENTIALS",
     "CREDS", "PAT", "COOKIE")
)  # fmt: skip
SECRET_SUFFIXES = (
    "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY", "ACCESSKEY",
    "PRIVATEKEY",
)  # fmt: skip
#: Values shorter than this are never redacted by value (they would match everywhere).
MIN_SECRET_LEN = 4
# Values that a secret-named variable may hold without being secret (flags, not credentials);
# redacting them by value would blank every "true" in every log line.
_HARMLESS = frozenset({"true", "false", "none", "null", "yes", "no", "on", "off", "unset"})

_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
# NAME=value in free text (also `--set t.args.NAME=value`, `-e NAME=value`), value quoted or not.
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_.\-])([A-Za-z_][A-Za-z0-9_.\-]*)=(\"[^\"]*\"|'[^']*'|[^\s\"',;]+)"
)
# HTTP credentials in replies or tracebacks: `Bearer X`, `Authorization: Basic X` (a bare
# "basic" or "token" is too common a word in build output to key on).
_HTTP_AUTH = re.compile(
    r"(?i)\b(bearer\s+|(?:proxy-)?authorization:\s*(?:basic\s+|token\s+|bearer\s+)?)"
    r"[A-Za-z0-9._~+/=\-]{8,}"
)
# URL userinfo: scheme://user:password@host
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+@", re.IGNORECASE)


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a variable, argument or flag name names a secret (rule in the module doc)."""
    for part in _SPLIT.split(name):
        if not part:
            continue
        upper = part.upper()
        if upper in SECRET_PARTS or upper.endswith(SECRET_SUFFIXES):
            return True
    return False


def _last_name_part(name: str) -> str:
    """`pytorch.args.HF_TOKEN` -> `HF_TOKEN`; `--build-arg` names are already bare."""
    return name.rsplit(".", 1)[-1]


class Redactor:
    """Hides secret values everywhere and secret-named assignments anywhere.

    Built from an environment mapping (entries whose names are secret contribute their values)
    plus `extra`: more secrets, as a name -> value mapping or bare values (named `secret`).
    Values are matched by one compiled alternation, longest first, so one `sub` per line does
    all of them; a line with no secret value and no `=` costs one regex search.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, str] | Iterable[str] = (),
        *,
        placeholder: str = "<redacted:{name}>",
    ) -> None:
        """`placeholder` is formatted with the secret's `name` (use "•••" to hide names too)."""
        self.placeholder = placeholder
        self._names: dict[str, str] = {}
        for name, value in (env or {}).items():
            if is_secret_name(name):
                self._add(name, value)
        items = extra.items() if isinstance(extra, Mapping) else (("secret", v) for v in extra)
        for name, value in items:
            self._add(name, value)
        ordered = sorted(self._names, key=len, reverse=True)
        # Shortest first: `in` (a C substring search) on each value is far cheaper than running
        # the alternation over a line that holds none of them -- the common case.
        self._probes = sorted(self._names, key=len)
        self._values: re.Pattern[str] | None = (
            re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None
        )

    def _add(self, name: str, value: str) -> None:
        value = value.strip()
        if len(value) >= MIN_SECRET_LEN and value.lower() not in _HARMLESS:
            self._names.setdefault(value, name)

    @property
    def secret_names(self) -> tuple[str, ...]:
        """Names whose values are being hidden (for diagnostics; never the values)."""
        return tuple(sorted(set(self._names.values())))

    def _mask(self, name: str) -> str:
        return self.placeholder.format(name=name)

    def _value_repl(self, m: re.Match[str]) -> str:
        return self._mask(self._names[m.group(0)])

    def _assign_repl(self, m: re.Match[str]) -> str:
        name = m.group(1)
        if not is_secret_name(_last_name_part(name)):
            return m.group(0)
        return f"{name}={self._mask(_last_name_part(name))}"

    def redact_text(self, s: str) -> str:
        """`s` with every known secret value, every `SECRET_NAME=value`, HTTP credential and URL
        password replaced."""
        if self._values is not None and any(value in s for value in self._probes):
            s = self._values.sub(self._value_repl, s)
        if "=" in s:
            s = _ASSIGN.sub(self._assign_repl, s)
        if "://" in s:
            s = _URL_PASSWORD.sub(lambda m: m.group(1) + self._mask("password") + "@", s)
        if ("earer" in s or "EARER" in s or "uthorization" in s or "UTHORIZATION" in s) and (
            "bearer" in s.lower() or "authorization" in s.lower()
        ):
            s = _HTTP_AUTH.sub(lambda m: m.group(1) + self._mask("authorization"), s)
        return s

    def redact_mapping(self, m: Mapping[str, str]) -> dict[str, str]:
        """A copy with secret-named entries masked and every other value redacted as text."""
        return {
            k: self._mask(k) if is_secret_name(_last_name_part(k)) else self.redact_text(v)
            for k, v in m.items()
        }

    def redact_argv(self, argv: Iterable[str]) -> list[str]:
        """A command line safe to record or show: `NAME=value` forms with a secret name (also
        `--set t.args.NAME=v`, `--set=...`, `--build-arg NAME=v`, `-e NAME=v`), the value after
        a secret-named flag (`--password X`, `--token=X`), and known values anywhere."""
        out: list[str] = []
        hide_next: str | None = None
        for arg in argv:
            if hide_next is not None:
                out.append(self._mask(hide_next))
                hide_next = None
                continue
            if arg.startswith("-") and not arg.startswith("---"):
                flag, eq, value = arg.partition("=")
                flag_name = flag.lstrip("-")
                if flag_name and is_secret_name(flag_name):
                    if eq:
                        out.append(f"{flag}={self._mask(flag_name)}")
                    else:
                        out.append(arg)
                        hide_next = flag_name
                    continue
                if eq and "=" in value:  # --set=t.args.NAME=value
                    out.append(f"{flag}={self._redact_assignment(value)}")
                    continue
            out.append(self._redact_assignment(arg) if "=" in arg else self.redact_text(arg))
        return out

    def _redact_assignment(self, arg: str) -> str:
        name, _, value = arg.partition("=")
        if is_secret_name(_last_name_part(name)):
            return f"{name}={self._mask(_last_name_part(name))}"
        return f"{name}={self.redact_text(value)}"


def redact_environment(env: Mapping[str, str]) -> dict[str, str]:
    """Convenience: an environment with its own secrets hidden (by name and by value)."""
    return Redactor(env).redact_mapping(env)
