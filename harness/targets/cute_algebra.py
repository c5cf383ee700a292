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
from layoutfuzz.generators.cute import (
    KINDS,
    SHAPES_ANY,
    by_mode,
    compact,
    coordinate,
    layout,
    order,
    profile,
    restride,
    tiler,
    zeros_profile,
)
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Target
from layoutfuzz.oracles import cute_preconditions as pre
from layoutfuzz.oracles import cute_properties as props
from layoutfuzz.oracles.cute import Layout, Swizzle, flatten
from layoutfuzz.oracles.cute_preconditions import from_modes
from layoutfuzz.oracles.linear_layout import LayoutError

LAYOUT_OPS = ("composition", "coalesce", "complement", "left_inverse", "right_inverse", "logical_divide", "logical_product",
              "zipped_divide", "tiled_divide", "zipped_product", "tiled_product", "recast")
# the rest of the public layout API: rank-sensitive and flat products and divides, the TV layout, the mode operations
# (read off the coordinates), the constructors and the common-layout queries
MORE_TILED_OPS = ("flat_divide", "flat_product", "blocked_product", "raked_product")
MODE_OPS = ("slice", "dice", "select", "group_modes", "flatten", "filter", "filter_zeros", "filter_zeros_profile",
            "append", "prepend", "coalesce_profile", "nullspace", "make_layout_like")
MORE_OPS = MORE_TILED_OPS + MODE_OPS + ("make_layout_tv", "max_common_layout", "max_common_vector", "make_ordered_layout")
TILED_OPS = ("logical_divide", "logical_product", "zipped_divide", "tiled_divide", "zipped_product", "tiled_product",
             *MORE_TILED_OPS)
INTEGER_TILER_OPS = ("logical_divide", "zipped_divide", "tiled_divide", "logical_product", "flat_divide")  # take an int
# a tuple tiler, one entry per mode of A (CuTe's "by-mode" tilers; layout.hpp transform_layout over the tiler)
BY_MODE_OPS = ("composition", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
               "zipped_product", "tiled_product", "composition_swizzled")
# one implementation each: an unchecked precondition of any member is one root cause
OP_FAMILIES = {"logical_divide": "divide", "zipped_divide": "divide", "tiled_divide": "divide", "flat_divide": "divide",
               "logical_product": "product", "zipped_product": "product", "tiled_product": "product",
               "flat_product": "product", "blocked_product": "product", "raked_product": "product",
               "composition_swizzled": "composition"}
# failed conditions under which CuTe leaves the answer to the implementation: A read past its domain is extended
# (along the last mode of coalesced A in pycute and CuTe C++, the last leaf in the DSL), a tiler that does not tile A
# pads the result; only that the answer is a layout is judged there
# (and a None entry of a zipped, tiled or flat tiler: C++'s zip2_by reads that mode's own two modes as its (tile,
# rest) pair, pycute's hier_unzip gives (1:0, A_i), the DSL mostly refuses)
IMPLEMENTATION_DEFINED = ("past A's domain", "tiler does not tile A", "None entry")
BITS = (8, 16, 32, 64)  # element widths recast_layout converts between
FUNCTION_OPS = ("swizzle", "composition_swizzled", "slice_swizzled")  # a composed layout: read as its offsets
OPS = LAYOUT_OPS + FUNCTION_OPS + MORE_OPS
CASE_MODEL = "pycute.layouts"  # the case stream both CuTe implementations draw (pycute's, as it was first)


def _tuple(value: Any) -> Any:
    """A JSON shape or stride (lists) as CuTe's int tuple."""
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


def _layout(data: Mapping[str, Any]) -> Layout:
    return Layout(_tuple(data["shape"]), _tuple(data["stride"]))


@dataclass(frozen=True)
class ByMode:
    """A by-mode tiler: one entry per leading mode of A, each None, an integer n or a layout (shape, stride)."""

    entries: tuple


@dataclass(frozen=True)
class Call:
    """One operation as a system evaluates it: layouts as (shape, stride) int tuples, a swizzle as (B, M, S); the
    arguments of the rest of the API (a coordinate, a profile, modes, ...) by name in ``extra``."""

    op: str
    a: tuple
    b: tuple | int | ByMode | None = None  # a layout (shape, stride), an integer tiler n (the layout n:1), by mode
    m: int | None = None
    swizzle: tuple[int, int, int] | None = None
    offset: int = 0
    bits: tuple[int, int] | None = None  # recast: (new element bits, old element bits)
    extra: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, p: Mapping[str, Any]) -> Call:
        swizzle = tuple(p["swizzle"]) if "swizzle" in p else None
        bits = tuple(p["bits"]) if "bits" in p else None
        a = (_tuple(p["a"]["shape"]), _tuple(p["a"]["stride"])) if "a" in p else ((), ())
        extra = tuple((k, _argument(k, p[k])) for k in EXTRA_ARGS if k in p)
        return cls(p["op"], a, _call_tiler(p.get("b")), p.get("m"), swizzle, p.get("offset", 0), bits, extra)

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.extra).get(name, default)

    @property
    def points(self) -> int:
        """How many offsets a function op's result is read at: its domain's size."""
        if self.op == "slice_swizzled":
            return props._prod(m.size() for m in props._kept(*self.a, self.get("coord"), True)[0])
        if self.op == "composition_swizzled" and isinstance(self.b, ByMode):
            modes = props.top_modes(Layout(*self.a))
            entries = list(self.b.entries) + [None] * (len(modes) - len(self.b.entries))
            return props._prod(m.size() if e is None else _entry(e).size() for m, e in zip(modes, entries))
        return Layout(*(self.b if self.op == "composition_swizzled" else self.a)).size()


