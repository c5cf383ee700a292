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
from layoutfuzz.generators.cute import KINDS, SHAPES_ANY, layout, tiler
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Target
from layoutfuzz.oracles import cute_preconditions as pre
from layoutfuzz.oracles import cute_properties as props
from layoutfuzz.oracles.cute import Layout, Swizzle, flatten
from layoutfuzz.oracles.linear_layout import LayoutError

LAYOUT_OPS = ("composition", "coalesce", "complement", "left_inverse", "right_inverse", "logical_divide", "logical_product",
              "zipped_divide", "tiled_divide", "zipped_product", "tiled_product", "recast")
TILED_OPS = ("logical_divide", "logical_product", "zipped_divide", "tiled_divide", "zipped_product", "tiled_product")
INTEGER_TILER_OPS = ("logical_divide", "zipped_divide", "tiled_divide", "logical_product")  # their signatures take an int
# one implementation each: an unchecked precondition of any member is one root cause
OP_FAMILIES = {"logical_divide": "divide", "zipped_divide": "divide", "tiled_divide": "divide",
               "logical_product": "product", "zipped_product": "product", "tiled_product": "product",
               "composition_swizzled": "composition"}
# failed conditions under which CuTe leaves the answer to the implementation: A read past its domain is extended
# (along the last mode of coalesced A in pycute and CuTe C++, the last leaf in the DSL), a tiler that does not tile A
# pads the result; only that the answer is a layout is judged there
IMPLEMENTATION_DEFINED = ("past A's domain", "tiler does not tile A")
BITS = (8, 16, 32, 64)  # element widths recast_layout converts between
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
    b: tuple | int | None = None  # a layout (shape, stride), or an integer tiler n (the layout n:1)
    m: int | None = None
    swizzle: tuple[int, int, int] | None = None
    offset: int = 0
    bits: tuple[int, int] | None = None  # recast: (new element bits, old element bits)

    @classmethod
    def of(cls, p: Mapping[str, Any]) -> Call:
        b = p.get("b")
        if isinstance(b, Mapping):
            b = (_tuple(b["shape"]), _tuple(b["stride"]))
        swizzle = tuple(p["swizzle"]) if "swizzle" in p else None
        bits = tuple(p["bits"]) if "bits" in p else None
        return cls(p["op"], (_tuple(p["a"]["shape"]), _tuple(p["a"]["stride"])), b, p.get("m"), swizzle,
                   p.get("offset", 0), bits)

    @property
    def points(self) -> int:
        """How many offsets a function op's result is read at: size(B) for a composition, else size(A)."""
        return Layout(*(self.b if self.op == "composition_swizzled" else self.a)).size()


def _tiler(b: Any) -> Layout | None:
    """A case's B: a layout, an integer tiler n as the layout n:1, or None."""
    if b is None:
        return None
    return Layout(b, 1) if isinstance(b, int) else _layout(b)


