"""What Mosaic GPU's layout inference must answer for a small program, by each op's defining property: a layout
assignment (an in and out layout per op) is consistent when every layout applies to its value, every producer's layout
reaches its consumer by a relayout Mosaic performs, and each op's layouts satisfy the op's semantics, checked on the
placements of ``oracles.mosaic_relations`` (which thread holds which element).

Sources (jax 0.10.2, jax/experimental/mosaic/gpu): ``constraints.Relayout`` (its docstring: a strict relayout, between
ops, is the identity or from a splat; a layout cast may also take the transposes of ``_is_supported_tiled_relayout``);
``layout_inference._multi_dim_reduction_constraint_system`` (operand not strided, accumulator and result one variable,
result ``Reduce(operand)``) with ``constraints.Reduce`` (the reduced layout holds what each thread's elements reduce
into); ``FragmentedArray.broadcast_in_dim`` (a broadcast copies registers within a thread; a tiled result's tiling has
the result's rank); ``FragmentedArray.reshape``
(a reshape moves no element); the pointwise rule (operands and result one variable). Nothing here imports JAX.

A program is a list of ops, each making value ``i`` (its index): ``undef`` (``shape``), ``cast`` (``src``, ``layout``),
``reduce`` (``src``, ``acc``, ``axes``), ``broadcast`` (``src``, ``shape``, ``dims``: the result dim of each source
dim), ``add`` (``a``, ``b``) and ``shape_cast`` (``src``, ``shape``). A layout is the plain data of
``generators.mosaic_relations``: ``{"kind": "splat" | "strided" | "tiled", ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.oracles import mosaic_relations as rel
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.mosaic_layouts import Replicated

Layout = Mapping[str, Any]
OPERANDS = {"undef": (), "cast": ("src",), "reduce": ("src", "acc"), "broadcast": ("src",), "add": ("a", "b"),
            "shape_cast": ("src",)}
# Mosaic's names of the ops, for signatures and reports
MLIR_NAME = {"undef": "llvm.mlir_undef", "cast": "mgpu.layout_cast", "reduce": "vector.multi_reduction",
             "broadcast": "mgpu.broadcast_in_dim", "add": "arith.addf", "shape_cast": "vector.shape_cast"}
_WGMMA = {"tiles": [[64, 8], [16, 8], [8, 8], [2]], "warp_dims": [-7], "lane_dims": [-3, -2], "vector_dim": -1}
_WGMMA_T = {"tiles": [[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], "warp_dims": [-10], "lane_dims": [-6, -3, -5],
            "vector_dim": -2}
_TCGEN05 = {"tiles": [[128, 8], [32, 8], [8, 8], [2]], "warp_dims": [-7], "lane_dims": [-3, -2], "vector_dim": -1}
_TCGEN05_T = {"tiles": [[128, 8], [32, 8], [8, 8], [2, 2], [2, 1]], "warp_dims": [-10], "lane_dims": [-6, -3, -5],
              "vector_dim": -2}
# the tiled relayouts a layout cast performs for any element type (constraints._is_supported_tiled_relayout)
CAST_RELAYOUTS = ((_WGMMA, _WGMMA_T), (_WGMMA_T, _WGMMA), (_TCGEN05, _TCGEN05_T), (_TCGEN05_T, _TCGEN05))


@dataclass(frozen=True)
class Violation:
    """One broken property: the op (its index and kind) and the property, in words without numbers."""

    op: int
    kind: str
    prop: str
    detail: str

    @property
    def signature(self) -> str:
        return f"{MLIR_NAME[self.kind]}: {self.prop}"


def value_shapes(ops: Sequence[Mapping[str, Any]]) -> list[tuple[int, ...]]:
    """The shape of every op's result."""
    shapes: list[tuple[int, ...]] = []
    for op in ops:
        if op["op"] in ("undef", "broadcast", "shape_cast"):
            shapes.append(tuple(op["shape"]))
        elif op["op"] == "reduce":
            shapes.append(rel.reduced_shape(shapes[op["src"]], op["axes"], False))
        else:
            shapes.append(shapes[op[OPERANDS[op["op"]][0]]])
    return shapes


def operands(op: Mapping[str, Any]) -> list[int]:
    """The values an op reads, in operand order."""
    return [op[k] for k in OPERANDS[op["op"]]]


def _dims(data: Sequence[Any]) -> list[int | Replicated]:
    return [Replicated(d["replicated"]) if isinstance(d, Mapping) else d for d in data]


def placement(layout: Layout, shape: Sequence[int]) -> np.ndarray | None:
    """[thread, slot] -> element; None for a splat (every thread holds every element). Raises LayoutError where the
    layout does not apply to ``shape``."""
    if layout["kind"] == "splat":
        if tuple(layout["shape"]) != tuple(shape):
            raise LayoutError("a splat of another shape")
        return None
    if layout["kind"] == "strided":
        if tuple(layout["shape"]) != tuple(shape):
            raise LayoutError("a strided layout of another shape")
        return rel.strided_placement(shape, layout["vec_size"])
    return rel.tiled_placement(shape, layout["tiles"], _dims(layout["warp_dims"]), _dims(layout["lane_dims"]),
                               layout["vector_dim"])


