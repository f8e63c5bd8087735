group "default" { targets = ["alpha", "beta"] }
target "alpha" {
  dockerfile = "Dockerfile.alpha"
  context = "."
}
target "beta" {
  dockerfile = "Dockerfile.beta"
  context = "."
}
target "fail" {
  dockerfile = "Dockerfile.fail"
  context = "."
}
