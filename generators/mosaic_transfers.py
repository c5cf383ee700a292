"""Cases for Mosaic GPU's shared-memory transforms and transfer planning over the whole domain they accept: transform
attributes (tiles of rank 0-4 with sizes 1, primes, non-powers of two, the largest an attribute holds, each rounding
mode; every swizzle), nested shapes tiled (``Tiling.tile_nested_shape_strides``), transfer plans of named and random
register layouts against SMEM refs untiled, MMA-tiled or tiled at random (every element bitwidth 4-64, every
swizzle), the copy layouts of ``tiled_copy_smem_gmem_layout``, transposed and collapsed SMEM tilings, and the
``IsValidMmaTiling`` / ``MinorDimDivisibleBy`` constraints. A quarter of the cases or more sit on the domain's edges
(sizes 1 and primes, the extreme bitwidths and swizzles, tilings that do not apply)."""

from __future__ import annotations

from math import prod
from typing import Any

from layoutfuzz.generators.mosaic_layouts import NAMED, random_tiled_layout
from layoutfuzz.generators.source import Source, permutation

OPS = ("transform_attr", "nested_strides", "plan_transfer", "copy_layout", "transpose", "collapse_shape",
       "mma_tiling", "minor_divisible")
BITWIDTHS = (4, 8, 16, 32, 64)
SWIZZLES = (16, 32, 64, 128)
ROUNDINGS = (None, "UP", "DOWN")
TILE_SIZES = (1, 2, 3, 4, 5, 7, 8, 16, 24, 64, 128, 256)
EDGE_TILE_SIZES = (1, 2, 3, 13, 127, (1 << 31) - 1)  # 1, primes, the largest an i32 attribute holds
MAX_ELEMENTS = 1 << 13  # a transfer's array, judged element by element
PLAN_LAYOUTS = ("WGMMA_LAYOUT", "WGMMA_LAYOUT_8BIT", "WGMMA_TRANSPOSED_LAYOUT", "WGMMA_LAYOUT_UPCAST_2X",
                "WGMMA_LAYOUT_UPCAST_4X", "TCGEN05_LAYOUT", "TMEM_NATIVE_LAYOUT", "WGMMA_ROW_LAYOUT", "TMA_INDICES_LAYOUT")


def case(source: Source) -> dict[str, Any]:
    """One case: {"op", ...its inputs, "edge"}; ``bits`` and ``swizzle`` where the op takes them."""
    op = source.choice(OPS)
    edge = source.integer(0, 2) == 0
    return {"op": op, "edge": edge, **DRAW[op](source, edge)}


def _tiling(source: Source, edge: bool, rank: int) -> list[int]:
    return [source.choice(EDGE_TILE_SIZES if edge else TILE_SIZES) for _ in range(rank)]


def _transform_attr(source: Source, edge: bool) -> dict[str, Any]:
    if source.integer(0, 2) == 0:
        return {"swizzle": source.choice(SWIZZLES if not edge else (16, 128))}
    return {"tiling": _tiling(source, edge, source.integer(0, 4)), "rounding": source.choice(ROUNDINGS)}


def _divisor_tiling(source: Source, shape: list[int], rank: int, edge: bool) -> list[int]:
    """A tiling of the trailing ``rank`` dims: a divisor of each (1 and the dim itself included), sometimes not."""
    out = []
    for n in shape[len(shape) - rank:]:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        out.append(source.choice(divisors) if not (edge and source.integer(0, 3) == 0) else source.choice((2, 3, 5, n + 1)))
    return out


def _small_shape(source: Source, edge: bool, rank: int) -> list[int]:
    sizes = (1, 2, 3, 4, 6, 8, 12, 16) if not edge else (1, 1, 2, 5, 7, 13)
    return [source.choice(sizes) for _ in range(rank)]


def _nested_strides(source: Source, edge: bool) -> dict[str, Any]:
    rank = source.integer(1, 3)
    nested = [[source.choice((1, 2, 3, 4, 8) if not edge else (1, 2, 3, 5, 7)) for _ in range(source.integer(1, 2))]
              for _ in range(rank)]
    flat = [s for dim in nested for s in dim]
    order = permutation(source, len(flat)) if source.integer(0, 2) == 0 else list(range(len(flat)))
    strides_flat = [0] * len(flat)
    step = 1
    for i in reversed(order):  # contiguous over the sub-dims in ``order`` (row-major where unpermuted)
        strides_flat[i] = step
        step *= flat[i]
    strides, k = [], 0
    for dim in nested:
        strides.append(strides_flat[k:k + len(dim)])
        k += len(dim)
    shape = [prod(d) for d in nested]
    tiles = [_divisor_tiling(source, shape, source.integer(1, rank), edge)]
    if source.integer(0, 1):
        last = tiles[-1]
        k = source.integer(1, len(last))
        tiles.append([source.choice([d for d in range(1, t + 1) if t % d == 0]) for t in last[-k:]])
    return {"shape": shape, "nested_shape": nested, "nested_strides": strides, "tiles": tiles}


