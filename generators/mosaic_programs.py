"""Small Mosaic GPU programs for layout inference: an ``llvm.mlir_undef`` root, cast (or not) to a layout, then a chain
of 1 to 4 ops (a reduction over any axis, the same followed by a keepdims-like ``shape_cast``, ``broadcast_in_dim``
into a new dim or over a dim of 1, an elementwise add with a second, differently cast operand, a ``shape_cast``, a
layout cast of an op's result). Ops are the plain data of ``oracles.mosaic_inference``.

Roots: ranks 1 to 4, every named layout (WGMMA*, WGMMA_ROW/COL, TCGEN05*, TMEM_NATIVE, TMA_INDICES*), random tiled
layouts, strided (vectors of 1 to 8) and splat layouts, or none; shapes that the tiling applies to (odd multiples of
the tile, leading dims of 1 and primes). A quarter of the cases are on the edges: dims of 1 and primes, shapes below
the base tile (a cast Mosaic must refuse), odd multiples."""

from __future__ import annotations

from math import prod
from typing import Any

from layoutfuzz.generators.mosaic_layouts import NAMED
from layoutfuzz.generators.mosaic_relations import strided, tileable_shape, tiled
from layoutfuzz.generators.source import Source
from layoutfuzz.oracles.mosaic_inference import applies, value_shapes

R = "replicated"
# the named layouts generators.mosaic_layouts leaves out (jax 0.10.2 fragmented_array.py)
EXTRA_NAMED: dict[str, dict[str, Any]] = {
    "TCGEN05_ROW_LAYOUT": {"tiles": [[128], [32], [8], [1]], "warp_dims": [-4], "lane_dims": [-2, {R: 4}],
                           "vector_dim": -1},
    "TCGEN05_COL_LAYOUT": {"tiles": [[8], [2]], "warp_dims": [{R: 4}], "lane_dims": [{R: 8}, -2], "vector_dim": -1},
    "TMA_INDICES_4_LAYOUT": {"tiles": [[4]], "warp_dims": [{R: 4}], "lane_dims": [{R: 32}], "vector_dim": -1},
}
ALL_NAMED = {**NAMED, **EXTRA_NAMED}
CHAIN_OPS = ("reduce", "keepdims", "broadcast", "add", "shape_cast", "recast")
EDGE_DIMS = (1, 1, 2, 3, 5, 7, 13, 64, 128)
NEW_DIMS = (1, 2, 3, 5, 8, 16, 64, 128)
MAX_ELEMENTS = 1 << 15


def named(name: str) -> dict[str, Any]:
    return {"kind": "tiled", "name": name, **ALL_NAMED[name]}


def program(source: Source) -> dict[str, Any]:
    """One program: {"ops", "chain" (the kinds drawn), "edge"}."""
    edge = source.integer(0, 3) == 0
    ops: list[dict[str, Any]] = []
    current = _root(source, ops, edge)
    chain = []
    for _ in range(source.choice((1, 2, 2, 3, 3, 4))):
        shape = value_shapes(ops)[current]
        kinds = [k for k in CHAIN_OPS if FEASIBLE[k](shape)]
        kind = source.choice(kinds)
        current = DRAW[kind](source, ops, current, shape, edge)
        chain.append(kind)
    return {"ops": ops, "chain": chain, "edge": edge}


def _root(source: Source, ops: list[dict[str, Any]], edge: bool) -> int:
    """An undef value, cast to a drawn layout unless the draw says none; its index."""
    kind = source.choice(("named", "named", "named", "random", "strided", "splat", "none"))
    if kind == "strided":
        layout = strided(source, edge)
        return _undef_cast(ops, layout["shape"], layout)
    if kind in ("named", "random"):
        layout = named(source.choice(tuple(ALL_NAMED))) if kind == "named" else tiled(source)
        base = layout["tiles"][0]
        shape = _edge_shape(source) if edge and source.integer(0, 1) else tileable_shape(source, base, edge)
        return _undef_cast(ops, shape, layout)
    shape = _edge_shape(source) if edge else tileable_shape(source, source.choice(([64, 8], [128], [128, 8])), False)
    return _undef_cast(ops, shape, {"kind": "splat", "shape": shape} if kind == "splat" else None)


def _edge_shape(source: Source) -> list[int]:
    shape = [source.choice(EDGE_DIMS) for _ in range(source.integer(1, 4))]
    while prod(shape) > MAX_ELEMENTS:
        shape[shape.index(max(shape))] = 1
    return shape


def _undef_cast(ops: list[dict[str, Any]], shape: list[int], layout: dict[str, Any] | None) -> int:
    ops.append({"op": "undef", "shape": list(shape)})
    if layout is not None:
        ops.append({"op": "cast", "src": len(ops) - 1, "layout": layout})
    return len(ops) - 1