def precondition(p: Mapping[str, Any]) -> str | None:
    """Why the case's operation is not defined on its inputs (``oracles.cute_preconditions``), or None where it is."""
    a, b = _layout(p["a"]), _tiler(p.get("b"))
    op = p["op"]
    if op in ("composition", "composition_swizzled"):
        return pre.composition(a, b)
    if op == "complement":
        return pre.complement(a, p["m"])
    if op == "left_inverse":
        return pre.left_inverse(a)
    if op.endswith("divide"):
        return pre.logical_divide(a, b)
    if op.endswith("product"):
        return pre.logical_product(a, b)
    if op == "recast":
        return pre.recast(a, *p["bits"])
    return None  # coalesce, right_inverse and a swizzle are defined on every layout


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs that cannot occur: nesting needs 3 leaves; a swizzle belongs to the composed-layout ops only; a tiler to
    the ops that take one; an operation defined on every layout has no failing precondition."""
    pair = {a: x, b: y}
    if any(name.startswith("swizzle ") for name in pair) and "op" in pair:
        return pair["op"] not in FUNCTION_OPS
    if pair.get("tiler") in ("layout", "integer") and "op" in pair:
        return pair["op"] not in (*TILED_OPS, "composition", "composition_swizzled") or (
            pair["tiler"] == "integer" and pair["op"] not in INTEGER_TILER_OPS)
    if pair.get("tiler") == "none" and "op" in pair:
        return pair["op"] in (*TILED_OPS, "composition", "composition_swizzled")
    if pair.get("precondition") == "fails" and "op" in pair:
        return pair["op"] in ("coalesce", "right_inverse", "swizzle")
    return pair.get("A nested") == "nested" and pair.get("leaves of A", 3) < 3


def _modes(p: Mapping[str, Any]) -> str:
    """How A's modes sit: nested (injective, each stride past the extent below it), interleaved (injective, not
    nested) or overlapping (not injective)."""
    a = _layout(p["a"])
    if pre.complement(a, 1) is None and all(d >= 0 for d in flatten(a.stride)):
        return "nested"
    return "interleaved" if props.injective(a) else "overlapping"


def _edge(p: Mapping[str, Any]) -> str:
    """Whether A sits on the domain's edges: every leaf of size 1 or the largest drawn, or every stride 0 or 1."""
    shape, stride = flatten(_tuple(p["a"]["shape"])), flatten(_tuple(p["a"]["stride"]))
    on_edge = all(n in (1, max(SHAPES_ANY)) for n in shape) or all(d in (0, 1) for d in stride)
    return "edge" if on_edge else "inside"


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
        """An operation and its inputs, from the whole domain CuTe accepts; a quarter of the cases on its edges."""
        edge = source.integer(0, 3) == 0
        op = source.choice(OPS)
        kind = source.choice(KINDS)
        if op in ("coalesce", "right_inverse"):
            return {"op": op, "a": layout(source, kind=kind, negative=True, edge=edge)}
        if op == "left_inverse":
            return {"op": op, "a": layout(source, kind=kind, edge=edge)}
        if op == "recast":
            new_bits, old_bits = source.choice(BITS), source.choice(BITS)
            return {"op": op, "a": layout(source, kind=kind, edge=edge, max_size=64), "bits": [new_bits, old_bits]}
        if op in FUNCTION_OPS:
            bits = source.integer(0, 3)  # Swizzle<B,M,S>: B mask bits, M kept bits, S >= B
            extra = {"swizzle": [bits, source.integer(0, 4), bits + source.integer(0, 3)],
                     "offset": source.choice((0, 0, 1, 3, 16, 96))}
            if op == "swizzle":
                return {"op": op, "a": layout(source, kind=kind, edge=edge), **extra}
        product = op.endswith("product")
        a = layout(source, kind=kind, edge=edge, max_size=32 if product else 256)
        if op == "complement":
            return {"op": op, "a": a, "m": max(1, _layout(a).cosize()) * source.choice((1, 2, 3, 4))}
        shapes = pre.coalesced_shapes(_layout(a))
        if op in INTEGER_TILER_OPS and source.integer(0, 3) == 0:  # an integer tiler: CuTe's n is the layout n:1
            b: Any = source.choice(SHAPES_ANY[1:8])
        elif product:
            b = layout(source, kind=source.choice(KINDS), max_size=8)
        else:
            b = tiler(source, shapes, max_size=_layout(a).size() if op != "composition" else 64)
        return {"op": op, "a": a, "b": b, **(extra if op in FUNCTION_OPS else {})}

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}")
        _layout(p["a"])
        if isinstance(p.get("b"), int):
            if p["b"] < 1 or p["op"] not in INTEGER_TILER_OPS:
                raise ValueError(f"an integer tiler is a positive int, taken by {', '.join(INTEGER_TILER_OPS)}")
        elif "b" in p:
            _layout(p["b"])
        if p["op"] == "recast" and (not isinstance(p.get("bits"), list) or any(b not in BITS for b in p["bits"])):
            raise ValueError(f"recast takes bits [new, old], each one of {BITS}")
        if p["op"] not in ("coalesce", "complement", "left_inverse", "right_inverse", "swizzle", "recast") and "b" not in p:
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
            Parameter("A strides", ("non-negative", "negative"), "CuTe: any integer stride",
                      lambda p: "negative" if any(d < 0 for d in flatten(_tuple(p["a"]["stride"]))) else "non-negative"),
            Parameter("A modes", ("nested", "interleaved", "overlapping"), "CuTe: any layout; complement, inverses, "
                      "divide and product are defined on nested ones", _modes),
            Parameter("A region", ("edge", "inside"), "the domain's edges: sizes 1 or the largest, strides 0 and 1",
                      _edge),
            Parameter("tiler", ("none", "layout", "integer"), "CuTe: a tiler is a layout or an integer n (n:1)",
                      lambda p: "none" if "b" not in p else "integer" if isinstance(p["b"], int) else "layout"),
            Parameter("precondition", ("holds", "fails"), "oracles.cute_preconditions: the operation's documented "
                      "precondition", lambda p: "fails" if precondition(p) else "holds"),
        ), _illegal)

    def expected(self, case: Case) -> Any:
        """The defining properties the result must have (judged in ``compare``, by brute force)."""
        return {"op": case.params["op"], "violations": []}

    def observed(self, case: Case) -> Any:
        """The system's result: its shape and stride, or for a function op its offsets."""
        return self.evaluate(Call.of(case.params))

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """A refusal is right only where the operation's precondition fails; an answer must have the operation's
        defining properties either way (where the precondition fails, a wrong one is a silent wrong answer on an
        unchecked precondition, bucketed apart from wrong answers on defined inputs)."""
        p = case.params
        a, b = _layout(p["a"]), _tiler(p.get("b"))
        unmet = precondition(p)
        if isinstance(observed, Mapping) and "raised" in observed:
            if unmet:
                return Comparison(True)  # a refusal where the operation is not defined: right
            kind = observed["raised"].split(":")[0]
            return Comparison(False, 1, (observed["raised"],), f"{p['op']}: spurious refusal ({self.system} raised {kind})",
                              f"{self.system}'s {p['op']} raised {observed['raised']} on an input it is defined on")
        condition = unmet.split(":")[0] if unmet else None  # which condition failed: a root cause of its own
        if condition in IMPLEMENTATION_DEFINED:
            return self._is_layout(p, observed)
        judged = self._judge(p, a, b, observed)
        if judged.ok or not unmet:
            return judged
        return Comparison(False, judged.mismatch_count, judged.mismatches,
                          f"{OP_FAMILIES.get(p['op'], p['op'])}: unchecked precondition ({condition})",
                          f"{judged.signature}: {judged.note} (its precondition fails: {unmet})")

    def _is_layout(self, p: Mapping[str, Any], observed: Any) -> Comparison:
        """Where the operation's result is the implementation's choice, only that it is a layout (or offsets)."""
        if p["op"] in FUNCTION_OPS and isinstance(observed, Mapping) and isinstance(observed.get("offsets"), list):
            return Comparison(True)
        try:
            _layout(observed)
        except (LayoutError, TypeError, KeyError) as exc:
            return Comparison(False, 1, (str(exc),), f"{p['op']}: the result is not a layout", f"{self.system} returned {observed}")
        return Comparison(True)

    def _judge(self, p: Mapping[str, Any], a: Layout, b: Layout | None, observed: Any) -> Comparison:
        """The answer against the operation's defining properties, by brute force."""
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
            "recast": lambda: props.recast(a, *p.get("bits", (0, 0)), r),
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
        swizzle XORs bits [M+S, M+S+B) into [M, M+B) of ``offset + A(i)`` (cute/swizzle.hpp), and R(i) == (A')(B(i))
        (past A's domain, either extension CuTe's implementations make: ``cute_properties.extensions``)."""
        swizzle, offset = Swizzle(*p["swizzle"]), p.get("offset", 0)
        if p["op"] == "swizzle":
            allowed = [{swizzle(offset + a(i))} for i in range(a.size())]
            name = "R(i) != Swizzle(offset + A(i))"
        else:
            allowed = [{swizzle(offset + x) for x in props.extensions(a, b(i)) if x is not None} for i in range(b.size())]
            name = "R(i) != (Swizzle o offset o A)(B(i))"
        got = observed.get("offsets") if isinstance(observed, Mapping) else None
        if not isinstance(got, list) or len(got) != len(allowed):
            return Comparison(False, 1, (f"{len(got) if isinstance(got, list) else got!r} offsets for {len(allowed)}",),
                              f"{p['op']}: another domain", f"{self.system} returned {str(observed)[:200]}")
        wrong = [f"i={i}: R(i)={g}, expected {sorted(ok)}" for i, (g, ok) in enumerate(zip(got, allowed)) if g not in ok]
        if not wrong:
            return Comparison(True)
        return Comparison(False, len(wrong), tuple(f"{name}: {w}" for w in wrong[:props.SHOWN]), f"{p['op']}: {name}",
                          f"{self.system}'s {p['op']} differs at {len(wrong)} of {len(allowed)} indices")


def _second_mode_packed(r: Layout) -> Layout:
    """(R0, R1, ..., Rn) as (R0, (R1, ..., Rn)): a tiled divide or product as the zipped one it unpacks."""
    if len(r) < 2 or isinstance(r.shape, int):
        raise LayoutError(f"a tiled result has a tile mode and at least one rest mode, got {r}")
    return Layout((r.shape[0], tuple(r.shape[1:])), (r.stride[0], tuple(r.stride[1:])))


def _lists(value: Any) -> Any:
    """A nested int tuple as JSON lists (ints stay ints)."""
    return [_lists(v) for v in value] if isinstance(value, tuple) else int(value)
