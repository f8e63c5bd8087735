# rocm-bake: PyTorch built from source against ROCm, with Triton, AITER, CuPy, NIXL, vLLM and
# LMCache layered on top, one image per component, for one GPU architecture per build.
#
# Conventions the console (rocmtui) reads from this file statically -- keep them:
# - Every pinned value is a `variable` with a plain default; the environment overrides one by
#   exact name (bake's own rule), so `GFX_ARCH=gfx1201 docker buildx bake pytorch` is a
#   gfx1201 build. Never give a variable a `description` or `type`: buildx 0.13.1 rejects both.
# - GFX_ARCH is the default architecture; SUPPORTED_GFX_ARCHES lists every architecture the
#   stack builds for, comma-separated, default first.
# - A target PUSHES when its `output` (its own or one it inherits) is `type=registry` or carries
#   `push=true`. By convention those targets, and only those, are named `*-push`; they need the
#   `ci` login to the registry. Everything else builds into the builder's cache only.
# - Build order is the `contexts = { stage = "target:..." }` chain:
#   base -> pytorch -> triton -> aiter -> cupy -> nixl -> vllm -> lmcache.
#   Each Dockerfile starts `FROM stage`.
# - Paths are relative to the directory bake runs in: the directory of this file.
#
# Targets:  <component>            one component for GFX_ARCH (what `rocmtui bake X --arch` runs)
#           <component>-<arch>     one component for a fixed arch (matrix over the supported list)
#           <component>-push       like <component>, pushed to REGISTRY with its build cache
# Groups:   default (whole stack for GFX_ARCH), one per arch (gfx950, gfx1201, gfx1250),
#           all (every arch), push (whole stack for GFX_ARCH, pushed).

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

# --- functions ------------------------------------------------------------------------------------

function "arches" {
  params = []
  result = split(",", SUPPORTED_GFX_ARCHES)
}

function "version_of" {
  params = [name]
  result = lookup({
    base    = ROCM_VERSION
    pytorch = PYTORCH_VERSION
    triton  = TRITON_VERSION
    aiter   = AITER_VERSION
    cupy    = CUPY_VERSION
    nixl    = NIXL_VERSION
    vllm    = VLLM_VERSION
    lmcache = LMCACHE_VERSION
  }, name, "unversioned")
}

# Every pinned version by its variable's name. Images carry them as labels named after the
# variable (`rocm-bake.pin.PYTORCH_VERSION`), so rocmtui reads staleness from the image itself.
function "pinned" {
  params = []
  result = {
    ROCM_VERSION    = ROCM_VERSION
    PYTHON_VERSION  = PYTHON_VERSION
    PYTORCH_VERSION = PYTORCH_VERSION
    TRITON_VERSION  = TRITON_VERSION
    AITER_VERSION   = AITER_VERSION
    CUPY_VERSION    = CUPY_VERSION
    NIXL_VERSION    = NIXL_VERSION
    VLLM_VERSION    = VLLM_VERSION
    LMCACHE_VERSION = LMCACHE_VERSION
  }
}

# The pins an image is built from: its own component's and those of every stage below it (a
# new PyTorch pin makes every image above pytorch stale, and base not).
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
    triton = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
      "TRITON_VERSION",
    ]
    aiter = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
      "TRITON_VERSION",
      "AITER_VERSION",
    ]
    cupy = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
      "TRITON_VERSION",
      "AITER_VERSION",
      "CUPY_VERSION",
    ]
    nixl = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
      "TRITON_VERSION",
      "AITER_VERSION",
      "CUPY_VERSION",
      "NIXL_VERSION",
    ]
    vllm = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
      "TRITON_VERSION",
      "AITER_VERSION",
      "CUPY_VERSION",
      "NIXL_VERSION",
      "VLLM_VERSION",
    ]
    lmcache = [
      "ROCM_VERSION",
      "PYTHON_VERSION",
      "PYTORCH_VERSION",
      "TRITON_VERSION",
      "AITER_VERSION",
      "CUPY_VERSION",
      "NIXL_VERSION",
      "VLLM_VERSION",
      "LMCACHE_VERSION",
    ]
  }, name, [])
}
# An image's labels: its version (as in its tag), its arch and one label per pin it is built from.
function "image_labels" {
  params = [name, arch]
  result = merge(
    { for pin in pins_of(name) : "rocm-bake.pin.${pin}" => pinned()[pin] },
    {
      "org.opencontainers.image.version" = "${version_of(name)}-rocm${ROCM_VERSION}-${arch}"
      "rocm-bake.arch"                   = arch
    }
  )
}