def _reduce(source: Source, ops: list[dict[str, Any]], src: int, shape: tuple[int, ...], edge: bool) -> int:
    rank = len(shape)
    axes = sorted({source.integer(0, rank - 1) for _ in range(source.choice((1, 1, 1, 2)))})
    if len(axes) == rank:
        axes = axes[:-1]
    out = [n for i, n in enumerate(shape) if i not in axes]
    ops.append({"op": "undef", "shape": out})
    ops.append({"op": "reduce", "src": src, "acc": len(ops) - 1, "axes": axes})
    return len(ops) - 1


def _keepdims(source: Source, ops: list[dict[str, Any]], src: int, shape: tuple[int, ...], edge: bool) -> int:
    """A reduction, then a shape_cast putting the reduced axes back as 1s (jnp's keepdims=True)."""
    reduced = _reduce(source, ops, src, shape, edge)
    axes = ops[reduced]["axes"]
    ops.append({"op": "shape_cast", "src": reduced, "shape": [1 if i in axes else n for i, n in enumerate(shape)]})
    return len(ops) - 1


def _broadcast(source: Source, ops: list[dict[str, Any]], src: int, shape: tuple[int, ...], edge: bool) -> int:
    """A new dim at any place (rank below 4), or a dim of 1 stretched."""
    ones = [i for i, n in enumerate(shape) if n == 1]
    room = MAX_ELEMENTS // max(1, prod(shape))
    sizes = [n for n in NEW_DIMS if n <= room and n > 1] or [1]
    if ones and (len(shape) == 4 or source.integer(0, 1)):
        i = source.choice(ones)
        out = [source.choice(sizes) if k == i else n for k, n in enumerate(shape)]
        dims = list(range(len(shape)))
    else:
        place = source.integer(0, len(shape))
        out = [*shape[:place], source.choice(sizes), *shape[place:]]
        dims = [k if k < place else k + 1 for k in range(len(shape))]
    ops.append({"op": "broadcast", "src": src, "shape": out, "dims": dims})
    return len(ops) - 1


def _add(source: Source, ops: list[dict[str, Any]], src: int, shape: tuple[int, ...], edge: bool) -> int:
    """An add with a second operand: uncast, a splat, a strided layout or any named layout that applies."""
    options: list[dict[str, Any] | None] = [None, {"kind": "splat", "shape": list(shape)}]
    vectors = [v for v in (1, 2, 4) if prod(shape) % (128 * v) == 0]
    if vectors:
        options.append({"kind": "strided", "shape": list(shape), "vec_size": source.choice(vectors)})
    options += [named(n) for n in ALL_NAMED if applies(named(n), shape)]
    other = _undef_cast(ops, list(shape), source.choice(options))
    a, b = (src, other) if source.integer(0, 1) else (other, src)
    ops.append({"op": "add", "a": a, "b": b})
    return len(ops) - 1


def _shape_cast(source: Source, ops: list[dict[str, Any]], src: int, shape: tuple[int, ...], edge: bool) -> int:
    """A 1 inserted anywhere, a 1 dropped, or two adjacent dims merged."""
    ones = [i for i, n in enumerate(shape) if n == 1]
    choices = (["insert"] if len(shape) < 4 else []) + (["drop"] if ones and len(shape) > 1 else []) + (
        ["merge"] if len(shape) > 1 else [])
    how = source.choice(choices)
    out = list(shape)
    if how == "insert":
        out.insert(source.integer(0, len(shape)), 1)
    elif how == "drop":
        out.pop(source.choice(ones))
    else:
        i = source.integer(0, len(shape) - 2)
        out[i:i + 2] = [shape[i] * shape[i + 1]]
    ops.append({"op": "shape_cast", "src": src, "shape": out})
    return len(ops) - 1


def _recast(source: Source, ops: list[dict[str, Any]], src: int, shape: tuple[int, ...], edge: bool) -> int:
    """A layout cast of an op's result to a named layout that applies (else a splat)."""
    fits = [named(n) for n in ALL_NAMED if applies(named(n), shape)]
    layout = source.choice(fits) if fits else {"kind": "splat", "shape": list(shape)}
    ops.append({"op": "cast", "src": src, "layout": layout})
    return len(ops) - 1


DRAW = {"reduce": _reduce, "keepdims": _keepdims, "broadcast": _broadcast, "add": _add, "shape_cast": _shape_cast,
        "recast": _recast}
FEASIBLE = {"reduce": lambda s: len(s) > 1, "keepdims": lambda s: len(s) > 1,
            "broadcast": lambda s: len(s) < 4 or 1 in s, "add": lambda s: True,
            "shape_cast": lambda s: len(s) < 4 or 1 in s or len(s) > 1, "recast": lambda s: True}
