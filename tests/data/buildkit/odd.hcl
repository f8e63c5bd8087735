target "odd" {
  dockerfile = "Dockerfile.odd"
  context = "."
}
