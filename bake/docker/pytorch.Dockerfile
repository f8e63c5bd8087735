# syntax=docker/dockerfile:1.7
# PyTorch from source: hipify, then one ninja build for PYTORCH_ROCM_ARCH only (a single arch
# halves the build against the default fat binary).
FROM stage
ARG PYTORCH_VERSION
ARG PYTORCH_ROCM_ARCH
ARG MAX_JOBS
ENV PYTORCH_ROCM_ARCH=${PYTORCH_ROCM_ARCH} MAX_JOBS=${MAX_JOBS} USE_ROCM=1 USE_CUDA=0 \
    BUILD_TEST=0 USE_FLASH_ATTENTION=1 USE_MEM_EFF_ATTENTION=1
WORKDIR /src
RUN git clone --depth 1 --recurse-submodules --shallow-submodules \
      --branch v${PYTORCH_VERSION} https://github.com/pytorch/pytorch.git
WORKDIR /src/pytorch
RUN pip install --no-cache-dir -r requirements.txt \
 && python tools/amd_build/build_amd.py
RUN --mount=type=cache,target=/root/.cache/sccache \
    python setup.py bdist_wheel \
 && pip install --no-cache-dir dist/torch-*.whl \
 && sccache --show-stats
