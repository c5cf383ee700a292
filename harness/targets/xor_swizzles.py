"""What the targets of one case model, ``xor_swizzles``, share: the XOR swizzle of a row-major [rows, cols] tile
(``generators.xor_swizzles``), through Triton's swizzled shared layout as its compiler lays it out
(``triton_xor_swizzles``), pycute (``pycute_xor_swizzles``) and CuTe DSL (``cute_xor_swizzles``), all against one
oracle: the paper's Definition 4.11 (``oracles.triton_layouts.SwizzledSharedLayout``). A campaign of them shows the
systems side by side. Each answer is put in one form: for each offset bit, the row-major index of the element at
that offset; a CuTe answer is every element's offset, read as offset bases by ``offset_bases``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.xor_swizzles import (
    ELEMENT_BITS,
    MAX_DIM_LOG2,
    MAX_ELEMENTS,
    MAX_PER_PHASE_LOG2,
    cute_swizzle,
    xor_swizzle,
)
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Target
from layoutfuzz.harness.targets.cute_algebra import Call
from layoutfuzz.harness.targets.triton_shared_layouts import (
    compare_offsets,
    flat_offsets,
)
from layoutfuzz.oracles import triton_layouts as tl

CASE_MODEL = "xor_swizzles"


def swizzled_layout(p: Mapping[str, Any]) -> tl.SwizzledSharedLayout:
    return tl.SwizzledSharedLayout(p["vec"], p["per_phase"], p["max_phase"], (1, 0))


class XorSwizzleTarget(Target):
    """The case model, the oracle and the comparison the three systems share; a subclass says how it is asked."""

    case_model = CASE_MODEL
    system = "Triton"  # in reports

    def generate(self, source: Source) -> dict[str, Any]:
        return xor_swizzle(source)

    def validate(self, case: Case) -> None:
        p = case.params
        for name in ("rows", "cols", "vec", "per_phase", "max_phase"):
            if not isinstance(p.get(name), int) or p[name] < 1 or p[name] & (p[name] - 1):
                raise ValueError(f"{name} is a power of two")
        if p["vec"] * p["max_phase"] > p["cols"] or p["rows"] < 2:
            raise ValueError("vec * max_phase columns at most, and two rows at least")
        if max(p["rows"], p["cols"]) > 1 << MAX_DIM_LOG2 or p["rows"] * p["cols"] > MAX_ELEMENTS \
                or p["per_phase"] > 1 << MAX_PER_PHASE_LOG2:
            raise ValueError(f"rows and columns up to {1 << MAX_DIM_LOG2}, {MAX_ELEMENTS} elements, "
                             f"{1 << MAX_PER_PHASE_LOG2} rows a phase")
        if p.get("elem_bits") not in ELEMENT_BITS:
            raise ValueError(f"elem_bits is one of {ELEMENT_BITS}")

    def family(self, case: Case) -> str:
        p = case.params
        return "no swizzle" if p["max_phase"] == 1 else f"max phase {p['max_phase']}"

    def parameter_space(self) -> Space:
        api = "Triton SwizzledSharedLayout (Def 4.11); CuTe Swizzle<B,M,S>"
        return Space((
            Parameter("vec", tuple(1 << k for k in range(9)), api, lambda p: p["vec"]),
            Parameter("per phase", (1, 2, 4, 8, 16), api, lambda p: p["per_phase"]),
            Parameter("max phase", tuple(1 << k for k in range(9)), api, lambda p: p["max_phase"]),
            Parameter("element bits", ELEMENT_BITS, "Triton's shared buffers (triton.shared_layouts)", lambda p: p["elem_bits"]),
        ), lambda a, x, b, y: {a, b} == {"vec", "max phase"} and x * y > 256)  # the XOR stays in a row of 256 at most

    def expected(self, case: Case) -> Any:
        p = case.params
        return {"offset": flat_offsets(swizzled_layout(p), [p["rows"], p["cols"]])}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        return compare_offsets(expected, observed, self.system)


def _call(p: Mapping[str, Any]) -> Call:
    """The case as CuTe's composed layout: Swizzle<B,M,S> o 0 o (rows, cols):(cols, 1)."""
    return Call("swizzle", ((p["rows"], p["cols"]), (p["cols"], 1)), swizzle=cute_swizzle(dict(p)), offset=0)


