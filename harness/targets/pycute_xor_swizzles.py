"""``pycute.xor_swizzles``: the ``xor_swizzles`` case model through pycute's Swizzle<B,M,S>."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.xor_swizzles import cute_swizzle
from layoutfuzz.harness.target import Availability, package_versions
from layoutfuzz.harness.targets.triton_shared_layouts import (
    offset_bases,
)
from layoutfuzz.harness.targets.xor_swizzles import XorSwizzleTarget, _call


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

    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only pycute (``layoutfuzz export``): the case's Swizzle<B,M,S> over the row-major tile as
        pycute.layouts' reproducer of a swizzle writes it, the definition (CuTe's Swizzle) inline."""
        from layoutfuzz.harness.targets.pycute_layouts import reproducer

        p = case.params
        swizzle = {"op": "swizzle", "a": {"shape": [p["rows"], p["cols"]], "stride": [p["cols"], 1]},
                   "swizzle": list(cute_swizzle(dict(p))), "offset": 0}
        return reproducer(replace(case, params=swizzle))