# The one place image names are made: REGISTRY/IMAGE_PREFIX/NAME:VERSION-rocmROCM-ARCH.
function "tag" {
  params = [name, arch]
  result = "${REGISTRY}/${IMAGE_PREFIX}/${name}:${version_of(name)}-rocm${ROCM_VERSION}-${arch}"
}

function "cache_ref" {
  params = [name, arch]
  result = "type=registry,ref=${REGISTRY}/${IMAGE_PREFIX}/cache:${name}-rocm${ROCM_VERSION}-${arch}"
}

# --- targets --------------------------------------------------------------------------------

# What every component shares. Not built on its own (no group names it).
target "_common" {
  context   = "docker"
  platforms = ["linux/amd64"]
  args = {
    ROCM_VERSION              = ROCM_VERSION
    PYTHON_VERSION            = PYTHON_VERSION
    GFX_ARCH                  = GFX_ARCH
    PYTORCH_ROCM_ARCH         = GFX_ARCH
    MAX_JOBS                  = MAX_JOBS
    SCCACHE_WEBDAV_ENDPOINT   = SCCACHE_WEBDAV_ENDPOINT
    SCCACHE_WEBDAV_KEY_PREFIX = SCCACHE_NAMESPACE
  }
  labels = {
    "org.opencontainers.image.vendor" = "rocm-bake"
  }
}

# ROCm dev image with the build toolchain, sccache and Python.
target "_base" {
  inherits   = ["_common"]
  dockerfile = "base.Dockerfile"
  args = {
    ROCM_BASE_IMAGE = ROCM_BASE_IMAGE
  }
}

target "base" {
  description = "ROCm dev image with the build toolchain, sccache and Python"
  inherits    = ["_base"]
  tags        = [tag("base", GFX_ARCH)]
  labels      = image_labels("base", GFX_ARCH)
  cache-from  = [cache_ref("base", GFX_ARCH)]
}

target "base-arch" {
  matrix      = { arch = arches() }
  name        = "base-${arch}"
  description = "ROCm dev image with the build toolchain, sccache and Python: ${arch}"
  inherits    = ["_base"]
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("base", arch)]
  labels      = image_labels("base", arch)
  cache-from  = [cache_ref("base", arch)]
}

target "base-push" {
  description = "ROCm dev image with the build toolchain, sccache and Python, pushed"
  inherits    = ["base"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("base", GFX_ARCH)},mode=max"]
}

# PyTorch from source (hipified) for one gfx arch.
target "_pytorch" {
  inherits   = ["_common"]
  dockerfile = "pytorch.Dockerfile"
  args = {
    PYTORCH_VERSION = PYTORCH_VERSION
  }
}

target "pytorch" {
  description = "PyTorch from source (hipified) for one gfx arch"
  inherits    = ["_pytorch"]
  contexts    = { stage = "target:base" }
  tags        = [tag("pytorch", GFX_ARCH)]
  labels      = image_labels("pytorch", GFX_ARCH)
  cache-from  = [cache_ref("pytorch", GFX_ARCH)]
}

target "pytorch-arch" {
  matrix      = { arch = arches() }
  name        = "pytorch-${arch}"
  description = "PyTorch from source (hipified) for one gfx arch: ${arch}"
  inherits    = ["_pytorch"]
  contexts    = { stage = "target:base-${arch}" }
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("pytorch", arch)]
  labels      = image_labels("pytorch", arch)
  cache-from  = [cache_ref("pytorch", arch)]
}

target "pytorch-push" {
  description = "PyTorch from source (hipified) for one gfx arch, pushed to the registry"
  inherits    = ["pytorch"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("pytorch", GFX_ARCH)},mode=max"]
}

# Triton from source against the built PyTorch.
target "_triton" {
  inherits   = ["_common"]
  dockerfile = "triton.Dockerfile"
  args = {
    TRITON_VERSION = TRITON_VERSION
  }
}

