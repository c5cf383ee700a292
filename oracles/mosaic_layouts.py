"""Which thread of a warpgroup and which register hold each element of an array in a Mosaic GPU register layout.

Two sources of truth:

- ``tiled_layout``: the F2 layout a ``TiledLayout`` denotes, from its documented definition (Mosaic GPU,
  ``fragmented_array.py``, the ``Tiling`` and ``TiledLayout`` docstrings; XLA's tiled layouts): a tiling unfolds each
  trailing dim of the array into (dim / tile, tile) and moves the tile dims to the end, tile after tile; then the dims
  named by ``warp_dims`` are split over the 4 warps and those of ``lane_dims`` over the 32 lanes (major to minor, a
  ``Replicated(n)`` taking n of them without a dim), ``vector_dim`` is the elements of one register, and the other
  dims are the registers, row-major. With power-of-two sizes every tiled dim is a run of bits of one array dim, so the
  map (register, lane, warp) -> array coordinates is F2-linear (seed 001, Def 4.10).
- ``wgmma_fragment``: the register fragments of PTX ISA 9.7.15.5.1.1 (Figures 148-149, warp w of the warpgroup holding
  rows 16w..16w+15 as ``mma.m16n8k16``/``m16n8k32`` fragments, 9.7.14.5.8-9): accumulator D and 16-bit A
  (``row = groupID + 8 * ((i >> 1) & 1)``, ``col = 2 * threadID_in_group + (i & 1) + 8 * (i >> 2)``) and 8-bit A
  (``row = groupID + 8 * ((i >> 2) & 1)``, ``col = 4 * threadID_in_group + (i & 3) + 16 * (i >> 3)``), for any N.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout, log2_exact

WARPS = 4
LANES = 32
THREADS = WARPS * LANES


@dataclass(frozen=True)
class Replicated:
    """``Replicated(times)``: ``times`` warps or lanes that hold the same elements (no dim of the array)."""

    times: int


Dim = int | Replicated  # a negative index into the tiled dims, or a replication


def tiled_shape(shape: Sequence[int], tiles: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The array's shape after the tiling (Tiling docstring: the trailing dims unfold into (dim / tile, tile), the
    tile dims moved to the end)."""
    return tuple(size for _, _, size in tiled_dims(shape, tiles))


def tiled_dims(shape: Sequence[int], tiles: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
    """Each tiled dim as (array dim, its lowest bit, size): which run of an array dim's index bits it counts."""
    dims = [(i, 0, int(n)) for i, n in enumerate(shape)]
    for tile in tiles:
        if not tile or len(tile) > len(dims):
            raise LayoutError(f"tile {list(tile)} does not apply to a shape of rank {len(dims)}")
        head, tail = dims[:-len(tile)], dims[-len(tile):]
        outer, inner = [], []
        for (dim, low, size), t in zip(tail, tile):
            if t < 1 or size % t:
                raise LayoutError(f"tile {list(tile)} does not divide the tiled dims {[s for _, _, s in tail]}")
            outer.append((dim, low + log2_exact(t, "tile size"), size // t))
            inner.append((dim, low, t))
        dims = head + outer + inner
    return dims


def _split(dims: Sequence[Dim], sizes: Sequence[int], total: int, what: str) -> list[tuple[int | None, int]]:
    """(tiled dim or None, size) of each of ``dims``, minor first, checked to multiply to ``total``."""
    parts = [(None, d.times) if isinstance(d, Replicated) else (len(sizes) + d, sizes[d]) for d in dims]
    if prod(n for _, n in parts) != total:
        raise LayoutError(f"{what} dims {list(dims)} hold {prod(n for _, n in parts)}, not {total}")
    return parts[::-1]


def tiled_layout(shape: Sequence[int], tiles: Sequence[Sequence[int]], warp_dims: Sequence[Dim],
                 lane_dims: Sequence[Dim], vector_dim: int) -> LinearLayout:
    """(register, lane, warp) -> (dim0, dim1, ...): the F2 layout of a TiledLayout on an array of ``shape``; register
    = flat register index (row-major over the register array) times the vector length, plus the element of the
    vector."""
    for n in shape:
        log2_exact(n, "array dim")
    dims = tiled_dims(shape, tiles)
    sizes = [size for _, _, size in dims]
    suffix = len(dims) - len(shape)  # the tiling's own dims: warp, lane and vector dims index into them
    named = [d for d in (*warp_dims, *lane_dims, vector_dim) if not isinstance(d, Replicated)]
    if len(set(named)) != len(named) or any(not -suffix <= d < 0 for d in named):
        raise LayoutError(f"warp {list(warp_dims)}, lane {list(lane_dims)} and vector {vector_dim} dims must be distinct "
                          f"dims of the {suffix} tiled dims")
    out = [(f"dim{i}", int(n)) for i, n in enumerate(shape)]

    def bases(parts: Sequence[tuple[int | None, int]]) -> list[list[int]]:
        result = []
        for index, size in parts:
            for bit in range(log2_exact(size)):
                basis = [0] * len(shape)
                if index is not None:
                    dim, low, _ = dims[index]
                    basis[dim] = 1 << (low + bit)
                result.append(basis)
        return result

    warps = _split(warp_dims, sizes, WARPS, "warp")
    lanes = _split(lane_dims, sizes, LANES, "lane")
    vector = len(dims) + vector_dim
    used = {i for i, _ in (*warps, *lanes) if i is not None} | {vector}
    registers = [(vector, sizes[vector])] + [(i, sizes[i]) for i in reversed(range(len(dims))) if i not in used]
    return LinearLayout.from_bases({"register": bases(registers), "lane": bases(lanes), "warp": bases(warps)}, out)


def holders(layout: LinearLayout) -> np.ndarray:
    """[thread, register]: the row-major linear index of the element each thread holds in each register."""
    coords = layout.apply_all()  # packed input order: register fastest, then lane, then warp
    registers = layout.in_dim_size("register")
    shape = [size for _, size in layout.out_dims]
    index = np.zeros_like(coords[layout.out_dim_names[0]])
    for name, size in zip(layout.out_dim_names, shape):
        index = index * size + coords[name]
    return index.reshape(THREADS, registers)


FRAGMENTS = ("accumulator", "a16", "a8")  # wgmma D (and 16-bit A), 8-bit A


def wgmma_fragment(fragment: str, n: int) -> np.ndarray:
    """[thread, i]: (row, col) of fragment element i of each thread of the warpgroup, for a 64 x n matrix (PTX ISA
    9.7.15.5.1.1; ``a16`` is the accumulator's arrangement at n = 16, ``a8`` the 8-bit A at n = 32)."""
    if fragment not in FRAGMENTS:
        raise LayoutError(f"no wgmma fragment {fragment!r} ({', '.join(FRAGMENTS)})")
    per = 4 if fragment == "a8" else 2  # elements of a run along a row
    if n < 1 or n % (4 * per):
        raise LayoutError(f"a {fragment} fragment is {4 * per} columns at a time, not {n}")
    thread = np.arange(THREADS)[:, None]
    i = np.arange(64 * n // THREADS)[None, :]
    warp, group, tig = thread // LANES, thread % LANES // 4, thread % 4
    row = 16 * warp + group + 8 * ((i // per) % 2)
    col = per * tig + i % per + 4 * per * (i // (2 * per))
    return np.stack(np.broadcast_arrays(row, col), axis=-1)
