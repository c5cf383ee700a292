"""``triton.xor_swizzles``: the ``xor_swizzles`` case model through Triton's swizzled shared layout, as its compiler
lays it out."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.targets.triton_shared_layouts import (
    compiled_offsets,
)
from layoutfuzz.harness.targets.xor_swizzles import XorSwizzleTarget, swizzled_layout
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget


class TritonXorSwizzles(GluonTarget, XorSwizzleTarget):
    name = "triton.xor_swizzles"
    layer = "Triton's swizzled shared layout (as its compiler infers it)"
    description = "XOR swizzles of a tile through Triton's SwizzledSharedLayout, side by side with pycute and CuTe DSL"

    def observed(self, case: Case) -> Any:
        p = case.params
        return compiled_offsets(swizzled_layout(p), [p["rows"], p["cols"]], p["elem_bits"])
