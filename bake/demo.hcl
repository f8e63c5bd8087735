# The demo stack: rocm-bake's variables, pinned to the same values, with targets that really
# build on any Docker engine in seconds, FROM the busybox-only image `rocm-base:local` (nothing
# is pulled). Their RUN steps print what a ROCm build prints (ninja `[i/N] Building HIP object`
# counters, hipcc command lines several KB long, a warning); see demo/fake-compile.sh.
#
# Same conventions as rocm-bake.hcl: GFX_ARCH with SUPPORTED_GFX_ARCHES; a target PUSHES when
# its own or inherited `output` is `type=registry` (or has `push=true`), and only `*-push`
# targets do; paths are relative to this file's directory, where bake runs.
#
# Knobs for tests (environment, by exact name, like every bake variable):
#   DEMO_STEPS=400           more [i/N] lines per stage (default 40)
#   DEMO_SLEEP=0.5           slower output (default 0.05 s between lines)
#   DEMO_SILENT_SECONDS=30   go silent this long halfway through each stage (stall tests);
#                            busy:30 burns a core while silent, fill:64:30 writes 64 MiB first
#   DEMO_FAIL=pytorch        fail the pytorch stage halfway with a compiler error
#   DEMO_FAIL=vllm:7         ... or at step 7 of the vllm stage
#   DEMO_NONCE=$RANDOM       a new value defeats BuildKit's cache, forcing a real run
#   DEMO_CACHE_HITS=75       percent of compiles each stage's sccache statistics call hits
#   DEMO_STATS_FORMAT=json   those statistics as `--stats-format=json` prints them (default text)
#   REGISTRY=127.0.0.1:5000  where *-push targets push (and what every tag names)
#
# Images carry their pins as labels, as rocm-bake.hcl's do (`rocm-bake.pin.PYTORCH_VERSION`, the
# arch, `org.opencontainers.image.version`), and each stage prints sccache's statistics in the
# format Debian's sccache 0.4 prints them (tests/data/sccache holds real recordings).
#
# Targets: demo-base -> demo-pytorch -> demo-vllm (each builds the stages before it),
# demo-pytorch-push and demo-vllm-push. Groups: default (demo-vllm), all, push.

# --- pinned component versions --------------------------------------------------------------

variable "ROCM_VERSION" {
  default = "7.2.2"
}

variable "PYTORCH_VERSION" {
  default = "2.15.0"
}

variable "TRITON_VERSION" {
  default = "3.9.0"
}

# AITER has no release tarballs: this is the git ref built (amd-aiter 0.1.7.post2 wheels come
# from it).
variable "AITER_VERSION" {
  default = "v0.1.7"
}

variable "CUPY_VERSION" {
  default = "14.2.0"
}

variable "NIXL_VERSION" {
  default = "1.5.1"
}

variable "VLLM_VERSION" {
  default = "0.33.0"
}

variable "LMCACHE_VERSION" {
  default = "0.5.6"
}

variable "PYTHON_VERSION" {
  default = "3.12"
}

# --- architectures ----------------------------------------------------------------------------

variable "GFX_ARCH" {
  default = "gfx950"
}

variable "SUPPORTED_GFX_ARCHES" {
  default = "gfx950,gfx1201,gfx1250"
}

# --- fleet services -----------------------------------------------------------------------------

# Zot on snoc-strix: images, layer cache and the pull-through copy of the ROCm dev images.
variable "REGISTRY" {
  default = "snoc-strix:8080"
}

variable "IMAGE_PREFIX" {
  default = "rocm-bake"
}

# The ROCm development image every build starts from, through Zot's pull-through sync.
variable "ROCM_BASE_IMAGE" {
  default = "${REGISTRY}/rocm/dev-ubuntu-24.04:${ROCM_VERSION}-complete"
}

# nginx WebDAV on snoc-strix holding sccache objects; one namespace per ROCm release so objects
# compiled against different headers never mix.
variable "SCCACHE_WEBDAV_ENDPOINT" {
  default = "http://snoc-strix:8081/"
}

variable "SCCACHE_NAMESPACE" {
  default = "rocm-bake/rocm-${ROCM_VERSION}"
}

# Parallel compile jobs inside one build (hipcc peaks at ~4 GB per job on PyTorch).
variable "MAX_JOBS" {
  default = 16
}

