# Values that must never reach a terminal raw: OSC 52 clipboard write, title change, full reset,
# an 8-bit CSI, bidi override, and Rich markup.
variable "CLIPBOARD" {
  default = "before\u001b]52;c;ZWNobyBwd25lZA==\u0007after"
}

variable "TITLE" {
  default = "x\u001b]0;owned\u0007y\u001bcz"
}

variable "C1" {
  default = "a\u009b2Jb\u202eevil"
}

variable "MARKUP" {
  default = "[/] [link=http://127.0.0.1:1/]click[/link] [bold red]"
}
