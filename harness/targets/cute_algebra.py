"""CuTe's layout algebra as a system under test, whichever implementation computes it: the cases (random
hierarchical layouts and the operation to apply), their parameter space, and the judgement of a result by the
operation's defining properties over its whole domain (``oracles.cute_properties``). ``pycute.layouts`` and
``cute.layouts`` (CuTe DSL) differ only in ``evaluate``; they draw the same cases (one case model, ``case_model``),
so their tables compare the two systems side by side as well as each against the properties."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.cute import SHAPES_ANY, SHAPES_POW2, layout
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Target
from layoutfuzz.oracles import cute_properties as props
from layoutfuzz.oracles.cute import Layout, flatten
from layoutfuzz.oracles.linear_layout import LayoutError

OPS = ("composition", "coalesce", "complement", "left_inverse", "right_inverse", "logical_divide", "logical_product")
CASE_MODEL = "pycute.layouts"  # the case stream both CuTe implementations draw (pycute's, as it was first)


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


class CuteAlgebraTarget(Target):
    """The cases and the judgement every CuTe implementation shares; a subclass says how its system evaluates one
    operation (``evaluate``: the result's shape and stride as nested int tuples)."""

    case_model = CASE_MODEL
    system = "CuTe"  # the implementation, in reports

    def evaluate(self, op: str, a: tuple, b: tuple | None, m: int | None) -> tuple[Any, Any]:
        """(shape, stride) of ``op`` applied to layouts a and b (each (shape, stride)), or raises."""
        raise NotImplementedError

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
        """CuTe's layout-algebra functions, and the layouts they get (leaves, nesting, broadcast strides)."""
        later = "a rearrangement of the logical divide or product (the same function): not yet drawn"
        api = "CuTe's layout algebra (pycute/layout.py; cute/layout.hpp)"

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
        """The system's result, as its shape and stride."""
        p = case.params
        a = (_tuple(p["a"]["shape"]), _tuple(p["a"]["stride"]))
        b = (_tuple(p["b"]["shape"]), _tuple(p["b"]["stride"])) if "b" in p else None
        shape, stride = self.evaluate(p["op"], a, b, p.get("m"))
        return {"shape": _lists(shape), "stride": _lists(stride)}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        p = case.params
        a, b = _layout(p["a"]), (_layout(p["b"]) if "b" in p else None)
        try:
            r = _layout(observed)
        except (LayoutError, TypeError) as exc:  # shape and stride not congruent, a mode of size 0, ...
            return Comparison(False, 1, (str(exc),), f"{p['op']}: the result is not a layout", f"{self.system} returned {observed}")
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
                          f"{p['op']}: {', '.join(names)}", f"{self.system}'s {p['op']} returned {r}")


def _lists(value: Any) -> Any:
    """A nested int tuple as JSON lists (ints stay ints)."""
    return [_lists(v) for v in value] if isinstance(value, tuple) else int(value)