EXTRA_ARGS = ("coord", "modes", "begin", "end", "elem", "up_to_rank", "profile", "order", "shape")


def _argument(name: str, value: Any) -> Any:
    """A JSON argument as the systems take it: layouts as (shape, stride), coordinates and profiles as tuples."""
    if name == "elem":
        return (_tuple(value["shape"]), _tuple(value["stride"]))
    if name == "modes":
        return list(value)
    return _tuple(value)


def _call_tiler(b: Any) -> Any:
    if isinstance(b, Mapping):
        return (_tuple(b["shape"]), _tuple(b["stride"]))
    if isinstance(b, list):
        return ByMode(tuple(e if e is None or isinstance(e, int) else (_tuple(e["shape"]), _tuple(e["stride"]))
                            for e in b))
    return b


def _entry(e: Any) -> Layout:
    """A by-mode entry (an integer n or (shape, stride)) as a layout."""
    return Layout(e, 1) if isinstance(e, int) else Layout(*e)


def _tiler(b: Any) -> Layout | None:
    """A case's B: a layout, an integer tiler n as the layout n:1, or None (a by-mode tiler: ``_entries``)."""
    if b is None or isinstance(b, list):
        return None
    return Layout(b, 1) if isinstance(b, int) else _layout(b)


def _entries(b: list) -> tuple[Layout | None, ...]:
    """A by-mode tiler's entries as layouts (n as n:1), None kept."""
    return tuple(None if e is None else Layout(e, 1) if isinstance(e, int) else _layout(e) for e in b)


def precondition(p: Mapping[str, Any]) -> str | None:
    """Why the case's operation is not defined on its inputs (``oracles.cute_preconditions``), or None where it is."""
    op = p["op"]
    if op == "make_ordered_layout":
        return None
    a, b = _layout(p["a"]), _tiler(p.get("b"))
    if isinstance(p.get("b"), list):
        if op in ("composition", "composition_swizzled"):
            return _first_reason(pre.composition(m, t) for m, t in zip(props.top_modes(a), _entries(p["b"]))
                                 if t is not None)
        reason = pre.by_mode(a, list(_entries(p["b"])), op.endswith("product"))
        if reason is None and None in p["b"] and not op.startswith("logical"):
            return ("None entry: zip2_by (layout.hpp) reads each mode of a zipped, tiled or flat result as a (tile, rest)"
                    " pair, which a mode left by None is not")
        return reason
    simple = {"composition": lambda: pre.composition(a, b), "composition_swizzled": lambda: pre.composition(a, b),
              "complement": lambda: pre.complement(a, p["m"]), "left_inverse": lambda: pre.left_inverse(a),
              "recast": lambda: pre.recast(a, *p["bits"]), "make_layout_tv": lambda: pre.layout_tv(a, b),
              "select": lambda: pre.select(a, p["modes"]), "group_modes": lambda: pre.group_modes(a, p["begin"], p["end"]),
              "append": lambda: pre.extend(a, p["up_to_rank"]), "prepend": lambda: pre.extend(a, p["up_to_rank"])}
    if op in simple:
        return simple[op]()
    if op.endswith("divide"):
        return pre.logical_divide(a, b)
    if op.endswith("product"):
        return pre.logical_product(a, b)
    return None  # coalesce, right_inverse, a swizzle and the mode operations are defined on every layout


def _first_reason(reasons) -> str | None:
    return next((r for r in reasons if r), None)


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs that cannot occur: nesting needs 3 leaves; a swizzle belongs to the composed-layout ops only; a tiler to
    the ops that take one; an operation defined on every layout has no failing precondition."""
    pair = {a: x, b: y}
    if any(name.startswith("swizzle ") for name in pair) and "op" in pair:
        return pair["op"] not in FUNCTION_OPS
    if pair.get("tiler") in ("layout", "integer", "by-mode") and "op" in pair:
        return pair["op"] not in LAYOUT_B_OPS or (pair["tiler"] == "integer" and pair["op"] not in INTEGER_TILER_OPS) or (
            pair["tiler"] == "by-mode" and pair["op"] not in BY_MODE_OPS)
    if pair.get("tiler") == "none" and "op" in pair:
        return pair["op"] in LAYOUT_B_OPS
    if pair.get("precondition") == "fails" and "op" in pair:
        return pair["op"] not in PRECONDITION_OPS
    if pair.get("op") == "make_ordered_layout" and any(name.startswith("A ") or name.endswith(" A") for name in pair):
        return True  # it takes a shape and an order, no layout A
    return pair.get("A nested") == "nested" and pair.get("leaves of A", 3) < 3


# the operations that take a second layout B (a tiler, thr and val, a and b), and those with a precondition
LAYOUT_B_OPS = (*TILED_OPS, "composition", "composition_swizzled", "make_layout_tv", "max_common_layout",
                "max_common_vector")
PRECONDITION_OPS = (*TILED_OPS, "composition", "composition_swizzled", "complement", "left_inverse", "recast",
                    "make_layout_tv", "select", "group_modes", "append", "prepend")


def _on_a(read):
    """A parameter of A, None for a case without one (make_ordered_layout)."""
    return lambda p: read(p) if "a" in p else None


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


def _top(a: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """A JSON layout's top-level modes as (shape, stride)."""
    shape, stride = a["shape"], a["stride"]
    return list(zip(shape, stride)) if isinstance(shape, (list, tuple)) else [(shape, stride)]


