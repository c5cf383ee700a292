"""Targets of one case model, ``xor_swizzles``: the XOR swizzle of a row-major [rows, cols] tile
(``generators.xor_swizzles``), through Triton's swizzled shared layout as its compiler lays it out
(``triton.xor_swizzles``), pycute (``pycute.xor_swizzles``) and CuTe DSL (``cute.xor_swizzles``), all against one
oracle: the paper's Definition 4.11 (``oracles.triton_layouts.SwizzledSharedLayout``). A campaign of them shows the
systems side by side. Each answer is put in one form: for each offset bit, the row-major index of the element at
that offset; a CuTe answer is every element's offset, read as offset bases by ``offset_bases``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.xor_swizzles import ELEMENT_BITS, cute_swizzle, xor_swizzle
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Availability, Target, only_answer, package_versions
from layoutfuzz.harness.targets.cute_algebra import Call
from layoutfuzz.harness.targets.gluon import GluonTarget
from layoutfuzz.harness.targets.triton_shared_layouts import (
    compare_offsets,
    compiled_offsets,
    flat_offsets,
    offset_bases,
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
        if p.get("elem_bits") not in ELEMENT_BITS:
            raise ValueError(f"elem_bits is one of {ELEMENT_BITS}")

    def family(self, case: Case) -> str:
        p = case.params
        return "no swizzle" if p["max_phase"] == 1 else f"max phase {p['max_phase']}"

    def parameter_space(self) -> Space:
        api = "Triton SwizzledSharedLayout (Def 4.11); CuTe Swizzle<B,M,S>"
        return Space((
            Parameter("vec", tuple(1 << k for k in range(9)), api, lambda p: p["vec"]),
            Parameter("per phase", (1, 2, 4, 8), api, lambda p: p["per_phase"]),
            Parameter("max phase", tuple(1 << k for k in range(9)), api, lambda p: p["max_phase"]),
            Parameter("element bits", ELEMENT_BITS, "Triton's shared buffers (triton.shared_layouts)", lambda p: p["elem_bits"]),
        ), lambda a, x, b, y: {a, b} == {"vec", "max phase"} and x * y > 256)  # the XOR stays in a row of 256 at most

    def expected(self, case: Case) -> Any:
        p = case.params
        return {"offset": flat_offsets(swizzled_layout(p), [p["rows"], p["cols"]])}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        return compare_offsets(expected, observed, self.system)


class TritonXorSwizzles(GluonTarget, XorSwizzleTarget):
    name = "triton.xor_swizzles"
    layer = "Triton's swizzled shared layout (as its compiler infers it)"
    description = "XOR swizzles of a tile through Triton's SwizzledSharedLayout, side by side with pycute and CuTe DSL"

    def observed(self, case: Case) -> Any:
        p = case.params
        return compiled_offsets(swizzled_layout(p), [p["rows"], p["cols"]], p["elem_bits"])


def _call(p: Mapping[str, Any]) -> Call:
    """The case as CuTe's composed layout: Swizzle<B,M,S> o 0 o (rows, cols):(cols, 1)."""
    return Call("swizzle", ((p["rows"], p["cols"]), (p["cols"], 1)), swizzle=cute_swizzle(dict(p)), offset=0)


class PycuteXorSwizzles(XorSwizzleTarget):
    name = "pycute.xor_swizzles"
    layer = "pycute (Swizzle, ComposedLayout)"
    description = "XOR swizzles of a tile through pycute's Swizzle<B,M,S>, side by side with Triton and CuTe DSL"
    requires = ("pycute (pip install 'layoutfuzz[cute]')",)
    system = "pycute"

    def availability(self) -> Availability:
        from layoutfuzz.harness import registry

        return registry.load("pycute.layouts").availability()

    def versions(self) -> Mapping[str, str]:
        return package_versions("nvidia-cutlass")

    def observed(self, case: Case) -> Any:
        from layoutfuzz.harness import registry

        answer = registry.load("pycute.layouts").evaluate(_call(case.params))
        return offset_bases(case.params["rows"], case.params["cols"], answer["offsets"]) if "offsets" in answer else {"exception": answer["raised"]}


class CuteXorSwizzles(XorSwizzleTarget):
    name = "cute.xor_swizzles"
    layer = "CuTe DSL (cute.make_swizzle, composed layouts)"
    description = "XOR swizzles of a tile through CuTe DSL's Swizzle<B,M,S>, side by side with Triton and pycute"
    requires = ("nvidia-cutlass-dsl (pip install 'layoutfuzz[cutedsl]')",)
    system = "CuTe DSL"
    max_batch = 512

    def availability(self) -> Availability:
        from layoutfuzz.harness.targets.cute_dsl_layouts import dsl_availability

        return dsl_availability("cutlass.cute")

    def versions(self) -> Mapping[str, str]:
        return package_versions("nvidia-cutlass-dsl")

    def observed(self, case: Case) -> Any:
        return only_answer(self.observed_batch([case]))

    def observed_batch(self, cases: Sequence[Case]) -> Sequence[Any]:
        from layoutfuzz.harness.targets.cute_dsl_layouts import evaluate_many

        answers = evaluate_many([_call(c.params) for c in cases])
        return [a if isinstance(a, BaseException) else offset_bases(c.params["rows"], c.params["cols"], a["offsets"]) for c, a in zip(cases, answers)]
