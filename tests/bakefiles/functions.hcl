# Functions, functions calling functions, variables built from variables, every literal type.
variable "REGISTRY" {
  default = "registry.local:5000"
}

variable "PROJECT" {
  default = "rocm-bake"
}

variable "ROCM_VERSION" {
  default = "7.2.2"
}

variable "IMAGE_ROOT" {
  default = "${REGISTRY}/${PROJECT}"
}

variable "FULL_TAG" {
  default = "${IMAGE_ROOT}/pytorch:${upper(ROCM_VERSION)}-${lower("GFX950")}"
}

variable "JOBS" {
  default = 12
}

variable "RATIO" {
  default = 1.5
}

variable "NEGATIVE" {
  default = -3
}

variable "PUSH" {
  default = false
}

variable "EMPTY" {
  default = ""
}

variable "NO_DEFAULT" {
}

variable "NOTHING" {
  default = null
}

variable "ESCAPED" {
  default = "tab\there \"quoted\" back\\slash \u00e9 $${not_interpolated}"
}

variable "PERCENT" {
  default = "100% done"
}

variable "ARCH_LIST" {
  default = ["gfx950", "gfx1201"]
}

variable "SETTINGS" {
  default = {
    jobs = 4
    lto  = true
  }
}

variable "BANNER" {
  default = <<-EOT
    rocm-bake
      nightly
  EOT
}

variable "HF_TOKEN" {
  default = "hf_fixture_default_secret"
}

variable "HALF_JOBS" {
  default = JOBS / 2
}

variable "ARCH_COUNT" {
  default = length(ARCH_LIST)
}

function "image" {
  params = [name]
  result = "${IMAGE_ROOT}/${name}:${ROCM_VERSION}"
}

function "image_for" {
  params = [name, arch]
  result = "${image(name)}-${arch}"
}

function "arches" {
  params = []
  result = join(",", ARCH_LIST)
}

target "app" {
  args = {
    JOBS   = JOBS
    ARCHES = arches()
  }
  tags = [image("app"), image_for("app", "gfx950")]
}

group "default" {
  targets = ["app"]
}
