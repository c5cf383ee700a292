"""The TMA window oracle for arrays of boxes at once (PTX ISA 5.5.7, seed 004; one box: ``oracles.tma``).

A tiled copy moves whole 8-byte granules: its inner row is a whole number of 16-byte units, copied with
element stride 1 (the device generator's rule), rows start at multiples of 16 bytes in global and shared
memory, and no mode's XOR reaches below bit 3 (the 8-byte flip of 128B/32B+8B is the lowest). So a box is
its granules: granule ``j`` of row ``r`` comes from global byte ``src(r) + 8 j`` and lands at shared
byte ``swizzle(dstMem + row_bytes * r + 8 j)``, where ``r`` counts the outer indices innermost first
(``TiledBox.dense_offset``) and ``src(r)`` adds each outer index times its element stride and global pitch
(``box_encoding``: rows padded to 16 bytes). Every step is an integer array operation over all
granules of all boxes; the swizzle is the modes' XOR terms, ``(x & (mask << (M+S))) >> S`` each.

Also here, the oracle's side of the TMA driver (``gpu.tma_driver``): a box's tensor map (``box_encoding``), the global
data it reads (``global_bytes``, ``hashed_bytes``), and one box's window element by element (``expected_window``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from layoutfuzz.oracles.tensor_map import TiledEncoding
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox

GRANULE = 8  # bytes moved together by every mode (the 128B/32B+8B flip moves 8-byte halves)
RANK = 5


@dataclass(frozen=True)
class Placements:
    """Where each granule of a batch of boxes lands: its box (row of the batch), its shared-memory
    word (8-byte units from the window's start) and its global source word."""

    count: int  # boxes in the batch
    case: np.ndarray
    word: np.ndarray
    source_word: np.ndarray


def _swizzle(mode: SwizzleMode, x: np.ndarray) -> np.ndarray:
    """The mode's XOR terms on an array of byte addresses: ``(x & (mask << (M+S))) >> S`` each."""
    out = x.copy()
    for term in mode.spec.terms:
        out ^= (x & (((1 << term.bits) - 1) << (term.base + term.shift))) >> term.shift
    return out


_MODES = [m for m in SwizzleMode if m.spec.cuda is not None]
_MODE_INDEX = {m: i for i, m in enumerate(_MODES)}
_NONE = _MODE_INDEX[SwizzleMode.NONE]
_SPAN = np.array([m.spec.span for m in _MODES])
_ROW_WORDS = 256  # the most granules in a row: 256 elements of 8 bytes without swizzling
# each mode's image of a granule's offset in its row, in words (the identity where nothing is swizzled)
_OFFSETS = np.concatenate([_swizzle(m, GRANULE * np.arange(_ROW_WORDS)) // GRANULE for m in _MODES]).astype(np.int32)


def placements(boxes: Sequence[TiledBox]) -> Placements:
    """The granule placements of every box (each an 8-byte-granular tiled copy: see the module's text).

    In a swizzled mode the row pitch is the span, a power of two, and rows start at multiples of it, so a
    granule's address is its row's start OR its offset in the row, and the swizzle, linear over F2, is the
    XOR of the two parts' images: one per row, one per (mode, offset) from a table. Without swizzling a
    granule's address is its row's start plus its offset."""
    count = len(boxes)
    table = np.array([(*box.box_dims, *(1,) * (RANK - len(box.box_dims)), *box.element_strides,
                       *(1,) * (RANK - len(box.element_strides)), box.element_bytes, box.dst, _MODE_INDEX[box.swizzle])
                      for box in boxes], dtype=np.int64).reshape(count, 2 * RANK + 3)
    order = np.argsort(table[:, -1] != _NONE, kind="stable")  # unswizzled boxes first: each rule is one slice
    table = table[order]
    dims, strides = table[:, :RANK], table[:, RANK:2 * RANK]
    element_bytes, dst, mode = table[:, 2 * RANK], table[:, 2 * RANK + 1], table[:, 2 * RANK + 2]
    if np.any(strides[:, 0] != 1) or np.any(dims[:, 0] * element_bytes % 16) or np.any(dst % 128):
        raise ValueError("granule placements need element stride 1 inside rows of whole 16-byte units, dstMem a multiple of 128")
    loaded = -(-dims // strides)
    inner = loaded[:, 0] * element_bytes
    row_bytes = np.maximum(inner, _SPAN[mode])  # TiledBox.row_bytes: padded to the span where it swizzles
    pitch = np.empty_like(dims)  # global bytes between neighbours of each dimension (rows padded to 16 bytes)
    pitch[:, 0] = element_bytes
    pitch[:, 1] = -(-dims[:, 0] * element_bytes // 16) * 16
    for k in range(2, RANK):
        pitch[:, k] = pitch[:, k - 1] * dims[:, k - 1]
    step = strides * pitch  # global bytes per index step of each dimension

    rows = np.prod(loaded[:, 1:], axis=1)
    row_box = np.repeat(np.arange(count), rows)  # position in the sorted batch
    r = np.arange(row_box.size) - np.repeat(np.cumsum(rows) - rows, rows)
    row_dst = dst[row_box] + row_bytes[row_box] * r
    row_src = np.zeros_like(r)
    rest = r
    for k in range(1, RANK):
        n = loaded[:, k]
        if np.all(n == 1):
            continue
        n = n[row_box]
        row_src += (rest % n) * step[row_box, k]
        rest = rest // n
    row_mode = mode[row_box]
    row_addr = row_dst.copy()
    for m, spec_mode in enumerate(_MODES):
        if spec_mode.spec.terms:
            which = row_mode == m
            row_addr[which] = _swizzle(spec_mode, row_dst[which])

    per_row = (inner // GRANULE)[row_box]
    starts = np.cumsum(per_row) - per_row
    flat = np.arange(int(per_row.sum()), dtype=np.int32)
    offset = np.take(_OFFSETS, flat + np.repeat((row_mode * _ROW_WORDS - starts).astype(np.int32), per_row))
    word = np.repeat((row_addr // GRANULE).astype(np.int32), per_row)
    plain = int(per_row[: np.searchsorted(row_mode != _NONE, True)].sum())  # granules of unswizzled boxes: first
    word[:plain] += offset[:plain]
    word[plain:] ^= offset[plain:]
    source = np.repeat(row_src // GRANULE - starts, per_row) + flat
    return Placements(count, np.repeat(order[row_box].astype(np.int32), per_row), word, source)


def _fill_word(fill: int) -> np.uint64:
    return np.uint64(int.from_bytes(bytes([fill]) * GRANULE, "little"))


def expected_windows(placed: Placements, data_words: np.ndarray, window: int, fill: int) -> np.ndarray:
    """The oracle's shared-memory windows (one row per box): ``fill`` bytes where nothing lands, the global
    data (``data_words``: the global tensor's bytes as 8-byte words) where granules do."""
    out = np.full((placed.count, window // GRANULE), _fill_word(fill), np.uint64)
    out[placed.case, placed.word] = data_words[placed.source_word]
    return out.view(np.uint8)


def window_mismatches(placed: Placements, data_words: np.ndarray, observed: np.ndarray, fill: int) -> np.ndarray:
    """Which observed windows (one row per box, bytes) differ from the oracle's, without building the oracle's:
    a placed granule holds other data, or a byte nothing should write does not hold ``fill``."""
    words = np.ascontiguousarray(observed).view(np.uint64).reshape(placed.count, -1)
    fill_word = _fill_word(fill)
    got = words[placed.case, placed.word]
    wrong = np.bincount(placed.case[got != data_words[placed.source_word]], minlength=placed.count) > 0
    unfilled = np.count_nonzero(words != fill_word, axis=1)
    unfilled_placed = np.bincount(placed.case, weights=got != fill_word, minlength=placed.count)
    return wrong | (unfilled != unfilled_placed)


FILL = 0xA5  # shared-memory bytes the copy does not write keep this value


DTYPE_BY_BYTES = {1: 0, 2: 1, 4: 2, 8: 4}  # CU_TENSOR_MAP_DATA_TYPE_UINT8/16/32, UINT64 (value 4)


def box_encoding(box: TiledBox, address: int = 0) -> TiledEncoding:
    """The ``cuTensorMapEncodeTiled`` arguments of a global tensor just large enough for the box, read from coordinate 0:
    rows padded to 16 bytes (the driver's rule)."""
    if box.element_bytes not in DTYPE_BY_BYTES or box.swizzle.spec.cuda is None:
        raise ValueError(f"no CUDA tensor map for {box.element_bytes}-byte elements in mode {box.swizzle.spec.name}")
    dims = tuple(box.box_dims)
    strides, pitch = [], -(-dims[0] * box.element_bytes // 16) * 16
    for d in dims[1:]:
        strides.append(pitch)
        pitch *= d
    return TiledEncoding(DTYPE_BY_BYTES[box.element_bytes], address, dims, tuple(strides), dims, tuple(box.element_strides),
                         swizzle=box.swizzle.spec.cuda)


def global_bytes(encoding: TiledEncoding) -> np.ndarray:
    """The global tensor's bytes: a hash of each byte's offset, so misplaced data shows."""
    return hashed_bytes(encoding.global_bytes)


def hashed_bytes(size: int) -> np.ndarray:
    """``size`` bytes, each a hash of its offset: every tensor's data is the start of the same sequence, so
    one buffer of the largest serves a batch of tensor maps (read-only: a view of the sequence made so far)."""
    global _HASHED
    if size > _HASHED.size:  # grown by doubling, as a repeat of one period: a box's tensor may span 64 MiB
        _HASHED = np.resize(_hash_period(), max(size, 2 * _HASHED.size, HASH_PERIOD))
        _HASHED.flags.writeable = False
    return _HASHED[:size]


HASH_PERIOD = 1 << 21  # byte i is bits 13-20 of i * 0x9E3779B1, which depend on i mod 2^21 alone (the factor is odd)


@cache
def _hash_period() -> np.ndarray:
    index = np.arange(HASH_PERIOD, dtype=np.uint64)
    return ((index * np.uint64(0x9E3779B1) >> np.uint64(13)) & np.uint64(0xFF)).astype(np.uint8)


_HASHED = np.empty(0, np.uint8)


def source_words(boxes: list[TiledBox]) -> np.ndarray:
    """The global data every box of a batch reads (``hashed_bytes`` up to the largest tensor), as 8-byte words:
    what ``oracles.tma_windows`` places."""
    size = max(box_encoding(box).global_bytes for box in boxes)
    return hashed_bytes(-(-size // 8) * 8).view(np.uint64)


def expected_window(box: TiledBox, window: int) -> np.ndarray:
    """The oracle's shared-memory window after the copy (``box.dst`` counted from its base)."""
    encoding = box_encoding(box)
    data = global_bytes(encoding)
    out = np.full(window, FILL, dtype=np.uint8)
    e = box.element_bytes
    pitches = (e, *encoding.global_strides)
    for index in box.indices():
        src = sum(i * s * p for i, s, p in zip(index, box.element_strides, pitches))
        dst = box.address(index)
        out[dst : dst + e] = data[src : src + e]
    return out
