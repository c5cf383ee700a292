"""Target ``pycute.layouts``: CuTe's layout algebra as pycute (CUTLASS's pure-Python CuTe, in the
``nvidia-cutlass`` package) computes it, against the algebra's defining properties (``oracles.cute_properties``),
checked by brute force over each result's whole domain.

An operation pycute refuses (an assertion on its own preconditions, e.g. a shape that does not divide) is
``unsupported`` with pycute's words; every result it returns is judged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.cute import SHAPES_ANY, SHAPES_POW2, layout
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Availability, Target, Unsupported
from layoutfuzz.oracles import cute_properties as props
from layoutfuzz.oracles.cute import Layout, flatten
from layoutfuzz.oracles.linear_layout import LayoutError

OPS = ("composition", "coalesce", "complement", "left_inverse", "right_inverse", "logical_divide", "logical_product")


def _tuple(value: Any) -> Any:
    """A JSON shape or stride (lists) as CuTe's int tuple."""
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


def _layout(data: Mapping[str, Any]) -> Layout:
    return Layout(_tuple(data["shape"]), _tuple(data["stride"]))


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs that cannot occur: a broadcasting A where the operation takes an injective one; nesting needs 3 leaves."""
    pair = {a: x, b: y}
    if pair.get("A broadcasts (a stride 0)") == "yes":
        return pair.get("op") in ("complement", "left_inverse", "logical_divide", "logical_product")
    return pair.get("A nested") == "nested" and pair.get("leaves of A", 3) < 3


class PycuteLayouts(Target):
    name = "pycute.layouts"
    layer = "pycute (CUTLASS's Python CuTe)"
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

    def generate(self, source: Source) -> dict[str, Any]:
        op = source.choice(OPS)
        if op in ("coalesce", "right_inverse"):
            return {"op": op, "a": layout(source, SHAPES_ANY)}
        if op == "left_inverse":
            return {"op": op, "a": layout(source, SHAPES_ANY, injective=True)}
        a = layout(source, SHAPES_POW2, injective=op != "composition")
        size = _layout(a).size()
        if op == "complement":
            return {"op": op, "a": a, "m": _layout(a).cosize() * source.choice((1, 2, 3, 4))}
        b = layout(source, SHAPES_POW2, injective=True, max_size=size if op != "logical_product" else 64,
                   max_cosize=size if op != "logical_product" else None)
        return {"op": op, "a": a, "b": b}

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}")
        for key in ("a", "b"):
            if key in p:
                _layout(p[key])
        if p["op"] in ("composition", "logical_divide", "logical_product") and "b" not in p:
            raise ValueError(f"{p['op']} takes a layout b")
        if p["op"] == "complement" and not isinstance(p.get("m"), int):
            raise ValueError("complement takes an integer m")

    def family(self, case: Case) -> str:
        return case.params["op"]

    def parameter_space(self) -> Space:
        """pycute's layout-algebra functions, and the layouts they get (leaves, nesting, broadcast strides)."""
        later = "a rearrangement of the logical divide or product (the same function): not yet drawn"
        api = "pycute's layout algebra (pycute/layout.py)"

        def leaves(p: Mapping[str, Any]) -> int:
            return len(flatten(_tuple(p["a"]["shape"])))

        return Space((
            Parameter("op", (*OPS, "zipped_divide", "tiled_divide", "zipped_product", "tiled_product"), api, lambda p: p["op"],
                      {op: later for op in ("zipped_divide", "tiled_divide", "zipped_product", "tiled_product")}),
            Parameter("leaves of A", (1, 2, 3, 4), "CuTe: any rank (up to 4 drawn)", leaves),
            Parameter("A nested", ("flat", "nested"), "CuTe: hierarchical shapes", lambda p: "nested" if any(
                isinstance(m, list) for m in (p["a"]["shape"] if isinstance(p["a"]["shape"], list) else [])) else "flat"),
            Parameter("A broadcasts (a stride 0)", ("no", "yes"), "CuTe: strides >= 0",
                      lambda p: "yes" if 0 in flatten(_tuple(p["a"]["stride"])) else "no"),
            Parameter("A shapes", ("powers of two", "others"), "CuTe: any positive shape",
                      lambda p: "others" if any(n & (n - 1) for n in flatten(_tuple(p["a"]["shape"]))) else "powers of two"),
        ), _illegal)

    def expected(self, case: Case) -> Any:
        """The defining properties the result must have (judged in ``compare``, by brute force)."""
        return {"op": case.params["op"], "violations": []}

    def observed(self, case: Case) -> Any:
        """pycute's result, as its shape and stride."""
        import pycute

        p = case.params
        a = pycute.Layout(_tuple(p["a"]["shape"]), _tuple(p["a"]["stride"]))
        b = pycute.Layout(_tuple(p["b"]["shape"]), _tuple(p["b"]["stride"])) if "b" in p else None
        call = {
            "composition": lambda: pycute.composition(a, b), "coalesce": lambda: pycute.coalesce(a),
            "complement": lambda: pycute.complement(a, p["m"]), "left_inverse": lambda: pycute.left_inverse(a),
            "right_inverse": lambda: pycute.right_inverse(a), "logical_divide": lambda: pycute.logical_divide(a, b),
            "logical_product": lambda: pycute.logical_product(a, b),
        }[p["op"]]
        try:
            result = call()
        except AssertionError as exc:  # pycute's own precondition, not an answer
            raise Unsupported(f"pycute refuses {p['op']}: {exc or 'assertion'}") from None
        return {"shape": json.loads(json.dumps(result.shape)), "stride": json.loads(json.dumps(result.stride))}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        p = case.params
        a, b = _layout(p["a"]), (_layout(p["b"]) if "b" in p else None)
        try:
            r = _layout(observed)
        except (LayoutError, TypeError) as exc:  # shape and stride not congruent, a mode of size 0, ...
            return Comparison(False, 1, (str(exc),), f"{p['op']}: the result is not a layout", f"pycute returned {observed}")
        violations = {
            "composition": lambda: props.composition(a, b, r), "coalesce": lambda: props.coalesce(a, r),
            "complement": lambda: props.complement(a, p["m"], r), "left_inverse": lambda: props.left_inverse(a, r),
            "right_inverse": lambda: props.right_inverse(a, r), "logical_divide": lambda: props.logical_divide(a, b, r),
            "logical_product": lambda: props.logical_product(a, b, r),
        }[p["op"]]()
        if not violations:
            return Comparison(True)
        names = sorted({name for name, _ in violations})
        return Comparison(False, len(violations), tuple(f"{name}: {example}" for name, example in violations),
                          f"{p['op']}: {', '.join(names)}", f"pycute's {p['op']} returned {r}")
