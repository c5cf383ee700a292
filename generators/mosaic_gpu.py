"""Samplers of Mosaic GPU kernels' parameters: TMA loads into swizzled shared memory (a window of a larger array, or
a whole array through Mosaic's ``TileTransform``) and wgmma from swizzled shared memory.

The shapes come from short lists, so that a campaign compiles each kernel once and runs it on many cases' data."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source

ELEMENT_BYTES = (1, 2, 4)
SWIZZLES = (0, 32, 64, 128)  # bytes; 0: none
ROWS = (1, 2, 3, 5, 8, 13, 16, 64)
TILE_ROWS = (8, 16, 64)
WGMMA_TYPES = ("f16", "bf16")


def mosaic_gpu_case(source: Source) -> dict[str, Any]:
    """{"family": "tma" | "tma_tiled" | "wgmma", ...}, each with a ``data_seed`` for its array's values."""
    family = source.choice(("tma", "tma_tiled", "wgmma"))
    data_seed = source.integer(0, (1 << 31) - 1)
    if family == "wgmma":
        swizzle = source.choice((128, 64, 32))
        tile = swizzle // 2  # 16-bit elements a swizzle row
        n = source.choice((64, 128, 192, 256))
        n -= n % tile
        return {"family": family, "dtype": source.choice(WGMMA_TYPES), "swizzle": swizzle, "m": 64 * source.integer(1, 2),
                "k": tile * source.choice((1, 2, 4)), "n": max(n, tile), "data_seed": data_seed}
    element = source.choice(ELEMENT_BYTES)
    swizzle = source.choice(SWIZZLES)
    if family == "tma":
        if swizzle:
            columns = swizzle // element
        else:
            columns = 16 * source.choice((1, 2, 4, 8)) // element
            columns = min(columns, 256)
        rows = source.choice(ROWS)
        return {"family": family, "element_bytes": element, "swizzle": swizzle, "rows": rows, "columns": columns,
                "row_offset": source.choice((0, 0, 1, 3, 7)), "data_seed": data_seed}
    span = (swizzle or 128) // element  # a tile row: the swizzle span (128 bytes without swizzling)
    tile_rows = source.choice(TILE_ROWS)
    return {"family": family, "element_bytes": element, "swizzle": swizzle, "tile": [tile_rows, span],
            "shape": [tile_rows * source.integer(1, 2), span * source.integer(1, 3)], "data_seed": data_seed}
