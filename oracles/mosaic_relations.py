"""Mosaic GPU's layout relations by their definitions, for any sizes (not only powers of two): whether a tiling
applies to a shape, where every element of an array sits (thread, register slot) in a tiled or strided layout, and the
relations built on these (a reduction's layout is the projection of its operand's; a reshape keeps every thread's
elements; a broadcast of a strided array keeps every element in its thread).

Sources: ``fragmented_array.py`` of jax 0.10.2 (the ``Tiling`` and ``TiledLayout`` docstrings: a tile applies to the
trailing dims, each divisible by it; warp and lane dims are split major to minor, ``Replicated(n)`` taking n warps or
lanes without a dim; the registers are the other tiled dims, row-major, each a vector along ``vector_dim``;
``WGStridedFragLayout``: "convert the array to 1D and then shard across threads", ``vec_size`` elements a thread at a
time). Nothing here imports JAX.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.mosaic_layouts import Dim, Replicated

WARPS = 4
LANES = 32
THREADS = WARPS * LANES


@dataclass(frozen=True)
class TiledDim:
    """One dim of a tiled array: which array dim it counts, the step of that dim's index per unit, and its size."""

    dim: int
    step: int
    size: int


def tiling_applies(tiles: Sequence[Sequence[int]], shape: Sequence[int]) -> bool:
    """Whether every tile, in turn, applies to the trailing dims of the (tiled) shape: no more dims than the shape has,
    each dividing the dim it tiles (the ``Tiling`` docstring; ``Tiling.tile_shape`` raises exactly where not)."""
    try:
        tiled_dims(shape, tiles)
    except LayoutError:
        return False
    return True


