variable "ROCM_VERSION" {
  default = "7.2.2"
}

variable "PYTORCH_VERSION" {
  default = "2.15.0"
}

variable "ROCM_VERSION" {
  default = "7.0.2"
}
