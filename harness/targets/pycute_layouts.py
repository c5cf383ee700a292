"""Target ``pycute.layouts``: CuTe's layout algebra as pycute (CUTLASS's pure-Python CuTe, in the
``nvidia-cutlass`` package) computes it, against the algebra's defining properties (``oracles.cute_properties``),
checked by brute force over each result's whole domain (the cases and the judgement: ``cute_algebra``).

An operation pycute refuses (an assertion on its own preconditions, e.g. a shape that does not divide) is judged
by the operation's precondition: right where it fails, a spurious refusal where it holds; every result it returns
is judged by the operation's defining properties.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layoutfuzz.harness.target import Availability, Unsupported, package_versions
from layoutfuzz.harness.targets.cute_algebra import OPS, Call, CuteAlgebraTarget, _lists

__all__ = ["OPS", "PycuteLayouts"]


class PycuteLayouts(CuteAlgebraTarget):
    name = "pycute.layouts"
    layer = "pycute (CUTLASS's Python CuTe)"
    system = "pycute"
    description = "pycute's layout algebra (composition, coalesce, complement, inverses, divide, product) vs its defining properties"
    requires = ("pycute (pip install 'layoutfuzz[cute]')",)
    preload = ("pycute",)

    def availability(self) -> Availability:
        try:
            import pycute  # noqa: F401
        except ImportError:
            return Availability(False, "needs pycute: pip install 'layoutfuzz[cute]' (the nvidia-cutlass package)")
        return Availability(True)

    def versions(self) -> Mapping[str, str]:
        return package_versions("nvidia-cutlass")

    def evaluate(self, call: Call) -> dict[str, Any]:
        import pycute

        la = pycute.Layout(*call.a)
        lb = call.b if isinstance(call.b, int) or call.b is None else pycute.Layout(*call.b)
        if call.op == "recast":
            raise Unsupported("pycute has no recast_layout (upcast and downcast are CuTe C++ and CuTe DSL only)")
        if call.op == "swizzle":
            composed = pycute.ComposedLayout(pycute.Swizzle(*call.swizzle), call.offset, la)
            try:
                return {"offsets": [int(composed(i)) for i in range(call.points)]}
            except RecursionError as exc:  # pycute's own recursion on a valid swizzle: its answer, not the harness's
                return {"raised": f"RecursionError: {exc}"}
        if call.op == "composition_swizzled":  # pycute's composition reads A's shape, which a ComposedLayout lacks
            raise Unsupported("pycute composes plain layouts only (composition(ComposedLayout, Layout) reads A.shape)")
        ops = {
            "composition": pycute.composition, "logical_divide": pycute.logical_divide, "logical_product": pycute.logical_product,
            "zipped_divide": pycute.zipped_divide, "tiled_divide": pycute.tiled_divide,
            "zipped_product": pycute.zipped_product, "tiled_product": pycute.tiled_product,
        }
        call_one = {
            "coalesce": lambda: pycute.coalesce(la), "complement": lambda: pycute.complement(la, call.m),
            "left_inverse": lambda: pycute.left_inverse(la), "right_inverse": lambda: pycute.right_inverse(la),
        }.get(call.op) or (lambda: ops[call.op](la, lb))
        try:
            result = call_one()
        except Exception as exc:  # pycute's refusal (an assertion on its own preconditions, or a raise): judged
            return {"raised": f"{type(exc).__name__}: {exc}"[:500]}
        return {"shape": _lists(result.shape), "stride": _lists(result.stride)}