def tiled_dims(shape: Sequence[int], tiles: Sequence[Sequence[int]]) -> list[TiledDim]:
    """The tiled array's dims: each trailing dim of size n under a tile t unfolds into (n / t, t), the tile dims moved to
    the end, tile after tile. Raises LayoutError where a tile does not apply."""
    dims = [TiledDim(i, 1, int(n)) for i, n in enumerate(shape)]
    for tile in tiles:
        if not tile or len(tile) > len(dims):
            raise LayoutError("a tile has more dims than the shape it tiles")
        head, tail = dims[:-len(tile)], dims[-len(tile):]
        if any(t < 1 or d.size % t for d, t in zip(tail, tile)):
            raise LayoutError("a tile does not divide the dims it tiles")
        outer = [TiledDim(d.dim, d.step * t, d.size // t) for d, t in zip(tail, tile)]
        inner = [TiledDim(d.dim, d.step, t) for d, t in zip(tail, tile)]
        dims = head + outer + inner
    return dims


def _partition(index: np.ndarray, parts: Sequence[int | Replicated], sizes: Sequence[int], coords: list[np.ndarray], what: str,
               total: int) -> None:
    """Split ``index`` (a warp or lane number) over ``parts`` major to minor, writing each tiled dim's coordinate."""
    radices = [p.times if isinstance(p, Replicated) else sizes[p] for p in parts]
    if prod(radices) != total:
        raise LayoutError(f"the {what} dims hold {prod(radices)}, not {total}")
    stride = total
    for part, radix in zip(parts, radices):
        stride //= radix
        if not isinstance(part, Replicated):
            coords[part] = coords[part] + (index // stride) % radix


def tiled_placement(shape: Sequence[int], tiles: Sequence[Sequence[int]], warp_dims: Sequence[Dim],
                    lane_dims: Sequence[Dim], vector_dim: int) -> np.ndarray:
    """[thread, register slot]: the row-major index of the element each thread holds there; slot = register (row-major
    over the register array) times the vector length plus the element of the vector."""
    dims = tiled_dims(shape, tiles)
    sizes = [d.size for d in dims]
    n = len(dims)
    named = [d for d in (*warp_dims, *lane_dims, vector_dim) if not isinstance(d, Replicated)]
    if len(set(named)) != len(named) or any(not -n <= d < 0 for d in named):
        raise LayoutError("warp, lane and vector dims must be distinct tiled dims")
    named = [n + d for d in named]
    registers = [i for i in range(n) if i not in named]
    vector = n + vector_dim
    slots = prod(sizes[i] for i in registers) * sizes[vector]
    thread = np.arange(THREADS)[:, None]
    slot = np.arange(slots)[None, :]
    coords = [np.zeros((1, 1), dtype=np.int64) for _ in range(n)]
    _partition(thread // LANES % WARPS, [d if isinstance(d, Replicated) else n + d for d in warp_dims], sizes, coords, "warp", WARPS)
    _partition(thread % LANES, [d if isinstance(d, Replicated) else n + d for d in lane_dims], sizes, coords, "lane", LANES)
    coords[vector] = coords[vector] + slot % sizes[vector]
    rest = slot // sizes[vector]
    for i in reversed(registers):
        coords[i] = coords[i] + rest % sizes[i]
        rest = rest // sizes[i]
    index = [np.zeros((1, 1), dtype=np.int64) for _ in shape]
    for d, c in zip(dims, coords):
        index[d.dim] = index[d.dim] + c * d.step
    return np.broadcast_to(np.ravel_multi_index(tuple(index), tuple(shape)), (THREADS, slots)).astype(np.int64)


def strided_placement(shape: Sequence[int], vec_size: int) -> np.ndarray:
    """[thread, register slot] of a strided layout: element r * 128 * vec + t * vec + v is thread t's slot r * vec + v."""
    size = prod(shape)
    if vec_size < 1 or size % (vec_size * THREADS):
        raise LayoutError("a strided layout needs a size that is a multiple of 128 times its vector")
    registers = size // (vec_size * THREADS)
    r = np.arange(registers)[None, :, None]
    t = np.arange(THREADS)[:, None, None]
    v = np.arange(vec_size)[None, None, :]
    return (r * THREADS * vec_size + t * vec_size + v).reshape(THREADS, registers * vec_size)


def held(placement: np.ndarray) -> list[frozenset[int]]:
    """The set of elements each thread holds."""
    return [frozenset(row.tolist()) for row in placement]


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> tuple[int, ...]:
    """The shape after reducing ``axes``: dropped, or kept as 1."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape) if keep_dims or i not in axes)


def projected(placement: np.ndarray, shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> list[frozenset[int]]:
    """What each thread holds after a reduction that keeps every thread's partial results where they are: the elements
    of the reduced array its operand elements reduce into (a replicated result where the reduced axis crossed
    threads)."""
    coords = list(np.unravel_index(placement, tuple(shape)))
    kept = [np.zeros_like(c) if i in axes else c for i, c in enumerate(coords) if keep_dims or i not in axes]
    out = reduced_shape(shape, axes, keep_dims)
    flat = np.ravel_multi_index(tuple(kept), out) if kept else np.zeros_like(placement)
    return held(flat)


def strided_broadcast_is_local(src: Sequence[int], dst: Sequence[int], dims: Sequence[int], vec_size: int) -> bool:
    """Whether broadcasting a strided array of ``src`` into ``dst`` (src dim i -> dst dim dims[i]; a size-1 dim
    stretched) leaves every element of the result in the thread that holds the element it copies."""
    dst_place = strided_placement(dst, vec_size)
    src_index = np.zeros_like(dst_place)
    dst_coords = np.unravel_index(dst_place, tuple(dst))
    for n, d in zip(src, dims):
        src_index = src_index * n + (0 if n == 1 else dst_coords[d])
    owner = strided_owner(src, vec_size)
    return bool((owner[src_index] == np.arange(THREADS)[:, None]).all())


def strided_owner(shape: Sequence[int], vec_size: int) -> np.ndarray:
    """[element]: the thread that holds each element of a strided array."""
    return (np.arange(prod(shape)) // vec_size) % THREADS


def divides(tile: Sequence[int], multiple: Sequence[int]) -> bool:
    """Mosaic's ``Divides``: the tile has at most as many dims as ``multiple`` and each divides its dim, from the tail."""
    return len(tile) <= len(multiple) and all(m % t == 0 for t, m in zip(reversed(tile), reversed(multiple)))


def strided_vector_exists(shape: Sequence[int], bitwidth: int) -> bool:
    """Whether an array of byte-wide elements can have a strided layout at all: its size a multiple of 128 (a vector
    of 1); sub-byte elements are outside ``from_shaped_type``'s domain."""
    return bitwidth % 8 == 0 and prod(shape) % THREADS == 0