target "triton" {
  description = "Triton from source against the built PyTorch"
  inherits    = ["_triton"]
  contexts    = { stage = "target:pytorch" }
  tags        = [tag("triton", GFX_ARCH)]
  labels      = image_labels("triton", GFX_ARCH)
  cache-from  = [cache_ref("triton", GFX_ARCH)]
}

target "triton-arch" {
  matrix      = { arch = arches() }
  name        = "triton-${arch}"
  description = "Triton from source against the built PyTorch: ${arch}"
  inherits    = ["_triton"]
  contexts    = { stage = "target:pytorch-${arch}" }
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("triton", arch)]
  labels      = image_labels("triton", arch)
  cache-from  = [cache_ref("triton", arch)]
}

target "triton-push" {
  description = "Triton from source against the built PyTorch, pushed to the registry"
  inherits    = ["triton"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("triton", GFX_ARCH)},mode=max"]
}

# AITER kernels (CK and Triton) for one gfx arch.
target "_aiter" {
  inherits   = ["_common"]
  dockerfile = "aiter.Dockerfile"
  args = {
    AITER_VERSION = AITER_VERSION
  }
}

target "aiter" {
  description = "AITER kernels (CK and Triton) for one gfx arch"
  inherits    = ["_aiter"]
  contexts    = { stage = "target:triton" }
  tags        = [tag("aiter", GFX_ARCH)]
  labels      = image_labels("aiter", GFX_ARCH)
  cache-from  = [cache_ref("aiter", GFX_ARCH)]
}

target "aiter-arch" {
  matrix      = { arch = arches() }
  name        = "aiter-${arch}"
  description = "AITER kernels (CK and Triton) for one gfx arch: ${arch}"
  inherits    = ["_aiter"]
  contexts    = { stage = "target:triton-${arch}" }
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("aiter", arch)]
  labels      = image_labels("aiter", arch)
  cache-from  = [cache_ref("aiter", arch)]
}

target "aiter-push" {
  description = "AITER kernels (CK and Triton) for one gfx arch, pushed to the registry"
  inherits    = ["aiter"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("aiter", GFX_ARCH)},mode=max"]
}

# CuPy with its HIP backend.
target "_cupy" {
  inherits   = ["_common"]
  dockerfile = "cupy.Dockerfile"
  args = {
    CUPY_VERSION = CUPY_VERSION
  }
}

target "cupy" {
  description = "CuPy with its HIP backend"
  inherits    = ["_cupy"]
  contexts    = { stage = "target:aiter" }
  tags        = [tag("cupy", GFX_ARCH)]
  labels      = image_labels("cupy", GFX_ARCH)
  cache-from  = [cache_ref("cupy", GFX_ARCH)]
}

target "cupy-arch" {
  matrix      = { arch = arches() }
  name        = "cupy-${arch}"
  description = "CuPy with its HIP backend: ${arch}"
  inherits    = ["_cupy"]
  contexts    = { stage = "target:aiter-${arch}" }
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("cupy", arch)]
  labels      = image_labels("cupy", arch)
  cache-from  = [cache_ref("cupy", arch)]
}

target "cupy-push" {
  description = "CuPy with its HIP backend, pushed to the registry"
  inherits    = ["cupy"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("cupy", GFX_ARCH)},mode=max"]
}

# NIXL transfer library with the UCX backend.
target "_nixl" {
  inherits   = ["_common"]
  dockerfile = "nixl.Dockerfile"
  args = {
    NIXL_VERSION = NIXL_VERSION
  }
}

target "nixl" {
  description = "NIXL transfer library with the UCX backend"
  inherits    = ["_nixl"]
  contexts    = { stage = "target:cupy" }
  tags        = [tag("nixl", GFX_ARCH)]
  labels      = image_labels("nixl", GFX_ARCH)
  cache-from  = [cache_ref("nixl", GFX_ARCH)]
}

target "nixl-arch" {
  matrix      = { arch = arches() }
  name        = "nixl-${arch}"
  description = "NIXL transfer library with the UCX backend: ${arch}"
  inherits    = ["_nixl"]
  contexts    = { stage = "target:cupy-${arch}" }
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("nixl", arch)]
  labels      = image_labels("nixl", arch)
  cache-from  = [cache_ref("nixl", arch)]
}

