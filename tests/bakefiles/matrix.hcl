# Matrix targets over a list variable and a literal list, named from templates.
variable "GFX_ARCH" {
  default = "gfx1250"
}

variable "SUPPORTED_GFX_ARCHES" {
  default = ["gfx1250", "gfx950"]
}

variable "PYTHONS" {
  default = "3.11,3.12"
}

variable "REGISTRY" {
  default = "127.0.0.1:5000"
}

variable "TAG_SUFFIX" {
  default = "${GFX_ARCH}-${length(SUPPORTED_GFX_ARCHES)}arches"
}

target "wheel" {
  matrix = {
    arch = SUPPORTED_GFX_ARCHES
    py   = split(",", PYTHONS)
  }
  name = "wheel-${arch}-py${replace(py, ".", "")}"
  args = {
    GFX_ARCH = arch
    PYTHON   = py
  }
  tags = ["${REGISTRY}/wheel:${arch}-py${py}"]
}

target "image" {
  matrix = {
    flavour = ["slim", "full"]
  }
  name     = "image-${flavour}"
  contexts = { wheels = "target:wheel-${GFX_ARCH}-py312" }
  tags     = ["${REGISTRY}/image:${flavour}-${TAG_SUFFIX}"]
  output   = ["type=registry"]
}

group "default" {
  targets = ["wheel", "image"]
}
