"""Samplers of Mosaic GPU register layouts: wgmma fragments of any N, Mosaic's named tiled layouts on array shapes
they tile, and random tiled layouts (a tiling, warp, lane and vector dims) with power-of-two sizes.

A tiled layout is plain data: ``tiles`` (lists of ints), ``warp_dims`` and ``lane_dims`` (major to minor; a negative
int is a tiled dim, ``{"replicated": n}`` a replication), ``vector_dim`` and the array ``shape``."""

from __future__ import annotations

from math import prod
from typing import Any

from layoutfuzz.generators.source import Source, permutation
from layoutfuzz.oracles.mosaic_layouts import LANES, WARPS
from layoutfuzz.oracles.mosaic_relations import tiled_dims

R = "replicated"
# Mosaic GPU's named layouts (jax 0.10.2, jax/experimental/mosaic/gpu/fragmented_array.py), as data
NAMED: dict[str, dict[str, Any]] = {
    "WGMMA_LAYOUT": {"tiles": [[64, 8], [16, 8], [8, 8], [2]], "warp_dims": [-7], "lane_dims": [-3, -2], "vector_dim": -1},
    "WGMMA_LAYOUT_ACC_32BIT": {"tiles": [[64, 8], [16, 8], [8, 8], [2], [1]], "warp_dims": [-8], "lane_dims": [-4, -3],
                               "vector_dim": -1},
    "WGMMA_LAYOUT_8BIT": {"tiles": [[64, 16], [16, 16], [8, 16], [4]], "warp_dims": [-7], "lane_dims": [-3, -2],
                          "vector_dim": -1},
    "WGMMA_LAYOUT_UPCAST_2X": {"tiles": [[64, 16], [16, 16], [8, 16], [8], [4]], "warp_dims": [-8],
                               "lane_dims": [-4, -2, -3], "vector_dim": -1},
    "WGMMA_LAYOUT_UPCAST_4X": {"tiles": [[64, 32], [16, 32], [8, 32], [8]], "warp_dims": [-7], "lane_dims": [-3, -2],
                               "vector_dim": -1},
    "WGMMA_TRANSPOSED_LAYOUT": {"tiles": [[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], "warp_dims": [-10],
                                "lane_dims": [-6, -3, -5], "vector_dim": -2},
    "WGMMA_ROW_LAYOUT": {"tiles": [[64], [16], [8], [1]], "warp_dims": [-4], "lane_dims": [-2, {R: 4}], "vector_dim": -1},
    "WGMMA_COL_LAYOUT": {"tiles": [[8], [2]], "warp_dims": [{R: 4}], "lane_dims": [{R: 8}, -2], "vector_dim": -1},
    "TCGEN05_LAYOUT": {"tiles": [[128, 8], [32, 8], [8, 8], [2]], "warp_dims": [-7], "lane_dims": [-3, -2], "vector_dim": -1},
    "TCGEN05_TRANSPOSED_LAYOUT": {"tiles": [[128, 8], [32, 8], [8, 8], [2, 2], [2, 1]], "warp_dims": [-10],
                                  "lane_dims": [-6, -3, -5], "vector_dim": -2},
    "TMEM_NATIVE_LAYOUT": {"tiles": [[128, 2], [32, 2]], "warp_dims": [-4], "lane_dims": [-2], "vector_dim": -1},
    "TMA_INDICES_LAYOUT": {"tiles": [[16], [4]], "warp_dims": [-2], "lane_dims": [{R: 32}], "vector_dim": -1},
}
# the wgmma fragments Mosaic's layouts stand for: (named layout, PTX fragment, columns a step)
WGMMA = {"WGMMA_LAYOUT": ("accumulator", 8), "WGMMA_LAYOUT_ACC_32BIT": ("accumulator", 8), "WGMMA_LAYOUT_8BIT": ("a8", 16)}
MAX_ELEMENTS = 1 << 14
ODD_FACTORS = (1, 1, 1, 1, 1, 1, 3, 5, 7)  # a non-power-of-two base tile dim in one case of three


def mosaic_layout_case(source: Source) -> dict[str, Any]:
    """One case: {"family": "wgmma" | "named" | "random", ...the layout..., "shape"}."""
    family = source.choice(("wgmma", "named", "random", "random"))
    if family == "wgmma":
        name = source.choice(tuple(WGMMA))
        step = WGMMA[name][1]
        return {"family": family, "name": name, **NAMED[name], "shape": [64, step * source.integer(1, 256 // step)]}
    if family == "named":
        name = source.choice(tuple(NAMED))
        layout = NAMED[name]
        return {"family": family, "name": name, **layout, "shape": _shape(source, layout["tiles"][0])}
    return {"family": family, **random_tiled_layout(source, any_sizes=True)}


def _shape(source: Source, base: list[int]) -> list[int]:
    """The base tile times a power of two per dim, at most MAX_ELEMENTS in all."""
    shape = [n << source.integer(0, 2) for n in base]
    while prod(shape) > MAX_ELEMENTS:
        shape[shape.index(max(shape))] //= 2
    return [max(n, b) for n, b in zip(shape, base)]



def random_tiled_layout(source: Source, any_sizes: bool = False) -> dict[str, Any]:
    """A tiling of 1-3 dims (a base tile of 2**7 to 2**12 elements, with ``any_sizes`` one in three with a dim 3, 5 or 7
    times a power of two, then 1-3 finer power-of-two tiles of its trailing dims), the
    4 warps and 32 lanes over tiled dims (a replication where the drawn dims hold fewer), a vector dim, a shape."""
    rank = source.choice((2, 1, 2, 3))
    bits = [0] * rank
    for _ in range(source.integer(7, 12)):
        bits[source.integer(0, rank - 1)] += 1
    tiles = [[1 << b for b in bits]]
    odd = source.choice(ODD_FACTORS) if any_sizes else 1  # Mosaic's tilings take any positive sizes
    if odd > 1 and prod(tiles[0]) * odd <= MAX_ELEMENTS:
        tiles[0][source.integer(0, rank - 1)] *= odd
    for _ in range(source.integer(1, 3)):
        last = tiles[-1]
        k = source.integer(1, len(last))
        tiles.append([1 << source.integer(0, (t & -t).bit_length() - 1) for t in last[-k:]])  # powers of two dividing t
    sizes = [d.size for d in tiled_dims(tiles[0], tiles)][rank:]
    free = [d - len(sizes) for d in permutation(source, len(sizes))]  # the tiled dims, as negative indices, shuffled

    def take(total: int) -> list[Any]:
        chosen, left = [], total
        for d in list(free):
            if left > 1 and sizes[d] > 1 and left % sizes[d] == 0 and source.integer(0, 3):
                chosen.append(d)
                free.remove(d)
                left //= sizes[d]
        if left > 1:
            chosen.insert(source.integer(0, len(chosen)), {R: left})
        return chosen

    warp_dims = take(WARPS)
    lane_dims = take(LANES)
    vector_dim = source.choice(free) if free else None
    if vector_dim is None:  # every tiled dim went to warps and lanes: a vector of one, as Mosaic's own (1,) tile
        tiles.append([1])
        warp_dims = [d - 1 if isinstance(d, int) else d for d in warp_dims]
        lane_dims = [d - 1 if isinstance(d, int) else d for d in lane_dims]
        vector_dim = -1
    return {"tiles": tiles, "warp_dims": warp_dims, "lane_dims": lane_dims, "vector_dim": vector_dim,
            "shape": _shape(source, tiles[0])}
