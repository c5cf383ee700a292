"""``cute.xor_swizzles``: the ``xor_swizzles`` case model through CuTe DSL's Swizzle<B,M,S>."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.target import Availability, only_answer, package_versions
from layoutfuzz.harness.targets.triton_shared_layouts import (
    offset_bases,
)
from layoutfuzz.harness.targets.xor_swizzles import XorSwizzleTarget, _call


class CuteXorSwizzles(XorSwizzleTarget):
    name = "cute.xor_swizzles"
    layer = "CuTe DSL (cute.make_swizzle, composed layouts)"
    description = "XOR swizzles of a tile through CuTe DSL's Swizzle<B,M,S>, side by side with Triton and pycute"
    requires = ("nvidia-cutlass-dsl (pip install 'layoutfuzz[cutedsl]')",)
    system = "CuTe DSL"
    max_batch = 512

    def availability(self) -> Availability:
        from layoutfuzz.harness.targets.cute_layouts import dsl_availability

        return dsl_availability("cutlass.cute")

    def versions(self) -> Mapping[str, str]:
        return package_versions("nvidia-cutlass-dsl")

    def observed(self, case: Case) -> Any:
        return only_answer(self.observed_batch([case]))

    def observed_batch(self, cases: Sequence[Case]) -> Sequence[Any]:
        from layoutfuzz.harness.targets.cute_layouts import evaluate_many

        answers = evaluate_many([_call(c.params) for c in cases])
        return [a if isinstance(a, BaseException) else offset_bases(c.params["rows"], c.params["cols"], a["offsets"]) for c, a in zip(cases, answers)]
