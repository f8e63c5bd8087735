variable "ROCM_VERSION" {
  default = "7.2.2"
}

target "pytorch" {
  args = {
    ROCM_VERSION = ROCM_VERSION
  }

target "vllm" {
  inherits = ["pytorch"]
}
