"""What the fleet has published: every buildable target × arch, the registry as the record.

- `plan`: what bake resolves (one `bake --print` per arch, with the pins in effect now): the
  rows, their tags per arch, the pin labels each image should carry.
- `fill`: what the registry holds under those tags (HEADs, bounded and under one deadline; an
  image's labels, size and creation time read once per digest and kept).
- `judge`: the verdict of each cell, from the registry's answer and the job store.
- `report`: all three, as `compute_matrix(config, env)`, for the CLI and the console's child.
"""
