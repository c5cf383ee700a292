"""The TMA window oracle over arrays of boxes against the one-box oracle, and its comparison."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.source import source_for
from layoutfuzz.generators.tma import device_box
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox
from layoutfuzz.oracles.tma_windows import (
    FILL,
    expected_window,
    expected_windows,
    placements,
    source_words,
    window_mismatches,
)

WINDOW = 24 * 1024


def edge_boxes() -> list[TiledBox]:
    """Each CUDA mode at its widest row, with outer strides and partial last strides, at a late dstMem."""
    out = []
    for mode in (m for m in SwizzleMode if m.spec.cuda is not None):
        for e in (1, 2, 4, 8):
            inner = (mode.spec.span or 256 * e) // e if mode.spec.span else 256
            out.append(TiledBox((inner, 3, 5), e, (1, 2, 3), mode, 1024 + 128 * 7))
            out.append(TiledBox((16 // e, 1, 1, 2, 3), e, (1, 1, 8, 1, 2), mode, 0))
    return out


BOXES = [device_box(source_for("tma.swizzle", 7, i)) for i in range(800)] + edge_boxes()


@pytest.mark.slow
def test_every_window_equals_the_one_box_oracle():
    # one implementation per box against one over arrays, on the generator's whole range and its edges
    words = source_words(BOXES)
    windows = expected_windows(placements(BOXES), words, WINDOW, FILL)
    reference = np.stack([expected_window(b, WINDOW) for b in BOXES])
    differ = np.flatnonzero((windows != reference).any(axis=1))
    assert differ.size == 0, [BOXES[i] for i in differ[:3]]
    assert {b.swizzle for b in BOXES} == {m for m in SwizzleMode if m.spec.cuda is not None}


def test_granules_land_once_each_inside_the_boxs_footprint():
    # a swizzle permutes addresses: no two granules of a box share a word, and none leaves [dstMem, dstMem + footprint)
    placed = placements(BOXES)
    for i in np.random.default_rng(1).choice(len(BOXES), 300, replace=False):
        words = placed.word[placed.case == i]
        box = BOXES[i]
        assert np.unique(words).size == words.size == box.size_bytes // 8
        span = max(box.swizzle.spec.repeat, 8)
        low, high = box.dst // span * span, -(-(box.dst + box.footprint_bytes) // span) * span
        assert words.min() * 8 >= low and words.max() * 8 + 8 <= high


@pytest.mark.parametrize("fault", ["byte in a granule", "byte outside the box", "two granules swapped", "granule not written"])
def test_the_comparison_finds_each_planted_fault_and_nothing_else(fault):
    boxes = BOXES[:200]
    words, placed = source_words(boxes), placements(boxes)
    windows = np.stack([expected_window(b, WINDOW) for b in boxes])
    assert not window_mismatches(placed, words, windows, FILL).any()
    victim = 17
    mine = placed.word[placed.case == victim]
    view = windows[victim].view(np.uint64)
    if fault == "byte in a granule":
        windows[victim, mine[3] * 8 + 5] ^= 0x40
    elif fault == "byte outside the box":
        outside = np.setdiff1d(np.arange(WINDOW // 8), mine)[-1]
        windows[victim, outside * 8] ^= 1
    elif fault == "two granules swapped":
        view[[mine[0], mine[1]]] = view[[mine[1], mine[0]]]
    else:
        view[mine[2]] = np.uint64(int.from_bytes(bytes([FILL]) * 8, "little"))
    assert np.flatnonzero(window_mismatches(placed, words, windows, FILL)).tolist() == [victim]


def test_the_source_data_is_each_bytes_hash_of_its_offset_past_the_period():
    # hashed_bytes repeats one 2 MiB period (bits 13-20 of i * 0x9E3779B1 depend on i mod 2^21): byte for byte
    # the definition, across the period's ends and after growing
    import numpy as np

    from layoutfuzz.oracles import tma_windows as tma

    size = 5 * tma.HASH_PERIOD + 12345
    index = np.arange(size, dtype=np.uint64)
    want = ((index * np.uint64(0x9E3779B1) >> np.uint64(13)) & np.uint64(0xFF)).astype(np.uint8)
    small = tma.hashed_bytes(1000).copy()
    assert np.array_equal(tma.hashed_bytes(size), want)
    assert np.array_equal(small, want[:1000]) and np.array_equal(tma.hashed_bytes(1000), want[:1000])