# --- demo knobs ---------------------------------------------------------------------------------

variable "DEMO_STEPS" {
  default = 40
}

variable "DEMO_SLEEP" {
  default = "0.05"
}

variable "DEMO_SILENT_SECONDS" {
  default = "0"  # a string: it also takes busy:N and fill:MB:N
}

variable "DEMO_FAIL" {
  default = ""
}

variable "DEMO_NONCE" {
  default = ""
}

variable "DEMO_CACHE_HITS" {
  default = 75
}

variable "DEMO_STATS_FORMAT" {
  default = "text"
}

# --- functions ----------------------------------------------------------------------------------

function "tag" {
  params = [name, arch]
  result = "${REGISTRY}/${IMAGE_PREFIX}/demo-${name}:rocm${ROCM_VERSION}-${arch}"
}

# Every pin a demo image is built from, by its variable's name (see rocm-bake.hcl's "pinned").
function "pinned" {
  params = []
  result = {
    ROCM_VERSION    = ROCM_VERSION
    PYTHON_VERSION  = PYTHON_VERSION
    PYTORCH_VERSION = PYTORCH_VERSION
    VLLM_VERSION    = VLLM_VERSION
  }
}

# The pins of each stage: its own and those of the stages below it.
function "pins_of" {
  params = [name]
  result = lookup({
    base = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
    ]
    pytorch = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
    ]
    vllm = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
      "VLLM_VERSION",
    ]
  }, name, [])
}

function "image_labels" {
  params = [name, arch]
  result = merge(
    { for pin in pins_of(name) : "rocm-bake.pin.${pin}" => pinned()[pin] },
    {
      "org.opencontainers.image.version" = "rocm${ROCM_VERSION}-${arch}"
      "rocm-bake.arch"                   = arch
    }
  )
}

# --- targets ------------------------------------------------------------------------------------

target "_demo" {
  context    = "demo"
  dockerfile = "Dockerfile"
  args = {
    ROCM_VERSION            = ROCM_VERSION
    PYTORCH_VERSION         = PYTORCH_VERSION
    VLLM_VERSION            = VLLM_VERSION
    GFX_ARCH                = GFX_ARCH
    SCCACHE_WEBDAV_ENDPOINT = SCCACHE_WEBDAV_ENDPOINT
    DEMO_STEPS              = DEMO_STEPS
    DEMO_SLEEP              = DEMO_SLEEP
    DEMO_SILENT_SECONDS     = DEMO_SILENT_SECONDS
    DEMO_FAIL               = DEMO_FAIL
    DEMO_NONCE              = DEMO_NONCE
    DEMO_CACHE_HITS         = DEMO_CACHE_HITS
    DEMO_STATS_FORMAT       = DEMO_STATS_FORMAT
  }
  labels = {
    "org.opencontainers.image.vendor" = "rocm-bake"
  }
}

target "demo-base" {
  description = "demo: the ROCm base stage"
  inherits    = ["_demo"]
  target      = "demo-base"
  tags        = [tag("base", GFX_ARCH)]
  labels      = image_labels("base", GFX_ARCH)
}

target "demo-pytorch" {
  description = "demo: PyTorch stage on demo-base"
  inherits    = ["_demo"]
  target      = "demo-pytorch"
  tags        = [tag("pytorch", GFX_ARCH)]
  labels      = image_labels("pytorch", GFX_ARCH)
}

target "demo-vllm" {
  description = "demo: vLLM stage on demo-pytorch"
  inherits    = ["_demo"]
  target      = "demo-vllm"
  tags        = [tag("vllm", GFX_ARCH)]
  labels      = image_labels("vllm", GFX_ARCH)
}

target "demo-pytorch-push" {
  description = "demo: PyTorch stage, pushed to REGISTRY"
  inherits    = ["demo-pytorch"]
  output      = ["type=registry"]
}

target "demo-vllm-push" {
  description = "demo: vLLM stage, pushed to REGISTRY"
  inherits    = ["demo-vllm"]
  output      = ["type=registry"]
}

# --- groups -------------------------------------------------------------------------------------

group "default" {
  targets = ["demo-vllm"]
}

group "all" {
  targets = ["demo-base", "demo-pytorch", "demo-vllm"]
}

group "push" {
  targets = ["demo-pytorch-push", "demo-vllm-push"]
}
