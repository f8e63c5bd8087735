# One target per way a registry can answer a matrix (tests/fleet/test_matrix_faults.py): each tag names
# a repository the test makes good, odd or failing; `badtag` resolves a tag the distribution spec
# forbids and `elsewhere` one on another registry than the fleet's.

variable "REGISTRY" {
  default = "127.0.0.1:9"
}

variable "PYTORCH_VERSION" {
  default = "2.15.0"
}

variable "GFX_ARCH" {
  default = "gfx950"
}

variable "SUPPORTED_GFX_ARCHES" {
  default = "gfx950"
}

function "tag" {
  params = [name]
  result = "${REGISTRY}/t/${name}:${PYTORCH_VERSION}-${GFX_ARCH}"
}

target "_pinned" {
  labels = {
    "rocm-bake.pin.PYTORCH_VERSION" = PYTORCH_VERSION
  }
}

target "good" {
  inherits = ["_pinned"]
  tags     = [tag("good")]
}

target "old" {
  inherits = ["_pinned"]
  tags     = [tag("old")]
}

target "nolabels" {
  inherits = ["_pinned"]
  tags     = [tag("nolabels")]
}

target "listed" {
  inherits = ["_pinned"]
  tags     = [tag("listed")]
}

target "norepo" {
  inherits = ["_pinned"]
  tags     = [tag("norepo")]
}

target "locked" {
  inherits = ["_pinned"]
  tags     = [tag("locked")]
}

target "broken" {
  inherits = ["_pinned"]
  tags     = [tag("broken")]
}

target "slow" {
  inherits = ["_pinned"]
  tags     = [tag("slow")]
}

target "badtag" {
  inherits = ["_pinned"]
  tags     = ["${REGISTRY}/t/badtag:${PYTORCH_VERSION}+local"]
}

target "elsewhere" {
  inherits = ["_pinned"]
  tags     = ["snoc-strix:8080/t/elsewhere:${PYTORCH_VERSION}"]
}

target "untagged" {
  inherits = ["_pinned"]
}
