"""Target ``triton.shared_layouts``: swizzled and NVMMA shared layouts as Triton's compiler lays them out.

Triton 3.6.0's ``to_linear_layout`` aborts on shared layouts, so ``triton.layouts`` cannot compare them
there. This target asks the compiler instead, the same way on every release: a Gluon kernel allocates
a buffer of the layout and reshapes it to 1-D; the front end infers the reshaped buffer's layout as a
``shared_linear`` layout (offset -> flat element index, row-major), which is Triton's own account of
where each element lives. The oracle's shared layout (``oracles/triton_layouts.py``), flattened the same
way, is the expected answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators import legacy_layouts
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.legacy_space import legacy_illegal, legacy_parameters
from layoutfuzz.generators.shrink import legacy_case_shrinks
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.validity import check_legacy, check_nvmma_tensor, legacy_from_params, legacy_kind
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget, to_gluon
from layoutfuzz.harness.triton_compat.layouts import shared_layout
from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.reports.signatures import normalise

DTYPES = {8: "int8", 16: "float16", 32: "float32"}
_SHARED_LINEAR = re.compile(r"#ttg\.shared_linear<\{offset = (\[[\[\]\d, ]*\])")


def flat_offsets(layout: tl.Layout, shape: list[int]) -> list[int]:
    """The oracle's answer in the compiler's terms: for each offset basis, the row-major flat index of
    the element it reaches."""
    bases = dict(shared_layout(layout, shape).in_dims)["offset"]
    strides = [prod(shape[i + 1:]) for i in range(len(shape))]
    return [sum(c * s for c, s in zip(b, strides)) for b in bases]


def inferred_offsets(ir_text: str) -> list[int] | None:
    """The offset bases of the 1-D ``shared_linear`` layout in a module's IR (None if there is none)."""
    for match in _SHARED_LINEAR.finditer(ir_text):
        bases = [[int(x) for x in re.findall(r"\d+", b)] for b in re.findall(r"\[([\d, ]*)\]", match[1])]
        if all(len(b) == 1 for b in bases):
            return [b[0] for b in bases]
    return None


def _probe():
    from triton.experimental import gluon
    from triton.experimental.gluon import language as ttgl

    @gluon.jit
    def shared_layout_probe(S: ttgl.constexpr, SHAPE: ttgl.constexpr, N: ttgl.constexpr, DTYPE: ttgl.constexpr):
        smem = ttgl.allocate_shared_memory(DTYPE, SHAPE, S)
        smem.reshape([N])

    return shared_layout_probe


class TritonSharedLayouts(GluonTarget):
    name = "triton.shared_layouts"
    layer = "Triton's shared layouts (as its compiler infers them)"
    description = ("swizzled and NVMMA shared layouts as Triton's compiler lays them out (a buffer reshaped to 1-D, "
                   "its inferred shared_linear layout) vs the oracle, on every release")

    def generate(self, source: Source) -> dict[str, Any]:
        kind = source.choice(legacy_layouts.SHARED_KINDS)
        layout, shape, elem_bits = legacy_layouts.shared(source, kind)
        return {"kind": kind, "layout": tl.to_dict(layout), "shape": shape, "elem_bits": elem_bits}

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("elem_bits") not in DTYPES or not isinstance(p.get("shape"), list):
            raise ValueError(f"params need 'shape' (a list) and 'elem_bits' (one of {sorted(DTYPES)})")
        layout = legacy_from_params(p.get("layout"))
        if legacy_kind(layout) not in legacy_layouts.SHARED_KINDS or p.get("kind") != legacy_kind(layout):
            raise ValueError("the layout must be a shared legacy layout of the case's kind")
        check_legacy(layout, p["shape"], p["elem_bits"])
        check_nvmma_tensor(layout, p["shape"])
        if isinstance(layout, tl.NVMMASharedLayout) and layout.element_bitwidth != p["elem_bits"]:
            raise ValueError("an NVMMA shared layout's element width is the buffer's")
        layout.linear_layout(p["shape"])

    def parameter_space(self) -> Space:
        """The shared legacy layouts' constructor arguments over their legal ranges (generators.legacy_space), and
        the buffer's element width."""
        parameters = legacy_parameters(lambda p: tl.from_dict(p["layout"]), lambda p: p["shape"], legacy_layouts.SHARED_KINDS)
        bits = Parameter("element bits", tuple(sorted(DTYPES)), "Triton's shared buffers: the element types of DTYPES",
                         lambda p: p["elem_bits"])
        def illegal(a: str, x: Any, b: str, y: Any) -> bool:  # an NVMMA layout's element width is the buffer's
            if {a, b} == {"nvmma element bits", "element bits"}:
                return x != y
            return legacy_illegal(a, x, b, y)

        return Space((*parameters, bits), illegal)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        return legacy_case_shrinks(case.params)

    def family(self, case: Case) -> str:
        p = case.params
        layout = p.get("layout", {})
        extra = f"/{layout.get('swizzle_byte_width')}B{'/transposed' if layout.get('transposed') else ''}" if p.get("kind") == "nvmma_shared" else ""
        return f"{p.get('kind', '?')}/rank{len(p.get('shape', []))}{extra}"

    def expected(self, case: Case) -> Any:
        return {"offset": flat_offsets(tl.from_dict(case.params["layout"]), case.params["shape"])}

    def observed(self, case: Case) -> Any:
        p = case.params
        return compiled_offsets(tl.from_dict(p["layout"]), p["shape"], p["elem_bits"])

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        return compare_offsets(expected, observed)

    def reproducer_script(self, case: Case) -> str:
        """A script that needs only Triton (``layoutfuzz export``)."""
        return reproducer(case)


