"""CuTe layouts (hierarchical shape:stride), ``Swizzle<B,M,S>`` and composed layouts.

Just enough of CuTe to state the PTX canonical layouts (seed 000/003, "Canonical Layouts") and
CUTLASS's ``make_gmma_desc`` (seed 002) exactly. Coordinates are colexicographic (first mode
fastest), as in CuTe. A swizzle is a linear map on the bits of an offset, so it is also given as
an F2 ``LinearLayout``. The units trap of seed 002: a swizzle attached to an ``smem_ptr`` acts on
byte addresses whatever the element type, so ``Sw<3,4,3>`` on bytes, ``Sw<3,3,3>`` on half
elements and ``Sw<3,0,3>`` on 128-bit units are one map (``Swizzle.in_units``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from math import prod
from typing import Union

from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout

IntTuple = Union[int, tuple["IntTuple", ...]]  # noqa: UP007 (recursive alias)


def flatten(t: IntTuple) -> tuple[int, ...]:
    """The leaves of an int tuple, first mode first."""
    if isinstance(t, int):
        return (t,)
    return tuple(x for sub in t for x in flatten(sub))


def _size(t: IntTuple) -> int:
    return prod(flatten(t))


def _congruent(a: IntTuple, b: IntTuple) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return isinstance(a, int) and isinstance(b, int)
    return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))


@dataclass(frozen=True)
class Layout:
    """A CuTe layout ``shape:stride`` (both congruent int tuples): coordinate -> offset."""

    shape: IntTuple
    stride: IntTuple

    def __post_init__(self) -> None:
        if not _congruent(self.shape, self.stride):
            raise LayoutError(f"shape {self.shape} and stride {self.stride} are not congruent")
        if any(s < 1 for s in flatten(self.shape)):
            raise LayoutError(f"shape {self.shape} has a mode of size < 1")

    def size(self) -> int:
        return _size(self.shape)

    def cosize(self) -> int:
        """One past the largest offset."""
        return sum((s - 1) * d for s, d in zip(flatten(self.shape), flatten(self.stride))) + 1

    def __len__(self) -> int:
        return 1 if isinstance(self.shape, int) else len(self.shape)

    def mode(self, *path: int) -> Layout:
        """The sub-layout at ``path`` (``mode(0, 1)`` is CuTe's ``layout<0,1>``)."""
        shape, stride = self.shape, self.stride
        for i in path:
            if isinstance(shape, int):
                if i != 0:
                    raise LayoutError(f"mode {path} of a rank-1 layout")
                continue
            shape, stride = shape[i], stride[i]
        return Layout(shape, stride)

    def __call__(self, *coord: IntTuple) -> int:
        """Offset of a coordinate: one integer (colexicographic index) or one per mode."""
        if len(coord) == 1:
            coord = coord[0]
        return _offset(self.shape, self.stride, coord)

    def coalesce(self) -> Layout:
        """Flat equivalent with size-1 modes dropped and contiguous modes merged (CuTe coalesce)."""
        out: list[tuple[int, int]] = []
        for s, d in zip(flatten(self.shape), flatten(self.stride)):
            if s == 1:
                continue
            if out and out[-1][0] * out[-1][1] == d:
                out[-1] = (out[-1][0] * s, out[-1][1])
            else:
                out.append((s, d))
        if not out:
            return Layout(1, 0)
        if len(out) == 1:
            return Layout(*out[0])
        return Layout(tuple(s for s, _ in out), tuple(d for _, d in out))

    def split(self, n: int) -> tuple[Layout, Layout]:
        """(first ``n`` elements, the rest), i.e. CuTe's ``logical_divide`` of this mode by ``n:1``."""
        inner: list[tuple[int, int]] = []
        outer: list[tuple[int, int]] = []
        need = n
        for s, d in zip(flatten(self.shape), flatten(self.stride)):
            if need >= s and need % s == 0:
                inner.append((s, d))
                need //= s
            elif need > 1:
                if s % need:
                    raise LayoutError(f"cannot split {self} after {n} elements")
                inner.append((need, d))
                outer.append((s // need, d * need))
                need = 1
            else:
                outer.append((s, d))
        if need != 1:
            raise LayoutError(f"{self} has fewer than {n} elements")

        def build(modes: list[tuple[int, int]]) -> Layout:
            if not modes:
                return Layout(1, 0)
            return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes)).coalesce()

        return build(inner), build(outer)

    def upcast(self, n: int) -> Layout:
        """The layout in units of ``n`` elements (CuTe ``upcast<N>``): the stride-1 mode shrinks
        by ``n`` and every other stride divides by ``n``."""
        shapes, strides = list(flatten(self.shape)), list(flatten(self.stride))
        new_s, new_d = [], []
        for s, d in zip(shapes, strides):
            if d == 0:
                new_s.append(s)
                new_d.append(0)
            elif d == 1:
                if s % n and n % s:
                    raise LayoutError(f"cannot upcast {self} by {n}")
                new_s.append(max(1, s // n))
                new_d.append(1)
            else:
                if d % n:
                    raise LayoutError(f"stride {d} of {self} is not a multiple of {n}")
                new_s.append(s)
                new_d.append(d // n)
        return Layout(_unflatten(self.shape, iter(new_s)), _unflatten(self.stride, iter(new_d)))

    def __str__(self) -> str:
        return f"{_fmt(self.shape)}:{_fmt(self.stride)}"


def _unflatten(profile: IntTuple, leaves) -> IntTuple:
    if isinstance(profile, int):
        return next(leaves)
    return tuple(_unflatten(p, leaves) for p in profile)


def _fmt(t: IntTuple) -> str:
    return str(t) if isinstance(t, int) else "(" + ",".join(_fmt(x) for x in t) + ")"


def _offset(shape: IntTuple, stride: IntTuple, coord: IntTuple) -> int:
    if isinstance(coord, int):
        total, index = 0, coord
        for s, d in zip(flatten(shape), flatten(stride)):
            total += (index % s) * d
            index //= s
        if index:
            raise LayoutError(f"coordinate {coord} is out of range for shape {_fmt(shape)}")
        return total
    if isinstance(shape, int) or len(coord) != len(shape):
        raise LayoutError(f"coordinate {coord} does not match shape {_fmt(shape)}")
    return sum(_offset(s, d, c) for s, d, c in zip(shape, stride, coord))


@dataclass(frozen=True)
class Swizzle:
    """CuTe ``Swizzle<B,M,S>``: XOR bits [M+S, M+S+B) of an offset into bits [M, M+B).

    ``B`` bits of mask, ``M`` constant least-significant bits, shift ``S`` (``S >= B`` here,
    the case every GMMA and TMA atom uses).
    """

    bits: int
    base: int
    shift: int

    def __post_init__(self) -> None:
        if self.bits < 0 or self.base < 0 or self.shift < self.bits:
            raise LayoutError(f"Swizzle<{self.bits},{self.base},{self.shift}> needs B >= 0, M >= 0, S >= B")

    def __call__(self, offset: int) -> int:
        mask = (1 << self.bits) - 1
        return offset ^ (((offset >> (self.base + self.shift)) & mask) << self.base)

    def in_units(self, unit_log2: int) -> Swizzle:
        """The same map on offsets counted in units of ``2**unit_log2`` of the current unit."""
        if self.bits == 0:
            return Swizzle(0, max(0, self.base - unit_log2), self.shift)
        if unit_log2 > self.base:
            raise LayoutError(f"{self} moves bits below a unit of 2**{unit_log2}")
        return Swizzle(self.bits, self.base - unit_log2, self.shift)

    def linear_layout(self, offset_bits: int) -> LinearLayout:
        """The swizzle as an F2 map from ``offset_bits`` bits of offset to offset."""
        if offset_bits < self.base + self.shift + self.bits:
            offset_bits = self.base + self.shift + self.bits
        bases = [[self(1 << k)] for k in range(offset_bits)]
        return LinearLayout.from_bases({"offset": bases}, [("offset", 1 << offset_bits)])

    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"


@dataclass(frozen=True)
class ComposedLayout:
    """``swizzle o offset o layout``: CuTe's ComposedLayout; coordinate -> swizzled offset.

    With ``ptr_bits`` set it is CuTe's ``swizzle o smem_ptr[ptr_bits] o layout``: the layout
    counts elements of ``ptr_bits`` bits, ``offset`` and the result are byte addresses, and the
    swizzle acts on the byte address (seed 002, ``make_gmma_desc``'s input tensors).
    """

    swizzle: Swizzle
    offset: int
    layout: Layout
    ptr_bits: int | None = None

    def __call__(self, *coord: IntTuple) -> int:
        if self.ptr_bits is None:
            return self.swizzle(self.offset + self.layout(*coord))
        bits = self.layout(*coord) * self.ptr_bits
        if bits % 8:
            raise LayoutError(f"element {coord} of {self} does not start on a byte")
        return self.swizzle(self.offset + bits // 8)

    def size(self) -> int:
        return self.layout.size()

    def __str__(self) -> str:
        return f"{self.swizzle} o {self.offset} o {self.layout}"


def parse_layout(text: str) -> Layout:
    """Parses CuTe's printed form, e.g. ``((_8,2),(4,4)):((4,32),(1,64))`` (underscores allowed)."""
    text = text.replace("_", "").replace(" ", "")
    shape_text, sep, stride_text = text.partition(":")
    if not sep:
        raise LayoutError(f"not a CuTe layout: {text!r}")
    return Layout(_parse_tuple(shape_text), _parse_tuple(stride_text))


def _parse_tuple(text: str) -> IntTuple:
    return _normalise(ast.literal_eval(text.replace(")", ",)")))


def _normalise(value) -> IntTuple:
    return value if isinstance(value, int) else tuple(_normalise(v) for v in value)
