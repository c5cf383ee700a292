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
from layoutfuzz.oracles import cute_api_properties as api
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
            return api._prod(m.size() for m in api._kept(*self.a, self.get("coord"), True)[0])
        if self.op == "composition_swizzled" and isinstance(self.b, ByMode):
            modes = api.top_modes(Layout(*self.a))
            entries = list(self.b.entries) + [None] * (len(modes) - len(self.b.entries))
            return api._prod(m.size() if e is None else _entry(e).size() for m, e in zip(modes, entries))
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
            return _first_reason(pre.composition(m, t) for m, t in zip(api.top_modes(a), _entries(p["b"]))
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
        single_modes = product and source.integer(0, 3) == 0  # a product of one-mode layouts, as CuTe's examples write
        a = layout(source, kind=kind, edge=edge, max_size=32 if product else 256, most=1 if single_modes else 4)
        if op == "complement":
            return {"op": op, "a": a, "m": max(1, _layout(a).cosize()) * source.choice((1, 2, 3, 4))}
        shapes = pre.coalesced_shapes(_layout(a))
        if op in BY_MODE_OPS and source.integer(0, 3) == 0:  # a tuple tiler, one entry per leading mode of A
            b: Any = by_mode(source, _top(a), product)
        elif op in INTEGER_TILER_OPS and source.integer(0, 3) == 0:  # an integer tiler: CuTe's n is the layout n:1
            b = source.choice(SHAPES_ANY[1:8])
        elif product:
            b = layout(source, kind="nested" if single_modes else source.choice(KINDS), max_size=8, most=1 if single_modes else 4)
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
            if p["op"] not in BY_MODE_OPS or not 1 <= len(p["b"]) <= len(api.top_modes(_layout(p["a"]))):
                raise ValueError(f"a by-mode tiler has 1 .. rank(A) entries, taken by {', '.join(BY_MODE_OPS)}")
            if any(isinstance(e, int) and e < 1 for e in p["b"]):
                raise ValueError("a by-mode integer is positive")
            _entries(p["b"])
        elif "b" in p:
            _layout(p["b"])
        if p["op"] == "recast" and (not isinstance(p.get("bits"), list) or len(p["bits"]) != 2
                                    or any(b not in BITS for b in p["bits"])):
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
            api._kept(_layout(p["a"]).shape, _layout(p["a"]).stride, _tuple(p["coord"]), True)
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
            return self._verdict(p, api.max_common(a, b, None, n), f"{self.system}'s {p['op']} returned {n}")
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
            kept, base = api._kept(a.shape, a.stride, _tuple(p["coord"]), True)
            rest = from_modes([x for m in kept for x in pre.leaves(m)]) if kept else Layout(1, 0)
            allowed = [{swizzle(offset + base + rest(i))} for i in range(rest.size())]
            name = "R(i) != Swizzle(offset + A(coord with None as i))"
        elif isinstance(p.get("b"), list):  # by mode: A_i o B_i, A's modes past the tiler dropped (C++) or kept
            got = observed.get("offsets") if isinstance(observed, Mapping) else None
            kept = api.by_mode_composition(a, _entries(p["b"]), True)
            want = kept if isinstance(got, list) and len(got) == len(kept) else api.by_mode_composition(a, _entries(p["b"]), False)
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


def _more_violations(p: Mapping[str, Any], a: Layout, r: Layout, observed: Mapping[str, Any]) -> props.Violations:
    """The rest of the API's results against their properties (``oracles.cute_properties``)."""
    op, b = p["op"], _tiler(p.get("b"))
    if isinstance(p.get("b"), list):
        tilers = _entries(p["b"])
        if op == "composition":
            modes = api.top_modes(a)
            keep = r.size() == len(api.by_mode_composition(a, tilers, True)) and len(api.top_modes(r)) == len(modes)
            tops = [m.size() if t is None else t.size() for m, t in zip(modes, tilers + (None,) * len(modes))]
            return api._check_tops(r, tops if keep else tops[:len(tilers)], None) + \
                api._check_function(r, api.by_mode_composition(a, tilers, keep), "R(i) != A_i(B_i(c_i)) by mode")
        kind, variant = api.TILED_VARIANTS[op]
        return api.tiled(variant, api.Tiled(kind, a, tilers), r)
    coord = _tuple(p.get("coord"))
    checks = {
        "flat_divide": lambda: api.flat_divide(a, b, r), "flat_product": lambda: api.flat_product(a, b, r),
        "blocked_product": lambda: api.rank_product("blocked", a, b, r),
        "raked_product": lambda: api.rank_product("raked", a, b, r),
        "make_layout_tv": lambda: api.layout_tv(a, b, observed.get("tiler"), r),
        "slice": lambda: api.slice_(a, coord, r, observed.get("offset")),
        "dice": lambda: api.dice(a, coord, r),
        "select": lambda: api.structural(a, api.selected(a, p["modes"]), r, "R is not the selected modes"),
        "group_modes": lambda: api.structural(a, api.grouped(a, p["begin"], p["end"]), r, "R is not A with the modes grouped"),
        "append": lambda: api.structural(a, api.extended(a, _layout(p["elem"]), p["up_to_rank"], False), r,
                                           "R is not A with elem appended"),
        "prepend": lambda: api.structural(a, api.extended(a, _layout(p["elem"]), p["up_to_rank"], True), r,
                                            "R is not A with elem prepended"),
        "flatten": lambda: api.flattened(a, r), "filter": lambda: api.filter_(a, r),
        "filter_zeros": lambda: api.filter_zeros(a, r),
        "filter_zeros_profile": lambda: api.structural(a, Layout(api.zeroed(a.shape, _tuple(p["profile"])), a.stride), r,
                                                         "R is not A with size 1 at the profile's zeros"),
        "coalesce_profile": lambda: api.coalesce_profile(a, _tuple(p["profile"]), r),
        "nullspace": lambda: api.nullspace(a, r), "make_layout_like": lambda: api.like(a, r),
        "max_common_layout": lambda: api.max_common(a, b, r, None),
        "make_ordered_layout": lambda: api.ordered(_tuple(p["shape"]), _tuple(p["order"]), r),
    }
    return checks[op]()


def _second_mode_packed(r: Layout) -> Layout:
    """(R0, R1, ..., Rn) as (R0, (R1, ..., Rn)): a tiled divide or product as the zipped one it unpacks."""
    if len(r) < 2 or isinstance(r.shape, int):
        raise LayoutError(f"a tiled result has a tile mode and at least one rest mode, got {r}")
    return Layout((r.shape[0], tuple(r.shape[1:])), (r.stride[0], tuple(r.stride[1:])))


def _lists(value: Any) -> Any:
    """A nested int tuple as JSON lists (ints stay ints)."""
    return [_lists(v) for v in value] if isinstance(value, tuple) else int(value)