def _weakly_congruent(profile: Any, shape: Any) -> bool:
    """An integer covers any mode; a tuple needs a tuple of the same rank, mode by mode."""
    if isinstance(profile, int):
        return True
    return isinstance(shape, tuple) and len(shape) == len(profile) and all(
        _weakly_congruent(x, y) for x, y in zip(profile, shape))


def _coord_leaves(c: Any) -> list:
    return [x for y in c for x in _coord_leaves(y)] if isinstance(c, (list, tuple)) else [c]


def _swizzle(source: Source) -> dict[str, Any]:
    """Swizzle<B,M,S> (B mask bits, M kept bits, S >= B) and an offset."""
    bits = source.integer(0, 3)
    return {"swizzle": [bits, source.integer(0, 4), bits + source.integer(0, 3)],
            "offset": source.choice((0, 0, 1, 3, 16, 96))}


def _generate_more(source: Source, op: str, kind: str, edge: bool) -> dict[str, Any]:
    """The rest of the API's cases: the mode operations on any layout (rank up to 5, negative strides), the TV layout
    of compact thread and value layouts (and of others, three in ten), two layouts of one shape for the common-layout
    queries, a shape and an order."""
    if op == "make_ordered_layout":
        shape = layout(source, edge=edge, most=5)["shape"]
        return {"op": op, "shape": shape, "order": order(source, shape)}
    if op == "make_layout_tv":
        def one(max_size: int) -> dict:
            return compact(source, max_size=max_size, edge=edge) if source.integer(0, 9) >= 3 else layout(
                source, kind=kind, max_size=max_size)
        return {"op": op, "a": one(32), "b": one(8)}
    a = layout(source, kind=kind, negative=True, edge=edge, most=5, max_size=128)
    rank = len(_top(a))
    if op in ("slice", "dice"):
        return {"op": op, "a": a, "coord": coordinate(source, a["shape"])}
    if op == "slice_swizzled":  # a coordinate with a None at least (a rank-0 composed layout cannot be read at 0)
        a = layout(source, kind=kind, edge=edge, most=5, max_size=128)
        coord = coordinate(source, a["shape"])
        return {"op": op, "a": a, "coord": coord if None in _coord_leaves(coord) else None, **_swizzle(source)}
    if op == "select":
        return {"op": op, "a": a, "modes": [source.integer(0, rank) for _ in range(source.integer(1, rank + 1))]}
    if op == "group_modes":
        end = source.choice((None, source.integer(-rank, rank + 1)))
        return {"op": op, "a": a, "begin": source.integer(-rank, rank - 1), "end": end}
    if op in ("append", "prepend"):
        up_to = source.choice((None, rank - 1, rank, rank + 1, rank + 2))
        return {"op": op, "a": a, "elem": layout(source, max_size=8), "up_to_rank": up_to}
    if op == "coalesce_profile":
        return {"op": op, "a": a, "profile": profile(source, a["shape"])}
    if op == "filter_zeros_profile":
        return {"op": op, "a": a, "profile": zeros_profile(source, a["shape"])}
    if op in ("max_common_layout", "max_common_vector"):
        return {"op": op, "a": a, "b": {"shape": a["shape"], "stride": restride(source, a)}}
    return {"op": op, "a": a}  # flatten, filter, filter_zeros, nullspace, make_layout_like


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
        if op in MODE_OPS or op in ("make_layout_tv", "max_common_layout", "max_common_vector", "make_ordered_layout",
                                    "slice_swizzled"):
            return _generate_more(source, op, kind, edge)
        if op in ("coalesce", "right_inverse"):
            return {"op": op, "a": layout(source, kind=kind, negative=True, edge=edge)}
        if op == "left_inverse":
            return {"op": op, "a": layout(source, kind=kind, edge=edge)}
        if op == "recast":
            new_bits, old_bits = source.choice(BITS), source.choice(BITS)
            return {"op": op, "a": layout(source, kind=kind, edge=edge, max_size=64), "bits": [new_bits, old_bits]}
        if op in FUNCTION_OPS:
            extra = _swizzle(source)
            if op == "swizzle":
                return {"op": op, "a": layout(source, kind=kind, edge=edge), **extra}
        product = op.endswith("product")
        a = layout(source, kind=kind, edge=edge, max_size=32 if product else 256)
        if op == "complement":
            return {"op": op, "a": a, "m": max(1, _layout(a).cosize()) * source.choice((1, 2, 3, 4))}
        shapes = pre.coalesced_shapes(_layout(a))
        if op in BY_MODE_OPS and source.integer(0, 3) == 0:  # a tuple tiler, one entry per leading mode of A
            b: Any = by_mode(source, _top(a), product)
        elif op in INTEGER_TILER_OPS and source.integer(0, 3) == 0:  # an integer tiler: CuTe's n is the layout n:1
            b = source.choice(SHAPES_ANY[1:8])
        elif product:
            b = layout(source, kind=source.choice(KINDS), max_size=8)
        else:
            b = tiler(source, shapes, max_size=_layout(a).size() if op != "composition" else 64)
        return {"op": op, "a": a, "b": b, **(extra if op in FUNCTION_OPS else {})}

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}")
        if p["op"] == "make_ordered_layout":
            Layout(_tuple(p["shape"]), _tuple(p["shape"]))
            if not _weakly_congruent(_tuple(p["order"]), _tuple(p["shape"])):
                raise ValueError("an order is weakly congruent to the shape")
            if len(set(flatten(_tuple(p["order"])))) != len(flatten(_tuple(p["order"]))):
                raise ValueError("an order's values are distinct")
            return
        _layout(p["a"])
        if isinstance(p.get("b"), int):
            if p["b"] < 1 or p["op"] not in INTEGER_TILER_OPS:
                raise ValueError(f"an integer tiler is a positive int, taken by {', '.join(INTEGER_TILER_OPS)}")
        elif isinstance(p.get("b"), list):
            if p["op"] not in BY_MODE_OPS or not 1 <= len(p["b"]) <= len(props.top_modes(_layout(p["a"]))):
                raise ValueError(f"a by-mode tiler has 1 .. rank(A) entries, taken by {', '.join(BY_MODE_OPS)}")
            if any(isinstance(e, int) and e < 1 for e in p["b"]):
                raise ValueError("a by-mode integer is positive")
            _entries(p["b"])
        elif "b" in p:
            _layout(p["b"])
        if p["op"] == "recast" and (not isinstance(p.get("bits"), list) or any(b not in BITS for b in p["bits"])):
            raise ValueError(f"recast takes bits [new, old], each one of {BITS}")
        if p["op"] in LAYOUT_B_OPS and "b" not in p:
            raise ValueError(f"{p['op']} takes a layout b")
        if p["op"] in FUNCTION_OPS:
            Swizzle(*p["swizzle"])
            if not isinstance(p.get("offset", 0), int) or p.get("offset", 0) < 0:
                raise ValueError("offset is a non-negative int")
        if p["op"] == "complement" and not isinstance(p.get("m"), int):
            raise ValueError("complement takes an integer m")
        if p["op"] in ("slice", "dice", "slice_swizzled"):
            props._kept(_layout(p["a"]).shape, _layout(p["a"]).stride, _tuple(p["coord"]), True)
            if any(c is not None and c < 0 for c in _coord_leaves(p["coord"])):
                raise ValueError("a coordinate is non-negative")
        if p["op"] in ("append", "prepend"):
            _layout(p["elem"])

    def family(self, case: Case) -> str:
        """The operation; with a tuple tiler, "OP by-mode"."""
        return case.params["op"] + (" by-mode" if isinstance(case.params.get("b"), list) else "")

    def parameter_space(self) -> Space:
        """CuTe's layout-algebra functions, and the layouts they get (leaves, nesting, broadcast strides)."""
        api = "CuTe's layout algebra (pycute/layout.py; cute/layout.hpp; cute/swizzle.hpp)"

        def leaves(p: Mapping[str, Any]) -> int:
            return min(len(flatten(_tuple(p["a"]["shape"]))), 4)

        return Space((
            Parameter("op", OPS, api, lambda p: p["op"]),
            Parameter("swizzle B (mask bits)", (0, 1, 2, 3), "CuTe Swizzle<B,M,S>: the GMMA and TMA swizzles use B <= 3",
                      lambda p: p["swizzle"][0] if "swizzle" in p else None),
            Parameter("swizzle S - B", (0, 1, 2, 3), "CuTe Swizzle<B,M,S>: |S| >= B (negative S not drawn)",
                      lambda p: p["swizzle"][2] - p["swizzle"][0] if "swizzle" in p else None),
            Parameter("leaves of A", (1, 2, 3, 4), "CuTe: any rank (up to 5 drawn; 4 is 4 or more)", _on_a(leaves)),
            Parameter("A nested", ("flat", "nested"), "CuTe: hierarchical shapes", _on_a(lambda p: "nested" if any(
                isinstance(m, list) for m in (p["a"]["shape"] if isinstance(p["a"]["shape"], list) else [])) else "flat")),
            Parameter("A broadcasts (a stride 0)", ("no", "yes"), "CuTe: strides >= 0",
                      _on_a(lambda p: "yes" if 0 in flatten(_tuple(p["a"]["stride"])) else "no")),
            Parameter("A shapes", ("powers of two", "others"), "CuTe: any positive shape",
                      _on_a(lambda p: "others" if any(n & (n - 1) for n in flatten(_tuple(p["a"]["shape"]))) else "powers of two")),
            Parameter("A strides", ("non-negative", "negative"), "CuTe: any integer stride",
                      _on_a(lambda p: "negative" if any(d < 0 for d in flatten(_tuple(p["a"]["stride"]))) else "non-negative")),
            Parameter("A modes", ("nested", "interleaved", "overlapping"), "CuTe: any layout; complement, inverses, "
                      "divide and product are defined on nested ones", _on_a(_modes)),
            Parameter("A region", ("edge", "inside"), "the domain's edges: sizes 1 or the largest, strides 0 and 1",
                      _on_a(_edge)),
            Parameter("tiler", ("none", "layout", "integer", "by-mode"), "CuTe: a tiler is a layout, an integer n (n:1) or "
                      "a tuple of them by mode (None leaving a mode)", lambda p: "none" if "b" not in p else "integer"
                      if isinstance(p["b"], int) else "by-mode" if isinstance(p["b"], list) else "layout"),
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
        a, b = (_layout(p["a"]) if "a" in p else None), _tiler(p.get("b"))
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
        if p["op"] == "max_common_vector":
            n = observed.get("n") if isinstance(observed, Mapping) else None
            if not isinstance(n, int):
                return Comparison(False, 1, (str(observed)[:200],), f"{p['op']}: the result is not an integer", "")
            return self._verdict(p, props.max_common(a, b, None, n), f"{self.system}'s {p['op']} returned {n}")
        try:
            r = _layout(observed)
        except (LayoutError, TypeError, KeyError) as exc:  # shape and stride not congruent, a mode of size 0, ...
            return Comparison(False, 1, (str(exc),), f"{p['op']}: the result is not a layout", f"{self.system} returned {observed}")
        if p["op"] in MORE_OPS or isinstance(p.get("b"), list):
            try:
                found = _more_violations(p, a, r, observed)
            except LayoutError as exc:  # a result whose modes cannot be read as the operation's
                return Comparison(False, 1, (str(exc),), f"{p['op']}: the result has another rank", f"{self.system} returned {r}")
            return self._verdict(p, found, f"{self.system}'s {p['op']} returned {r}")
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
        return self._verdict(p, violations, f"{self.system}'s {p['op']} returned {r}")

    def _verdict(self, p: Mapping[str, Any], violations: props.Violations, note: str) -> Comparison:
        """The properties a result breaks as one comparison, signed by the operation and the properties' names."""
        if not violations:
            return Comparison(True)
        names = sorted({name for name, _ in violations})
        return Comparison(False, len(violations), tuple(f"{name}: {example}" for name, example in violations),
                          f"{p['op']}: {', '.join(names)}", note)


    def _compare_function(self, p: Mapping[str, Any], a: Layout, b: Layout | None, observed: Any) -> Comparison:
        """A composed layout ``Swizzle<B,M,S> o offset o A`` (and its composition with B) by CuTe's definitions: the
        swizzle XORs bits [M+S, M+S+B) into [M, M+B) of ``offset + A(i)`` (cute/swizzle.hpp), and R(i) == (A')(B(i))
        (past A's domain, either extension CuTe's implementations make: ``cute_properties.extensions``)."""
        swizzle, offset = Swizzle(*p["swizzle"]), p.get("offset", 0)
        if p["op"] == "slice_swizzled":  # DSL slice_: Swizzle o (offset + A(coord, None as 0)) o the kept modes
            kept, base = props._kept(a.shape, a.stride, _tuple(p["coord"]), True)
            rest = from_modes([x for m in kept for x in pre.leaves(m)]) if kept else Layout(1, 0)
            allowed = [{swizzle(offset + base + rest(i))} for i in range(rest.size())]
            name = "R(i) != Swizzle(offset + A(coord with None as i))"
        elif isinstance(p.get("b"), list):  # by mode: A_i o B_i, A's modes past the tiler dropped (C++) or kept
            got = observed.get("offsets") if isinstance(observed, Mapping) else None
            kept = _by_mode_composition(a, _entries(p["b"]), True)
            want = kept if isinstance(got, list) and len(got) == len(kept) else _by_mode_composition(a, _entries(p["b"]), False)
            allowed = [{swizzle(offset + x)} if x is not None else {g} for x, g in zip(want, (got or []) + [None] * len(want))]
            name = "R(i) != (Swizzle o offset o A)(B(i)) by mode"
        elif p["op"] == "swizzle":
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


def _by_mode_composition(a: Layout, tilers: tuple[Layout | None, ...], keep: bool) -> list[int | None]:
    """A o (B_0, B_1, ...) by mode: at each index, the sum over A's modes of A_i(B_i(c_i)), c_i the index's coordinate
    in the result's mode i (None: A_i itself); None past a mode's domain. A's modes past the tiler: CuTe C++ (and the
    DSL) drop them (layout.hpp: "Drop any modes of lhs that aren't hit by rhs"), pycute keeps them (``keep``)."""
    modes = props.top_modes(a)
    if not keep:
        modes = modes[:len(tilers)]
    tilers = tuple(tilers) + (None,) * (len(modes) - len(tilers))
    order = [("b", i, (m if t is None else t).size()) for i, (m, t) in enumerate(zip(modes, tilers))]
    return props._function(order, lambda d: props._sum(props._at(m, d["b", i] if t is None else t(d["b", i]))
                                                       for i, (m, t) in enumerate(zip(modes, tilers))))


VARIANTS = {"logical_divide": ("divide", "logical"), "zipped_divide": ("divide", "zipped"),
            "tiled_divide": ("divide", "tiled"), "flat_divide": ("divide", "flat"),
            "logical_product": ("product", "logical"), "zipped_product": ("product", "zipped"),
            "tiled_product": ("product", "tiled")}


def _more_violations(p: Mapping[str, Any], a: Layout, r: Layout, observed: Mapping[str, Any]) -> props.Violations:
    """The rest of the API's results against their properties (``oracles.cute_properties``)."""
    op, b = p["op"], _tiler(p.get("b"))
    if isinstance(p.get("b"), list):
        tilers = _entries(p["b"])
        if op == "composition":
            modes = props.top_modes(a)
            keep = r.size() == len(_by_mode_composition(a, tilers, True)) and len(props.top_modes(r)) == len(modes)
            tops = [m.size() if t is None else t.size() for m, t in zip(modes, tilers + (None,) * len(modes))]
            return props._check_tops(r, tops if keep else tops[:len(tilers)], None) + \
                props._check_function(r, _by_mode_composition(a, tilers, keep), "R(i) != A_i(B_i(c_i)) by mode")
        kind, variant = VARIANTS[op]
        return props.tiled(variant, props.Tiled(kind, a, tilers), r)
    coord = _tuple(p.get("coord"))
    checks = {
        "flat_divide": lambda: props.flat_divide(a, b, r), "flat_product": lambda: props.flat_product(a, b, r),
        "blocked_product": lambda: props.rank_product("blocked", a, b, r),
        "raked_product": lambda: props.rank_product("raked", a, b, r),
        "make_layout_tv": lambda: props.layout_tv(a, b, observed.get("tiler"), r),
        "slice": lambda: props.slice_(a, coord, r, observed.get("offset")),
        "dice": lambda: props.dice(a, coord, r),
        "select": lambda: props.structural(a, _selected(a, p["modes"]), r, "R is not the selected modes"),
        "group_modes": lambda: props.structural(a, _grouped(a, p["begin"], p["end"]), r, "R is not A with the modes grouped"),
        "append": lambda: props.structural(a, _extended(a, _layout(p["elem"]), p["up_to_rank"], False), r,
                                           "R is not A with elem appended"),
        "prepend": lambda: props.structural(a, _extended(a, _layout(p["elem"]), p["up_to_rank"], True), r,
                                            "R is not A with elem prepended"),
        "flatten": lambda: props.flattened(a, r), "filter": lambda: props.filter_(a, r),
        "filter_zeros": lambda: props.filter_zeros(a, r),
        "filter_zeros_profile": lambda: props.structural(a, Layout(_zeroed(a.shape, _tuple(p["profile"])), a.stride), r,
                                                         "R is not A with size 1 at the profile's zeros"),
        "coalesce_profile": lambda: props.coalesce_profile(a, _tuple(p["profile"]), r),
        "nullspace": lambda: props.nullspace(a, r), "make_layout_like": lambda: props.like(a, r),
        "max_common_layout": lambda: props.max_common(a, b, r, None),
        "make_ordered_layout": lambda: props.ordered(_tuple(p["shape"]), _tuple(p["order"]), r),
    }
    return checks[op]()


def _modes_of(a: Layout) -> list[Layout]:
    return props.top_modes(a)


def _build(modes: list[Layout]) -> Layout:
    """The layout whose top-level modes are ``modes`` (one mode: itself)."""
    if len(modes) == 1:
        return modes[0]
    return Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


def _selected(a: Layout, modes: list[int]) -> Layout:
    """select(A, modes) (DSL docstring: "select(layout, mode=[0, 2])  # Result: (4, 16):(32, 1)")."""
    top = _modes_of(a)
    return _build([top[i] for i in modes if 0 <= i < len(top)])


def _grouped(a: Layout, begin: int, end: int | None) -> Layout:
    """group_modes(A, begin, end) (DSL docstring: "(2, 3, 4, 5), 1, 3 -> (2, (3, 4), 5)")."""
    top, r = _modes_of(a), len(_modes_of(a))
    b = max(begin + r, 0) if begin < 0 else begin
    e = r if end is None else end + r if end < 0 else end
    inner = top[b:e]
    group = Layout(tuple(m.shape for m in inner), tuple(m.stride for m in inner))
    return _build(top[:b] + [group] + top[e:])


def _extended(a: Layout, elem: Layout, up_to_rank: int | None, front: bool) -> Layout:
    """append/prepend(A, elem, up_to_rank) (DSL docstring: "prepend(layout, make_layout((2,))) # Returns
    (2,8,8):(1,1,8)"): elem repeated up to the rank (once without one)."""
    top = _modes_of(a)
    count = 1 if up_to_rank is None else up_to_rank - len(top)
    more = [elem] * max(count, 0)
    return _build(more + top if front else top + more)


def _zeroed(shape: Any, profile: Any) -> Any:
    """filter_zeros(layout, profile) (layout.hpp: "Replace the modes in layout that correspond to a 0 at the terminals
    of trg_profile with a 1-size")."""
    if isinstance(profile, tuple):
        return tuple(_zeroed(s, q) for s, q in zip(shape, profile))
    return _unit(shape) if profile == 0 else shape


def _unit(shape: Any) -> Any:
    return 1 if isinstance(shape, int) else tuple(_unit(s) for s in shape)


def _second_mode_packed(r: Layout) -> Layout:
    """(R0, R1, ..., Rn) as (R0, (R1, ..., Rn)): a tiled divide or product as the zipped one it unpacks."""
    if len(r) < 2 or isinstance(r.shape, int):
        raise LayoutError(f"a tiled result has a tile mode and at least one rest mode, got {r}")
    return Layout((r.shape[0], tuple(r.shape[1:])), (r.stride[0], tuple(r.stride[1:])))


def _lists(value: Any) -> Any:
    """A nested int tuple as JSON lists (ints stay ints)."""
    return [_lists(v) for v in value] if isinstance(value, tuple) else int(value)


# ---- exported reproducers (``layoutfuzz export``): a script that imports only the system under test --------------

# the definition each operation's answer is checked against in a reproducer, as the script prints it
SCRIPT_DEFINITIONS = {
    "composition": "R(i) == A(B(i)) for every i < size(B)",
    "composition_swizzled": "R(i) == Sw(offset + A(B(i))) for every i < size(B)",
    "swizzle": "R(i) == Sw(offset + A(i)) for every i < size(A)",
    "slice_swizzled": "R(i) == Sw(offset + A(coord with the None modes read from i))",
    "complement": "every mode of R of size >= 1 and (A, R) injective",
    "left_inverse": "L(A(i)) == i for every i < size(A)",
    "divide": "size(R) == size(A), R(i) == A(B(i)) for i < size(B), R's offsets a permutation of A's",
    "product": "size(R) == size(A) * size(B), R(i) == A(i) for i < size(A), R injective where A and B are",
    "downcast": "size(R) == k * size(A), R's offsets {k * A(i) + r : r < k}",
    "upcast": "R's offsets {q : k * q + r is an offset of A}, each group of k whole",
    "filter_zeros_profile": "a layout with A's offsets (filter_zeros(layout, profile) is defined on every layout)",
    "nullspace": "R's offsets == {i < size(A) : A(i) == 0}",
    "extend": "ValueError (documented: up_to_rank below the rank of A)",
    "make_layout_tv": "a layout_tv whose (thread, value) pairs reach distinct elements",
}

_HELPERS = '''
def flat(t):
    return [y for x in t for y in flat(x)] if isinstance(t, (tuple, list)) else [t]


def size(shape):
    return prod(flat(shape))


def at(layout, i):
    """CuTe's offset of index i: its colexicographic coordinate (first mode fastest; the last mode takes the rest)
    dotted with the strides."""
    leaves = list(zip(flat(layout[0]), flat(layout[1])))
    offset = 0
    for k, (n, d) in enumerate(leaves):
        offset += (i if k == len(leaves) - 1 else i % n) * d
        i //= n
    return offset


def offsets(layout):
    return [at(layout, i) for i in range(size(layout[0]))]


def swizzle(x, b, m, s):
    """CuTe's Swizzle<B,M,S>: the B bits at M + max(0, S) XORed, shifted by S, into the bits below."""
    mask = ((1 << b) - 1) << (m + max(0, s))
    return x ^ ((x & mask) >> s if s >= 0 else (x & mask) << -s)


def sliced(shape, stride, coord):
    """The fixed offset and the kept (shape, stride) leaves of a slice: None keeps a mode."""
    if coord is None:
        return 0, list(zip(flat(shape), flat(stride)))
    if isinstance(coord, (tuple, list)):
        parts = [sliced(s, d, c) for s, d, c in zip(shape, stride, coord)]
        return sum(p[0] for p in parts), [leaf for p in parts for leaf in p[1]]
    return at((shape, stride), coord), []


def tup(v):
    return tuple(tup(x) for x in v) if isinstance(v, list) else v
'''


def _family(op: str) -> str:
    if op.endswith("divide"):
        return "divide"
    if op.endswith("product") and op not in ("blocked_product", "raked_product", "flat_product"):
        return "product"
    return {"append": "extend", "prepend": "extend"}.get(op, op)


def _judge_lines(p: Mapping[str, Any]) -> str | None:
    """The script's lines that set ``want`` (the definition's answer, printable) and ``ok`` from ``R`` (the system's
    answer: {"shape", "stride"} or {"offsets"}), or None where no reproducer checks this operation."""
    op, fam = p["op"], _family(p["op"])
    if isinstance(p.get("b"), list):
        return None  # by-mode tilers: no reproducer yet
    tile = "Bl = (B, 1) if isinstance(B, int) else B\n"
    got = "got = R['offsets'] if 'offsets' in R else offsets((tup(R['shape']), tup(R['stride'])))\n"
    lines = {
        "composition": tile + "want = [at(A, at(Bl, i)) for i in range(size(Bl[0]))]\n" + got + "ok = got == want\n",
        "composition_swizzled": tile + "want = [swizzle(OFFSET + at(A, at(Bl, i)), *SW) for i in range(size(Bl[0]))]\n"
        + got + "ok = got == want\n",
        "swizzle": "want = [swizzle(OFFSET + at(A, i), *SW) for i in range(size(A[0]))]\n" + got + "ok = got == want\n",
        "slice_swizzled": "fixed, kept = sliced(A[0], A[1], COORD)\nK = (tuple(n for n, _ in kept), tuple(d for _, d in kept))\n"
        "want = [swizzle(OFFSET + fixed + at(K, i), *SW) for i in range(size(K[0]))]\n" + got + "ok = got == want\n",
        "complement": got + "both = offsets(A) and [a + r for r in got for a in offsets(A)]\n"
        "want = 'every mode of size >= 1, (A, R) injective'\n"
        "ok = 0 not in flat(tup(R['shape'])) and len(set(both)) == len(both)\n",
        "left_inverse": "L = (tup(R['shape']), tup(R['stride']))\nwant = list(range(size(A[0])))\n"
        "got = [at(L, a) for a in offsets(A)]\nok = got == want\n",
        "divide": tile + "want = [at(A, at(Bl, i)) for i in range(size(Bl[0]))]\n" + got +
        "ok = len(got) == size(A[0]) and got[:len(want)] == want and sorted(got) == sorted(offsets(A))\n",
        "product": tile + "inj = lambda v: len(set(v)) == len(v)\nwant = f'size {size(A[0]) * size(Bl[0])}, starting with A: "
        "{offsets(A)}'\n" + got + "ok = len(got) == size(A[0]) * size(Bl[0]) and got[:size(A[0])] == offsets(A) and "
        "(inj(got) or not (inj(offsets(A)) and inj(offsets(Bl))))\n",
        "recast": "k = max(BITS) // min(BITS)\n" + got + (
            "want = sorted(k * a + r for a in offsets(A) for r in range(k))\nok = sorted(got) == want\n"
            if p.get("bits", (0, 1))[0] < p.get("bits", (0, 1))[1] else
            "want = sorted({a // k for a in offsets(A)}) if all(a // k * k + r in offsets(A) for a in offsets(A) "
            "for r in range(k)) else 'a refusal: the offsets of A are not whole groups of k'\n"
            "ok = sorted(set(got)) == want and {k * q + r for q in got for r in range(k)} == set(offsets(A))\n"),
        "filter_zeros_profile": got + "want = sorted(set(offsets(A)))\nok = sorted(set(got)) == want\n",
        "nullspace": got + "want = [i for i in range(size(A[0])) if at(A, i) == 0]\nok = sorted(got) == want\n",
        "extend": "want = 'ValueError'\ngot = R.get('raised') or 'no raise: %s:%s %s' % (R['shape'], R['stride'], R.get('trace', ''))\nok = str(got).startswith('ValueError')\n",
        "make_layout_tv": got + "want = 'distinct elements'\nok = len(set(got)) == len(got)\n",
    }
    if fam == "extend" and precondition(p) is None:
        return None
    if fam == "recast" or op == "recast":
        return lines["recast"]
    return lines.get(fam) or lines.get(op)


def _constants(p: Mapping[str, Any]) -> str:
    """The case's inputs as Python literals, one line each."""
    call = Call.of(p)
    values = {"A": call.a, "B": call.b, "M": call.m, "SW": call.swizzle, "OFFSET": call.offset, "BITS": call.bits,
              **{k.upper(): v for k, v in call.extra}}
    return "".join(f"{name} = {value!r}\n" for name, value in values.items() if value is not None)


def algebra_script(case: Case, system: str, version_line: str, child: str) -> str | None:
    """A reproducer for one CuTe algebra case: ``child`` (Python source that uses only ``system`` and prints
    ``ANSWER <json>``) runs in a child process (the DSL can die by a signal); the parent checks the answer against the
    operation's definition, computed inline. Exit 1 while the bug shows, 0 once gone, 2 where the release lacks the
    call; None where no reproducer checks the case's operation."""
    p = case.params
    judge = _judge_lines(p)
    if judge is None:
        return None
    unmet = precondition(p)
    if unmet and unmet.split(":")[0] in IMPLEMENTATION_DEFINED:
        return None
    fam = _family(p["op"])
    definition = SCRIPT_DEFINITIONS.get(fam if fam in SCRIPT_DEFINITIONS else p["op"], "")
    if p["op"] == "recast":
        definition = SCRIPT_DEFINITIONS["downcast" if p["bits"][0] < p["bits"][1] else "upcast"]
    consts = _constants(p)
    return f'''"""{system}'s {p["op"]} on one input ({case.case_id}, found by layoutfuzz): {"a refusal is due, since " + unmet
        if unmet else "the input meets every documented precondition, so the answer must have the definition: " + definition}.
Needs only {system}; runs on a CPU. Exit 1 while the problem shows, 0 once it is gone, 2 where this release lacks
the call."""
import json
import os
import subprocess
import sys
import tempfile
from math import prod

{consts}# why the input is outside the operation's domain (CuTe C++ refuses it), or None where it is inside
PRECONDITION = {unmet!r}
DEFINITION = {definition!r}

CHILD = r"""{child}"""
{_HELPERS}

with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as child_file:  # the DSL reads a traced function's source
    child_file.write(CHILD)
child = subprocess.run([sys.executable, child_file.name], capture_output=True, text=True)
os.unlink(child_file.name)
answer = next((line[7:] for line in child.stdout.splitlines() if line.startswith("ANSWER ")), None)
print({version_line})
if answer is None and (child.returncode < 0 or child.returncode > 128):
    print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION else "an answer with " + DEFINITION)
    print(f"observed: the process died (rc {{child.returncode}})", (child.stderr.strip().splitlines() or [""])[-1][:200])
    sys.exit(1)
if answer is None:
    print("observed: cannot run here:", (child.stderr.strip().splitlines() or [""])[-1][:300])
    sys.exit(2)
R = json.loads(answer)
if "unavailable" in R:
    print("observed: this release lacks the call:", R["unavailable"])
    sys.exit(2)
if "raised" in R and {fam != "extend"!r}:
    print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION else "an answer with " + DEFINITION)
    print("observed: raised", R["raised"][:300])
    sys.exit(0 if PRECONDITION else 1)
{judge}print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION and {fam != "extend"!r} else want)
print("observed:", got if "raised" in R or "trace" in R else R if "offsets" in R else "%s:%s, offsets %s" % (R["shape"], R["stride"], got),
      "" if ok else "(not " + DEFINITION + ")")
sys.exit(1 if PRECONDITION and {fam != "extend"!r} or not ok else 0)
'''
