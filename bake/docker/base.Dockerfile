# syntax=docker/dockerfile:1.7
# ROCm development image plus what every later stage compiles with: sccache (objects in the
# fleet's WebDAV), ninja, cmake and a pinned Python with a venv at /opt/venv.
ARG ROCM_BASE_IMAGE
FROM ${ROCM_BASE_IMAGE}
ARG ROCM_VERSION
ARG PYTHON_VERSION
ARG GFX_ARCH
ARG SCCACHE_WEBDAV_ENDPOINT
ARG SCCACHE_WEBDAV_KEY_PREFIX
ENV ROCM_PATH=/opt/rocm \
    HIP_PATH=/opt/rocm \
    PATH=/opt/venv/bin:/opt/rocm/bin:/opt/rocm/llvm/bin:${PATH} \
    SCCACHE_WEBDAV_ENDPOINT=${SCCACHE_WEBDAV_ENDPOINT} \
    SCCACHE_WEBDAV_KEY_PREFIX=${SCCACHE_WEBDAV_KEY_PREFIX} \
    CMAKE_C_COMPILER_LAUNCHER=sccache \
    CMAKE_CXX_COMPILER_LAUNCHER=sccache \
    CMAKE_HIP_COMPILER_LAUNCHER=sccache
RUN --mount=type=cache,target=/var/cache/apt,sharing=locked \
    apt-get update \
 && apt-get install -y --no-install-recommends \
      git ninja-build cmake ccache pkg-config libnuma-dev libibverbs-dev librdmacm-dev \
      python${PYTHON_VERSION} python${PYTHON_VERSION}-dev python${PYTHON_VERSION}-venv \
      sccache \
 && python${PYTHON_VERSION} -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir -U pip setuptools wheel packaging ninja cmake
RUN sccache --version && hipconfig --version && rocminfo >/dev/null 2>&1 || true
