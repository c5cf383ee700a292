"""The wgmma operand address oracle for arrays of canonical layouts at once (PTX ISA 9.7.15.5.1.2, seed 003;
one layout: ``oracles.wgmma.CanonicalLayout.addresses``).

Each row of the canonical layout table is ``((a, b, c), (d, e)) : ((s_a, s_b, s_c), (s_d, s_e))`` in elements,
so an element's offset is a function of its MN index plus a function of its K index: ``f(mn) = (mn % A1) F1 +
(mn / A1 % A2) F2 + (mn / (A1 A2)) F3`` and ``g(k) = (k % B1) G1 + (k / B1) G2``, with the coefficients read
off the table's row for the layout's major-ness and swizzle. Its byte address is ``start + (f + g) x element
bytes``, then the swizzle: row bits [7, 7+B) minus the base offset, XOR-ed into bits [4, 4+B). Layouts of one
shape are one (layouts x MN x K) block of array operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from layoutfuzz.oracles.wgmma import CanonicalLayout, Major, SwizzleMode


def _coefficients(layout: CanonicalLayout) -> tuple[int, ...]:
    """(A1, A2, F1, F2, F3, B1, G1, G2, element bytes, start, base offset, B) of one layout (the table's rows)."""
    T, W = layout.T, layout.swizzle.width
    lbo, sbo = layout.lbo * 8 // layout.elem_bits, layout.sbo * 8 // layout.elem_bits
    swizzled = layout.swizzle is not SwizzleMode.NONE
    if layout.major is Major.MN:
        row = (T, W, 1, T, lbo, 8, W * T, sbo) if swizzled else (T, 1, 1, 0, sbo, 8, T, lbo)  # ((T,W|1,m),(8,k))
    else:
        row = (8, 1, W * T, 0, sbo, T, 1, T) if swizzled else (8, 1, T, 0, sbo, T, 1, lbo)  # ((8,m),(T,2k))
    return (*row, layout.elem_bits // 8, layout.start, layout.base_offset, layout.swizzle.swizzle.bits)


def canonical_addresses(layouts: Sequence[CanonicalLayout]) -> list[np.ndarray]:
    """Every element's byte address, [mn][k], of each layout (``CanonicalLayout.addresses`` for all at once)."""
    out: list[np.ndarray] = [np.empty(0)] * len(layouts)
    shapes: dict[tuple[int, int], list[int]] = {}
    for i, layout in enumerate(layouts):
        if layout.elem_bits % 8:
            raise ValueError(f"{layout.elem_bits}-bit elements do not start on bytes")
        shapes.setdefault(layout.shape, []).append(i)
    for (rows, cols), members in shapes.items():
        c = np.array([_coefficients(layouts[i]) for i in members], dtype=np.int32).T[:, :, None]  # addresses < 2^18
        a1, a2, f1, f2, f3, b1, g1, g2, size, start, base_offset, bits = c
        mn, k = np.arange(rows, dtype=np.int32), np.arange(cols, dtype=np.int32)
        f = (mn % a1) * f1 + (mn // a1 % a2) * f2 + (mn // (a1 * a2)) * f3
        g = (k % b1) * g1 + (k // b1) * g2
        address = (start + f * size)[:, :, None] + (g * size)[:, None, :]
        phase = address >> 7
        phase -= base_offset[:, :, None]
        phase &= (1 << bits[:, :, None]) - 1
        phase <<= 4
        address ^= phase
        for row, i in enumerate(members):
            out[i] = address[row]
    return out


@lru_cache(maxsize=1 << 16)  # a pure function of the layout; a campaign's generator asks it of a few thousand layouts, again and again
def highest_address(layout: CanonicalLayout) -> int:
    """The largest byte address the layout reads (``max(max(row) for row in layout.addresses())``), found among the
    16-byte chunks of the highest 128-byte line alone: a generator asks it of every case, several times.

    Why that is exact: every row of the table has a mode (T):(1) (the T elements of a 16-byte chunk) and every other
    stride a whole number of chunks, so with a 16-byte aligned start the layout reads whole chunks; the swizzle
    XORs a chunk's index inside its 128-byte line with a function of the line, so it keeps each chunk in its line
    and the highest line holds the highest address. Layouts without that structure are walked element by element."""
    a1, a2, f1, f2, f3, b1, g1, g2, size, start, base_offset, bits = _coefficients(layout)
    rows, cols = layout.shape
    terms = [(a1, f1), (a2, f2), (rows // (a1 * a2), f3), (b1, g1), (cols // b1, g2)]  # (count, stride in elements)
    T = 16 // size
    unit = next((i for i, term in enumerate(terms) if term == (T, 1)), None)
    others = [(stride, count) for i, (count, stride) in enumerate(terms) if i != unit and count > 1 and stride]
    if unit is None or start % 16 or any(stride % T for stride, _ in others):
        return int(canonical_addresses([layout])[0].max())
    chunks = sorted(((stride // T, count) for stride, count in others), reverse=True)  # strides in chunks, largest first
    first = start // 16
    reach = [0] * (len(chunks) + 1)  # reach[i]: the most the chunks from i on add
    for i in range(len(chunks) - 1, -1, -1):
        reach[i] = reach[i + 1] + (chunks[i][1] - 1) * chunks[i][0]
    line = (first + reach[0]) >> 3
    need = (line << 3) - first  # offsets of chunks in the highest line
    found: set[int] = set()

    def walk(i: int, offset: int) -> None:
        if i == len(chunks):
            found.add(offset)
            return
        stride, count = chunks[i]
        for digit in range(count - 1, -1, -1):
            if offset + digit * stride + reach[i + 1] < need:
                return
            walk(i + 1, offset + digit * stride)

    walk(0, 0)
    phase = (line - base_offset) & ((1 << bits) - 1)
    return max((first + offset) ^ phase for offset in found) * 16 + 16 - size
