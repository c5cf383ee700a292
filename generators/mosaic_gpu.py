"""Samplers of Mosaic GPU kernels' parameters: TMA loads into swizzled shared memory and stores out of it (a window of
a larger array, or a whole array through Mosaic's ``TileTransform``) and wgmma from swizzled shared memory.

The shapes come from short lists, so that a campaign compiles each kernel once and runs it on many cases' data."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source
from layoutfuzz.oracles.wgmma import WGMMA_N

ELEMENT_BYTES = (1, 2, 4)
SWIZZLES = (0, 32, 64, 128)  # bytes; 0: none
ROWS = (1, 2, 3, 5, 7, 8, 13, 16, 31, 64, 127, 128, 192, 256)  # box rows: the driver's 1 and 256, primes, powers of two
MAX_BOX_BYTES = 24 * 1024  # a box fits the probes' shared-memory window
TILE_ROWS = (8, 16, 64)
DIRECTIONS = ("load", "store")  # TMA: global to shared memory, or shared to global
CLUSTER_CTAS = (1, 2, 4)  # CTAs of a cluster a TMA load is multicast to (Mosaic's collective async_copy)
WGMMA_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8")  # PTX ISA 9.7.15.5: wgmma's input types that Mosaic takes
WGMMA_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1}
TRANSPOSABLE = ("f16", "bf16")  # PTX ISA 9.7.15.5 (imm-trans-a/b): only .f16/.bf16 operands may be MN-major
REGISTER_A = ("f16", "bf16", "e4m3", "e5m2", "s8")  # what Mosaic's wgmma takes as A in registers (PTX allows tf32 too)


def mosaic_gpu_case(source: Source) -> dict[str, Any]:
    """{"family": "tma" | "tma_tiled" | "wgmma", ...}, each with a ``data_seed`` for its array's values; a TMA family
    also with its ``direction``."""
    family = source.choice(("tma", "tma_tiled", "wgmma"))
    data_seed = source.integer(0, (1 << 31) - 1)
    if family == "wgmma":
        return {"family": family, **wgmma_shape(source), "data_seed": data_seed}
    if family == "tma":
        box = {"family": family, **tma_box(source), "data_seed": data_seed, "direction": source.choice(DIRECTIONS)}
        ctas = source.choice(CLUSTER_CTAS)  # a load multicast to a cluster's CTAs, each taking its share of the rows
        return {**box, "ctas": ctas if box["direction"] == "load" and multicast_share_bytes({**box, "ctas": ctas}) % 128 == 0 else 1}
    element = source.choice(ELEMENT_BYTES)
    swizzle = source.choice(SWIZZLES)
    span = (swizzle or 128) // element  # a tile row: the swizzle span (128 bytes without swizzling)
    tile_rows = source.choice(TILE_ROWS)
    return {"family": family, "element_bytes": element, "swizzle": swizzle, "tile": [tile_rows, span],
            "shape": [tile_rows * source.integer(1, 2), span * source.integer(1, 3)], "data_seed": data_seed,
            "direction": source.choice(DIRECTIONS)}


def multicast_share_bytes(p: dict[str, Any]) -> int:
    """The bytes of a window that each of ``ctas`` CTAs loads and multicasts (its rows split evenly), or 1 where they
    do not split evenly: each share lands at a multiple of its size, which a TMA destination needs 128-byte aligned."""
    rows, ctas = p["rows"], p["ctas"]
    return rows // ctas * p["columns"] * p["element_bytes"] if rows % ctas == 0 else 1


def wgmma_shape(source: Source) -> dict[str, Any]:
    """A wgmma case: the input type, the swizzle, B's major dimension in shared memory (``mn``: B as it lies, in
    (S, S) tiles; ``k``: B transposed in global memory, in (8, S) tiles), where A comes from, A's major dimension
    (``k``: A as it lies, in (64, S) tiles; ``mn``: A transposed in global memory, in (8, S) tiles, 16-bit types
    from shared memory only), and m, k, n. S is the elements of a swizzle row; k is 1, 2 or 4 of them; n is a
    multiple of S for an MN-major B, else any N of the type's shapes (``oracles.wgmma.WGMMA_N``)."""
    dtype = source.choice(WGMMA_TYPES)
    swizzle = source.choice((128, 64, 32))
    tile = swizzle // WGMMA_BYTES[dtype]
    b_major = source.choice(("mn", "k")) if dtype in TRANSPOSABLE else "k"
    registers = dtype in REGISTER_A and not (dtype == "s8" and swizzle == 32)  # Mosaic refuses s8 A in registers at 32B
    a_from = source.choice(("smem", "registers")) if registers else "smem"
    if b_major == "mn":
        n = tile * source.integer(1, 256 // tile)
    else:
        n = source.choice(WGMMA_N[dtype])
    m, k = 64 * source.integer(1, 2), tile * source.choice((1, 2, 4))
    a_major = source.choice(("k", "mn")) if dtype in TRANSPOSABLE and a_from == "smem" else "k"
    return {"dtype": dtype, "swizzle": swizzle, "b_major": b_major, "a_from": a_from, "a_major": a_major, "m": m, "k": k,
            "n": n}


def tma_box(source: Source) -> dict[str, Any]:
    """A 2-D TMA load: a window of ``rows`` x ``columns`` elements of 1, 2 or 4 bytes, starting ``row_offset`` rows
    into a larger array, into shared memory with a swizzle of none, 32, 64 or 128 bytes. With a swizzle, a row is the
    swizzle span; without one, 16 to 128 bytes in 16-byte units; its rows one of ``ROWS`` that fit 24 KiB. Every system that takes a 2-D box draws this (case model
    ``tma_boxes``, ``gpu.targets.tma_boxes``)."""
    element = source.choice(ELEMENT_BYTES)
    swizzle = source.choice(SWIZZLES)
    if swizzle:
        columns = swizzle // element
    else:
        columns = 16 * source.integer(1, 8) // element  # whole 16-byte units, up to 128 bytes
    rows = source.choice(tuple(r for r in ROWS if r * columns * element <= MAX_BOX_BYTES))
    return {"element_bytes": element, "swizzle": swizzle, "rows": rows, "columns": columns,
            "row_offset": source.choice((0, 0, 1, 3, 7))}
