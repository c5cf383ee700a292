"""wgmma shared-memory matrix descriptors and canonical layouts (PTX ISA 9.7.15.5.1.2, seeds 000/003).

The descriptor is a 64-bit word; its fields are stored ``matrix-descriptor-encode``d. The
canonical layouts (MN- or K-major, no swizzle / 32B / 64B / 128B) map a matrix coordinate
(mn, k) to an element offset in CuTe notation; the swizzle ``Swizzle<B,4,3>`` then acts on the
byte address. ``smem_address`` is the resulting map (mn, k) -> shared-memory byte address.

How the base offset enters (measured on an H200, docs/results/): the swizzle XORs address bits
[7, 7+B) into bits [4, 4+B) after subtracting the descriptor's base offset from the row bits,
``phase = ((addr >> 7) - base_offset) mod 2^B``. PTX's rule, ``base offset = (pattern start addr
>> 7) & 7``, therefore puts phase 0 on the pattern's first row wherever it starts; with base
offset 0 the phase is that of the absolute address, which is what TMA writes (seed 004).

Also here: CUTLASS's ``make_gmma_desc`` (seed 002) that derives a descriptor from a CuTe
shared-memory layout; it always writes base offset 0. And the oracle's side of the descriptor probe
(``gpu.wgmma_probe``): a probe case's element types (``DTYPES``), base offset and canonical layout (``probe_layout``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from layoutfuzz.oracles.cute import ComposedLayout, Layout, Swizzle
from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout, log2_exact

ELEMENT_BITS = (4, 8, 16, 32, 64)
ADDRESS_BITS = 18  # matrix-descriptor-encode keeps x & 0x3FFFF
# PTX ISA 9.7.15.5 (wgmma.mma_async): the operand types and, per type, the N of its .m64nNkK shapes
WGMMA_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1")
WGMMA_N = {t: tuple(range(8, 257, 8)) for t in WGMMA_TYPES} | {
    t: (8, 16, 24, *range(32, 257, 16)) for t in ("s8", "u8", "b1")}  # integer and single-bit shapes: n8-n24, then every 16


class Major(enum.StrEnum):
    """Which dimension is contiguous in shared memory (Section 9.7.15.5.1.2, first table)."""

    MN = "mn"
    K = "k"


class SwizzleMode(enum.IntEnum):
    """Descriptor bits 63-62 (Matrix Descriptor Format): the swizzling mode's code."""

    NONE = 0
    B128 = 1
    B64 = 2
    B32 = 3

    @property
    def bytes(self) -> int:
        """Swizzle width in bytes (0 for none)."""
        return {0: 0, 1: 128, 2: 64, 3: 32}[self.value]

    @property
    def width(self) -> int:
        """W: 16-byte units per swizzle row (1, 2, 4, 8; Table 38's atom widths)."""
        return max(1, self.bytes // 16)

    @property
    def swizzle(self) -> Swizzle:
        """The byte-address swizzle of the canonical layout table: Swizzle<0..3, 4, 3>."""
        return Swizzle(log2_exact(self.width), 4, 3)

    @property
    def repeat_bytes(self) -> int:
        """Where the repeating pattern must start for base offset 0 (1024/512/256 B)."""
        return {0: 0, 1: 1024, 2: 512, 3: 256}[self.value]

    @classmethod
    def from_bytes(cls, width: int) -> SwizzleMode:
        for mode in cls:
            if mode.bytes == width:
                return mode
        raise LayoutError(f"no wgmma swizzle mode of {width} bytes (0, 32, 64, 128)")


def matrix_descriptor_encode(x: int) -> int:
    """``(x & 0x3FFFF) >> 4`` (Matrix Descriptor Format)."""
    return (x & 0x3FFFF) >> 4


@dataclass(frozen=True)
class MatrixDescriptor:
    """The 64-bit wgmma matrix descriptor, fields as stored (already encoded, 14 bits each)."""

    start_address: int  # bits 13-0
    leading_byte_offset: int  # bits 29-16 (LBO)
    stride_byte_offset: int  # bits 45-32 (SBO)
    base_offset: int = 0  # bits 51-49
    swizzle: SwizzleMode = SwizzleMode.NONE  # bits 63-62

    def __post_init__(self) -> None:
        for name in ("start_address", "leading_byte_offset", "stride_byte_offset"):
            value = getattr(self, name)
            if not 0 <= value < 1 << 14:
                raise LayoutError(f"{name} {value} does not fit in 14 bits")
        if not 0 <= self.base_offset < 8:
            raise LayoutError(f"base offset {self.base_offset} does not fit in 3 bits")
        object.__setattr__(self, "swizzle", SwizzleMode(self.swizzle))

    @classmethod
    def from_bytes(cls, start: int, lbo: int, sbo: int, base_offset: int = 0, swizzle: SwizzleMode = SwizzleMode.NONE) -> MatrixDescriptor:
        """Encodes byte values with matrix-descriptor-encode."""
        return cls(matrix_descriptor_encode(start), matrix_descriptor_encode(lbo), matrix_descriptor_encode(sbo), base_offset, swizzle)

    def encode(self) -> int:
        return (
            self.start_address
            | self.leading_byte_offset << 16
            | self.stride_byte_offset << 32
            | self.base_offset << 49
            | int(self.swizzle) << 62
        )

    @classmethod
    def decode(cls, word: int) -> MatrixDescriptor:
        """The fields of a 64-bit word; reserved bits must be zero."""
        if not 0 <= word < 1 << 64:
            raise LayoutError(f"descriptor {word:#x} is not a 64-bit value")
        fields = cls(word & 0x3FFF, word >> 16 & 0x3FFF, word >> 32 & 0x3FFF, word >> 49 & 7, SwizzleMode(word >> 62 & 3))
        if fields.encode() != word:
            raise LayoutError(f"descriptor {word:#x} sets reserved bits {word ^ fields.encode():#x}")
        return fields

    @property
    def start_bytes(self) -> int:
        return self.start_address << 4

    @property
    def lbo_bytes(self) -> int:
        return self.leading_byte_offset << 4

    @property
    def sbo_bytes(self) -> int:
        return self.stride_byte_offset << 4


def descriptor_base_offset(pattern_start: int, mode: SwizzleMode) -> int:
    """The base offset PTX requires when the repeating pattern starts at ``pattern_start``:
    0 on a 1024/512/256-byte boundary, else ``(pattern start addr >> 0x7) & 0x7``."""
    if mode is SwizzleMode.NONE or pattern_start % mode.repeat_bytes == 0:
        return 0
    return (pattern_start >> 7) & 7


def swizzle_address(address: int, mode: SwizzleMode, base_offset: int = 0) -> int:
    """The byte address wgmma reads for unswizzled ``address``: row bits [7, 7+B) minus the base
    offset, XOR-ed into bits [4, 4+B) (Swizzle<B,4,3> when the base offset is 0)."""
    bits = mode.swizzle.bits
    phase = ((address >> 7) - base_offset) & ((1 << bits) - 1)
    return address ^ (phase << 4)


def element_units(elem_bits: int) -> int:
    """T = 128 / sizeof-elements-in-bits: elements per 16-byte unit (Canonical Layouts)."""
    if elem_bits not in ELEMENT_BITS:
        raise LayoutError(f"element width {elem_bits} bits is not one of {ELEMENT_BITS}")
    return 128 // elem_bits


@dataclass(frozen=True)
class CanonicalLayout:
    """One row of the canonical layout table with its parameters; offsets counted in bytes."""

    major: Major
    swizzle: SwizzleMode
    elem_bits: int
    m: int  # repeats of the pattern across rows (the MN dimension)
    k: int  # repeats of the pattern across columns (the K dimension)
    lbo: int  # leading dimension byte offset
    sbo: int  # stride dimension byte offset
    start: int = 0  # byte address of element (0, 0) before swizzling
    base_offset: int = 0  # the descriptor's base-offset field (bits 51-49)

    def __post_init__(self) -> None:
        if type(self.major) is not Major:  # a generator makes five of these a case: no conversion where none is due
            object.__setattr__(self, "major", Major(self.major))
        if type(self.swizzle) is not SwizzleMode:
            object.__setattr__(self, "swizzle", SwizzleMode(self.swizzle))
        element_units(self.elem_bits)
        if self.m < 1 or self.k < 1:
            raise LayoutError(f"repeat counts m={self.m}, k={self.k} must be >= 1")
        for name in ("lbo", "sbo"):
            value = getattr(self, name)
            if value < 0 or (value * 8) % self.elem_bits:
                raise LayoutError(f"{name.upper()} {value} bytes is not a whole number of {self.elem_bits}-bit elements")

    @property
    def T(self) -> int:
        return element_units(self.elem_bits)

    @property
    def shape(self) -> tuple[int, int]:
        """(MN extent, K extent) in elements."""
        T, W = self.T, self.swizzle.width
        if self.major is Major.MN:
            return T * W * self.m, 8 * self.k
        return 8 * self.m, T * 2 * self.k

    def layout(self) -> Layout:
        """The table's CuTe layout without swizzling, strides in elements (Canonical Layouts table)."""
        T, W, m, k = self.T, self.swizzle.width, self.m, self.k
        lbo, sbo = self.lbo * 8 // self.elem_bits, self.sbo * 8 // self.elem_bits
        if self.major is Major.MN:
            if self.swizzle is SwizzleMode.NONE:  # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
                return Layout(((T, 1, m), (8, k)), ((1, T, sbo), (T, lbo)))
            # ((T,W,m),(8,k)):((1,T,LBO),(WT,SBO))
            return Layout(((T, W, m), (8, k)), ((1, T, lbo), (W * T, sbo)))
        if self.swizzle is SwizzleMode.NONE:  # ((8,m),(T,2k)):((1T,SBO),(1,LBO))
            return Layout(((8, m), (T, 2 * k)), ((T, sbo), (1, lbo)))
        # ((8,m),(T,2k)):((WT,SBO),(1,T)): LBO not used ("assumed to be 1")
        return Layout(((8, m), (T, 2 * k)), ((W * T, sbo), (1, T)))

    def composed(self) -> ComposedLayout:
        """``Swizzle<B,4,3> o smem_ptr o layout``: (mn, k) -> byte address, for base offset 0."""
        return ComposedLayout(self.swizzle.swizzle, self.start, self.layout(), self.elem_bits)

    def smem_address(self, mn: int, kk: int) -> int:
        """Byte address of element (mn, k)."""
        bits = self.layout()((mn, kk)) * self.elem_bits
        if bits % 8:
            raise LayoutError(f"element ({mn}, {kk}) does not start on a byte")
        return swizzle_address(self.start + bits // 8, self.swizzle, self.base_offset)

    def addresses(self) -> list[list[int]]:
        """Every element's byte address, [mn][k]."""
        rows, cols = self.shape
        return [[self.smem_address(r, c) for c in range(cols)] for r in range(rows)]

    def descriptor(self) -> MatrixDescriptor:
        """The descriptor of this layout: LBO encoded 1 where it is "not used, assumed 1"
        (swizzled K-major)."""
        lbo_field = 1 if self.major is Major.K and self.swizzle is not SwizzleMode.NONE else matrix_descriptor_encode(self.lbo)
        return MatrixDescriptor(matrix_descriptor_encode(self.start), lbo_field, matrix_descriptor_encode(self.sbo), self.base_offset, self.swizzle)

    def affine_layout(self) -> tuple[LinearLayout, int]:
        """(L, c) with address(mn, k) = L(mn, k) XOR c, when the map is F2-affine (power-of-two
        extents and strides whose bits never carry into each other); LayoutError otherwise."""
        if self.base_offset:
            raise LayoutError("with a non-zero base offset the swizzle subtracts, which is not F2-affine")
        rows, cols = self.shape
        log2_exact(rows, "MN extent")
        log2_exact(cols, "K extent")
        constant = self.smem_address(0, 0)
        mn_bases = [[self.smem_address(1 << i, 0) ^ constant] for i in range(rows.bit_length() - 1)]
        k_bases = [[self.smem_address(0, 1 << i) ^ constant] for i in range(cols.bit_length() - 1)]
        layout = LinearLayout.from_bases({"mn": mn_bases, "k": k_bases}, [("address", 1 << ADDRESS_BITS)])
        table = layout.table()
        for r in range(rows):
            for c in range(cols):
                if int(table[r | c * rows]) ^ constant != self.smem_address(r, c):
                    raise LayoutError(f"{self} is not F2-affine at element ({r}, {c})")
        return layout, constant


def from_descriptor(desc: MatrixDescriptor, major: Major, elem_bits: int, m: int, k: int) -> CanonicalLayout:
    """The canonical layout a descriptor denotes for an m x k repeat of the pattern."""
    return CanonicalLayout(major, desc.swizzle, elem_bits, m, k, desc.lbo_bytes, desc.sbo_bytes, desc.start_bytes, desc.base_offset)


def make_gmma_desc(major: Major, tensor: Layout | ComposedLayout, elem_bits: int, start: int | None = None) -> MatrixDescriptor:
    """CUTLASS ``make_gmma_desc`` (seed 002): the descriptor of a rank-2 (MN, K) shared-memory
    tensor, read off its layout recast to 128-bit units. Base offset is always 0, as in CUTLASS."""
    major = Major(major)
    if isinstance(tensor, ComposedLayout):
        swizzle, layout = tensor.swizzle, tensor.layout
        start = tensor.offset if start is None else start
    else:
        swizzle, layout = Swizzle(0, 4, 3), tensor
        start = start or 0
    if swizzle.base != 4 or swizzle.shift != 3 or swizzle.bits > 3:
        raise LayoutError(f"{swizzle} is not a GMMA swizzle (Swizzle<0..3,4,3> on bytes)")
    mode = {0: SwizzleMode.NONE, 1: SwizzleMode.B32, 2: SwizzleMode.B64, 3: SwizzleMode.B128}[swizzle.bits]
    W = mode.width
    if len(layout) != 2:
        raise LayoutError(f"GMMA descriptors are built from rank-2 tensors, got {layout}")
    u128 = layout.upcast(element_units(elem_bits))
    if major is Major.MN:
        k_size = layout.mode(1).size()
        if k_size * elem_bits not in (256, 128, 512):
            raise LayoutError(f"not a canonical GMMA_MN layout: K size {k_size} is not (256|128|512)/{elem_bits}")
        (c00, c01), (c10, c11) = u128.mode(0).split(W), u128.mode(1).split(8)
        if mode is not SwizzleMode.NONE and c00.stride != 1:
            raise LayoutError("not a canonical GMMA_MN layout: expected stride<0,0> == 1")
        if c10.stride != W:
            raise LayoutError(f"not a canonical GMMA_MN layout: expected stride<1,0> == {W}")
        sbo, lbo = (c01.stride, c11.stride) if mode is SwizzleMode.NONE else (c11.stride, c01.stride)
    else:
        if u128.mode(0).size() % 8:
            raise LayoutError("not a canonical GMMA_K layout: MN size is not a multiple of 8")
        if u128.mode(1).size() not in (2, 4):
            raise LayoutError("not a canonical GMMA_K layout: K size is not 2 or 4 units of 128 bits")
        (c00, c01), (c10, _) = u128.mode(0).split(8), u128.mode(1).split(2)
        if c00.stride != W:
            raise LayoutError(f"not a canonical GMMA_K layout: expected stride<0,0> == {W}")
        if mode is not SwizzleMode.NONE and c10.stride != 1:
            raise LayoutError("not a canonical GMMA_K layout: expected stride<1,0> == 1")
        sbo, lbo = c01.stride, c10.stride
    for part in (c00, c01, c10):
        if not isinstance(part.shape, int):
            raise LayoutError(f"not a canonical GMMA layout: {u128} does not divide into single modes")
    return MatrixDescriptor(matrix_descriptor_encode(start), lbo & 0x3FFF, sbo & 0x3FFF, 0, mode)


def swizzle_atom(major: Major, mode: SwizzleMode, elem_bits: int) -> tuple[int, int]:
    """(MN, K) extent in elements of one swizzle atom (Table 38: 128-bit shapes times T on
    the leading dimension)."""
    T, W = element_units(elem_bits), SwizzleMode(mode).width
    return (W * T, 8) if Major(major) is Major.MN else (8, W * T)


# element type -> (kernel code, bits, digit bits: the largest n with every integer below 2^n exact)
DTYPES = {
    "f16": (0, 16, 11), "bf16": (1, 16, 8), "tf32": (2, 32, 11), "e4m3": (3, 8, 4), "e5m2": (4, 8, 3),
    "s8": (5, 8, 7), "u8": (6, 8, 8),
}


def probe_base_offset(p: Mapping[str, Any]) -> int:
    """The base-offset field of a probe case: PTX's rule with the pattern starting on the start
    address's row, 0 as CUTLASS and the other peers write it, or a given value."""
    if p["base_offset"] == "ptx":
        return descriptor_base_offset(p["start"] - p["start"] % 128, SwizzleMode[p["swizzle"]])
    return 0 if p["base_offset"] == "zero" else int(p["base_offset"])


def probe_layout(p: Mapping[str, Any]) -> CanonicalLayout:
    """The canonical layout of the operand under test (offsets from the 1024-aligned window base)."""
    bits = DTYPES[p.get("dtype", "f16")][1]
    return CanonicalLayout(Major(p["major"]), SwizzleMode[p["swizzle"]], bits, p["m"], p["k"], p["lbo"], p["sbo"], p["start"],
                           probe_base_offset(p))
