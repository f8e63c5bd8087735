# Every kind of default an environment variable can override (tests set them by exact name).
variable "STRING_VAR" {
  default = "from-default"
}

variable "NUMBER_VAR" {
  default = 8
}

variable "BOOL_VAR" {
  default = true
}

variable "UNSET_VAR" {
}

variable "NULL_VAR" {
  default = null
}

variable "DERIVED" {
  default = "${STRING_VAR}/${NUMBER_VAR}"
}

variable "DERIVED_OVERRIDDEN" {
  default = "${STRING_VAR}-suffix"
}

variable "REGISTRY_PASSWORD" {
  default = ""
}

variable "API_TOKEN_TTL" {
  default = 30
}

variable "lower_case" {
  default = "case-matters"
}

target "t" {
  args = {
    STRING_VAR = STRING_VAR
    NUMBER_VAR = NUMBER_VAR
    DERIVED    = DERIVED
  }
}
