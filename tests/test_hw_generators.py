"""The wgmma and TMA samplers: always valid, and they reach the corners the peers never test."""

from __future__ import annotations

from collections import Counter

import pytest

from layoutfuzz.generators import tma as tma_gen
from layoutfuzz.generators import wgmma as wgmma_gen
from layoutfuzz.generators.source import RandomSource
from layoutfuzz.oracles.tma import SwizzleMode as TmaMode
from layoutfuzz.oracles.wgmma import Major, SwizzleMode, from_descriptor


@pytest.mark.slow
def test_wgmma_layouts_are_injective_and_reach_every_corner():
    seen = Counter()
    for i in range(600):
        layout = wgmma_gen.canonical_layout(RandomSource(f"w/{i}"))
        addresses = [a for row in layout.addresses() for a in row]
        assert len(set(addresses)) == len(addresses), layout  # repeats never overlap
        if i % 10 == 0:  # the descriptor denotes the same layout back
            again = from_descriptor(layout.descriptor(), layout.major, layout.elem_bits, layout.m, layout.k)
            assert again.addresses() == layout.addresses()
        seen["bits", layout.elem_bits] += 1
        seen["mode", layout.swizzle, layout.major] += 1
        seen["base_offset", layout.base_offset] += 1
        seen["m", layout.m] += 1
        seen["k", layout.k] += 1
        if layout.major is Major.K and layout.swizzle is not SwizzleMode.NONE:
            seen["ignored lbo", layout.lbo % 4096 != 16] += 1
        if layout.swizzle is not SwizzleMode.NONE and layout.start % layout.swizzle.repeat_bytes:
            seen["unaligned start"] += 1
    assert all(seen["bits", b] for b in (8, 16, 32, 64))
    assert all(seen["mode", s, m] for s in SwizzleMode for m in Major)
    assert all(seen["base_offset", b] for b in range(8))
    assert seen["m", 8] and seen["k", 4] and seen["ignored lbo", True] and seen["unaligned start"] > 50


def test_tma_boxes_are_valid_and_cover_every_mode_and_base_offset():
    seen = Counter()
    for i in range(600):
        box = tma_gen.tiled_box(RandomSource(f"t/{i}"))  # TiledBox validates itself
        seen[box.swizzle] += 1
        seen["base", box.swizzle.base_offset(box.dst)] += 1
        seen["strided"] += any(s > 1 for s in box.element_strides)
    assert all(seen[m] for m in TmaMode)
    assert all(seen["base", b] for b in range(8)) and seen["strided"] > 100


def test_descriptors_cover_all_fields():
    words = {wgmma_gen.descriptor(RandomSource(f"d/{i}")).encode() >> 49 & 7 for i in range(200)}
    assert words == set(range(8))
