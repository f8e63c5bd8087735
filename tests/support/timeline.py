"""Recorded steps of a build for the timeline's snapshots and benchmarks: the four-step build
of tests/bakefiles/timeline (two steps in parallel), as BuildKit reports its vertices, with a
step whose name carries escape sequences and markup; and N-step chains for benchmarks."""

from __future__ import annotations

from rocmtui.core.history.stepdiff import step_key
from rocmtui.core.history.stepgraph import Step


def recorded_steps(t0: float, open_last: bool = False) -> list[Step]:
    """The timeline build's vertices from `t0` (epoch seconds); `open_last`: the last RUN still
    runs."""

    def s(digest: str, name: str, start: float, end: float | None, *inputs: str,
          cached: bool = False) -> Step:  # fmt: skip
        return Step(
            digest=f"sha256:{digest}", name=name, started=t0 + start,
            completed=None if end is None else t0 + end,
            cached=cached, inputs=tuple(f"sha256:{i}" for i in inputs),
        )  # fmt: skip

    return [
        s("d0", "[internal] load build definition from Dockerfile", 0.0, 0.05),
        s("d1", "[internal] load metadata for docker.io/library/rocm-base:local", 0.05, 0.1),
        s("f", "[base 1/2] FROM docker.io/library/rocm-base:local", 0.1, 0.2, cached=True),
        s("a", '[base 2/2] RUN echo "begin one" && sleep "8"', 0.2, 8.9, "f"),
        s("b", '[long 1/1] RUN echo "begin long" && sleep "12"', 9.0, 21.6, "a"),
        s("c", '[short 1/1] RUN echo "begin short" && sleep "6"', 9.0, 15.4, "a"),
        s("x", "[short] RUN printf '[bold]x[/] \\x1b]0;t\\x07'", 15.5, 15.9, "c"),
        s("p", "[final 1/3] COPY --from=long /tmp/long /tmp/long", 21.7, 21.8, "a", "b"),
        s("q", "[final 2/3] COPY --from=short /tmp/short /tmp/short", 21.8, 21.9, "p", "x"),
        s("e", '[final 3/3] RUN echo "begin two" && sleep "8"', 22.0,
          None if open_last else 30.6, "q"),
        *([] if open_last else [s("z", "exporting to image", 30.7, 31.2)]),
    ]  # fmt: skip


def chain(count: int, t0: float, fan: int = 4, cached_every: int = 0) -> list[Step]:
    """`count` steps, each waiting on the one before (and every `fan`-th on the one `fan`
    back), 10 ms each: a long build's shape for benchmarks."""
    out = []
    for i in range(count):
        inputs = [f"sha256:{i - 1:064x}"] if i else []
        if i >= fan and i % fan == 0:
            inputs.append(f"sha256:{i - fan:064x}")
        out.append(
            Step(
                digest=f"sha256:{i:064x}",
                name=f"[stage {i % 97}] RUN step {i}",
                started=t0 + i * 0.01,
                completed=t0 + i * 0.01 + 0.009,
                cached=bool(cached_every) and i % cached_every == 0,
                inputs=tuple(inputs),
            )
        )
    return out


def cached_after(steps: list[Step], key: str, flavour: str = "vanilla") -> list[Step]:
    """The same build again: every step cached up to the one with `key`, which ran (and the
    ones after it)."""
    out, ran = [], False
    for s in steps:
        ran = ran or step_key(s.name) == key
        name = s.name.replace("begin two", f"begin two {flavour}")
        out.append(Step(s.digest, name, s.started, s.completed, cached=not ran, inputs=s.inputs))
    return out
