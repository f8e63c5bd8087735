# Multi-level inherits; a pushing output inherited two levels down; contexts chains.
variable "REGISTRY" {
  default = "snoc-strix:8080"
}

variable "GFX_ARCH" {
  default = "gfx1201"
}

variable "BASE_TAG" {
  default = "${REGISTRY}/base:${GFX_ARCH}"
}

target "_common" {
  context   = "."
  platforms = ["linux/amd64"]
  args      = { GFX_ARCH = GFX_ARCH }
}

target "_release" {
  output = ["type=image,push=true"]
}

target "base" {
  inherits = ["_common"]
  tags     = [BASE_TAG]
}

target "torch" {
  inherits = ["_common"]
  contexts = { stage = "target:base" }
  tags     = ["${REGISTRY}/torch:${GFX_ARCH}"]
}

target "torch-release" {
  inherits = ["torch", "_release"]
}

target "torch-release-local" {
  description = "the release build, kept local"
  inherits    = ["torch-release"]
  output      = ["type=docker"]
}

target "vllm-release" {
  inherits = ["torch-release"]
  contexts = { stage = "target:torch", "extra-src" = "target:base" }
  tags     = ["${REGISTRY}/vllm:${GFX_ARCH}"]
}

group "default" {
  targets = ["torch"]
}

group "release" {
  targets = ["torch-release", "vllm-release"]
}
