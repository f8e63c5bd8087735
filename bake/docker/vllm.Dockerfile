# syntax=docker/dockerfile:1.7
# vLLM from source with its ROCm kernels for PYTORCH_ROCM_ARCH, on the stack built so far.
FROM stage
ARG VLLM_VERSION
ARG PYTORCH_ROCM_ARCH
ARG MAX_JOBS
ENV PYTORCH_ROCM_ARCH=${PYTORCH_ROCM_ARCH} MAX_JOBS=${MAX_JOBS} VLLM_TARGET_DEVICE=rocm
WORKDIR /src
RUN git clone --depth 1 --branch v${VLLM_VERSION} https://github.com/vllm-project/vllm.git
WORKDIR /src/vllm
RUN --mount=type=cache,target=/root/.cache/sccache \
    pip install --no-cache-dir -r requirements/rocm.txt \
 && python setup.py bdist_wheel \
 && pip install --no-cache-dir dist/vllm-*.whl
