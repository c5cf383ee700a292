"""TMA (bulk tensor copy) swizzle modes and tiled-mode box placement (PTX ISA 5.5.7, seed 004).

Every mode is an XOR of address bits, so it is a linear map of the shared-memory destination
byte address (``SwizzleMode.linear_layout``). The tables of 5.5.7 number 16-byte cells of
128-byte shared-memory lines; the base-offset table says the pattern's phase is that of the
absolute address (``base offset = (dstMem / 128) % 8`` for 128B), so modes act on absolute
addresses. A box is written innermost dimension first from ``dstMem``, each innermost row
padded to the swizzle span in swizzled modes, then swizzled; ``TiledBox.address`` gives each
copied element's byte address.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import ceil, prod
from typing import Any

from layoutfuzz.oracles.cute import Swizzle
from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout

ADDRESS_BITS = 18  # 228 KiB of shared memory per SM fits in 18 bits


@dataclass(frozen=True)
class ModeSpec:
    """One swizzle mode: its XOR terms, alignment rules and CUDA enum value."""

    name: str
    span: int  # swizzle span in bytes (the inner box dimension may not exceed it); 0 for none
    atomicity: int  # bytes kept intact while swizzling
    terms: tuple[Swizzle, ...]  # XOR terms on the byte address
    repeat: int  # bytes after which the pattern repeats ("Starting address of the repeating pattern")
    alignment: int  # required shared-memory alignment of dstMem (bytes)
    base_offset_modulus: int  # base offset = (dstMem / 128) % modulus
    cuda: int | None  # CUtensorMapSwizzle value; None where the driver API has none


class SwizzleMode(enum.Enum):
    """The swizzling modes of 5.5.7 and Table 14 (mode x swizzle-atomicity)."""

    # No swizzle: destination layout equals the source layout.
    NONE = ModeSpec("none", 0, 16, (), 1, 128, 1, 0)
    # 32B: cells 16 B, rows of 8 cells = 128-byte lines; row 1 is 1 0 3 2 5 4 7 6; 256-byte aligned.
    B32 = ModeSpec("32B", 32, 16, (Swizzle(1, 4, 3),), 256, 128, 2, 1)
    # 64B: rows XOR 0..3 (table of four rows); 512-byte boundary.
    B64 = ModeSpec("64B", 64, 16, (Swizzle(2, 4, 3),), 512, 128, 4, 2)
    # 96B: the same two-row table as 32B; 256-byte boundary, base offset (dstMem/128) % 2.
    B96 = ModeSpec("96B", 96, 16, (Swizzle(1, 4, 3),), 256, 128, 2, None)
    # 128B, 16-byte atomicity: rows XOR 0..7; 1024-byte boundary.
    B128 = ModeSpec("128B", 128, 16, (Swizzle(3, 4, 3),), 1024, 128, 8, 3)
    # 128B, 32-byte atomicity: 32-byte pairs XOR row 0..3 (four-row table); 32-byte alignment.
    B128_ATOM_32B = ModeSpec("128B/32B", 128, 32, (Swizzle(2, 5, 2),), 512, 32, 8, 4)
    # 128B, 32-byte atomicity with an 8-byte flip inside each 16 bytes on every alternate line.
    B128_ATOM_32B_FLIP_8B = ModeSpec("128B/32B+8B", 128, 32, (Swizzle(2, 5, 2), Swizzle(1, 3, 4)), 512, 32, 8, 5)
    # 128B, 64-byte atomicity: 64-byte halves swap on every other line; 64-byte alignment.
    B128_ATOM_64B = ModeSpec("128B/64B", 128, 64, (Swizzle(1, 6, 1),), 256, 64, 8, 6)

    @property
    def spec(self) -> ModeSpec:
        return self.value

    def __call__(self, address: int) -> int:
        """The swizzled byte address of ``address``."""
        result = address
        for term in self.spec.terms:
            result ^= term(address) ^ address
        return result

    def linear_layout(self, bits: int = ADDRESS_BITS) -> LinearLayout:
        """The mode as an F2 map of ``bits`` address bits."""
        return LinearLayout.from_bases({"address": [[self(1 << k)] for k in range(bits)]}, [("address", 1 << bits)])

    def cell_table(self, rows: int = 8, cell: int = 16) -> list[list[int]]:
        """The 5.5.7 table: for each 128-byte line, which source cell lands in each destination cell."""
        per_row = 128 // cell
        out = []
        for r in range(rows):
            line = [0] * per_row
            for c in range(per_row):
                line[(self(r * 128 + c * cell) % 128) // cell] = c
            out.append(line)
        return out

    def base_offset(self, dst: int) -> int:
        """The swizzle base offset of a destination address (5.5.7's formula table)."""
        if self.spec.repeat <= 1 or dst % self.spec.repeat == 0:
            return 0
        return (dst // 128) % self.spec.base_offset_modulus

    @classmethod
    def from_cuda(cls, value: int) -> SwizzleMode:
        """The mode of a ``CU_TENSOR_MAP_SWIZZLE_*`` value."""
        for mode in cls:
            if mode.spec.cuda == value:
                return mode
        raise LayoutError(f"no swizzle mode has CUtensorMapSwizzle value {value}")

    @classmethod
    def named(cls, name: str) -> SwizzleMode:
        for mode in cls:
            if name in (mode.name, mode.spec.name):
                return mode
        raise LayoutError(f"unknown TMA swizzle mode {name!r}; known: {', '.join(m.spec.name for m in cls)}")


# The bytes one dim-0 index of an interleaved box moves, by CUtensorMapInterleave. Observed on an H100 (driver
# 580.159.04, docs/results/interleave-and-clusters-h100.md): dim 0 counts the interleave's slices (PTX 5.5.6:
# "C8 utilizes 16 bytes", "C16 uses 32 bytes"), whatever the element type; cuda.h and PTX say nothing of the traversal.
INTERLEAVE_BYTES = {1: 16, 2: 32}


@dataclass(frozen=True)
class TiledBox:
    """A tiled-mode TMA copy's shared-memory side: box, element size and strides, swizzle, dstMem.

    Dimensions are innermost first, as in ``cuTensorMapEncodeTiled``.
    """

    box_dims: tuple[int, ...]
    element_bytes: int
    element_strides: tuple[int, ...]
    swizzle: SwizzleMode
    dst: int
    interleave: int = 0  # CUtensorMapInterleave: 0 none, 1 16B, 2 32B (INTERLEAVE_BYTES)

    def __post_init__(self) -> None:
        object.__setattr__(self, "box_dims", tuple(self.box_dims))
        object.__setattr__(self, "element_strides", tuple(self.element_strides))
        if isinstance(self.swizzle, str):
            object.__setattr__(self, "swizzle", SwizzleMode.named(self.swizzle))
        problems = self.problems()
        if problems:
            raise LayoutError("; ".join(problems))

    def problems(self) -> list[str]:
        """Why this box is not a valid tiled copy (empty if it is)."""
        if self.interleave:
            return self._interleaved_problems()
        out = []
        if not 1 <= len(self.box_dims) <= 5:
            out.append(f"rank {len(self.box_dims)} is not 1..5")
        if len(self.element_strides) != len(self.box_dims):
            out.append("element strides and box dims differ in rank")
        if any(not 1 <= b <= 256 for b in self.box_dims):
            out.append(f"box dims {self.box_dims} must be 1..256")
        if any(not 1 <= s <= 8 for s in self.element_strides):
            out.append(f"element strides {self.element_strides} must be 1..8")
        if self.element_bytes not in (1, 2, 4, 8, 16):
            out.append(f"element size {self.element_bytes} bytes is not 1, 2, 4, 8 or 16")
        inner, spec = self.inner_bytes, self.swizzle.spec  # once: every box a campaign makes is checked here
        if (inner % 16) != 0:
            out.append(f"inner box dimension is {inner} bytes, not a multiple of 16")
        if spec.span and inner > spec.span:
            out.append(f"inner box dimension {inner} bytes exceeds the {spec.span}-byte swizzle span")
        if self.dst % spec.alignment:
            out.append(f"dstMem {self.dst:#x} is not {spec.alignment}-byte aligned")
        return out

    def _interleaved_problems(self) -> list[str]:
        """An interleaved box's rules: cuda.h's (rank 3-5, 32B interleave with the 32B swizzle) and the observed one
        (``interleaved_unit``): dim 0's box is whole 16-byte units of elements here too."""
        out = []
        if self.interleave not in INTERLEAVE_BYTES or not 3 <= len(self.box_dims) <= 5:
            out.append(f"interleave {self.interleave} is not 1 (16B) or 2 (32B), or rank {len(self.box_dims)} is not 3..5")
        if len(self.element_strides) != len(self.box_dims) or any(not 1 <= s <= 8 for s in self.element_strides):
            out.append(f"element strides {self.element_strides} must be rank-many values 1..8")
        if any(not 1 <= b <= 256 for b in self.box_dims):
            out.append(f"box dims {self.box_dims} must be 1..256")
        if self.element_bytes not in (1, 2, 4, 8) or self.box_dims[0] * self.element_bytes % 16:
            out.append(f"box dim 0 of {self.box_dims[0]} {self.element_bytes}-byte elements is not whole 16-byte units (observed)")
        if self.interleave == 2 and self.swizzle is not SwizzleMode.B32:
            out.append("interleave 32B needs swizzle 32B (cuda.h)")
        if self.dst % self.swizzle.spec.alignment:
            out.append(f"dstMem {self.dst:#x} is not {self.swizzle.spec.alignment}-byte aligned")
        return out

    @property
    def unit_bytes(self) -> int:
        """Bytes one index of dim 0 moves: an element, or with interleave the interleave's slice (observed)."""
        return INTERLEAVE_BYTES[self.interleave] if self.interleave else self.element_bytes

    @property
    def loaded_dims(self) -> tuple[int, ...]:
        """Units actually copied per dimension: ceil(boxDim / elementStride); with interleave, dim rank-2 is not
        traversed (observed: the copy stays at its start coordinate there)."""
        loaded = [ceil(b / s) for b, s in zip(self.box_dims, self.element_strides)]
        if self.interleave:
            loaded[len(loaded) - 2] = 1
        return tuple(loaded)

    @property
    def inner_bytes(self) -> int:
        return self.loaded_dims[0] * self.unit_bytes

    @property
    def size_bytes(self) -> int:
        """Bytes the copy delivers (the mbarrier transaction count)."""
        return prod(self.loaded_dims) * self.unit_bytes

    @property
    def row_bytes(self) -> int:
        """Shared-memory pitch of the innermost dimension: the inner box bytes, padded to the
        swizzle span in swizzled modes (seen on an H200; 5.5.7 is silent on inner dims that are
        narrower than the span); interleaved rows are not padded (observed)."""
        span = self.swizzle.spec.span
        return max(self.inner_bytes, span) if span and not self.interleave else self.inner_bytes

    @property
    def footprint_bytes(self) -> int:
        """Shared-memory bytes from dstMem to the end of the box, padding included."""
        return self.row_bytes * prod(self.loaded_dims[1:])

    def dense_offset(self, index: Sequence[int]) -> int:
        """Byte offset, before swizzling, of the copied unit ``index`` (innermost first)."""
        offset, pitch = 0, self.unit_bytes
        for k, (i, n) in enumerate(zip(index, self.loaded_dims)):
            if not 0 <= i < n:
                raise LayoutError(f"index {tuple(index)} is outside the copied box {self.loaded_dims}")
            offset += i * pitch
            pitch = self.row_bytes if k == 0 else pitch * n
        return offset

    def address(self, index: Sequence[int]) -> int:
        """Shared-memory byte address of copied element ``index`` (its global coordinate is
        box start + index * element stride)."""
        return self.swizzle(self.dst + self.dense_offset(index))

    def indices(self) -> Iterator[tuple[int, ...]]:
        """Every copied element's index (innermost first), innermost fastest."""
        return (tuple(reversed(index)) for index in itertools.product(*(range(n) for n in reversed(self.loaded_dims))))

    def placement(self) -> list[int]:
        """Byte address of every copied element, innermost index fastest."""
        return [self.address(index) for index in self.indices()]


NVMMA_MODES = {0: SwizzleMode.NONE, 32: SwizzleMode.B32, 64: SwizzleMode.B64, 128: SwizzleMode.B128}


def block_boxes(block_shape: Sequence[int], element_bytes: int, swizzle_bytes: int) -> list[tuple[int, TiledBox]]:
    """The tiled boxes that copy a row-major block (outermost dim first) into an NVMMA-shared
    buffer: each as wide as the swizzle span (the whole row without swizzling, 5.5.7's limit on
    the inner box dimension), laid one after another from offset 0. Returns (first inner column, box)."""
    mode = NVMMA_MODES[swizzle_bytes]
    *outer, inner = block_shape
    width = min(inner, swizzle_bytes // element_bytes) if swizzle_bytes else inner
    dims = (width, *reversed(outer))
    size = prod(dims) * element_bytes
    return [(c, TiledBox(dims, element_bytes, (1,) * len(dims), mode, (c // width) * size)) for c in range(0, inner, width)]


def box_from_params(p: Mapping[str, Any]) -> TiledBox:
    """The tiled box a TMA case's params describe."""
    return TiledBox(tuple(p["box_dims"]), p["element_bytes"], tuple(p["element_strides"]), SwizzleMode[p["swizzle"]], p["dst"],
                    p.get("interleave", 0))