def applies(layout: Layout, shape: Sequence[int]) -> bool:
    """Whether a layout may be assigned to a value of ``shape`` (a tiling that applies, a splat or strided layout of
    that shape whose size a strided vector divides)."""
    if layout["kind"] == "tiled":
        return rel.tiling_applies(layout["tiles"], shape)
    try:
        placement(layout, shape)
    except LayoutError:
        return False
    return True


def same(a: Layout, b: Layout, shape: Sequence[int]) -> bool:
    """Whether two layouts place every element of ``shape`` in the same thread and slot (both splats, or equal
    placements)."""
    pa, pb = placement(a, shape), placement(b, shape)
    if pa is None or pb is None:
        return pa is None and pb is None
    return pa.shape == pb.shape and bool((pa == pb).all())


def relayout_ok(src: Layout, dst: Layout, shape: Sequence[int], cast: bool) -> bool:
    """Whether Mosaic relays ``src`` out to ``dst``: the identity, a splat to any layout of the shape, and in a layout
    cast the tiled transposes (``constraints.Relayout``)."""
    if same(src, dst, shape) or (src["kind"] == "splat" and applies(dst, shape)):
        return True
    return cast and any(_is(src, a, shape) and _is(dst, b, shape) for a, b in CAST_RELAYOUTS)


def _is(layout: Layout, named: Mapping[str, Any], shape: Sequence[int]) -> bool:
    """Whether a layout is this named one (Mosaic matches the layout objects, not their placements)."""
    return layout["kind"] == "tiled" and all(layout.get(k) == v for k, v in named.items())


def holds(layout: Layout, shape: Sequence[int]) -> list[frozenset[int]] | None:
    """The elements each thread holds; None for every element (a splat)."""
    p = placement(layout, shape)
    return None if p is None else rel.held(p)


def _full(got: list[frozenset[int]] | None, size: int) -> bool:
    return got is None or all(len(h) == size for h in got)


def same_holders(got: list[frozenset[int]] | None, want: list[frozenset[int]] | None, size: int) -> bool:
    """Whether every thread holds exactly the wanted elements (None: all of them)."""
    if got is None or want is None:
        return _full(got, size) and _full(want, size)
    return got == want


def reduced_holders(layout: Layout, shape: Sequence[int], axes: Sequence[int]) -> list[frozenset[int]] | None:
    """What each thread holds after reducing ``axes`` of an array in ``layout``, its partial results kept in place."""
    p = placement(layout, shape)
    return None if p is None else rel.projected(p, shape, axes, False)


def broadcast_is_local(src: Layout, dst: Layout, src_shape: Sequence[int], dst_shape: Sequence[int],
                       dims: Sequence[int]) -> bool:
    """Whether every element of the broadcast result sits in a thread that holds the element it copies (source dim i
    is result dim dims[i]; a source dim of 1 is stretched)."""
    have = holds(src, src_shape)
    if have is None:
        return True
    out = placement(dst, dst_shape)
    if out is None:
        return all(len(h) == prod(src_shape) for h in have)
    coords = np.unravel_index(out, tuple(dst_shape))
    source = np.zeros_like(out)
    for n, d in zip(src_shape, dims):
        source = source * n + (0 if n == 1 else coords[d])
    return all(set(source[t].tolist()) <= have[t] for t in range(rel.THREADS))


def broadcast_is_projection(src: Layout, dst: Layout, src_shape: Sequence[int], dst_shape: Sequence[int],
                            dims: Sequence[int]) -> bool:
    """Whether each thread holds exactly the source elements its result elements copy (the result's placement reduced
    over the new and the stretched dims; dropping dims of 1 keeps row-major indices)."""
    axes = [d for d in range(len(dst_shape)) if d not in dims or src_shape[list(dims).index(d)] == 1]
    want = rel.projected(placement(dst, dst_shape), dst_shape, axes, True)
    return holds(src, src_shape) == want


def check(ops: Sequence[Mapping[str, Any]], layouts: Sequence[Mapping[str, Any]]) -> list[Violation]:
    """Every violated property of an assignment: ``layouts[i]`` is op i's ``{"in": [...], "out": [...]}``."""
    shapes = value_shapes(ops)
    found: list[Violation] = []
    for i, op in enumerate(ops):
        found += check_op(i, op, layouts, shapes)
    return found