def compiled_offsets(layout: tl.Layout, shape: list[int], elem_bits: int) -> dict[str, Any]:
    """Triton's account of a shared layout: {"offset": the row-major flat index of the element at each offset
    basis}, from the shared_linear layout its front end infers for a buffer of the layout reshaped to 1-D;
    {"exception": ...} where the compiler refused it."""
    from triton.experimental.gluon import language as ttgl

    from layoutfuzz.harness.triton_compat.layouts import front_end_ir

    if prod(shape) < 2:
        raise Unsupported("a one-element buffer has no offset bits, and Gluon refuses an empty SharedLinearLayout")
    constexprs = {"S": to_gluon(layout), "SHAPE": list(shape), "N": prod(shape), "DTYPE": getattr(ttgl, DTYPES[elem_bits])}
    try:
        text = front_end_ir(_probe(), {}, constexprs)
    except Exception as exc:
        return {"exception": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"}
    offsets = inferred_offsets(text)
    if offsets is None:
        return {"exception": "no shared_linear layout inferred for the reshaped buffer"}
    return {"offset": offsets}


def compare_offsets(expected: Any, observed: Any, system: str = "Triton") -> Comparison:
    """Offset bases, expected against ``system``'s, with what kind of difference it is."""
    if "exception" in observed:
        return Comparison(False, 1, (observed["exception"],), f"exception: {normalise(observed['exception'], 120)}",
                          f"{system} raised on a valid layout")
    want, got = expected["offset"], observed["offset"]
    if want == got:
        return Comparison(True)
    if 0 in got:  # Def 4.14: a memory layout is invertible; a zero basis gives two offsets one element
        kind = "not a memory layout (a zero offset basis)"
    elif len(want) != len(got):
        kind = "a different number of offset bases"
    elif sorted(want) == sorted(got):
        kind = "the same offsets in another order"
    else:
        kind = "different offsets"
    diffs = [f"offset basis {i}: oracle {w}, {system} {g}" for i, (w, g) in enumerate(zip(want, got)) if w != g]
    return Comparison(False, max(len(diffs), 1), tuple(diffs[:8]) or (f"oracle {want}, {system} {got}",), kind)


def offset_bases(rows: int, cols: int, offsets: Sequence[int]) -> dict[str, Any]:
    """Every element's offset (element i colexicographic over (rows, cols), as CuTe counts them) in Triton's form:
    for each offset basis, the row-major index of the element there; {"exception"} where the offsets are no bijection
    onto 0 .. rows*cols - 1 or not F2-linear (a layout Triton's form cannot state)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.shape != (rows * cols,) or sorted(offsets.tolist()) != list(range(rows * cols)):
        return {"exception": "the offsets are not a permutation of the tile's"}
    i = np.arange(rows * cols)
    element = np.empty(rows * cols, dtype=np.int64)
    element[offsets] = (i % rows) * cols + i // rows  # offset -> row-major index
    bases = [int(element[1 << j]) for j in range((rows * cols - 1).bit_length())]
    spanned = np.zeros(rows * cols, dtype=np.int64)
    for j, b in enumerate(bases):
        spanned[(np.arange(rows * cols) >> j) & 1 == 1] ^= b
    if not np.array_equal(spanned, element):
        return {"exception": "not F2-linear: an offset's element is not the XOR of its bits' elements"}
    return {"offset": bases}


def reproducer(case: Case) -> str:
    """A script that needs only Triton: a Gluon kernel a user writes (a buffer of the case's shared layout, reshaped to
    1-D, its layout printed by ``static_print``), compiled for sm_90 on the CPU in a child process; the offset bases
    of the layout's definition (from layoutfuzz's oracle, as the row-major index each offset bit reaches) are written
    in, and the property every memory layout has (one-to-one: 2^n distinct offsets) is checked inline."""
    from layoutfuzz.harness.targets.script_parts import (
        GLUON_CHILD_HEAD,
        PARENT_IMPORTS,
        RUN_CHILD,
        TRITON_CHILD_ENV,
        gluon_constructor,
    )

    p = case.params
    shape = list(p["shape"])
    source = gluon_constructor(p["layout"])
    want = flat_offsets(tl.from_dict(p["layout"]), shape)
    return f'''"""Triton's shared layout as its compiler lays a buffer out ({case.case_id}, found by layoutfuzz): a Gluon kernel
