"""A stand-in for the upstream release APIs (test support, never in the installed package): a
loopback HTTP server speaking the PyPI JSON API (`GET /pypi/<package>/json`) and the GitHub
releases API (`GET /repos/<owner>/<repo>/releases`) from the answers in tests/data/upstream.

Faults per name, for the bad input the version check must survive: `html` (a login page where
JSON was expected), `hang` (accepts, never answers), `500`.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.loopback import Handler, LoopbackHTTP, send

DATA = Path(__file__).parents[1] / "data" / "upstream"


class UpstreamStandIn:
    """Serves recorded answers; `faults[name] = "html" | "hang" | "500"`; `hits` counts requests."""

    def __init__(self) -> None:
        self.faults: dict[str, str] = {}
        self.hits: list[str] = []
        self._http = LoopbackHTTP(self._answer)
        self.port, self.url = self._http.port, self._http.url

    def _answer(self, handler: Handler) -> None:
        path = handler.path.split("?", 1)[0]
        self.hits.append(path)
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json":
            name, file = parts[1], DATA / "pypi" / f"{parts[1]}.json"
        elif len(parts) == 4 and parts[0] == "repos" and parts[3] == "releases":
            name = f"{parts[1]}/{parts[2]}"
            file = DATA / "github" / f"{parts[1]}__{parts[2]}.json"
        else:
            name, file = "", Path("/nonexistent")
        fault = self.faults.get(name)
        json_type = {"Content-Type": "application/json"}
        if fault == "hang":
            self._http.stopping.wait(30)
        elif fault == "html":
            html = b"<!doctype html><title>Sign in</title>"
            send(handler, 200, {"Content-Type": "text/html"}, html)
        elif fault == "500":
            send(handler, 500, json_type, b'{"message": "boom"}')
        elif file.is_file():
            send(handler, 200, json_type, file.read_bytes())
        else:
            send(handler, 404, json_type, b'{"message": "Not Found"}')

    def fleet_toml(self) -> str:
        """The `[upstream]` tables pointing at this stand-in, for every pin of the bake files."""
        return f"""
[upstream]
pypi = "{self.url}/pypi"
github = "{self.url}"
timeout_seconds = 1.0
max_age_seconds = 3600

[upstream.pins]
ROCM_VERSION = "github:ROCm/ROCm"
PYTORCH_VERSION = "pypi:torch"
TRITON_VERSION = "pypi:triton"
AITER_VERSION = "github:ROCm/aiter"
CUPY_VERSION = "pypi:cupy"
NIXL_VERSION = "pypi:nixl"
VLLM_VERSION = "pypi:vllm"
LMCACHE_VERSION = "pypi:lmcache"
PYTHON_VERSION = "github:python/cpython"
"""

    def stop(self) -> None:
        """Stop serving (a hanging answer is released)."""
        self._http.stop()

    def __enter__(self) -> UpstreamStandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