def check_op(i: int, op: Mapping[str, Any], layouts: Sequence[Mapping[str, Any]],
              shapes: Sequence[tuple[int, ...]]) -> list[Violation]:
    kind, got = op["op"], layouts[i]
    args = operands(op)
    if len(got["in"]) != len(args) or len(got["out"]) != 1:
        return [Violation(i, kind, "missing layouts", f"{len(got['in'])} in, {len(got['out'])} out")]
    ins, out = got["in"], got["out"][0]
    for layout, shape, what in [*zip(ins, [shapes[a] for a in args], ["operand"] * len(args)), (out, shapes[i], "result")]:
        if not applies(layout, shape):
            return [Violation(i, kind, f"{what} layout does not apply to its value", f"{layout} on {list(shape)}")]
    found = [Violation(i, kind, "operand not relaid out from its producer by a supported relayout",
                       f"{layouts[a]['out'][0]} -> {ins[k]}")
             for k, a in enumerate(args) if not relayout_ok(layouts[a]["out"][0], ins[k], shapes[a], cast=False)]
    problem = PROPERTY[kind](op, ins, out, shapes, args)
    return found + ([Violation(i, kind, problem[0], problem[1])] if problem else [])


def _undef(op, ins, out, shapes, args):
    return None


def _cast(op, ins, out, shapes, args):
    shape = shapes[args[0]]
    if not same(out, op["layout"], shape):
        return "result is not the cast layout", f"{out}, cast to {op['layout']}"
    if not relayout_ok(ins[0], out, shape, cast=True):
        return "operand not relaid out to the cast layout by a supported relayout", f"{ins[0]} -> {out}"
    return None


def _reduce(op, ins, out, shapes, args):
    src_shape, out_shape = shapes[args[0]], shapes[args[1]]
    if ins[0]["kind"] == "strided":
        return "strided operand", f"{ins[0]}"
    if not same(ins[1], out, out_shape):
        return "accumulator layout differs from the result's", f"{ins[1]} vs {out}"
    want = reduced_holders(ins[0], src_shape, op["axes"])
    if not same_holders(holds(out, out_shape), want, prod(out_shape)):
        return "result does not hold what each thread's operand elements reduce into", f"{ins[0]} reduced to {out}"
    return None


def _broadcast(op, ins, out, shapes, args):
    if ins[0]["kind"] == "tiled" and out["kind"] == "tiled" and len(out["tiles"][0]) != len(op["shape"]):
        # FragmentedArray.broadcast_in_dim: "Tiling rank different than broadcast result rank" (NotImplementedError)
        return "tiled result whose tiling rank is not the result's rank", f"{out} on {op['shape']}"
    if ins[0]["kind"] == "tiled" and out["kind"] == "tiled" and not broadcast_is_projection(
            ins[0], out, shapes[args[0]], op["shape"], op["dims"]):
        # FragmentedArray.broadcast_in_dim: the source layout is the result's reduced over the new dims
        return "tiled operand is not the result's layout reduced over the new dims", f"{ins[0]} -> {out}"
    if ins[0]["kind"] == "strided" and out["kind"] == "strided" and not into_leading_dims(
            shapes[args[0]], op["shape"], op["dims"]):
        # FragmentedArray.broadcast_in_dim (is_supported_strided_layout_broadcast): new dims lead, stretched dims first
        return "strided broadcast other than into leading dims", f"{shapes[args[0]]} -> {op['shape']} by {op['dims']}"
    if not broadcast_is_local(ins[0], out, shapes[args[0]], op["shape"], op["dims"]):
        return "a result element sits in another thread than the element it copies", f"{ins[0]} -> {out}"
    return None


def into_leading_dims(src: Sequence[int], dst: Sequence[int], dims: Sequence[int]) -> bool:
    """Whether a broadcast only adds leading dims and stretches size-1 dims that come before every kept one: the
    strided broadcasts Mosaic lowers."""
    stretched = [i for i, n in enumerate(src) if n == 1 and dst[dims[i]] > 1]
    kept = [i for i, n in enumerate(src) if n > 1]
    trailing = list(dims) == list(range(len(dst) - len(src), len(dst)))
    return trailing and (not stretched or not kept or max(stretched) < min(kept))


def _add(op, ins, out, shapes, args):
    shape = shapes[args[0]]
    if not (same(ins[0], out, shape) and same(ins[1], out, shape)):
        return "operands and result do not share a layout", f"{ins[0]}, {ins[1]} -> {out}"
    return None


def _shape_cast(op, ins, out, shapes, args):
    if not same_flat(ins[0], out, shapes[args[0]], op["shape"]):
        return "an element moves to another thread or slot", f"{ins[0]} -> {out}"
    return None


def same_flat(a: Layout, b: Layout, shape_a: Sequence[int], shape_b: Sequence[int]) -> bool:
    """Whether a reshape from ``a`` on ``shape_a`` to ``b`` on ``shape_b`` moves no element (row-major indices)."""
    pa, pb = placement(a, shape_a), placement(b, shape_b)
    if pa is None or pb is None:
        return pa is None and pb is None
    return pa.shape == pb.shape and bool((pa == pb).all())


PROPERTY = {"undef": _undef, "cast": _cast, "reduce": _reduce, "broadcast": _broadcast, "add": _add,
            "shape_cast": _shape_cast}
