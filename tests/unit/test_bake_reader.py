"""The static bake reader: python-hcl2's shape pinned, the real bake files read completely, and
every broken bake file reported as one `FILE:LINE: message` line (no buildx needed here)."""

from __future__ import annotations

import itertools
import re
import threading
from pathlib import Path

import hcl2
import pytest
from hcl2.utils import SerializationOptions

from rocmtui.core.bake.file import MAX_BAKE_BYTES, BakeError, load_bake
from rocmtui.core.bake.scan import MAX_NESTING, plain_string, scan

REPO = Path(__file__).resolve().parents[2]
ROCM_BAKE = REPO / "bake" / "rocm-bake.hcl"
DEMO_BAKE = REPO / "bake" / "demo.hcl"
FIXTURES = Path(__file__).resolve().parents[1] / "bakefiles"

COMPONENTS = ("base", "pytorch", "triton", "aiter", "cupy", "nixl", "vllm", "lmcache")
VERSION_VARIABLES = (
    "ROCM_VERSION",
    "PYTORCH_VERSION",
    "TRITON_VERSION",
    "AITER_VERSION",
    "CUPY_VERSION",
    "NIXL_VERSION",
    "VLLM_VERSION",
    "LMCACHE_VERSION",
)
ARCHES = ("gfx950", "gfx1201", "gfx1250")


# --- python-hcl2's output shape, which the reader depends on --------------------------------------

SHAPE_SOURCE = """\
variable "ROCM_VERSION" {
  default = "7.0.2"
}
variable "JOBS" {
  default = 8
}
variable "PUSH" {
  default = true
}
variable "BANNER" {
  default = <<EOT
hello
EOT
}
function "tag" {
  params = [name, arch]
  result = "${REGISTRY}/${name}:${arch}"
}
target "pytorch" {
  inherits = ["_common"]
  contexts = { stage = "target:base", "extra-src" = "target:src" }
  tags     = [tag("pytorch", GFX_ARCH)]
  args     = { N = JOBS / 2 }
}
"""


def test_hcl2_shape_is_unevaluated_source_text() -> None:
    """Pinned: strings keep their quotes, labels are quoted, blocks carry __is_block__,
    expressions come back as `${...}` text, numbers and bools as Python values."""
    assert hcl2.__version__.startswith("8.")  # type: ignore[attr-defined]
    data = hcl2.loads(SHAPE_SOURCE, serialization_options=SerializationOptions(with_comments=False))
    assert data == {
        "variable": [
            {'"ROCM_VERSION"': {"default": '"7.0.2"', "__is_block__": True}},
            {'"JOBS"': {"default": 8, "__is_block__": True}},
            {'"PUSH"': {"default": True, "__is_block__": True}},
            {'"BANNER"': {"default": '"<<EOT\nhello\nEOT"', "__is_block__": True}},
        ],
        "function": [
            {
                '"tag"': {
                    "params": ["name", "arch"],
                    "result": '"${REGISTRY}/${name}:${arch}"',
                    "__is_block__": True,
                }
            }
        ],
        "target": [
            {
                '"pytorch"': {
                    "inherits": ['"_common"'],
                    "contexts": {"stage": '"target:base"', '"extra-src"': '"target:src"'},
                    "tags": ['${tag("pytorch", GFX_ARCH)}'],
                    "args": {"N": "${JOBS / 2}"},
                    "__is_block__": True,
                }
            }
        ],
    }


def test_hcl2_gives_no_line_numbers_so_the_scan_does() -> None:
    """`with_meta` is documented but does nothing in 8.1.4: lines must come from bakescan."""
    options = SerializationOptions(with_comments=False, with_meta=True)
    data = hcl2.loads(SHAPE_SOURCE, serialization_options=options)
    assert "__start_line__" not in repr(data)
    found = scan(SHAPE_SOURCE)
    assert [(b.kind, b.labels, b.line) for b in found.blocks] == [
        ("variable", ("ROCM_VERSION",), 1),
        ("variable", ("JOBS",), 4),
        ("variable", ("PUSH",), 7),
        ("variable", ("BANNER",), 10),
        ("function", ("tag",), 15),
        ("target", ("pytorch",), 19),
    ]


def test_hcl2_accepts_duplicate_variables_silently() -> None:
    """Pinned hazard: the parser keeps both blocks, so the reader must catch it itself."""
    text = 'variable "A" {\n  default = "1"\n}\nvariable "A" {\n  default = "2"\n}\n'
    assert len(hcl2.loads(text)["variable"]) == 2


def test_plain_string_decodes_only_literals() -> None:
    assert plain_string('"7.2.2"') == "7.2.2"
    assert plain_string('"a\\"b\\\\c\\n\\u00e9"') == 'a"b\\c\né'
    assert plain_string('"100% done, $5"') == "100% done, $5"
    assert plain_string('"${REGISTRY}/x"') is None
    assert plain_string('"$${literal}"') is None  # an escape: left to buildx
    assert plain_string('"<<EOT\nhello\nEOT"') is None  # a heredoc as python-hcl2 keeps it
    assert plain_string("JOBS / 2") is None
    assert plain_string(8) is None


