variable "ROCM_VERSION" {
  default = "7.2.2
}
