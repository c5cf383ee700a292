"""The Hopper shared-memory layout atoms (CuTe's ``Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom``), tiled to a shape:
where the hardware expects each element of the tile, as a bit address in shared memory.

Inside one atom: the canonical layout of seed 000 with one pattern repeat (``oracles.wgmma.CanonicalLayout``), the
swizzle acting on the byte address (PTX ISA 9.7.15.5.1.2, "Shared Memory Matrix Layout"). An atom is 8 rows of the
swizzle's width (16 bytes for INTER), so every atom starts on its pattern's repeat (1024/512/256 bytes) and base
offset 0 holds. Where atoms go: CuTe's ``tile_to_shape`` (include/cute/layout.hpp): ``blocked_product(atom,
make_ordered_layout(shape / atom shape, order))``, atom number ``k`` at ``k`` times the atom's size; CuTe refuses a
shape the atom does not divide (static assertion "tile_to_shape: block shape does not divide the target shape").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from math import prod

import numpy as np

from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.wgmma import CanonicalLayout, Major, SwizzleMode, element_units, swizzle_atom

# CuTe's atom kinds (cute/atom/mma_traits_sm90_gmma.hpp; CuTe DSL's warpgroup.SmemLayoutAtomKind): major-ness, swizzle
KINDS: dict[str, tuple[Major, SwizzleMode]] = {
    f"{major.name}_{name}": (major, mode)
    for major in (Major.MN, Major.K)
    for name, mode in (("INTER", SwizzleMode.NONE), ("SW32", SwizzleMode.B32), ("SW64", SwizzleMode.B64),
                       ("SW128", SwizzleMode.B128))
}


def kind_of(kind: str) -> tuple[Major, SwizzleMode]:
    try:
        return KINDS[kind]
    except KeyError:
        raise LayoutError(f"no shared-memory atom kind {kind!r} ({', '.join(KINDS)})") from None


def atom_shape(kind: str, elem_bits: int) -> tuple[int, int]:
    """(MN, K) extent of the atom in elements: the swizzle's width times T on the leading dimension, 8 on the other."""
    major, mode = kind_of(kind)
    return swizzle_atom(major, mode, elem_bits)


def atom_bits(kind: str, elem_bits: int) -> int:
    """The atom's size in bits: 8 rows of the swizzle's width (128 bits for INTER)."""
    return 8 * kind_of(kind)[1].width * 128


def divides(kind: str, elem_bits: int, shape: Sequence[int]) -> bool:
    """Whether the atom divides ``shape`` (MN, K[, stages]) mode by mode, CuTe's precondition of tile_to_shape."""
    a = atom_shape(kind, elem_bits)
    return shape[0] % a[0] == 0 and shape[1] % a[1] == 0


def ordered_strides(extents: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """``make_ordered_layout(extents, order)``'s strides: compact, the mode of the smallest order value fastest."""
    if sorted(order) != list(range(len(extents))):
        raise LayoutError(f"order {list(order)} is not a permutation of 0..{len(extents) - 1}")
    strides, step = [0] * len(extents), 1
    for mode in sorted(range(len(extents)), key=lambda i: order[i]):
        strides[mode] = step
        step *= extents[mode]
    return tuple(strides)


@lru_cache(maxsize=256)
def _atom_offsets(kind: str, elem_bits: int) -> np.ndarray:
    """Element offsets inside one atom, [mn, k], from the canonical layout of seed 000 with one pattern repeat."""
    major, mode = kind_of(kind)
    k = max(1, mode.width // 2) if major is Major.K else 1
    canonical = CanonicalLayout(major, mode, elem_bits, 1, k, 0, 0).layout()
    rows, cols = atom_shape(kind, elem_bits)
    table = np.array([[canonical((r, c)) for c in range(cols)] for r in range(rows)], dtype=np.int64)
    table.flags.writeable = False
    return table


def swizzled_bytes(address: np.ndarray, mode: SwizzleMode) -> np.ndarray:
    """The PTX swizzle of byte addresses with base offset 0 (``oracles.wgmma.swizzle_address`` over arrays): row bits
    [7, 7+B) XOR-ed into bits [4, 4+B)."""
    bits = mode.swizzle.bits
    return address ^ (((address >> 7) & ((1 << bits) - 1)) << 4)


def tile_bit_addresses(kind: str, elem_bits: int, shape: Sequence[int], order: Sequence[int]) -> np.ndarray:
    """The bit address of every element of the tile, coordinates (mn, k[, stage]) in colexicographic order (mn
    fastest, as CuTe counts them), tiled from the atom at address 0 as tile_to_shape places atoms."""
    element_units(elem_bits)
    if len(shape) not in (2, 3) or len(order) != len(shape):
        raise LayoutError(f"shape {list(shape)} and order {list(order)}: rank 2 (MN, K) or 3 (MN, K, stages)")
    if not divides(kind, elem_bits, shape):
        raise LayoutError(f"the {kind} atom of {elem_bits}-bit elements {atom_shape(kind, elem_bits)} does not divide {list(shape)}")
    a_mn, a_k = atom_shape(kind, elem_bits)
    extents = [shape[0] // a_mn, shape[1] // a_k, *shape[2:]]
    strides = ordered_strides(extents, order)
    mn = np.arange(shape[0])
    kk = np.arange(shape[1])
    inside = _atom_offsets(kind, elem_bits)[(mn % a_mn)[:, None], (kk % a_k)[None, :]]  # [mn, k]
    atom = (mn // a_mn * strides[0])[:, None] + (kk // a_k * strides[1])[None, :]
    if len(shape) == 3:
        stage = np.arange(shape[2]) * strides[2]
        inside = np.broadcast_to(inside[:, :, None], (*inside.shape, shape[2]))
        atom = atom[:, :, None] + stage[None, None, :]
    bits = atom * atom_bits(kind, elem_bits) + inside * elem_bits
    swizzled = swizzled_bytes(bits >> 3, kind_of(kind)[1]) << 3 | (bits & 7)
    return swizzled.reshape(prod(shape), order="F")
