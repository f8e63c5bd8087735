# syntax=docker/dockerfile:1.7
# AITER: AMD's inference kernels (Composable Kernel and Triton), compiled for GFX_ARCH.
FROM stage
ARG AITER_VERSION
ARG GFX_ARCH
ARG MAX_JOBS
ENV GPU_ARCHS=${GFX_ARCH} MAX_JOBS=${MAX_JOBS} PREBUILD_KERNELS=1
WORKDIR /src
RUN git clone --recurse-submodules https://github.com/ROCm/aiter.git \
 && git -C aiter checkout ${AITER_VERSION} \
 && git -C aiter submodule update --init --recursive
WORKDIR /src/aiter
RUN pip install --no-cache-dir -r requirements.txt \
 && python setup.py bdist_wheel \
 && pip install --no-cache-dir dist/amd_aiter-*.whl
