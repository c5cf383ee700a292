"""TMA tiled copies over a global tensor, both directions, from any start coordinates: which global bytes each
element of the box moves to or from, and what happens where the box leaves the tensor.

The shared-memory side is ``oracles.tma.TiledBox`` (PTX ISA 5.5.7, seed 004: element ``idx`` sits at
``swizzle(dstMem + dense_offset(idx))``). The global side follows PTX ISA 5.5.3 (tiled mode), with the store rules
the text does not state written out as *observed*, each with its evidence:

- 5.5.3.1 Bounding Box: "The tensor-coordinates ... specify the starting offset of the bounding box."
- 5.5.3.2 Traversal-Stride: "the traversal stride specifies the exact number of elements to be skipped": element
  ``idx`` of the box is at coordinate ``c + idx * elementStride`` in every dimension.
- 5.5.3.3 Out of Boundary Access, *loads*: "Elements in the Bounding Box which fall outside of the tensor boundary are
  set to 0" (zero fill, the mode of the integer types), below the start of a dimension as past its end.
- 5.5.3.3 read for *stores*: an element outside the tensor is not written (the text names only the fills of loads).
- *observed, stores* (``docs/findings.md``, H100, raw store through cuda.core): along dimension 0 the TMA unit writes
  whole 16-byte granules: the granule that holds the innermost bound is written whole, the box's elements past the
  bound included, and nothing past that granule.
- 9.7.9.25.5.2 cp.async.bulk.tensor, ``.multicast::cluster`` (loads): "The source data is multicast to the same
  CTA-relative offset as dstMem in the shared memory of each destination CTA", the CTAs whose bit of ``ctaMask`` is set
  (bit r: ``%cluster_ctarank`` r); the other CTAs of the cluster receive nothing, whichever CTA issues the copy.
- *observed, stores*: a store whose box starts at a negative coordinate traps the device (``CUDA_ERROR_ILLEGAL_INSTRUCTION``,
  ``tests/gpu/test_tma.py``); it is not modelled (a trap ends the CUDA context) and not drawn.

*Observed, interleaved tensor maps* (CU_TENSOR_MAP_INTERLEAVE_16B/32B; PTX 5.5.6 names the NC/8HWC8 and NC/16HWC16
layouts and nothing of how a box traverses them; H100, driver 580.159.04, 534 windows and 40 stores, every one
explained, ``docs/results/interleave-and-clusters-h100.md``):

- dim 0 counts slices of the interleave's size (16 or 32 bytes), whatever the element type: index ``i`` of dim 0 moves
  the slice at byte ``(c0 + i * elementStrides[0]) * slice`` (the element stride of dim 0 is honoured);
- the box does not traverse dimension rank-2: it stays at its start coordinate there (its box size acts as 1), and the
  transaction count is the slices moved times the slice size;
- shared memory holds the slices packed, rows not padded to the swizzle span, each 16 bytes swizzled where it lands;
- a slice outside the tensor is zero-filled by a load and not written by a store (slices are never cut);
- through a floating-point type, each element of such a slice takes the NaN fill's pattern where the map asks for it,
  a TFLOAT32 map rounds the data, and a multicast delivers the window to each CTA of its mask, all as without
  interleave (200,000 copies, 2,371 of them interleaved floating-point loads,
  ``docs/results/interleave-float-types-h100.md``).

A box's start in dimension 0 is a whole number of 16-byte granules (5.5.3.1: "The address of the bounding Box must
also be aligned to 16 bytes"), and every row of the tensor starts at a multiple of 16 bytes (the driver's stride rule),
so the box's granules along dimension 0 are the tensor's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.tensor_map import DATA_TYPE_BYTES
from layoutfuzz.oracles.tma import TiledBox

GRANULE = 16  # bytes a store writes along dimension 0 at once (observed)
DIRECTIONS = ("load", "store")
# CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA: the bits a load writes for an element outside the tensor, per
# floating-point CUtensorMapDataType. PTX 5.5.3.3 says only "a special NaN"; observed on an H100 (2026-11-24,
# docs/findings.md): the half-word 0x7FF7 in every 16 bits, whatever the type, a NaN in each of the formats
NAN_FILL = {6: 0x7FF7, 9: 0x7FF7, 7: 0x7FF77FF7, 10: 0x7FF77FF7, 11: 0x7FF77FF7, 12: 0x7FF77FF7, 8: 0x7FF77FF77FF77FF7}


@dataclass(frozen=True)
class TensorCopy:
    """One tiled copy between a global tensor and the shared-memory box, in ``direction`` ("load": global to shared)."""

    box: TiledBox
    global_dims: tuple[int, ...]  # elements, innermost first
    global_strides: tuple[int, ...]  # bytes between neighbours of dims 1.. (rank - 1 values)
    coords: tuple[int, ...]  # the box's start, innermost first
    direction: str = "load"
    cluster: int = 1  # CTAs of the thread-block cluster
    multicast: int = 1  # ctaMask: bit r, the CTA of rank r receives a load
    issuer: int = 0  # the rank of the CTA that issues the copy
    data_type: int | None = None  # CUtensorMapDataType; None: the unsigned type of the element's width
    oob_fill: int = 0  # CUtensorMapFloatOOBfill: 0 zeros, 1 NaN (floating-point types only)

    def __post_init__(self) -> None:
        for name in ("global_dims", "global_strides", "coords"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        rank = len(self.box.box_dims)
        if len(self.global_dims) != rank or len(self.coords) != rank or len(self.global_strides) != rank - 1:
            raise LayoutError(f"a rank-{rank} box needs {rank} dims and coordinates and {rank - 1} strides")
        if self.direction not in DIRECTIONS:
            raise LayoutError(f"direction {self.direction!r} is not one of {DIRECTIONS}")
        if any(d < 1 for d in self.global_dims) or any(s % 16 for s in self.global_strides):
            raise LayoutError("global dims are positive and global strides multiples of 16 bytes")
        if self.cluster not in (1, 2, 4, 8) or not 0 <= self.issuer < self.cluster or not 0 < self.multicast < 1 << self.cluster:
            raise LayoutError(f"a cluster of 1, 2, 4 or 8 CTAs, a non-empty ctaMask of its ranks, an issuer among them: "
                              f"{self.cluster}, {self.multicast:#x}, {self.issuer}")
        if self.cluster > 1 and self.direction != "load":
            raise LayoutError("only loads multicast across a cluster")
        if self.coords[0] * self.box.element_bytes % 16 and not self.box.interleave:
            raise LayoutError(f"the box's start in dim 0 ({self.coords[0]}) is not a whole number of 16-byte granules")
        if self.oob_fill not in (0, 1) or (self.oob_fill and self.data_type not in NAN_FILL):
            raise LayoutError(f"a NaN fill needs a floating-point data type ({sorted(NAN_FILL)}), got {self.data_type}")
        if self.data_type is not None and DATA_TYPE_BYTES[self.data_type] != self.box.element_bytes:
            raise LayoutError(f"data type {self.data_type} is not {self.box.element_bytes} bytes")

    @property
    def pitches(self) -> tuple[int, ...]:
        """Global bytes between neighbours of each dimension (dim 0: an element, or an interleaved slice)."""
        return (self.box.unit_bytes, *self.global_strides)

    @property
    def global_bytes(self) -> int:
        """Bytes from the tensor's start to its end (a rank-1 tensor: its row, not padded)."""
        if len(self.global_dims) == 1:
            return self.global_dims[0] * self.box.unit_bytes
        return self.global_strides[-1] * self.global_dims[-1]


