"""Recorded plans the Pilot tests open the bake dialog and launch with."""

from __future__ import annotations

from rocmtui.console.backend.views import BakePlan

RESOLVED = (
    "{",
    '  "target": {',
    '    "demo-pytorch": {',
    '      "args": {',
    '        "GFX_ARCH": "gfx1201",',
    '        "PYTORCH_VERSION": "2.15.0",',
    '        "ROCM_VERSION": "7.2.2",',
    '        "VLLM_VERSION": "0.34.0rc1"',
    "      },",
    '      "context": "demo",',
    '      "tags": [',
    '        "snoc-strix:8080/rocm-bake/demo-pytorch:rocm7.2.2-gfx1201"',
    "      ],",
    '      "target": "demo-pytorch"',
    "    }",
    "  }",
    "}",
)


PLAN = BakePlan(
    "demo-pytorch",
    "gfx1201",
    "snoc-think",
    False,
    command=(
        "GFX_ARCH=gfx1201",
        "VLLM_VERSION=0.34.0rc1",
        "DOCKER_HOST=ssh://ci@snoc-think",
        "docker",
        "buildx",
        "bake",
        "-f",
        "bake/demo.hcl",
        "--progress=plain",
        "--metadata-file",
        "<job>/metadata.json",
        "--",
        "demo-pytorch",
    ),
    resolved=RESOLVED,
    changed=frozenset({4, 7, 11}),
    ready=True,
)
