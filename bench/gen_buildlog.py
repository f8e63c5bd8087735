"""Write a realistic, deterministic PyTorch-on-ROCm build log (`--progress=plain` form).

What it holds, in the proportions of a real `pytorch` bake target: BuildKit headers and status
lines, an apt and a pip step, then the long `python setup.py bdist_wheel` step where ninja prints
`[i/N] Building HIP object ...`, hipcc command lines of several KB, coloured clang warnings with
source context, a second target (triton) interleaving with `#N ...` pauses early on, and one
compile error near the end followed by BuildKit's error summary.

    python bench/gen_buildlog.py OUT.log [--lines 1000000] [--seed 1]
    from bench.gen_buildlog import generate; generate(path, lines=..., seed=...)
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from pathlib import Path

ESC = "\x1b"
BOLD = f"{ESC}[1m"
RESET = f"{ESC}[0m"
MAGENTA = f"{ESC}[0;1;35m"
RED = f"{ESC}[0;1;31m"
GREEN = f"{ESC}[0;1;32m"

DIRS = [
    "aten/src/ATen/native/hip",
    "aten/src/ATen/native/sparse/hip",
    "aten/src/ATen/native/quantized/hip",
    "aten/src/ATen/native/transformers/hip",
    "aten/src/ATen/native/nested/hip",
    "torch/csrc/distributed/c10d",
    "aten/src/ATen/hip",
    "caffe2/utils/hip",
    "torch/csrc/jit/codegen/fuser/hip",
]
STEMS = [
    "Activation",
    "BinaryOps",
    "Blas",
    "Copy",
    "Distributions",
    "Embedding",
    "FillKernel",
    "Indexing",
    "LayerNorm",
    "Loss",
    "Normalization",
    "Pooling",
    "Reduce",
    "ScanKernels",
    "Sort",
    "SoftMax",
    "TensorCompare",
    "UnaryOps",
    "Unique",
    "UpSample",
    "WeightNorm",
    "attention",
    "flash_api",
    "group_norm",
]
WARNINGS = [
    ("unused variable 'i'", "-Wunused-variable"),
    ("comparison of integers of different signs: 'int' and 'size_t'", "-Wsign-compare"),
    ("'hipDeviceProp_t::gcnArch' is deprecated", "-Wdeprecated-declarations"),
    (
        "loop not unrolled: the optimizer was unable to perform the requested transformation",
        "-Wpass-failed=transform-warning",
    ),
    ("unused parameter 'stream'", "-Wunused-parameter"),
]
DEFINES = (
    "-DAT_PER_OPERATOR_HEADERS -DFLASHATTENTION_DISABLE_ALIBI -DHAVE_MALLOC_USABLE_SIZE=1 "
    "-DHAVE_MMAP=1 -DHAVE_SHM_OPEN=1 -DHAVE_SHM_UNLINK=1 -DIDEEP_USE_MKL "
    "-DMINIZ_DISABLE_ZIP_READER_CRC32_CHECKS -DONNXIFI_ENABLE_EXT=1 -DONNX_ML=1 "
    "-DONNX_NAMESPACE=onnx_torch -DTORCH_ENABLE_LLVM "
    "-DUSE_C10D_GLOO -DUSE_C10D_NCCL -DUSE_DISTRIBUTED -DUSE_EXTERNAL_MZCRC -DUSE_FLASH_ATTENTION "
    "-DUSE_MEM_EFF_ATTENTION -DUSE_PROF_API=1 -DUSE_ROCM -DUSE_RPC -DUSE_TENSORPIPE "
    "-D_FILE_OFFSET_BITS=64 -D__HIP_PLATFORM_AMD__=1 -DTORCH_HIP_BUILD_MAIN_LIB "
    "-D__HIP_PLATFORM_HCC__=1 "
)
FLAGS = (
    "-fPIC -O3 -DNDEBUG -std=c++17 -fno-gpu-rdc -D__HIP_NO_HALF_OPERATORS__=1 "
    "-D__HIP_NO_HALF_CONVERSIONS__=1 -DHIP_ENABLE_WARP_SYNC_BUILTINS -Wno-pass-failed "
    "-Wno-unused-result "
    "-Wno-deprecated-declarations -Wno-duplicate-decl-specifier -Wno-unused-command-line-argument "
    "-Wno-missing-braces -mllvm -amdgpu-coerce-illegal-types=1 -fclang-abi-compat=17 "
)


def _includes(rng: random.Random) -> str:
    base = [
        "/opt/pytorch/build/aten/src",
        "/opt/pytorch/aten/src",
        "/opt/pytorch/build",
        "/opt/pytorch",
        "/opt/pytorch/cmake/../third_party/benchmark/include",
        "/opt/pytorch/third_party/onnx",
        "/opt/pytorch/build/third_party/onnx",
        "/opt/pytorch/third_party/foxi",
        "/opt/pytorch/build/third_party/foxi",
        "/opt/pytorch/torch/csrc/api",
        "/opt/pytorch/torch/csrc/api/include",
        "/opt/pytorch/caffe2/aten/src/TH",
        "/opt/pytorch/build/caffe2/aten/src/TH",
        "/opt/pytorch/build/caffe2/aten/src",
        "/opt/pytorch/build/caffe2/../aten/src",
        "/opt/pytorch/torch/csrc",
        "/opt/pytorch/third_party/miniz-3.0.2",
        "/opt/pytorch/third_party/kineto/libkineto/include",
        "/opt/pytorch/third_party/kineto/libkineto/src",
        "/opt/pytorch/aten/src/ATen/..",
        "/opt/pytorch/c10/hip/../..",
        "/opt/pytorch/c10/..",
        "/opt/rocm/include",
        "/opt/rocm/include/hiprand",
        "/opt/rocm/include/rocrand",
        "/opt/rocm/include/hipblas",
        "/opt/rocm/include/hipblaslt",
        "/opt/rocm/include/hipfft",
        "/opt/rocm/include/hipsparse",
        "/opt/rocm/include/hipsolver",
        "/opt/rocm/include/rccl",
        "/opt/rocm/include/roctracer",
        "/opt/pytorch/third_party/composable_kernel/include",
        "/opt/pytorch/third_party/composable_kernel/library/include",
    ]
    extra = [f"/opt/pytorch/third_party/dep{rng.randrange(100)}/include" for _ in range(20)]
    return " ".join(f"-I{p}" for p in base + extra) + " "


def _object(rng: random.Random) -> tuple[str, str]:
    folder = rng.choice(DIRS)
    stem = f"{rng.choice(STEMS)}{rng.choice(['', 'Kernel', '_impl', 'Utils'])}{rng.randrange(40)}"
    return folder, stem


class _Clock:
    """Seconds since a step started, as BuildKit prints them (`%.3f`)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.t = 0.0

    def tick(self, mean: float) -> str:
        self.t += self.rng.expovariate(1.0 / mean)
        return f"{self.t:.3f}"