@dataclass(frozen=True)
class Moves:
    """For every piece of the box a copy moves (an element; with interleave, each 16 bytes of a slice), innermost index
    fastest: its shared-memory byte address, its global byte offset (meaningless where it is outside the tensor),
    whether it is inside the tensor, and whether a store writes it. ``size`` is the bytes of a piece."""

    shared: np.ndarray
    global_offset: np.ndarray
    inside: np.ndarray
    stored: np.ndarray
    size: int


def moves(copy: TensorCopy) -> Moves:
    """Where each piece of the box moves (the module's rules), as arrays over all pieces at once."""
    box = copy.box
    loaded = box.loaded_dims
    index = np.indices(tuple(reversed(loaded)), dtype=np.int64).reshape(len(loaded), -1)[::-1]  # row k: index in dim k
    dense = index[0] * box.unit_bytes
    pitch = box.row_bytes
    for k in range(1, len(loaded)):
        dense = dense + index[k] * pitch
        pitch *= loaded[k]
    coordinate = np.array(copy.coords, dtype=np.int64)[:, None] + index * np.array(box.element_strides, dtype=np.int64)[:, None]
    dims = np.array(copy.global_dims, dtype=np.int64)[:, None]
    within = (coordinate >= 0) & (coordinate < dims)
    inside = within.all(axis=0)
    global_offset = (coordinate * np.array(copy.pitches, dtype=np.int64)[:, None]).sum(axis=0)
    if box.interleave:  # a slice is never cut; it moves as 16-byte pieces, each swizzled where it lands
        parts = np.arange(0, box.unit_bytes, GRANULE, dtype=np.int64)
        shared = box.swizzle(box.dst + (dense[:, None] + parts).ravel())
        inside = np.repeat(inside, len(parts))
        return Moves(shared, (global_offset[:, None] + parts).ravel(), inside, inside, GRANULE)
    shared = box.swizzle(box.dst + dense)
    in_granule = (coordinate[0] >= 0) & (coordinate[0] < store_reach(copy.global_dims[0], box.element_bytes))
    stored = in_granule & within[1:].all(axis=0)
    return Moves(shared, global_offset, inside, stored, box.element_bytes)