# --- rocm-bake.hcl and demo.hcl as written -------------------------------------------------------


def test_rocm_bake_variables_are_pinned_literals() -> None:
    bake = load_bake(ROCM_BAKE)
    for name in (*VERSION_VARIABLES, "GFX_ARCH", "SUPPORTED_GFX_ARCHES", "REGISTRY"):
        var = bake.variables[name]
        assert var.default, f"{name} has no plain default"
        assert var.default_source == f'"{var.default}"'
    assert bake.variables["REGISTRY"].default == "snoc-strix:8080"
    assert bake.variables["SCCACHE_WEBDAV_ENDPOINT"].default == "http://snoc-strix:8081/"
    assert bake.variables["GFX_ARCH"].default == "gfx950"
    assert bake.variables["SUPPORTED_GFX_ARCHES"].default == "gfx950,gfx1201,gfx1250"
    assert bake.arches == ARCHES
    # versions look like versions (AITER is a git ref)
    for name in VERSION_VARIABLES:
        assert re.fullmatch(r"v?\d+\.\d+(\.\d+)?", bake.variables[name].default or ""), name
    # built from other variables: the static default is unknown, the text is kept as written
    base_image = bake.variables["ROCM_BASE_IMAGE"]
    assert base_image.default is None
    assert base_image.default_source.startswith('"${REGISTRY}/')
    assert bake.variables["MAX_JOBS"].default == "16"


def test_rocm_bake_lines_point_at_the_blocks() -> None:
    bake = load_bake(ROCM_BAKE)
    lines = ROCM_BAKE.read_text().splitlines()
    for var in bake.variables.values():
        assert lines[var.line - 1].startswith(f'variable "{var.name}"')
    for target in bake.targets.values():
        assert lines[target.line - 1].startswith(f'target "{target.name}"')


def test_rocm_bake_targets_chain_and_push() -> None:
    bake = load_bake(ROCM_BAKE)
    for previous, component in itertools.pairwise(COMPONENTS):
        target = bake.targets[component]
        assert target.contexts == (("stage", f"target:{previous}"),)
        assert target.inherits == (f"_{component}",)
        assert bake.targets[f"_{component}"].inherits == ("_common",)
        assert target.description
        arch_target = bake.targets[f"{component}-arch"]
        assert arch_target.matrix
        assert arch_target.contexts == (("stage", f"target:{previous}-${{arch}}"),)
    assert bake.targets["base"].contexts == ()
    assert bake.pushing_targets == frozenset(f"{c}-push" for c in COMPONENTS)
    for component in COMPONENTS:
        assert bake.targets[f"{component}-push"].inherits == (component,)
        assert not bake.targets[component].pushes


def test_rocm_bake_groups() -> None:
    bake = load_bake(ROCM_BAKE)
    assert bake.groups["default"] == COMPONENTS
    for arch in ARCHES:
        assert bake.groups[arch] == tuple(f"{c}-{arch}" for c in COMPONENTS)
    assert bake.groups["all"] == ARCHES
    assert bake.groups["push"] == tuple(f"{c}-push" for c in COMPONENTS)
    assert {"default", "all", *ARCHES} <= bake.names()


def test_demo_has_the_same_pinned_variables() -> None:
    """The console shows the same pinned values whichever of the two files it reads."""
    real, demo = load_bake(ROCM_BAKE), load_bake(DEMO_BAKE)
    for name, var in real.variables.items():
        assert name in demo.variables, name
        assert demo.variables[name].default_source == var.default_source, name
    for knob in ("DEMO_STEPS", "DEMO_SLEEP", "DEMO_SILENT_SECONDS", "DEMO_FAIL", "DEMO_NONCE"):
        assert knob in demo.variables
    assert demo.arches == real.arches
    assert demo.pushing_targets == {"demo-pytorch-push", "demo-vllm-push"}
    assert {"demo-base", "demo-pytorch", "demo-vllm"} <= set(demo.targets)


def test_fixture_inherits_pushes_through_parents() -> None:
    bake = load_bake(FIXTURES / "inherits.hcl")
    assert bake.pushing_targets == {"_release", "torch-release", "vllm-release"}
    assert not bake.targets["torch-release-local"].pushes  # its own output wins
    assert bake.targets["torch-release-local"].description == "the release build, kept local"
    assert dict(bake.targets["vllm-release"].contexts) == {
        "stage": "target:torch",
        "extra-src": "target:base",
    }
    assert bake.arches == ("gfx1201",)


def test_fixture_matrix_and_list_arches() -> None:
    bake = load_bake(FIXTURES / "matrix.hcl")
    assert bake.targets["wheel"].matrix and bake.targets["image"].matrix
    assert bake.pushing_targets == {"image"}
    assert bake.arches == ("gfx1250", "gfx950")  # list literal, default first, no duplicate


