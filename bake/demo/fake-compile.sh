#!/bin/sh
# fake-compile COMPONENT VERSION -- print what a ROCm ninja build of COMPONENT prints, without
# compiling anything: CMake's configure lines, `[i/N] Building HIP object ...` counters, a few
# hipcc command lines several KB long, one compiler warning and a final link.
#
# Knobs (environment; the bake file passes its DEMO_* variables as build args):
#   DEMO_STEPS           number of [i/N] lines (default 40)
#   DEMO_SLEEP           seconds between lines, fractions allowed (default 0.05)
#   DEMO_SILENT_SECONDS  go silent this long halfway through (default 0: never), asleep;
#                        `busy:N` burns a core for N seconds instead (a silent compile or link),
#                        `fill:MB:N` writes MB MiB of zeros into the image first (stops early
#                        when the disk is full), then sleeps N seconds (a build that filled
#                        its node's data root), `oom:MB:N` has a helper eat MB MiB in the
#                        background while it sleeps N seconds (a compiler the OOM killer ended)
#   DEMO_FAIL            COMPONENT or COMPONENT:STEP -- fail there with a compiler error
#   DEMO_NONCE           any value; changing it defeats BuildKit's cache of this step
#   DEMO_CACHE_HITS      percent of the compiles sccache's closing statistics count as hits
#                        (default 75)
#   DEMO_STATS_FORMAT    text (default) or json: how those statistics are printed, in the exact
#                        layout of Debian's sccache 0.4 (`sccache --show-stats [--stats-format
#                        json]`; real recordings in tests/data/sccache)
# busybox sh only: POSIX shell, integer arithmetic, `sleep` takes fractions.
set -eu

comp=${1:?component}
ver=${2:?version}
steps=${DEMO_STEPS:-40}
pause=${DEMO_SLEEP:-0.05}
silent=${DEMO_SILENT_SECONDS:-0}
fail=${DEMO_FAIL:-}
arch=${GFX_ARCH:-gfx950}
rocm=${ROCM_VERSION:-0}

case $comp in
  pytorch)
    dir=caffe2/CMakeFiles/torch_hip.dir/__/aten/src/ATen/native/hip
    srcdir=aten/src/ATen/native/hip
    set -- Activation BinaryMulKernel Copy Distributions Embedding Indexing layer_norm_kernel \
      Loss Normalization ReduceSumProdKernel Sort SoftMax TensorCompare UnaryOpsKernel \
      UpSampleBilinear2d ;;
  vllm)
    dir=CMakeFiles/_rocm_C.dir/csrc/rocm
    srcdir=csrc/rocm
    set -- attention paged_attention_v1 paged_attention_v2 skinny_gemms custom_all_reduce \
      layernorm_kernels activation_kernels cache_kernels pos_encoding_kernels ;;
  *)
    dir=CMakeFiles/${comp}_hip.dir/src
    srcdir=src
    set -- device_ops host_ops kernels utils ;;
esac
count=$#

echo "-- The HIP compiler identification is Clang 20.0.0 (ROCm ${rocm})"
echo "-- Building ${comp} ${ver} for ${arch}: ${steps} objects (nonce ${DEMO_NONCE:-none})"
echo "-- sccache: ${SCCACHE_WEBDAV_ENDPOINT:-disabled}"

incs=""
for d in c10/hip c10/core aten/src aten/src/ATen aten/src/ATen/hip aten/src/THH \
  third_party/fmt/include third_party/composable_kernel/include third_party/fbgemm/include \
  third_party/kineto/libkineto/include third_party/protobuf/src third_party/pybind11/include \
  third_party/XNNPACK/include third_party/cpuinfo/include third_party/onnx third_party/eigen \
  third_party/gloo third_party/tensorpipe third_party/nlohmann/include torch/csrc/api/include \
  build/aten/src build/third_party/gloo build/caffe2/aten/src build/third_party/ideep/include; do
  incs="$incs -I/src/${comp}/$d -isystem /src/${comp}/build/$d"
done
defs="-DAT_PER_OPERATOR_HEADERS -DHAVE_MALLOC_USABLE_SIZE=1 -DHAVE_MMAP=1 -DHAVE_SHM_OPEN=1"
defs="$defs -DHAVE_SHM_UNLINK=1 -DMINIZ_DISABLE_ZIP_READER_MTIME -DONNXIFI_ENABLE_EXT=1"
defs="$defs -DONNX_ML=1 -DONNX_NAMESPACE=onnx_torch -DTORCH_HIP_BUILD_MAIN_LIB -DUSE_ROCM"
defs="$defs -D__HIP_PLATFORM_AMD__=1 -DUSE_FLASH_ATTENTION -DUSE_MEM_EFF_ATTENTION"
flags="-fPIC -D__HIP_NO_HALF_OPERATORS__=1 -D__HIP_NO_HALF_CONVERSIONS__=1 -O3 -std=c++17"
flags="$flags --offload-arch=${arch} -fno-gpu-rdc -Wno-unused-command-line-argument"
flags="$flags -mllvm -amdgpu-early-inline-all=true -mllvm -amdgpu-function-calls=false"

