"""CuTe's layout algebra as a system under test, whichever implementation computes it: the cases (random
hierarchical layouts and the operation to apply), their parameter space, and the judgement of a result by the
operation's defining properties over its whole domain (``oracles.cute_properties``). ``pycute.layouts`` and
``cute.layouts`` (CuTe DSL) differ only in ``evaluate``; they draw the same cases (one case model, ``case_model``),
so their tables compare the two systems side by side as well as each against the properties."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.cute import SHAPES_ANY, SHAPES_POW2, layout
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Target
from layoutfuzz.oracles import cute_properties as props
from layoutfuzz.oracles.cute import Layout, Swizzle, flatten
from layoutfuzz.oracles.linear_layout import LayoutError

LAYOUT_OPS = ("composition", "coalesce", "complement", "left_inverse", "right_inverse", "logical_divide", "logical_product",
              "zipped_divide", "tiled_divide", "zipped_product", "tiled_product")
FUNCTION_OPS = ("swizzle", "composition_swizzled")  # a composed layout (swizzle o offset o layout): read as its offsets
OPS = LAYOUT_OPS + FUNCTION_OPS
CASE_MODEL = "pycute.layouts"  # the case stream both CuTe implementations draw (pycute's, as it was first)


def _tuple(value: Any) -> Any:
    """A JSON shape or stride (lists) as CuTe's int tuple."""
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


def _layout(data: Mapping[str, Any]) -> Layout:
    return Layout(_tuple(data["shape"]), _tuple(data["stride"]))