def _preamble() -> Iterator[str]:
    yield '#0 building with "fleet" instance using docker-container driver'
    yield ""
    n = 1
    for target, what in [("", "load local bake definitions")] + [
        (t, w)
        for t in ("pytorch", "triton")
        for w in (
            "load build definition from Dockerfile",
            "load .dockerignore",
            "load metadata for snoc-strix:8080/rocm/dev-ubuntu-24.04:7.0.2",
        )
    ]:
        prefix = f"[{target} internal] " if target else "[internal] "
        yield f"#{n} {prefix}{what}"
        if "bake" in what:
            yield f"#{n} reading rocm-bake.hcl 18.21kB / 18.21kB done"
        elif "Dockerfile" in what:
            yield f"#{n} transferring dockerfile: 6.12kB done"
        yield f"#{n} DONE 0.{n}s"
        yield ""
        n += 1


def _head(rng: random.Random, budget: int) -> Iterator[str]:
    """Everything before the long ninja step: internal steps, apt beside triton, pip."""
    yield from _preamble()
    yield "#8 [pytorch 1/9] FROM snoc-strix:8080/rocm/dev-ubuntu-24.04:7.0.2@sha256:" + "a1" * 32
    yield "#8 CACHED"
    yield ""
    yield "#9 [triton 1/5] FROM snoc-strix:8080/rocm/dev-ubuntu-24.04:7.0.2@sha256:" + "a1" * 32
    yield "#9 CACHED"
    yield ""
    # apt (pytorch) interleaved with the triton build, as two targets print side by side.
    clock_apt, clock_tri = _Clock(rng), _Clock(rng)
    yield "#10 [pytorch 2/9] RUN apt-get update && apt-get install -y --no-install-recommends ..."
    apt_lines = max(50, budget // 200)
    tri_lines = max(50, budget // 100)
    done_apt = done_tri = 0
    current = 10
    pkgs = ["libopenblas-dev", "libnuma-dev", "ninja-build", "ccache", "libjpeg-dev", "git"]
    while done_apt < apt_lines or done_tri < tri_lines:
        switch = rng.random() < 0.05
        if (current == 10 and switch and done_tri < tri_lines) or done_apt >= apt_lines:
            if current != 11:
                yield f"#{current} ..."
                yield ""
                yield "#11 [triton 2/5] RUN pip wheel --no-deps -w /wheels ./python"
                current = 11
            done_tri += 1
            yield f"#11 {clock_tri.tick(0.05)} building 'triton/_C/libtriton' extension {done_tri}"
        else:
            if current != 10:
                yield f"#{current} ..."
                yield ""
                yield "#10 [pytorch 2/9] RUN apt-get update && apt-get install -y ..."
                current = 10
            done_apt += 1
            pkg = rng.choice(pkgs)
            size = f"{done_apt % 900} kB"
            t = clock_apt.tick(0.02)
            yield f"#10 {t} Get:{done_apt} http://archive noble/main {pkg} [{size}]"
    yield f"#{current} ..."
    yield ""
    yield "#10 [pytorch 2/9] RUN apt-get update && apt-get install -y ..."
    yield "#10 DONE 41.2s"
    yield ""
    yield "#11 [triton 2/5] RUN pip wheel --no-deps -w /wheels ./python"
    yield "#11 DONE 612.9s"
    yield ""
    for n, name in (
        (12, "[pytorch 3/9] COPY patches/ /patches/"),
        (13, "[triton 3/5] RUN pip install /wheels/*.whl"),
        (14, "[pytorch 4/9] RUN git clone --depth 1 -b v2.7.0 $PYTORCH_REPO /opt/pytorch"),
        (15, "[pytorch 5/9] RUN pip install -r requirements.txt"),
    ):
        yield f"#{n} {name}"
        yield f"#{n} {1 + n / 10:.3f} ok"
        yield f"#{n} DONE {n}.{n}s"
        yield ""


def _lines(total: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    head = list(_head(rng, total))
    yield from head
    tail_len = 18  # the failing compile and BuildKit's summary, written below
    ninja_budget = max(0, total - len(head) - 3 - tail_len)
    step = 16
    clock = _Clock(rng)
    yield f"#{step} [pytorch 6/9] RUN cd /opt/pytorch && python setup.py bdist_wheel"
    yield f"#{step} {clock.tick(0.5)} Building wheel torch-2.7.0a0+git1c1b6f4"
    yield f"#{step} {clock.tick(0.5)} -- Building version 2.7.0a0+git1c1b6f4"
    n_total = max(1, int(ninja_budget * 0.82))
    includes = _includes(rng)
    emitted = 0
    i = 0
    while emitted < ninja_budget:
        i = min(i + 1, n_total)
        folder, stem = _object(rng)
        obj = f"caffe2/CMakeFiles/torch_hip.dir/__/{folder}/{stem}.hip.o"
        yield f"#{step} {clock.tick(0.011)} [{i}/{n_total}] Building HIP object {obj}"
        emitted += 1
        r = rng.random()
        if emitted + 4 > ninja_budget:
            continue
        if r < 0.025:  # verbose command line, several KB
            src = f"/opt/pytorch/{folder}/{stem}.hip"
            yield (
                f"#{step} {clock.tick(0.001)} /opt/rocm/bin/hipcc {DEFINES}{includes}{FLAGS}"
                f"--offload-arch=gfx950 -MD -MT {obj} -MF {obj}.d -o {obj} -c {src}"
            )
            emitted += 1
        elif r < 0.085:  # a coloured clang warning with its source context
            msg, flag = rng.choice(WARNINGS)
            line_no, col = rng.randrange(20, 2000), rng.randrange(1, 60)
            src = f"/opt/pytorch/{folder}/{stem}.hip"
            yield (
                f"#{step} {clock.tick(0.001)} {BOLD}{src}:{line_no}:{col}: {RESET}"
                f"{MAGENTA}warning: {RESET}{BOLD}{msg} [{flag}]{RESET}"
            )
            code = "for (int i = 0; i < numel; ++i) {"
            yield f"#{step} {clock.tick(0.001)}   {line_no} |     {code}"
            yield f"#{step} {clock.tick(0.001)}       | {GREEN}{' ' * col}^{RESET}"
            yield f"#{step} {clock.tick(0.001)} 1 warning generated when compiling for gfx950."
            emitted += 4
    folder, stem = _object(rng)
    obj = f"caffe2/CMakeFiles/torch_hip.dir/__/{folder}/{stem}.hip.o"
    src = f"/opt/pytorch/{folder}/{stem}.hip"
    tail = [
        f"[{i + 1}/{n_total}] Building HIP object {obj}",
        f"FAILED: {obj}",
        f"/opt/rocm/bin/hipcc {DEFINES}{includes}{FLAGS}--offload-arch=gfx950 -o {obj} -c {src}",
        f"{BOLD}{src}:812:5: {RESET}{RED}error: {RESET}{BOLD}no matching function for call to "
        f"'launch_vectorized_kernel'{RESET}",
        "  812 |     launch_vectorized_kernel(iter.numel(), f, data);",
        f"      | {GREEN}    ^~~~~~~~~~~~~~~~~~~~~~~~{RESET}",
        "1 error generated when compiling for gfx950.",
        "ninja: build stopped: subcommand failed.",
        "error: command '/usr/bin/cmake' failed with exit code 1",
    ]
    for text in tail:
        yield f"#{step} {clock.tick(0.2)} {text}"
    yield (
        f'#{step} ERROR: process "/bin/sh -c cd /opt/pytorch && python setup.py bdist_wheel" '
        "did not complete successfully: exit code: 1"
    )
    yield "------"
    yield " > [pytorch 6/9] RUN cd /opt/pytorch && python setup.py bdist_wheel:"
    for text in tail[-4:]:
        yield f"{clock.t:.3f} {text}"
    yield "------"
    yield (
        'ERROR: failed to solve: process "/bin/sh -c cd /opt/pytorch && python setup.py '
        'bdist_wheel" did not complete successfully: exit code: 1'
    )


def generate(path: str | Path, lines: int = 1_000_000, seed: int = 1) -> int:
    """Write exactly `lines` lines (padding with triton-style status if short) to `path`.
    Returns the number of bytes written."""
    out: list[str] = []
    count = 0
    size = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in _lines(lines, seed):
            if count >= lines:
                break
            out.append(line)
            count += 1
            if len(out) >= 8192:
                chunk = "\n".join(out) + "\n"
                fh.write(chunk)
                size += len(chunk.encode("utf-8"))
                out.clear()
        while count < lines:  # tiny requests: pad so the count is exact
            out.append(f"#99 {count}.000 padding")
            count += 1
        if out:
            chunk = "\n".join(out) + "\n"
            fh.write(chunk)
            size += len(chunk.encode("utf-8"))
    return size


def main(argv: list[str] | None = None) -> int:
    """CLI: write the log and print its size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    size = generate(args.path, lines=args.lines, seed=args.seed)
    print(f"{args.path}: {args.lines} lines, {size / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
