# syntax=docker/dockerfile:1.7
# CuPy with its HIP backend for GFX_ARCH.
FROM stage
ARG CUPY_VERSION
ARG GFX_ARCH
ARG MAX_JOBS
ENV CUPY_INSTALL_USE_HIP=1 ROCM_HOME=/opt/rocm HCC_AMDGPU_TARGET=${GFX_ARCH} \
    CUPY_NUM_BUILD_JOBS=${MAX_JOBS}
WORKDIR /src
RUN git clone --depth 1 --recurse-submodules --branch v${CUPY_VERSION} \
      https://github.com/cupy/cupy.git
WORKDIR /src/cupy
RUN pip wheel --no-build-isolation --no-deps -w dist . \
 && pip install --no-cache-dir dist/cupy-*.whl
