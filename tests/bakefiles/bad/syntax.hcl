variable "ROCM_VERSION" {
  default = "7.2.2"
}

target "pytorch" {
  tags = ["a" "b"]
}