@dataclass(frozen=True)
class Call:
    """One operation as a system evaluates it: layouts as (shape, stride) int tuples, a swizzle as (B, M, S)."""

    op: str
    a: tuple
    b: tuple | None = None
    m: int | None = None
    swizzle: tuple[int, int, int] | None = None
    offset: int = 0

    @classmethod
    def of(cls, p: Mapping[str, Any]) -> Call:
        b = (_tuple(p["b"]["shape"]), _tuple(p["b"]["stride"])) if "b" in p else None
        swizzle = tuple(p["swizzle"]) if "swizzle" in p else None
        return cls(p["op"], (_tuple(p["a"]["shape"]), _tuple(p["a"]["stride"])), b, p.get("m"), swizzle, p.get("offset", 0))

    @property
    def points(self) -> int:
        """How many offsets a function op's result is read at: size(B) for a composition, else size(A)."""
        return Layout(*(self.b if self.op == "composition_swizzled" else self.a)).size()


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs that cannot occur: a broadcasting A where the operation takes an injective one; nesting needs 3 leaves;
    a swizzle belongs to the composed-layout ops only."""
    pair = {a: x, b: y}
    if any(name.startswith("swizzle ") for name in pair) and "op" in pair:
        return pair["op"] not in FUNCTION_OPS
    if pair.get("A broadcasts (a stride 0)") == "yes":
        return pair.get("op") not in ("coalesce", "right_inverse", "composition", "swizzle", None)
    return pair.get("A nested") == "nested" and pair.get("leaves of A", 3) < 3


class CuteAlgebraTarget(Target):
    """The cases and the judgement every CuTe implementation shares; a subclass says how its system evaluates one
    operation (``evaluate``: the result's shape and stride as nested int tuples)."""

    case_model = CASE_MODEL
    system = "CuTe"  # the implementation, in reports

    def evaluate(self, call: Call) -> dict[str, Any]:
        """The system's answer: {"shape", "stride"} of the resulting layout (nested int tuples), or {"offsets"} for a
        function op (the result at 0 .. call.points - 1); raises where the system raises."""
        raise NotImplementedError

    def generate(self, source: Source) -> dict[str, Any]:
        op = source.choice(OPS)
        if op in ("coalesce", "right_inverse"):
            return {"op": op, "a": layout(source, SHAPES_ANY)}
        if op == "left_inverse":
            return {"op": op, "a": layout(source, SHAPES_ANY, injective=True)}
        if op in FUNCTION_OPS:
            bits = source.integer(0, 3)  # Swizzle<B,M,S>: B mask bits, M kept bits, S >= B
            swizzle = [bits, source.integer(0, 4), bits + source.integer(0, 3)]
            extra = {"swizzle": swizzle, "offset": source.choice((0, 0, 1, 3, 16, 96))}
            if op == "swizzle":
                return {"op": op, "a": layout(source, SHAPES_ANY), **extra}
        a = layout(source, SHAPES_POW2, injective=op != "composition")
        size = _layout(a).size()
        if op == "complement":
            return {"op": op, "a": a, "m": _layout(a).cosize() * source.choice((1, 2, 3, 4))}
        product = op.endswith("product")
        b = layout(source, SHAPES_POW2, injective=True, max_size=64 if product else size, max_cosize=None if product else size)
        return {"op": op, "a": a, "b": b, **(extra if op in FUNCTION_OPS else {})}

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}")
        for key in ("a", "b"):
            if key in p:
                _layout(p[key])
        if p["op"] not in ("coalesce", "complement", "left_inverse", "right_inverse", "swizzle") and "b" not in p:
            raise ValueError(f"{p['op']} takes a layout b")
        if p["op"] in FUNCTION_OPS:
            Swizzle(*p["swizzle"])
            if not isinstance(p.get("offset", 0), int) or p.get("offset", 0) < 0:
                raise ValueError("offset is a non-negative int")
        if p["op"] == "complement" and not isinstance(p.get("m"), int):
            raise ValueError("complement takes an integer m")

    def family(self, case: Case) -> str:
        return case.params["op"]

    def parameter_space(self) -> Space:
        """CuTe's layout-algebra functions, and the layouts they get (leaves, nesting, broadcast strides)."""
        api = "CuTe's layout algebra (pycute/layout.py; cute/layout.hpp; cute/swizzle.hpp)"

        def leaves(p: Mapping[str, Any]) -> int:
            return len(flatten(_tuple(p["a"]["shape"])))

        return Space((
            Parameter("op", OPS, api, lambda p: p["op"]),
            Parameter("swizzle B (mask bits)", (0, 1, 2, 3), "CuTe Swizzle<B,M,S>: the GMMA and TMA swizzles use B <= 3",
                      lambda p: p["swizzle"][0] if "swizzle" in p else None),
            Parameter("swizzle S - B", (0, 1, 2, 3), "CuTe Swizzle<B,M,S>: |S| >= B (negative S not drawn)",
                      lambda p: p["swizzle"][2] - p["swizzle"][0] if "swizzle" in p else None),
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
        """The system's result: its shape and stride, or for a function op its offsets."""
        return self.evaluate(Call.of(case.params))

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        p = case.params
        a, b = _layout(p["a"]), (_layout(p["b"]) if "b" in p else None)
        if isinstance(observed, Mapping) and "raised" in observed:  # the system raised on a valid input
            return Comparison(False, 1, (observed["raised"],), f"{p['op']}: {self.system} raised {observed['raised'].split(':')[0]}",
                              f"{self.system}'s {p['op']} raised {observed['raised']}")
        if p["op"] in FUNCTION_OPS:
            return self._compare_function(p, a, b, observed)
        try:
            r = _layout(observed)
        except (LayoutError, TypeError, KeyError) as exc:  # shape and stride not congruent, a mode of size 0, ...
            return Comparison(False, 1, (str(exc),), f"{p['op']}: the result is not a layout", f"{self.system} returned {observed}")
        violations = {
            "composition": lambda: props.composition(a, b, r), "coalesce": lambda: props.coalesce(a, r),
            "complement": lambda: props.complement(a, p["m"], r), "left_inverse": lambda: props.left_inverse(a, r),
            "right_inverse": lambda: props.right_inverse(a, r), "logical_divide": lambda: props.logical_divide(a, b, r),
            "logical_product": lambda: props.logical_product(a, b, r),
            # with a layout B, zipped_* is logical_* itself (hier_unzip's base case); tiled_* unpacks its second mode
            "zipped_divide": lambda: props.logical_divide(a, b, r), "zipped_product": lambda: props.logical_product(a, b, r),
            "tiled_divide": lambda: props.logical_divide(a, b, _second_mode_packed(r)),
            "tiled_product": lambda: props.logical_product(a, b, _second_mode_packed(r)),
        }[p["op"]]
        try:
            violations = violations()
        except LayoutError as exc:  # a tiled result without a rest mode
            return Comparison(False, 1, (str(exc),), f"{p['op']}: the result has another rank", f"{self.system} returned {r}")
        if not violations:
            return Comparison(True)
        names = sorted({name for name, _ in violations})
        return Comparison(False, len(violations), tuple(f"{name}: {example}" for name, example in violations),
                          f"{p['op']}: {', '.join(names)}", f"{self.system}'s {p['op']} returned {r}")


    def _compare_function(self, p: Mapping[str, Any], a: Layout, b: Layout | None, observed: Any) -> Comparison:
        """A composed layout ``Swizzle<B,M,S> o offset o A`` (and its composition with B) by CuTe's definitions: the
        swizzle XORs bits [M+S, M+S+B) into [M, M+B) of ``offset + A(i)`` (cute/swizzle.hpp), and R(i) == (A')(B(i))."""
        swizzle, offset = Swizzle(*p["swizzle"]), p.get("offset", 0)
        if p["op"] == "swizzle":
            want = [swizzle(offset + a(i)) for i in range(a.size())]
            name = "R(i) != Swizzle(offset + A(i))"
        else:
            want = [swizzle(offset + a(b(i))) for i in range(b.size())]
            name = "R(i) != (Swizzle o offset o A)(B(i))"
        got = observed.get("offsets") if isinstance(observed, Mapping) else None
        if not isinstance(got, list) or len(got) != len(want):
            return Comparison(False, 1, (f"{len(got) if isinstance(got, list) else got!r} offsets for {len(want)}",),
                              f"{p['op']}: another domain", f"{self.system} returned {str(observed)[:200]}")
        wrong = [f"i={i}: R(i)={g}, expected {w}" for i, (g, w) in enumerate(zip(got, want)) if g != w]
        if not wrong:
            return Comparison(True)
        return Comparison(False, len(wrong), tuple(f"{name}: {w}" for w in wrong[:props.SHOWN]), f"{p['op']}: {name}",
                          f"{self.system}'s {p['op']} differs at {len(wrong)} of {len(want)} indices")


def _second_mode_packed(r: Layout) -> Layout:
    """(R0, R1, ..., Rn) as (R0, (R1, ..., Rn)): a tiled divide or product as the zipped one it unpacks."""
    if len(r) < 2 or isinstance(r.shape, int):
        raise LayoutError(f"a tiled result has a tile mode and at least one rest mode, got {r}")
    return Layout((r.shape[0], tuple(r.shape[1:])), (r.stride[0], tuple(r.stride[1:])))


def _lists(value: Any) -> Any:
    """A nested int tuple as JSON lists (ints stay ints)."""
    return [_lists(v) for v in value] if isinstance(value, tuple) else int(value)
