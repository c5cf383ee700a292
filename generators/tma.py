"""Samplers of TMA tiled boxes: every swizzle mode, element size and stride, and destinations
on and off the swizzle pattern's repeat (every base offset)."""

from __future__ import annotations

from layoutfuzz.generators.source import Source
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox


def tiled_box(source: Source) -> TiledBox:
    """A valid tiled-mode box: rank 1-5, inner dimension within the swizzle span."""
    mode = source.choice(list(SwizzleMode))
    element_bytes = source.choice((1, 2, 4, 8, 16))
    rank = source.integer(1, 5)
    span = mode.spec.span or 256 * element_bytes
    # element strides on the outer dims only: how a strided innermost dim lands is unspecified
    strides = [1] + [source.choice((1, 1, 1, 2, 3, 4, 8)) for _ in range(rank - 1)]
    # inner dim: a multiple of 16 bytes within the span, after the element stride
    max_units = max(1, min(span, 256 * element_bytes) // 16)
    units = source.integer(1, max_units)
    if mode is SwizzleMode.B96 and units * 16 > 96:
        units = 6
    loaded_inner = max(1, units * 16 // element_bytes)
    inner = min(256, loaded_inner)
    outer = [source.integer(1, 256 // (4 ** (rank - 1))) if rank > 1 else 1 for _ in range(rank - 1)]
    box = [inner, *[max(1, o) for o in outer]]
    repeat = max(mode.spec.repeat, mode.spec.alignment)
    dst = repeat * source.integer(0, 63) + mode.spec.alignment * source.integer(0, max(0, repeat // mode.spec.alignment - 1))
    return TiledBox(tuple(box), element_bytes, tuple(strides), mode, dst)


CUDA_MODES = tuple(m for m in SwizzleMode if m.spec.cuda is not None)  # the modes a CUDA tensor map can name
MAX_BOX_BYTES = 16 * 1024  # one block's shared-memory window holds the box and its offset
MAX_DST_OFFSET = 8 * 1024


def device_box(source: Source, modes: tuple[SwizzleMode, ...] = CUDA_MODES) -> TiledBox:
    """A box the GPU driver can copy: rank 2-5, a CUDA swizzle mode (one of ``modes``), 1-8-byte elements, at most
    16 KiB, at a 128-byte multiple up to 8 KiB past a 1024-byte boundary (every base offset)."""
    mode = source.choice(modes)
    element_bytes = source.choice((1, 2, 4, 8))
    rank = source.integer(2, 5)
    span = mode.spec.span or 256 * element_bytes
    units = source.integer(1, max(1, min(span, 256 * element_bytes) // 16))
    inner = max(1, units * 16 // element_bytes)
    dims, strides = [inner], [1]
    budget = MAX_BOX_BYTES // max(inner * element_bytes, mode.spec.span)  # rows are padded to the span
    for _ in range(rank - 1):
        stride = source.choice((1, 1, 1, 2, 3, 4, 5, 6, 7, 8))  # cuTensorMapEncodeTiled: elementStrides 1-8
        reach = source.choice((16, 16, 16, 256))  # mostly short dims; now and then up to the 256 a box dim allows
        loaded = source.integer(1, max(1, min(256 // stride, budget, reach)))
        budget //= loaded
        dims.append(min(256, loaded * stride - source.integer(0, stride - 1)))
        strides.append(stride)
    dst = 128 * source.integer(0, MAX_DST_OFFSET // 128 - 1)
    return TiledBox(tuple(dims), element_bytes, tuple(strides), mode, dst)