allocates a {shape} {DTYPES[p["elem_bits"]]} buffer of {source}
and reshapes it to 1-D; the layout Triton infers for the reshaped buffer says which element (its row-major index) each
offset bit reaches. A shared layout is a memory layout: those bases must be one-to-one (2^n distinct offsets) and be
the layout's definition. Needs only Triton; runs on a CPU (the kernel is compiled for sm_90, not run). Exit 1 while the
answer is wrong (or Triton aborts), 0 once right, 2 where this release lacks the layout."""
{PARENT_IMPORTS}
SHAPE = {shape!r}
# the row-major index of the element each offset bit reaches, by the layout's definition
EXPECTED = {want!r}

CHILD = r"""{GLUON_CHILD_HEAD}

LAYOUT = unavailable(lambda: {source})


@gluon.jit
def probe(S: ttgl.constexpr, SHAPE: ttgl.constexpr, N: ttgl.constexpr):
    smem = ttgl.allocate_shared_memory(ttgl.{DTYPES[p["elem_bits"]]}, SHAPE, S)
    ttgl.static_print(smem.reshape([N]).layout)


text, raised = printed(probe, {{"S": LAYOUT, "SHAPE": {shape!r}, "N": {prod(shape)}}}, 4)
found = re.search(r"offset_bases=(\\[[\\[\\]\\d, ]*\\])", text)
print("ANSWER", json.dumps({{"offset": [b[0] for b in json.loads(found[1])]}} if found else {{"raised": raised or text[-300:]}}))
"""
{RUN_CHILD}

def one_to_one(bases):
    """Whether the offsets the bases reach (the XOR of the bases of each offset's set bits) are all distinct."""
    reached = [0]
    for basis in bases:
        reached += [x ^ basis for x in reached]
    return len(set(reached)) == len(reached)


print("triton", __import__("triton").__version__)
expected = f"offset bases {{EXPECTED}} (one-to-one: {{one_to_one(EXPECTED)}})"
got = run_child(CHILD, expected, {TRITON_CHILD_ENV})
print("expected:", expected)
if "offset" not in got:
    print("observed: no layout:", got["raised"])
    sys.exit(1)
print("observed:", f"offset bases {{got['offset']}} (one-to-one: {{one_to_one(got['offset'])}})")
sys.exit(0 if got["offset"] == EXPECTED else 1)
'''