total=$((steps + 1)) # ninja counts the final link as a step too
fail_at=0
case $fail in
  "$comp") fail_at=$((steps / 2 + 1)) ;;
  "$comp":*) fail_at=${fail#*:} ;;
esac

i=1
while [ "$i" -le "$steps" ]; do
  k=$(((i - 1) % count + 1))
  eval "obj=\${$k}"
  src="/src/${comp}/${srcdir}/${obj}.hip"
  out="${dir}/${obj}.hip.o"
  echo "[${i}/${total}] Building HIP object ${out}"
  if [ $((i % 10)) -eq 3 ] || [ "$i" -eq "$fail_at" ]; then
    echo "/opt/rocm/llvm/bin/clang++ ${defs}${incs} ${flags} -MD -MT ${out} -MF ${out}.d -o ${out} -x hip -c ${src}"
  fi
  if [ "$i" -eq $((steps / 3 + 1)) ]; then
    echo "${src}:412:5: warning: loop not unrolled: the optimizer was unable to perform the requested transformation; the transformation might be disabled or specified as part of an unsupported transformation ordering [-Wpass-failed=transform-warning]"
    echo "1 warning generated when compiling for ${arch}."
  fi
  if [ "$i" -eq "$fail_at" ]; then
    echo "FAILED: ${out}"
    echo "${src}:128:18: error: use of undeclared identifier '__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8'"
    echo "1 error generated when compiling for ${arch}."
    echo "ninja: build stopped: subcommand failed."
    exit 1
  fi
  if [ "$i" -eq $((steps / 2)) ]; then
    case $silent in
      0 | 0.0 | "") ;;
      busy:*)
        # arithmetic in the shell itself: one process at 100% of a core, no output
        end=$(($(date +%s) + ${silent#busy:}))
        while [ "$(date +%s)" -lt "$end" ]; do
          j=0
          while [ "$j" -lt 20000 ]; do j=$((j + 1)); done
        done
        ;;
      oom:*)
        # a helper that eats MB MiB in the background (the OOM killer's, in a memory-limited
        # engine), while the step itself waits N seconds without a word
        rest=${silent#oom:}
        (x=$(head -c "${rest%%:*}m" /dev/zero | tr '\0' a); echo "${#x}" >/dev/null) &
        sleep "${rest#*:}"
        ;;
      fill:*)
        rest=${silent#fill:}
        dd if=/dev/zero of=/fill bs=1048576 count="${rest%%:*}" 2>/dev/null || true
        sleep "${rest#*:}"
        ;;
      *) sleep "$silent" ;;
    esac
  fi
  sleep "$pause"
  i=$((i + 1))
done
echo "[${total}/${total}] Linking HIP shared library lib/lib${comp}_hip.so"
echo "-- ${comp} ${ver} built for ${arch}"

# What `sccache --show-stats` prints at the end of the stage: every compile went through it.
pct=${DEMO_CACHE_HITS:-75}
hits=$((steps * pct / 100))
misses=$((steps - hits))
cache=/root/.cache/sccache
if [ "${DEMO_STATS_FORMAT:-text}" = json ]; then
  hit_counts={}
  miss_counts={}
  [ "$hits" -gt 0 ] && hit_counts="{\"C/C++\":${hits}}"
  [ "$misses" -gt 0 ] && miss_counts="{\"C/C++\":${misses}}"
  printf '{"stats":{"compile_requests":%d,"requests_unsupported_compiler":0,"requests_not_compile":1,"requests_not_cacheable":0,"requests_executed":%d,"cache_errors":{"counts":{}},"cache_hits":{"counts":%s},"cache_misses":{"counts":%s},"cache_timeouts":0,"cache_read_errors":0,"non_cacheable_compilations":0,"forced_recaches":0,"cache_write_errors":0,"cache_writes":%d,"cache_write_duration":{"secs":0,"nanos":1924230},"cache_read_hit_duration":{"secs":0,"nanos":2174},"compiler_write_duration":{"secs":0,"nanos":36124420},"compile_fails":0,"not_cached":{},"dist_compiles":{},"dist_errors":0},"cache_location":"Local disk: \\"%s\\"","cache_size":%d,"max_cache_size":10737418240}\n' \
    $((steps + 1)) "$steps" "$hit_counts" "$miss_counts" "$misses" "$cache" $((steps * 40960))
else
  w=$((${#steps} > 5 ? ${#steps} + 2 : 7))
  stat() { printf "%-31s %${w}s\n" "$1" "$2"; }
  stat "Compile requests" $((steps + 1))
  stat "Compile requests executed" "$steps"
  stat "Cache hits" "$hits"
  [ "$hits" -gt 0 ] && stat "Cache hits (C/C++)" "$hits"
  stat "Cache misses" "$misses"
  [ "$misses" -gt 0 ] && stat "Cache misses (C/C++)" "$misses"
  for name in "Cache timeouts" "Cache read errors" "Forced recaches" "Cache write errors" \
    "Compilation failures" "Cache errors" "Non-cacheable compilations" "Non-cacheable calls"; do
    stat "$name" 0
  done
  stat "Non-compilation calls" 1
  stat "Unsupported compiler calls" 0
  printf "%-31s %${w}s s\n" "Average cache write" 0.002 "Average compiler" 0.018 \
    "Average cache read hit" 0.000
  stat "Failed distributed compilations" 0
  printf '%-31s Local disk: "%s"\n' "Cache location" "$cache"
  printf "%-31s %${w}s KiB\n" "Cache size" $((steps * 40))
  printf "%-31s %${w}s GiB\n" "Max cache size" 10
fi
