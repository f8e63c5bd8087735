# Four steps of known length, two of them in parallel (issue 38's timeline tests):
#   serial   RUN sleep $SERIAL_ONE          (stage base; TL_NONCE defeats the cache)
#   parallel RUN sleep $LONG  | RUN sleep $SHORT   (stages long, short, both FROM base)
#   serial   RUN sleep $SERIAL_TWO           (stage final, after COPYs of both; FLAVOUR
#                                             enters only this step's cache key)
# so the critical path is: serial one, the long parallel step, serial two.

variable "GFX_ARCH" {
  default = "gfx1201"
}

variable "TL_NONCE" {
  default = "0"
}

variable "FLAVOUR" {
  default = "vanilla"
}

variable "SERIAL_ONE" {
  default = "8"
}

variable "LONG" {
  default = "12"
}

variable "SHORT" {
  default = "6"
}

variable "SERIAL_TWO" {
  default = "8"
}

target "timeline" {
  context    = "."
  dockerfile = "Dockerfile"
  target     = "final"
  args = {
    GFX_ARCH   = GFX_ARCH
    TL_NONCE   = TL_NONCE
    FLAVOUR    = FLAVOUR
    SERIAL_ONE = SERIAL_ONE
    LONG       = LONG
    SHORT      = SHORT
    SERIAL_TWO = SERIAL_TWO
  }
}