def _plan_transfer(source: Source, edge: bool) -> dict[str, Any]:
    bits = source.choice(BITWIDTHS if not edge else (4, 64))
    swizzle = source.choice(SWIZZLES if not edge else (16, 128))
    if source.integer(0, 1):
        name = source.choice(PLAN_LAYOUTS)
        layout = {"name": name, **NAMED[name]}
    else:
        layout = {k: v for k, v in random_tiled_layout(source).items() if k != "shape"}
    base = layout["tiles"][0]
    lead = [source.choice((1, 2, 3) if not edge else (1, 5)) for _ in range(source.integer(0, 1))]
    shape = lead + [b * source.choice((1, 1, 2, 3) if not edge else (1, 3, 5)) for b in base]
    while prod(shape) > MAX_ELEMENTS:
        i = max(range(len(shape)), key=lambda k: shape[k] // (base[k - len(lead)] if k >= len(lead) else 1))
        shape[i] = base[i - len(lead)] if i >= len(lead) else 1
    kind = source.choice(("mma", "mma", "none", "random"))
    swizzle_elems = swizzle * 8 // bits
    if kind == "mma" and len(shape) >= 2 and shape[-2] % 8 == 0 and shape[-1] % swizzle_elems == 0:
        smem = [8, swizzle_elems]
    elif kind == "random":
        smem = _divisor_tiling(source, shape, source.integer(1, len(shape)), False)
    else:
        smem = None
    return {"shape": shape, "layout": layout, "smem_tiling": smem, "bits": bits, "swizzle": swizzle}


def _copy_layout(source: Source, edge: bool) -> dict[str, Any]:
    tiles = (1, 2, 3, 4, 6, 8) if not edge else (1, 5, 7, 16)
    row, col = source.choice(tiles), source.choice(tiles)
    while row * col > 16:
        row, col = max(1, row // 2), col
        if row * col > 16:
            col = max(1, col // 2)
    return {"row_tiles": row, "col_tiles": col, "swizzle": source.choice(SWIZZLES if not edge else (16, 128)),
            "bits": source.choice(BITWIDTHS if not edge else (4, 64))}


def _transpose(source: Source, edge: bool) -> dict[str, Any]:
    rank = source.integer(1, 4)
    shape = _small_shape(source, edge, rank)
    tiling = None if source.integer(0, 4) == 0 else _divisor_tiling(source, shape, source.integer(1, rank), edge)
    return {"shape": shape, "tiling": tiling, "permutation": permutation(source, rank)}


def _collapse_shape(source: Source, edge: bool) -> dict[str, Any]:
    rank = source.integer(1, 4)
    shape = _small_shape(source, edge, rank)
    tiling = None if source.integer(0, 4) == 0 else _divisor_tiling(source, shape, source.integer(1, rank), edge)
    groups, left = [], rank
    while left:
        g = source.integer(1, left)
        groups.append(g)
        left -= g
    return {"shape": shape, "tiling": tiling, "groups": groups}


def _mma_tiling(source: Source, edge: bool) -> dict[str, Any]:
    bits = source.choice(BITWIDTHS if not edge else (4, 64))
    s = source.choice((16, 32, 64, 128))
    kind = source.choice(("valid", "valid", "row", "col", "rank", "none"))
    tiling: list[int] | None = [8, s * 8 // bits]
    if kind == "row":
        tiling = [source.choice((1, 4, 16, 64)), s * 8 // bits]
    elif kind == "col":
        tiling = [8, s * 8 // bits + source.choice((1, -1, s * 8 // bits))]
    elif kind == "rank":
        tiling = source.choice(([8], [1, 8, s * 8 // bits], []))
    elif kind == "none":
        tiling = None
    return {"tiling": tiling, "bits": bits, "allow_unswizzled": bool(source.integer(0, 1))}


def _minor_divisible(source: Source, edge: bool) -> dict[str, Any]:
    kind = source.choice(("tiled", "tiled", "tiled", "empty", "none"))
    tiling = _tiling(source, edge, source.integer(1, 3)) if kind == "tiled" else [] if kind == "empty" else None
    return {"tiling": tiling, "divisor": source.choice((1, 2, 3, 4, 8, 16, 7, 128) if not edge else (1, 13, 1 << 20))}


DRAW = {"transform_attr": _transform_attr, "nested_strides": _nested_strides, "plan_transfer": _plan_transfer,
        "copy_layout": _copy_layout, "transpose": _transpose, "collapse_shape": _collapse_shape,
        "mma_tiling": _mma_tiling, "minor_divisible": _minor_divisible}
