"""Samplers of TMA tiled copies over a global tensor: loads and stores whose box lies inside the tensor, crosses its
bounds (the innermost bound inside a 16-byte granule or on one, outer rows cut off), lies wholly past them, or (loads
only) starts before them."""

from __future__ import annotations

from math import prod
from typing import Any

from layoutfuzz.generators.source import Source
from layoutfuzz.generators.tma import device_box
from layoutfuzz.oracles.tma import INTERLEAVE_BYTES, SwizzleMode, TiledBox

# the sm_100 atomicity sub-modes, which an H100's driver refuses, drawn one time in five (the refusal is checked)
MODES = (*(SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128) * 3,
         SwizzleMode.B128_ATOM_32B, SwizzleMode.B128_ATOM_32B_FLIP_8B, SwizzleMode.B128_ATOM_64B)
PLACES = ("inside", "cut", "past", "before")  # where a dimension's bound falls against the box
MAX_TENSOR_BYTES = 256 * 1024  # a case's global tensor, guard zones aside


def tensor_copy(source: Source) -> dict[str, Any]:
    """A copy's params: ``direction``, the box (as ``tma.swizzle``'s), ``global_dims``, ``global_strides`` (bytes),
    ``coords``, the ``places`` each dimension's bound was drawn at, and for loads a thread-block ``cluster`` of 1, 2 or
    4 CTAs with the ``multicast`` ctaMask and the ``issuer``'s rank. Stores never start before a bound (a store at a
    negative coordinate traps the device: ``oracles.tma_copy``)."""
    if source.integer(0, 7) == 0:  # one copy in eight through an interleaved tensor map
        return interleaved_copy(source)
    direction = source.choice(("load", "store"))
    box = device_box(source, MODES)
    if source.integer(0, 7) == 0:  # rank 1: the inner row alone
        box = TiledBox(box.box_dims[:1], box.element_bytes, (1,), box.swizzle, box.dst)
    e = box.element_bytes
    granule = 16 // e  # elements of a 16-byte granule: dim 0's start is a whole number of them
    dims, coords, places = [], [], []
    rank = len(box.box_dims)
    wholly_past = source.integer(0, rank - 1) if source.integer(0, 9) == 0 else -1  # one case in ten: nothing moves
    for k, (b, t) in enumerate(zip(box.box_dims, box.element_strides)):
        extent = (-(-b // t) - 1) * t + 1  # coordinates the box spans in this dimension
        place = "past" if k == wholly_past else source.choice(("inside",) * 3 + ("cut",) * 3 + ("before",) if k == 0 else
                                                               ("inside",) * 6 + ("cut", "cut", "before"))
        if place == "before" and direction == "store":
            place = "inside"
        if place == "cut" and extent == 1:
            place = "inside"
        start, dim = _bound(source, place, extent, granule if k == 0 else 1)
        dims.append(dim)
        coords.append(start)
        places.append(place)
    paddings = [16 * source.choice((0, 0, 0, 1, 2)) for _ in dims[1:]]
    _fit(dims, coords, places, e, paddings)
    cluster = source.choice((1, 1, 2, 4)) if direction == "load" else 1  # loads multicast across clusters of 2 and 4
    multicast = source.choice(((1 << cluster) - 1, source.integer(1, (1 << cluster) - 1)))  # all CTAs, or some
    typed = {}
    if direction == "load" and e in FLOAT_TYPES_BY_BYTES and source.integer(0, 3) == 0:  # floating point, mostly NaN-filled
        typed = {"data_type": source.choice(FLOAT_TYPES_BY_BYTES[e]), "oob_fill": source.choice((1, 1, 0))}
    return {"direction": direction, "box_dims": list(box.box_dims), "element_bytes": e,
            "element_strides": list(box.element_strides), "swizzle": box.swizzle.name, "dst": box.dst,
            "global_dims": dims, "global_strides": strides(dims, e, paddings), "coords": coords, "places": places,
            "cluster": cluster, "multicast": multicast, "issuer": source.integer(0, cluster - 1), **typed}


INTERLEAVED_BOX_BYTES = 16 * 1024  # an interleaved box's slices in shared memory, at most


def interleaved_copy(source: Source) -> dict[str, Any]:
    """A copy through an interleaved tensor map (``oracles.tma_copy``'s observed rules: dim 0 counts 16- or 32-byte
    slices, dim rank-2 is not traversed): rank 3-5, dim 0's box whole 16-byte units of elements (the driver's rule),
    the 32B swizzle with 32B interleave (cuda.h); loads across clusters of 1, 2 and 4 CTAs and through floating-point
    types with either fill, as ``tensor_copy``'s; the same bounds as ``tensor_copy``, dim 0 counted in slices."""
    direction = source.choice(("load", "store"))
    interleave = source.choice((1, 2))
    piece = INTERLEAVE_BYTES[interleave]  # bytes of a slice
    e = source.choice((1, 2, 4, 8))
    swizzle = SwizzleMode.B32 if interleave == 2 else source.choice((SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64,
                                                                     SwizzleMode.B128))
    rank = source.integer(3, 5)
    unit = 16 // e  # elements of 16 bytes: dim 0's box is a whole number of them
    strides_ = [source.choice((1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8)) for _ in range(rank)]  # cuTensorMapEncodeTiled: 1-8
    box = [unit * source.integer(1, max(1, min(256 // unit, source.choice((2, 4, 16)))))]
    box += [source.integer(1, source.choice((3, 6))) for _ in range(rank - 1)]
    loaded = [-(-b // t) for b, t in zip(box, strides_)]
    while prod(loaded[k] for k in range(rank) if k != rank - 2) * piece > INTERLEAVED_BOX_BYTES:  # outer dims first
        k = max((k for k in range(1, rank) if k != rank - 2), key=lambda k: loaded[k])
        box[k] = max(1, box[k] // 2)
        loaded[k] = -(-box[k] // strides_[k])
    dims, coords, places = [], [], []
    wholly_past = source.integer(0, rank - 1) if source.integer(0, 9) == 0 else -1  # one case in ten: nothing moves
    for k, (b, t) in enumerate(zip(box, strides_)):
        extent = 1 if k == rank - 2 else (-(-b // t) - 1) * t + 1  # dim rank-2 is not traversed: its start alone
        place = "past" if k == wholly_past else source.choice(("inside",) * 6 + ("cut", "cut") +
                                                               (("before",) if direction == "load" else ()))
        if place == "cut" and extent == 1:
            place = "inside"
        start, dim = _bound(source, place, extent, 1)  # dim 0's slices are whole granules: any start
        dims.append(dim)
        coords.append(start)
        places.append(place)
    paddings = [max(16, piece) * source.choice((0, 0, 0, 1, 2)) for _ in dims[1:]]  # 32B interleave: 32-byte strides
    _fit(dims, coords, places, piece, paddings)
    dst = 128 * source.integer(0, 15)  # every base offset (a 128-byte multiple, as tma.swizzle's boxes)
    cluster, multicast, issuer, typed = 1, 1, 0, {}
    if direction == "load":  # drawn after the rest: the interleaved copies of earlier releases keep their params
        cluster = source.choice((1, 1, 2, 4))  # loads multicast across clusters of 2 and 4
        multicast = source.choice(((1 << cluster) - 1, source.integer(1, (1 << cluster) - 1)))
        issuer = source.integer(0, cluster - 1)
        if e in FLOAT_TYPES_BY_BYTES and source.integer(0, 3) == 0:  # floating point, mostly NaN-filled
            typed = {"data_type": source.choice(FLOAT_TYPES_BY_BYTES[e]), "oob_fill": source.choice((1, 1, 0))}
    return {"direction": direction, "interleave": interleave, "box_dims": box, "element_bytes": e, "element_strides": strides_,
            "swizzle": swizzle.name, "dst": dst, "global_dims": dims, "global_strides": strides(dims, piece, paddings),
            "coords": coords, "places": places, "cluster": cluster, "multicast": multicast, "issuer": issuer, **typed}


# CUtensorMapDataType's floating-point types by width: FLOAT16, BFLOAT16; FLOAT32, FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ;
# FLOAT64 (the types a NaN fill is for)
FLOAT_TYPES_BY_BYTES = {2: (6, 9), 4: (7, 10, 11, 12), 8: (8,)}


def strides(dims: list[int], element_bytes: int, paddings: list[int]) -> list[int]:
    """Global strides in bytes: rows rounded up to 16 bytes, each dimension then padded by ``paddings``."""
    out, pitch = [], -(-dims[0] * element_bytes // 16) * 16
    for d, pad in zip(dims[1:], paddings):
        pitch += pad
        out.append(pitch)
        pitch *= d
    return out


def _bound(source: Source, place: str, extent: int, step: int) -> tuple[int, int]:
    """A dimension's start coordinate and size that put its bound ``place`` against a box spanning ``extent``
    coordinates: inside, cut, wholly past it, or before its start; starts are multiples of ``step``."""
    if place == "before":
        start = -step * source.integer(1, max(1, -(-extent // step)))
        return start, source.integer(1, extent + start + 4) if extent + start > 0 else source.integer(1, 8)
    if place == "past":
        start = step * source.integer(1, 4)
        return start, source.integer(1, start)
    start = step * source.choice((0, 0, 0, 1, 2, 3))
    if place == "inside":
        return start, start + extent + source.choice((0, 0, 1, 2, 7))
    return start, start + source.integer(1, extent - 1)


def _fit(dims: list[int], coords: list[int], places: list[str], unit: int, paddings: list[int]) -> None:
    """Halves the outermost dims (in place, their places kept true) until the tensor takes at most MAX_TENSOR_BYTES."""
    while _tensor_bytes(dims, unit, paddings) > MAX_TENSOR_BYTES:
        k = max(i for i in range(1, len(dims)) if dims[i] > 1)
        dims[k] = max(1, dims[k] // 2)
        places[k] = "cut" if coords[k] < dims[k] else "past"


def _tensor_bytes(dims: list[int], element_bytes: int, paddings: list[int]) -> int:
    if len(dims) == 1:
        return dims[0] * element_bytes
    return strides(dims, element_bytes, paddings)[-1] * dims[-1]