target "nixl-push" {
  description = "NIXL transfer library with the UCX backend, pushed to the registry"
  inherits    = ["nixl"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("nixl", GFX_ARCH)},mode=max"]
}

# vLLM from source with its ROCm kernels.
target "_vllm" {
  inherits   = ["_common"]
  dockerfile = "vllm.Dockerfile"
  args = {
    VLLM_VERSION = VLLM_VERSION
  }
}

target "vllm" {
  description = "vLLM from source with its ROCm kernels"
  inherits    = ["_vllm"]
  contexts    = { stage = "target:nixl" }
  tags        = [tag("vllm", GFX_ARCH)]
  labels      = image_labels("vllm", GFX_ARCH)
  cache-from  = [cache_ref("vllm", GFX_ARCH)]
}

target "vllm-arch" {
  matrix      = { arch = arches() }
  name        = "vllm-${arch}"
  description = "vLLM from source with its ROCm kernels: ${arch}"
  inherits    = ["_vllm"]
  contexts    = { stage = "target:nixl-${arch}" }
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("vllm", arch)]
  labels      = image_labels("vllm", arch)
  cache-from  = [cache_ref("vllm", arch)]
}

target "vllm-push" {
  description = "vLLM from source with its ROCm kernels, pushed to the registry"
  inherits    = ["vllm"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("vllm", GFX_ARCH)},mode=max"]
}

# LMCache on top of vLLM: the image operators run.
target "_lmcache" {
  inherits   = ["_common"]
  dockerfile = "lmcache.Dockerfile"
  args = {
    LMCACHE_VERSION = LMCACHE_VERSION
  }
}

target "lmcache" {
  description = "LMCache on top of vLLM: the image operators run"
  inherits    = ["_lmcache"]
  contexts    = { stage = "target:vllm" }
  tags        = [tag("lmcache", GFX_ARCH)]
  labels      = image_labels("lmcache", GFX_ARCH)
  cache-from  = [cache_ref("lmcache", GFX_ARCH)]
}

target "lmcache-arch" {
  matrix      = { arch = arches() }
  name        = "lmcache-${arch}"
  description = "LMCache on top of vLLM: the image operators run: ${arch}"
  inherits    = ["_lmcache"]
  contexts    = { stage = "target:vllm-${arch}" }
  args        = { GFX_ARCH = arch, PYTORCH_ROCM_ARCH = arch }
  tags        = [tag("lmcache", arch)]
  labels      = image_labels("lmcache", arch)
  cache-from  = [cache_ref("lmcache", arch)]
}

target "lmcache-push" {
  description = "LMCache on top of vLLM: the image operators run, pushed to the registry"
  inherits    = ["lmcache"]
  output      = ["type=registry"]
  cache-to    = ["${cache_ref("lmcache", GFX_ARCH)},mode=max"]
}

# --- groups ---------------------------------------------------------------------------------

# The whole stack for GFX_ARCH.
group "default" {
  targets = ["base", "pytorch", "triton", "aiter", "cupy", "nixl", "vllm", "lmcache"]
}

group "gfx950" {
  targets = [
    "base-gfx950",
    "pytorch-gfx950",
    "triton-gfx950",
    "aiter-gfx950",
    "cupy-gfx950",
    "nixl-gfx950",
    "vllm-gfx950",
    "lmcache-gfx950",
  ]
}

group "gfx1201" {
  targets = [
    "base-gfx1201",
    "pytorch-gfx1201",
    "triton-gfx1201",
    "aiter-gfx1201",
    "cupy-gfx1201",
    "nixl-gfx1201",
    "vllm-gfx1201",
    "lmcache-gfx1201",
  ]
}

group "gfx1250" {
  targets = [
    "base-gfx1250",
    "pytorch-gfx1250",
    "triton-gfx1250",
    "aiter-gfx1250",
    "cupy-gfx1250",
    "nixl-gfx1250",
    "vllm-gfx1250",
    "lmcache-gfx1250",
  ]
}

group "all" {
  targets = ["gfx950", "gfx1201", "gfx1250"]
}

# The whole stack for GFX_ARCH, pushed (needs the ci login).
group "push" {
  targets = [
    "base-push",
    "pytorch-push",
    "triton-push",
    "aiter-push",
    "cupy-push",
    "nixl-push",
    "vllm-push",
    "lmcache-push",
  ]
}
