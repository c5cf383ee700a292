"""Target ``pycute.layouts``: CuTe's layout algebra as pycute (CUTLASS's pure-Python CuTe, in the
``nvidia-cutlass`` package) computes it, against the algebra's defining properties (``oracles.cute_properties``),
checked by brute force over each result's whole domain (the cases and the judgement: ``cute_algebra``).

An operation pycute refuses (an assertion on its own preconditions, e.g. a shape that does not divide) is
``unsupported`` with pycute's words; every result it returns is judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layoutfuzz.harness.target import Availability, Unsupported
from layoutfuzz.harness.targets.cute_algebra import OPS, CuteAlgebraTarget

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
        from importlib.metadata import PackageNotFoundError, version

        try:
            return {"nvidia-cutlass": version("nvidia-cutlass")}
        except PackageNotFoundError:
            return {}

    def evaluate(self, op: str, a: tuple, b: tuple | None, m: int | None) -> tuple[Any, Any]:
        import pycute

        la = pycute.Layout(*a)
        lb = pycute.Layout(*b) if b is not None else None
        call = {
            "composition": lambda: pycute.composition(la, lb), "coalesce": lambda: pycute.coalesce(la),
            "complement": lambda: pycute.complement(la, m), "left_inverse": lambda: pycute.left_inverse(la),
            "right_inverse": lambda: pycute.right_inverse(la), "logical_divide": lambda: pycute.logical_divide(la, lb),
            "logical_product": lambda: pycute.logical_product(la, lb),
        }[op]
        try:
            result = call()
        except AssertionError as exc:  # pycute's own precondition, not an answer
            raise Unsupported(f"pycute refuses {op}: {exc or 'assertion'}") from None
        return result.shape, result.stride
