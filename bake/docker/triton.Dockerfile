# syntax=docker/dockerfile:1.7
# Triton from source with the AMD backend, against the PyTorch of the previous stage.
FROM stage
ARG TRITON_VERSION
ARG MAX_JOBS
ENV MAX_JOBS=${MAX_JOBS} TRITON_BUILD_WITH_CLANG_LLD=1
WORKDIR /src
RUN git clone --depth 1 --branch v${TRITON_VERSION} https://github.com/triton-lang/triton.git
WORKDIR /src/triton
RUN --mount=type=cache,target=/root/.triton \
    pip install --no-cache-dir -r python/requirements.txt \
 && pip wheel --no-build-isolation --no-deps -w dist ./python \
 && pip install --no-cache-dir dist/triton-*.whl
