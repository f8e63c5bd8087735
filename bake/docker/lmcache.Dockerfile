# syntax=docker/dockerfile:1.7
# LMCache on top of vLLM: the image operators run.
FROM stage
ARG LMCACHE_VERSION
ARG PYTORCH_ROCM_ARCH
ENV PYTORCH_ROCM_ARCH=${PYTORCH_ROCM_ARCH} BUILD_WITH_HIP=1
WORKDIR /src
RUN git clone --depth 1 --branch v${LMCACHE_VERSION} https://github.com/LMCache/LMCache.git
WORKDIR /src/LMCache
RUN pip install --no-cache-dir --no-build-isolation . \
 && python -c "import lmcache, vllm, torch; print(torch.__version__, torch.version.hip)"
WORKDIR /
CMD ["vllm", "serve", "--help"]