def test_fixture_defaults_as_written() -> None:
    bake = load_bake(FIXTURES / "functions.hcl")
    v = bake.variables
    assert (v["JOBS"].default, v["JOBS"].default_source) == ("12", "12")
    assert (v["RATIO"].default, v["NEGATIVE"].default, v["PUSH"].default) == ("1.5", "-3", "false")
    assert (v["EMPTY"].default, v["EMPTY"].default_source) == ("", '""')
    assert (v["NO_DEFAULT"].default, v["NO_DEFAULT"].default_source) == ("", "")
    assert (v["NOTHING"].default, v["NOTHING"].default_source) == (None, "null")
    assert v["HALF_JOBS"].default_source == "JOBS / 2"  # not python-hcl2's `${JOBS / 2}`
    assert v["BANNER"].default is None and v["BANNER"].default_source.startswith("<<-EOT")
    assert v["SETTINGS"].default_source.startswith("{") and v["SETTINGS"].default is None
    assert v["ESCAPED"].default is None  # `$${` is an escape: left to buildx


# --- broken bake files: one line with FILE:LINE, never a traceback --------------------------------


def _one_line(exc: BakeError, path: Path, line: int | None) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    assert exc.path == path and exc.line == line
    prefix = f"{path}:{line}: " if line else f"{path}: "
    assert text.startswith(prefix), text
    return text[len(prefix) :]


@pytest.mark.parametrize(
    ("name", "line", "words"),
    [
        ("unterminated.hcl", 5, "unterminated block"),
        ("duplicate.hcl", 9, 'variable "ROCM_VERSION" is declared again (first at line 1)'),
        ("syntax.hcl", 6, "syntax error"),
        ("unterminated-string.hcl", 2, "unterminated string"),
    ],
)
def test_bad_fixture(name: str, line: int, words: str) -> None:
    path = FIXTURES / "bad" / name
    with pytest.raises(BakeError) as info:
        load_bake(path)
    assert words in _one_line(info.value, path, line)


def test_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.hcl"
    path.write_bytes(b'\xef\xbb\xbfvariable "A" {\n  default = "1"\n}\n')
    with pytest.raises(BakeError) as info:
        load_bake(path)
    assert "byte-order mark" in _one_line(info.value, path, 1)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.hcl"
    path.write_bytes(b'variable "A" {\n  default = "caf\xe9"\n}\n')
    with pytest.raises(BakeError) as info:
        load_bake(path)
    assert "not UTF-8" in _one_line(info.value, path, 2)


def test_over_one_mib_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.hcl"
    body = 'variable "A" {\n  default = "1"\n}\n'
    path.write_text("# padding\n" * (MAX_BAKE_BYTES // 10) + body)
    assert path.stat().st_size > MAX_BAKE_BYTES
    with pytest.raises(BakeError) as info:
        load_bake(path)
    assert "over 1048576 bytes" in _one_line(info.value, path, None)


@pytest.mark.parametrize("kind", ["lists", "objects", "parentheses"])
def test_deep_nesting(tmp_path: Path, kind: str) -> None:
    opener, closer = {"lists": ("[", "]"), "objects": ("{a = ", "}"), "parentheses": ("(", ")")}[
        kind
    ]
    depth = 3000
    path = tmp_path / "deep.hcl"
    path.write_text(f'variable "D" {{\n  default = {opener * depth}1{closer * depth}\n}}\n')
    with pytest.raises(BakeError) as info:
        load_bake(path)
    assert f"nested deeper than {MAX_NESTING} levels" in _one_line(info.value, path, 2)


def test_recursion_in_the_parser_is_one_line(tmp_path: Path) -> None:
    """A long operator chain has no brackets for the scan to count, yet python-hcl2 recurses
    once per operand: its RecursionError must still come out as one BakeError line."""
    path = tmp_path / "chain.hcl"
    path.write_text('variable "D" {\n  default = ' + " + ".join(["1"] * 5000) + "\n}\n")
    with pytest.raises(BakeError) as info:
        load_bake(path)
    assert "nested too deeply" in _one_line(info.value, path, 2)


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BakeError) as info:
        load_bake(tmp_path / "nope.hcl")
    assert _one_line(info.value, tmp_path / "nope.hcl", None) == "no such bake file"
    with pytest.raises(BakeError) as info:
        load_bake(tmp_path)
    assert "directory" in _one_line(info.value, tmp_path, None)


# --- cheap and thread-safe -----------------------------------------------------------------------


def test_cached_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "c.hcl"
    path.write_text('variable "A" {\n  default = "1"\n}\n')
    first = load_bake(path)
    assert load_bake(path) is first
    path.write_text('variable "A" {\n  default = "22"\n}\n')
    assert load_bake(path).variables["A"].default == "22"


def test_parallel_loads_from_threads(tmp_path: Path) -> None:
    """Worker threads may load bake files at the same time (distinct copies: no cache)."""
    copies = []
    for i in range(6):
        copy = tmp_path / f"rocm-{i}.hcl"
        copy.write_text(ROCM_BAKE.read_text())
        copies.append(copy)
    results: dict[int, object] = {}

    def work(i: int) -> None:
        try:
            bake = load_bake(copies[i])
            results[i] = (tuple(bake.variables.values()), tuple(bake.targets.values()))
        except BaseException as exc:  # recorded, asserted below
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(copies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(set(results.values())) == 1, results
