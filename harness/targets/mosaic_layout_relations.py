"""Target ``mosaic.layout_relations``: the relations JAX Mosaic GPU's layout inference decides layouts by (is a splat
compatible with a tiled layout, may a value of this shape take this layout, does a tiling divide a shape, what layout
does a reduction or a reshape leave, may a strided array be broadcast in its threads, do attributes round-trip), over
the whole domain Mosaic accepts, each answer judged against the relation's definition (``oracles.mosaic_relations``).

A refusal (an exception) is judged too: every case is drawn inside the relation's domain, so a raise is a spurious
refusal; an answer where a relation says "not handled" (an unreduced expression) is Mosaic's documented limit, not a
finding.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_relations import ELEMENT_TYPES, OPS, case, dims, valid_tiled
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.targets.mosaic_base import MosaicTarget
from layoutfuzz.oracles import mosaic_relations as rel
from layoutfuzz.oracles.linear_layout import LayoutError

# the relation each entry point decides: one root cause, one bucket, whichever entry point met it
RELATION = {"splat_compatible": "splat->tiled compatibility", "relayout": "splat->strided relayout", "divides": "Divides",
            "valid_assignment": "valid register layout assignment", "attr_roundtrip": "layout attribute round trip",
            "strided_from_shaped_type": "strided layout of a shaped type", "reduce": "reduced layout",
            "reshape": "reshaped layout", "strided_broadcast": "strided broadcast", "merge_divides": "merged Divides",
            "splat_broadcast": "splat broadcast"}
BOOLEAN = ("splat_compatible", "relayout", "divides", "valid_assignment", "splat_broadcast")


@dataclass(frozen=True)
class Site:
    """What a constraint variable's key tells: the value's shape and memory space (registers)."""

    shape: tuple[int, ...]
    memory_space: Any


class MosaicLayoutRelations(MosaicTarget):
    name = "mosaic.layout_relations"
    layer = "JAX Mosaic GPU (layouts, constraints, fragmented_array)"
    description = "JAX Mosaic GPU's layout relations (splat/tiled compatibility, Divides, reduce, reshape, attrs) against their definitions"
    module = "layouts"

    def generate(self, source: Source) -> dict[str, Any]:
        return case(source)

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}")
        layout = p.get("layout")
        if isinstance(layout, Mapping) and layout.get("kind") == "tiled":
            if not valid_tiled(dict(layout)):
                raise ValueError("not a tiled layout Mosaic constructs")
        for key in ("shape", "target"):
            if key in p and (not p[key] or any(not isinstance(n, int) or n < 1 for n in p[key])):
                raise ValueError(f"{key} is a non-empty list of positive ints")
        if p["op"] in ("reduce", "reshape") and layout["kind"] == "tiled" and not rel.tiling_applies(layout["tiles"], p["shape"]):
            raise ValueError("a reduced or reshaped array is one its layout applies to")
        if p["op"] == "reshape" and prod(p["shape"]) != prod(p["target"]):
            raise ValueError("a reshape keeps the number of elements")
        if p["op"] == "reduce" and (not p["axes"] or any(not 0 <= a < len(p["shape"]) for a in p["axes"])):
            raise ValueError("reduce takes axes of the shape")

    def family(self, case: Case) -> str:
        return case.params["op"]

    def parameter_space(self) -> Space:
        api = "Mosaic GPU layouts.py, constraints.py, fragmented_array.py (jax 0.10.2)"
        return Space((
            Parameter("op", OPS, api, lambda p: p["op"]),
            Parameter("layout", ("tiled", "splat", "strided", "none"), api,
                      lambda p: p["layout"]["kind"] if "layout" in p else "none"),
            Parameter("array rank", (1, 2, 3, 4), "Mosaic: any rank", lambda p: len(p["shape"]) if "shape" in p else None),
            Parameter("region", ("edge", "inside"), "the domain's edges: dims 1, primes, the largest",
                      lambda p: "edge" if p["edge"] else "inside"),
            Parameter("rank vs base tile", ("below", "equal", "above", "none"), "TiledLayout tiles trailing dims",
                      _rank_vs_tile),
        ), lambda a, x, b, y: False)

    def expected(self, case: Case) -> Any:
        """The relation's answer by its definition, where it is a yes or no; else the property judged in ``compare``."""
        p = case.params
        op, layout = p["op"], p.get("layout")
        if op in ("splat_compatible", "divides") or (op == "relayout" and layout["kind"] == "tiled"):
            return {"answer": rel.tiling_applies([layout["tiles"][0]], p["shape"])}
        if op == "relayout":
            return {"answer": list(p["shape"]) == list(layout["shape"])}
        if op == "valid_assignment":
            if layout["kind"] == "tiled":
                return {"answer": rel.tiling_applies(layout["tiles"], p["shape"])}
            return {"answer": list(p["shape"]) == list(layout["shape"])}
        if op == "splat_broadcast":
            return {"answer": _numpy_broadcasts(layout["shape"], p["target"])}
        return {"property": RELATION[op]}

    def observed(self, case: Case) -> Any:
        """Mosaic's answer: {"answer": ...}, or {"raised": "Type: message"} where it raised; with "given", the layout
        as given to Mosaic (its canonical form, which the answer is judged against)."""
        p = case.params
        given = _data(_mosaic(p["layout"])) if "layout" in p else None
        return {**RUN[p["op"]](p), "given": given}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        p = case.params
        relation = relation_of(p)
        if "raised" in observed:
            kind = observed["raised"].split(":")[0]
            return Comparison(False, 1, (observed["raised"],), f"{relation}: spurious refusal (raised {kind})",
                              f"Mosaic's {p['op']} raised {observed['raised']} on an input inside its domain")
        if "answer" in expected:
            if bool(observed["answer"]) == expected["answer"]:
                return Comparison(True)
            return Comparison(False, 1, (f"Mosaic says {observed['answer']}, the definition {expected['answer']}",),
                              f"{relation}: answer differs from its definition",
                              f"{p['op']}: Mosaic {observed['answer']}, by definition {expected['answer']} ({_why(p)})")
        given = {**p, "layout": observed["given"]} if observed.get("given") else p
        problem = JUDGE[p["op"]](given, observed["answer"])
        if problem is None:
            return Comparison(True)
        return Comparison(False, 1, (problem,), f"{relation}: violates its definition", f"{p['op']}: {problem}")


    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only JAX (``layoutfuzz export``), for the relations with a yes or no answer and for
        reduce and reshape; None for the others."""
        return reproducer(case)


def relation_of(p: Mapping[str, Any]) -> str:
    """The relation a case asks about (a Relayout from a splat to a tiled layout is the splat->tiled compatibility)."""
    if p["op"] == "relayout" and p["layout"]["kind"] == "tiled":
        return RELATION["splat_compatible"]
    return RELATION[p["op"]]


def _rank_vs_tile(p: Mapping[str, Any]) -> str:
    layout = p.get("layout")
    if not isinstance(layout, Mapping) or layout.get("kind") != "tiled" or "shape" not in p:
        return "none"
    r, t = len(p["shape"]), len(layout["tiles"][0])
    return "below" if r < t else "equal" if r == t else "above"


def _numpy_broadcasts(shape: list[int], target: list[int]) -> bool:
    """Whether NumPy broadcasts ``shape`` to exactly ``target`` (a second implementation of the broadcast rule). The
    rule sees only which dims are 1 and which are equal, so each size is renamed small first: NumPy refuses results
    past its array size limit ("broadcast dimensions too large") that the rule allows."""
    small = {1: 1} | {size: i + 2 for i, size in enumerate(sorted((set(shape) | set(target)) - {1}))}
    shape, target = [small[d] for d in shape], [small[d] for d in target]
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def _why(p: Mapping[str, Any]) -> str:
    layout = p.get("layout", {})
    if layout.get("kind") == "tiled":
        return f"base tile {layout['tiles'][0]}, shape {p['shape']}"
    return f"layout {layout}, shape {p.get('shape')}, target {p.get('target')}"


# ---- the system under test: Mosaic's objects from the case's data, and its calls -------------------------------------

def _mosaic(layout: Mapping[str, Any]) -> Any:
    """The case's layout as Mosaic's object (a tiled layout in its canonical form, as Mosaic's users build them)."""
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    if layout["kind"] == "splat":
        return fa.WGSplatFragLayout(tuple(layout["shape"]))
    if layout["kind"] == "strided":
        return fa.WGStridedFragLayout(tuple(layout["shape"]), layout["vec_size"])
    def mdims(data: list[Any]) -> tuple[Any, ...]:
        return tuple(fa.Replicated(d["replicated"]) if isinstance(d, dict) else d for d in data)
    drawn = fa.TiledLayout(fa.Tiling(tuple(tuple(t) for t in layout["tiles"])), mdims(layout["warp_dims"]),
                           mdims(layout["lane_dims"]), layout["vector_dim"], _check_canonical=False)
    try:
        return drawn.canonicalize()
    except ValueError as exc:  # mosaic.layouts' known finding (a size-1 vector dim): no canonical layout to give
        raise Unsupported(f"canonicalize() of the drawn layout raised: {exc}") from exc


def _data(layout: Any) -> dict[str, Any]:
    """A Mosaic layout as the case's plain data."""
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    if isinstance(layout, fa.WGSplatFragLayout):
        return {"kind": "splat", "shape": list(layout.shape)}
    if isinstance(layout, fa.WGStridedFragLayout):
        return {"kind": "strided", "shape": list(layout.shape), "vec_size": layout.vec_size}
    def pdims(ds: tuple[Any, ...]) -> list[Any]:
        return [{"replicated": d.times} if isinstance(d, fa.Replicated) else d for d in ds]
    return {"kind": "tiled", "tiles": [list(t) for t in layout.tiling.tiles], "warp_dims": pdims(layout.warp_dims),
            "lane_dims": pdims(layout.lane_dims), "vector_dim": layout.vector_dim}


def _call(fn: Callable[[], Any]) -> dict[str, Any]:
    """Mosaic's answer, or its refusal as text."""
    try:
        return {"answer": fn()}
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {str(exc)[:300]}"}


@contextlib.contextmanager
def _mlir() -> Iterator[None]:
    """An MLIR context with the Mosaic GPU dialect, for attributes and types."""
    from jax._src.lib import mosaic_gpu_dialect as mgpu
    from jaxlib.mlir import ir

    with ir.Context() as ctx, ir.Location.unknown():
        mgpu.register_dialect(ctx)
        yield


def _splat_compatible(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import layouts

    splat, tiled = fa.WGSplatFragLayout(tuple(p["shape"])), _mosaic(p["layout"])
    return _call(lambda: bool(layouts.splat_is_compatible_with_tiled(splat, tiled)))


def _relayout(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    splat, target = fa.WGSplatFragLayout(tuple(p["shape"])), _mosaic(p["layout"])
    constraint = cs.Relayout(cs.RegisterLayout(splat), cs.RegisterLayout(target), p["bitwidth"])
    return _call(lambda: bool(constraint.holds()))


def _divides(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    constraint = cs.Divides(cs.RegisterLayout(_mosaic(p["layout"])), tuple(p["shape"]))
    return _call(lambda: bool(constraint.holds()))


def _valid_assignment(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    variable = cs.Variable(Site(tuple(p["shape"]), cs.MemorySpace.REG))
    layout = cs.RegisterLayout(_mosaic(p["layout"]))
    return _call(lambda: bool(cs.is_valid_assignment(variable, layout)))


def _attr_roundtrip(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import layouts

    layout = _mosaic(p["layout"])
    with _mlir():
        out = _call(lambda: layouts.from_layout_attr(layouts.to_layout_attr(layout)))
    return out if "raised" in out else {"answer": {"same": out["answer"] == layout, "back": _data(out["answer"])}}


def _strided_from_shaped_type(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jaxlib.mlir import ir

    with _mlir():
        element = {"f16": ir.F16Type.get, "bf16": ir.BF16Type.get, "f32": ir.F32Type.get, "f64": ir.F64Type.get}.get(
            p["element_type"], lambda: ir.IntegerType.get_signless(ELEMENT_TYPES[p["element_type"]]))()
        vector = ir.VectorType.get(tuple(p["shape"]), element)
        out = _call(lambda: fa.WGStridedFragLayout.from_shaped_type(vector))
    return out if "raised" in out or out["answer"] is None else {"answer": _data(out["answer"])}


def _reduce(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    expr = cs.Reduce(cs.RegisterLayout(_mosaic(p["layout"])), tuple(p["axes"]), len(p["shape"]), p["keep_dims"])
    out = _call(lambda: cs.reduce_reduce_expression(expr, {}))
    return out if "raised" in out else {"answer": _reduced(out["answer"])}


def _reshape(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    expr = cs.Reshape(cs.RegisterLayout(_mosaic(p["layout"])), tuple(p["shape"]), tuple(p["target"]))
    out = _call(lambda: cs.reduce_reshape_expression(expr, {}))
    return out if "raised" in out else {"answer": _reduced(out["answer"])}


def _reduced(expr: Any) -> dict[str, Any] | None:
    """A reduced expression's layout as data, or None where Mosaic left it unreduced (its documented limits)."""
    from jax.experimental.mosaic.gpu import constraints as cs

    return _data(expr.value) if isinstance(expr, cs.RegisterLayout) else None


def _strided_broadcast(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    src = _mosaic(p["layout"])
    dst = fa.WGStridedFragLayout(tuple(p["target"]), p["layout"]["vec_size"])
    return _call(lambda: bool(fa.is_supported_strided_layout_broadcast(src, dst, tuple(p["dims"]))))


def _merge_divides(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    x = cs.Variable("x")
    d0, d1 = (cs.Divides(x, tuple(m)) for m in p["multiples"])
    out = _call(lambda: cs.merge_divides_constraints(d0, d1))
    return out if "raised" in out else {"answer": list(out["answer"].tiling_multiple)}


def _splat_broadcast(p: Mapping[str, Any]) -> dict[str, Any]:
    splat = _mosaic(p["layout"])
    return _call(lambda: bool(splat.can_broadcast_to(tuple(p["target"]))))


RUN: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "splat_compatible": _splat_compatible, "relayout": _relayout, "divides": _divides,
    "valid_assignment": _valid_assignment, "attr_roundtrip": _attr_roundtrip,
    "strided_from_shaped_type": _strided_from_shaped_type, "reduce": _reduce, "reshape": _reshape,
    "strided_broadcast": _strided_broadcast, "merge_divides": _merge_divides, "splat_broadcast": _splat_broadcast}


# ---- the judgement of answers that are layouts: by the oracle's placements ----------------------------------------------

def placement(layout: Mapping[str, Any], shape: list[int]) -> np.ndarray:
    """[thread, register slot] -> element of a tiled or strided layout on ``shape`` (the oracle's definition)."""
    if layout["kind"] == "strided":
        return rel.strided_placement(shape, layout["vec_size"])
    return rel.tiled_placement(shape, layout["tiles"], dims(layout["warp_dims"]), dims(layout["lane_dims"]),
                               layout["vector_dim"])


def _judge_roundtrip(p: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    return None if answer["same"] else f"the attribute reads back as {answer['back']}"


def _judge_shaped_type(p: Mapping[str, Any], answer: Mapping[str, Any] | None) -> str | None:
    exists = rel.strided_vector_exists(p["shape"], ELEMENT_TYPES[p["element_type"]])
    if answer is None:
        return "no strided layout, though one with a vector of 1 exists" if exists else None
    size = prod(p["shape"])
    if not exists or answer["shape"] != list(p["shape"]) or size % (answer["vec_size"] * rel.THREADS):
        return f"returned {answer}, not a strided layout of shape {p['shape']}"
    return None


def _judge_reduce(p: Mapping[str, Any], answer: Mapping[str, Any] | None) -> str | None:
    """The reduced layout holds, in each thread, exactly what the thread's operand elements reduce into."""
    if answer is None:
        return None  # left unreduced: keep_dims on a tiled layout, a cross-thread strided reduction (documented limits)
    shape, axes, keep = p["shape"], p["axes"], p["keep_dims"]
    out = list(rel.reduced_shape(shape, axes, keep))
    if answer["kind"] == "splat" or p["layout"]["kind"] == "splat":
        return None if answer == {"kind": "splat", "shape": out} else f"a splat reduces to a splat of {out}, got {answer}"
    want = rel.projected(placement(p["layout"], shape), shape, axes, keep)
    return _same_holders(answer, out, want, "the projection of the operand's")


def _judge_reshape(p: Mapping[str, Any], answer: Mapping[str, Any] | None) -> str | None:
    """A reshape moves no element: the layout on the new shape puts every element in the same thread and slot."""
    if answer is None:
        return None  # left unreduced: a reshape Mosaic says it does not handle
    try:
        got = placement(answer, p["target"])
    except LayoutError as exc:
        return f"returned {answer}, which does not apply to {p['target']} ({exc})"
    want = placement(p["layout"], p["shape"])
    if got.shape != want.shape or (got != want).any():
        wrong = int((got != want).sum()) if got.shape == want.shape else got.size
        return f"returned {answer}: {wrong} of {want.size} (thread, slot) pairs hold another element after the reshape"
    return None


def _same_holders(answer: Mapping[str, Any], shape: list[int], want: list[frozenset[int]], what: str) -> str | None:
    try:
        got = rel.held(placement(answer, shape))
    except LayoutError as exc:
        return f"returned {answer}, which does not apply to {shape} ({exc})"
    wrong = [t for t in range(rel.THREADS) if got[t] != want[t]]
    if wrong:
        t = wrong[0]
        return (f"returned {answer}: {len(wrong)} threads hold other elements than {what} (thread {t}: "
                f"{len(got[t])} elements, {len(got[t] - want[t])} not its own)")
    return None


def _judge_strided_broadcast(p: Mapping[str, Any], answer: bool) -> str | None:
    src, dst, d, vec = p["layout"]["shape"], p["target"], p["dims"], p["layout"]["vec_size"]
    if any(n not in (1, dst[i]) for n, i in zip(src, d)):  # a dim of more than one element into a different size
        return "supported, though the shapes do not broadcast" if answer else None
    local = rel.strided_broadcast_is_local(src, dst, d, vec)
    if answer and not local:
        return "supported, though some result elements sit in another thread than the element they copy"
    stretched = [i for i, n in enumerate(src) if n == 1 and dst[d[i]] > 1]
    kept = [i for i, n in enumerate(src) if n > 1]
    leading = d == list(range(len(dst) - len(src), len(dst))) and (not stretched or not kept or max(stretched) < min(kept))
    if not answer and local and leading:
        return "unsupported, though it stretches leading dims only and keeps every element in its thread"
    return None


def _judge_merge(p: Mapping[str, Any], answer: list[int]) -> str | None:
    """Divides(t, merged) iff Divides(t, m0) and Divides(t, m1), for every tile t of ones and one divisor."""
    m0, m1 = p["multiples"]
    for tile in _probe_tiles(m0 + m1):
        both = rel.divides(tile, m0) and rel.divides(tile, m1)
        if rel.divides(tile, answer) != both:
            return f"merged {answer}: tile {tile} divides {'both' if both else 'not both'} of {m0}, {m1} but " \
                   f"{'not ' if both else ''}the merge"
    return None


def _probe_tiles(values: list[int]) -> Iterator[list[int]]:
    """Tiles of rank 1-4: all ones, and one divisor of a drawn value at one place."""
    divisors = sorted({d for v in values for d in range(2, min(v, 4096) + 1) if v % d == 0} | {2, 5})
    for rank in range(1, 5):
        yield [1] * rank
        for place in range(rank):
            for d in divisors:
                yield [d if i == place else 1 for i in range(rank)]


JUDGE: dict[str, Callable[[Mapping[str, Any], Any], str | None]] = {
    "attr_roundtrip": _judge_roundtrip, "strided_from_shaped_type": _judge_shaped_type, "reduce": _judge_reduce,
    "reshape": _judge_reshape, "strided_broadcast": _judge_strided_broadcast, "merge_divides": _judge_merge}


# ---- the reproducer: the relation's call as Mosaic's users make it, its definition inline --------------------------------

# per op: Mosaic's answer (a script expression over LAYOUT and the case's constants) and the definition's, where it is
# a yes or no; the script's ``applies(tiles, shape)`` is the Tiling docstring's rule
_BASE_TILE = "the base tile applies to SHAPE (a tiling applies to trailing dims)"
_SCRIPT_CALLS = {
    "splat_compatible": ("layouts.splat_is_compatible_with_tiled(fa.WGSplatFragLayout(SHAPE), LAYOUT)",
                         "applies(TILES[:1], SHAPE)", _BASE_TILE),
    "divides": ("cs.Divides(cs.RegisterLayout(LAYOUT), SHAPE).holds()", "applies(TILES[:1], SHAPE)", _BASE_TILE),
    "valid_assignment": ("cs.is_valid_assignment(cs.Variable(Site(SHAPE, cs.MemorySpace.REG)), cs.RegisterLayout(LAYOUT))",
                         "applies(TILES, SHAPE) if TILES else SHAPE == LAYOUT.shape",
                         "every tile applies to SHAPE in turn (a splat or strided layout: its shape is SHAPE)"),
    "relayout": ("cs.Relayout(cs.RegisterLayout(fa.WGSplatFragLayout(SHAPE)), cs.RegisterLayout(LAYOUT), BITWIDTH).holds()",
                 "applies(TILES[:1], SHAPE) if TILES else SHAPE == LAYOUT.shape",
                 "a splat relays out to a tiled layout whose base tile applies to SHAPE (a strided one: of SHAPE)"),
    "splat_broadcast": ("LAYOUT.can_broadcast_to(TARGET)", "broadcasts(SHAPE, TARGET)",
                        "SHAPE broadcasts to TARGET by NumPy's rule"),
    "reduce": ("cs.reduce_reduce_expression(cs.Reduce(cs.RegisterLayout(LAYOUT), AXES, len(SHAPE), KEEP_DIMS), {})",
               None, "each thread holds what its elements reduce into"),
    "reshape": ("cs.reduce_reshape_expression(cs.Reshape(cs.RegisterLayout(LAYOUT), SHAPE, TARGET), {})", None,
                "every element stays in its thread and register"),
}

# script text: applies(tiles, shape), whether a tiling applies to a shape (the Tiling docstring)
TILING_APPLIES = '''

def applies(tiles, shape):
    """The Tiling docstring: each tile in turn tiles the trailing dims of the (tiled) shape, no more dims than it
    has, each dividing the dim it tiles (a dim n under a tile t becomes n / t, the tile's dims go to the end)."""
    dims = list(shape)
    for tile in tiles:
        if not tile or len(tile) > len(dims) or any(n % t for n, t in zip(dims[len(dims) - len(tile):], tile)):
            return False
        dims = dims[:len(dims) - len(tile)] + [n // t for n, t in zip(dims[len(dims) - len(tile):], tile)] + list(tile)
    return True
'''
_DEFINITIONS = TILING_APPLIES + '''

def broadcasts(shape, target):
    """NumPy's broadcast rule: target has at least shape's dims, and each of shape's (aligned right) is 1 or equal."""
    return len(target) >= len(shape) and all(n in (1, m) for n, m in zip(shape[::-1], target[::-1]))


def projected(layout, shape, out_shape):
    """Per thread, the elements of the reduced array its elements reduce into (AXES dropped, or kept as 0)."""
    coords = np.unravel_index(holders(layout, shape), shape)
    kept = [np.zeros_like(c) if d in AXES else c for d, c in enumerate(coords) if KEEP_DIMS or d not in AXES]
    flat = np.ravel_multi_index(kept, out_shape) if kept else np.zeros_like(coords[0])
    return [set(row.tolist()) for row in flat]


def judge_reduce(answer):
    """None where the reduced layout holds, in each thread, what the thread's elements reduce into; else why not."""
    out_shape = tuple(1 if d in AXES else n for d, n in enumerate(SHAPE) if KEEP_DIMS or d not in AXES)
    if isinstance(LAYOUT, fa.WGSplatFragLayout) or isinstance(answer, fa.WGSplatFragLayout):
        return None if answer == fa.WGSplatFragLayout(out_shape) else f"not a splat of {out_shape}"
    if not isinstance(answer, fa.TiledLayout) or not isinstance(LAYOUT, fa.TiledLayout):
        return None  # a strided reduction: its placement is not checked here
    want, got = projected(LAYOUT, SHAPE, out_shape), [set(row.tolist()) for row in holders(answer, out_shape)]
    wrong = [t for t in range(THREADS) if got[t] != want[t]]
    return f"{len(wrong)} threads hold other elements than their own reduce into" if wrong else None


def judge_reshape(answer):
    """None where the layout on the new shape keeps every element in its thread and register; else why not."""
    if isinstance(LAYOUT, fa.WGSplatFragLayout) or not isinstance(answer, fa.TiledLayout):
        return None if not isinstance(LAYOUT, fa.WGSplatFragLayout) or answer == fa.WGSplatFragLayout(TARGET) else \\
            f"not a splat of {TARGET}"
    want, got = holders(LAYOUT, SHAPE), holders(answer, TARGET)
    moved = int((got != want).sum()) if got.shape == want.shape else got.size
    return f"{moved} elements held elsewhere after the reshape" if moved else None
'''


_JUDGE_ANSWER = '''want = DEFINITION
print("expected:", want, "(WORDS)")
print("observed:", answer)
sys.exit(0 if bool(answer) == want else 1)
'''
_JUDGE_LAYOUT = '''print("expected: a layout where WORDS, or the expression left unreduced")
if not isinstance(answer, cs.RegisterLayout):
    print("observed: left unreduced (a documented limit):", str(answer)[:100])
    sys.exit(0)
why = JUDGE(answer.value)
print("observed:", str(answer.value)[:100], "" if why is None else f"({why})")
sys.exit(0 if why is None else 1)
'''


def _layout_source(layout: Mapping[str, Any]) -> str:
    """The script line that builds the case's layout: a tiled one canonical, as Mosaic's users build them."""
    from layoutfuzz.harness.targets.mosaic_layouts import tiled_source

    if layout["kind"] == "splat":
        return f"fa.WGSplatFragLayout({tuple(layout['shape'])!r})"
    if layout["kind"] == "strided":
        return f"fa.WGStridedFragLayout({tuple(layout['shape'])!r}, {layout['vec_size']})"
    return f"{tiled_source(layout)}.canonicalize()"


def reproducer(case: Case) -> str | None:
    """A script that needs only JAX and NumPy: the relation's call on the case's layout, judged by its definition
    inline (a yes or no), or for reduce and reshape by where each element sits (Mosaic's own index code on NumPy
    integers): exit 1 while Mosaic's answer differs (or it raises on an input inside the relation's domain), 0 once
    it agrees or leaves the expression unreduced (its documented limit), 2 where this JAX lacks the API."""
    from layoutfuzz.harness.targets.mosaic_layouts import HOLDERS

    p = case.params
    if p["op"] not in _SCRIPT_CALLS:
        return None
    call, definition, words = _SCRIPT_CALLS[p["op"]]
    layout = p["layout"]
    constants = {"SHAPE": tuple(p.get("shape") or layout["shape"]), "TILES": tuple(tuple(t) for t in layout.get("tiles", ())),
                 "TARGET": tuple(p["target"]) if "target" in p else None, "AXES": tuple(p.get("axes", ())),
                 "KEEP_DIMS": p.get("keep_dims"), "BITWIDTH": p.get("bitwidth")}
    lines = "".join(f"{k} = {v!r}\n" for k, v in constants.items() if v is not None)
    relation = relation_of(p)
    judge = (_JUDGE_ANSWER.replace("DEFINITION", definition) if definition else
             _JUDGE_LAYOUT.replace("JUDGE", f"judge_{p['op']}")).replace("WORDS", words)
    return f'''"""Mosaic GPU's {relation} ({p["op"]}, {case.case_id}, found by layoutfuzz): the input is inside the relation's
domain (a layout Mosaic constructs, a shape its tiling applies to where the relation needs one), so Mosaic must answer,
and answer as the relation's definition does. Needs only JAX and NumPy; runs on a CPU. Exit 1 while Mosaic's answer
differs (or it raises), 0 once it agrees, 2 where this JAX lacks the API."""
import sys
from collections import namedtuple

import numpy as np

try:
    import jax
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import layouts
    from jax.experimental.mosaic.gpu import utils
except ImportError as exc:
    print("unavailable:", exc)
    sys.exit(2)

REPLICATED = fa.Replicated
Site = namedtuple("Site", "shape memory_space")  # what a constraint variable's key tells: a value's shape and memory
{lines}LAYOUT = {_layout_source(layout)}
{HOLDERS}{_DEFINITIONS}

print("jax", jax.__version__)
try:
    answer = {call}
except Exception as exc:
    print("expected: an answer (the input is inside the relation's domain)")
    print("observed: raised", f"{{type(exc).__name__}}: {{exc}}"[:300])
    sys.exit(1)
{judge}'''
