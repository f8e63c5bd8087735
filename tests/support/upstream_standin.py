"""A stand-in for the upstream release APIs (test support, never in the installed package): a
loopback HTTP server speaking the PyPI JSON API (`GET /pypi/<package>/json`) and the GitHub
releases API (`GET /repos/<owner>/<repo>/releases`) from the answers in tests/data/upstream.

Faults per name, for the bad input the version check must survive: `html` (a login page where
JSON was expected), `hang` (accepts, never answers), `500`.
"""

from __future__ import annotations

import http.server
import threading
import time
from pathlib import Path

DATA = Path(__file__).parents[1] / "data" / "upstream"


class UpstreamStandIn:
    """Serves recorded answers; `faults[name] = "html" | "hang" | "500"`; `hits` counts requests."""

    def __init__(self) -> None:
        self.faults: dict[str, str] = {}
        self.hits: list[str] = []
        self._stop = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                owner.hits.append(path)
                parts = path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json":
                    name, file = parts[1], DATA / "pypi" / f"{parts[1]}.json"
                elif len(parts) == 4 and parts[0] == "repos" and parts[3] == "releases":
                    name = f"{parts[1]}/{parts[2]}"
                    file = DATA / "github" / f"{parts[1]}__{parts[2]}.json"
                else:
                    name, file = "", Path("/nonexistent")
                fault = owner.faults.get(name)
                if fault == "hang":
                    owner._stop.wait(30)
                    return
                if fault == "html":
                    self._send(200, b"<!doctype html><title>Sign in</title>", "text/html")
                elif fault == "500":
                    self._send(500, b'{"message": "boom"}', "application/json")
                elif file.is_file():
                    self._send(200, file.read_bytes(), "application/json")
                else:
                    self._send(404, b'{"message": "Not Found"}', "application/json")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

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
        """Stop serving (a hanging handler is released)."""
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        time.sleep(0)

    def __enter__(self) -> UpstreamStandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # the default 5 drops connections a client opens at once
