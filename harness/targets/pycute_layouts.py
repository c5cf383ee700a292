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
from layoutfuzz.harness.targets.cute_algebra import OPS, ByMode, Call, CuteAlgebraTarget, _lists

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

        if call.op in NOT_IN_PYCUTE:
            raise Unsupported(f"pycute has no {call.op} ({NOT_IN_PYCUTE[call.op]})")
        if call.op == "make_ordered_layout":
            raise Unsupported("pycute has no make_ordered_layout")
        la = pycute.Layout(*call.a)
        lb = _tiler(pycute, call.b)
        if call.op == "swizzle":
            composed = pycute.ComposedLayout(pycute.Swizzle(*call.swizzle), call.offset, la)
            try:
                return {"offsets": [int(composed(i)) for i in range(call.points)]}
            except RecursionError as exc:  # pycute's own recursion on a valid swizzle: its answer, not the harness's
                return {"raised": f"RecursionError: {exc}"}
        ops = {
            "composition": pycute.composition, "logical_divide": pycute.logical_divide, "logical_product": pycute.logical_product,
            "zipped_divide": pycute.zipped_divide, "tiled_divide": pycute.tiled_divide,
            "zipped_product": pycute.zipped_product, "tiled_product": pycute.tiled_product,
        }
        call_one = {
            "coalesce": lambda: pycute.coalesce(la), "complement": lambda: pycute.complement(la, call.m),
            "left_inverse": lambda: pycute.left_inverse(la), "right_inverse": lambda: pycute.right_inverse(la),
            "filter": lambda: pycute.filter(la),
            "flatten": lambda: pycute.Layout(pycute.flatten(la.shape), pycute.flatten(la.stride)),
            "coalesce_profile": lambda: pycute.coalesce(la, call.get("profile")),
            "slice": lambda: pycute.slice_and_offset(call.get("coord"), la),
        }.get(call.op) or (lambda: ops[call.op](la, lb))
        try:
            result = call_one()
        except Exception as exc:  # pycute's refusal (an assertion on its own preconditions, or a raise): judged
            return {"raised": f"{type(exc).__name__}: {exc}"[:500]}
        if call.op == "slice":
            layout, offset = result
            return {"shape": _lists(layout.shape), "stride": _lists(layout.stride), "offset": int(offset)}
        return {"shape": _lists(result.shape), "stride": _lists(result.stride)}

    def reproducer_script(self, case: Any) -> str | None:
        """A script that needs only pycute (``layoutfuzz export``)."""
        return reproducer(case)


# what pycute lacks (CuTe C++ and the DSL have these)
NOT_IN_PYCUTE = {
    "recast": "upcast and downcast are CuTe C++ and CuTe DSL only",
    "composition_swizzled": "composition(ComposedLayout, Layout) reads A.shape, which a ComposedLayout lacks",
    "slice_swizzled": "a ComposedLayout called with None adds an offset to a Layout",
    **{op: "CuTe C++ and CuTe DSL only" for op in (
        "flat_divide", "flat_product", "blocked_product", "raked_product", "make_layout_tv", "dice", "select",
        "group_modes", "filter_zeros", "filter_zeros_profile", "append", "prepend", "nullspace", "make_layout_like",
        "max_common_layout", "max_common_vector")},
}


def _tiler(pycute: Any, b: Any) -> Any:
    """B as pycute takes it: an int, a Layout, or by mode a tuple of ints, Layouts and None."""
    if isinstance(b, ByMode):
        return tuple(e if e is None or isinstance(e, int) else pycute.Layout(*e) for e in b.entries)
    return b if isinstance(b, int) or b is None else pycute.Layout(*b)


_PYCUTE_CALLS = {
    "swizzle": "pycute.ComposedLayout(pycute.Swizzle(*SW), OFFSET, L(A))",
    "complement": "pycute.complement(L(A), M)",
    "left_inverse": "pycute.left_inverse(L(A))",
}


def pycute_child(case: Any) -> str:
    """The child process of a pycute reproducer: the case's call, its answer printed as ``ANSWER <json>``."""
    from layoutfuzz.harness.targets.cute_scripts import _constants

    p = case.params
    call = _PYCUTE_CALLS.get(p["op"], f"pycute.{p['op']}(L(A), T(B))")
    read = ('{"offsets": [int(r(i)) for i in range(pycute.size(A[0]))]}' if p["op"] == "swizzle" else
            '{"shape": r.shape, "stride": r.stride}')
    return f'''import json
import pycute

{_constants(p)}

def L(t):
    return pycute.Layout(*t)


def T(b):
    return b if isinstance(b, int) else L(b)


try:
    r = {call}
    out = {read}
except (Exception, RecursionError) as exc:
    out = {{"raised": f"{{type(exc).__name__}}: {{exc}}"[:500]}}
print("ANSWER", json.dumps(out))
'''


def reproducer(case: Any) -> str | None:
    """A script that needs only pycute (``cute_scripts.algebra_script``), or None for an operation it does not
    check."""
    from layoutfuzz.harness.targets.cute_scripts import algebra_script

    if case.params["op"] in NOT_IN_PYCUTE:
        return None
    version = '"nvidia-cutlass (pycute)", __import__("importlib.metadata").metadata.version("nvidia-cutlass")'
    return algebra_script(case, "pycute", version, pycute_child(case))
