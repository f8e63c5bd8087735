# syntax=docker/dockerfile:1.7
# NIXL (KV-cache transfer for disaggregated serving) with the UCX backend built for ROCm.
FROM stage
ARG NIXL_VERSION
ARG MAX_JOBS
WORKDIR /src
RUN git clone --depth 1 --branch v1.19.0 https://github.com/openucx/ucx.git \
 && cd ucx && ./autogen.sh \
 && ./configure --prefix=/opt/ucx --with-rocm=/opt/rocm --enable-mt \
 && make -j${MAX_JOBS} install
RUN git clone --depth 1 --branch ${NIXL_VERSION} https://github.com/ai-dynamo/nixl.git
WORKDIR /src/nixl
RUN pip install --no-cache-dir meson meson-python pybind11 \
 && pip wheel --no-build-isolation --no-deps -w dist . -Csetup-args=-Ducx_path=/opt/ucx \
 && pip install --no-cache-dir dist/nixl-*.whl