def store_reach(dim0: int, element_bytes: int) -> int:
    """The elements along dimension 0 (of ``dim0``) a store writes where its box covers them: the observed rule (the
    module's text), the granule that holds the bound written whole, so up to that granule's end."""
    return -(-dim0 * element_bytes // GRANULE) * GRANULE // element_bytes


def _byte_indices(starts: np.ndarray, size: int) -> np.ndarray:
    """Every byte of elements of ``size`` bytes starting at ``starts``."""
    return (starts[:, None] + np.arange(size)).ravel()


def out_of_bound_bytes(copy: TensorCopy) -> np.ndarray:
    """What a load writes for an element outside the tensor: zeros (5.5.3.3), or with the NaN fill the type's NaN as
    ``NAN_FILL`` gives it (observed)."""
    piece = GRANULE if copy.box.interleave else copy.box.element_bytes  # an interleaved slice moves 16 bytes at a time
    if copy.oob_fill:  # with interleave too: each element of a slice outside the tensor (observed, docs/findings.md)
        element = NAN_FILL[copy.data_type].to_bytes(copy.box.element_bytes, "little")
        return np.frombuffer(element * (piece // copy.box.element_bytes), dtype=np.uint8)
    return np.zeros(piece, dtype=np.uint8)


def loaded_window(copy: TensorCopy, tensor: np.ndarray, window: int, fill: int) -> np.ndarray:
    """The shared-memory window after a load: ``fill`` where no element lands, each element's global bytes (``tensor``:
    the tensor's bytes from its start) where it is inside the tensor, ``out_of_bound_bytes`` where it is not."""
    m = moves(copy)
    e = m.size
    out = np.full(window, fill, dtype=np.uint8)
    out[_byte_indices(m.shared, e)] = np.tile(out_of_bound_bytes(copy), len(m.shared))
    inside = m.inside
    data = tensor[_byte_indices(m.global_offset[inside], e)]
    if copy.data_type in TF32_TYPES:
        data = tf32_rounded(data.view("<u4")).view(np.uint8)
    out[_byte_indices(m.shared[inside], e)] = data
    return out


TF32_TYPES = (11, 12)  # CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, TFLOAT32_FTZ
TF32_NAN = 0x7FFFE000


def tf32_rounded(words: np.ndarray) -> np.ndarray:
    """What a load through a TFLOAT32 tensor map delivers for f32 ``words`` (observed on an H100, docs/findings.md; the
    driver and PTX texts say nothing of a conversion): the 13 low mantissa bits rounded off to nearest, ties to even,
    every NaN as 0x7FFFE000, infinities kept; denormals are rounded too, not flushed, with or without _FTZ."""
    words = words.astype(np.uint32)
    special = (words & 0x7F800000) == 0x7F800000
    nan = special & ((words & 0x7FFFFF) != 0)
    odd = (words >> 13) & 1
    rounded = ((words.astype(np.uint64) + 0xFFF + odd) & ~np.uint64(0x1FFF)).astype(np.uint32)
    return np.where(nan, np.uint32(TF32_NAN), np.where(special, words, rounded)).astype("<u4")


def multicast_windows(copy: TensorCopy, tensor: np.ndarray, window: int, fill: int) -> np.ndarray:
    """Every CTA's window after a (multicast) load, rank 0 first: ``loaded_window`` in each CTA of the mask, the fill
    untouched in the others (9.7.9.25.5.2)."""
    loaded = loaded_window(copy, tensor, window, fill)
    untouched = np.full(window, fill, dtype=np.uint8)
    return np.concatenate([loaded if copy.multicast >> r & 1 else untouched for r in range(copy.cluster)])


def stored_tensor(copy: TensorCopy, shared: np.ndarray, before: np.ndarray) -> np.ndarray:
    """The tensor's bytes after a store (``before``: its bytes until then, as long as the store may reach; ``shared``:
    the window the box is read from): the written elements (the rules above) hold their shared-memory bytes."""
    m = moves(copy)
    e = m.size
    out = before.copy()
    out[_byte_indices(m.global_offset[m.stored], e)] = shared[_byte_indices(m.shared[m.stored], e)]
    return out


def reach_bytes(copy: TensorCopy) -> int:
    """Bytes from the tensor's start that a store may write: the tensor, and at rank 1 its last granule whole."""
    if len(copy.global_dims) == 1:
        return -(-copy.global_bytes // GRANULE) * GRANULE
    return copy.global_bytes
