"""The wgmma address oracle over arrays of canonical layouts against the one-layout oracle."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from layoutfuzz.generators.source import source_for
from layoutfuzz.generators.wgmma import device_case
from layoutfuzz.oracles.wgmma import CanonicalLayout, Major, SwizzleMode, probe_layout
from layoutfuzz.oracles.wgmma_addresses import canonical_addresses, highest_address


def table_layouts() -> list[CanonicalLayout]:
    """Every row of the canonical layout table for every element width, with strides past the pattern, starts
    inside and outside a pattern row and each kind of base offset: the corners a generator may not reach."""
    # K-major and swizzled, the K extent (2k units of 16 bytes) is at most the swizzle row (W units)
    return [CanonicalLayout(major, mode, bits, 2, mode.width // 2 if major is Major.K and mode.width > 1 else 2, lbo=1024,
                            sbo=4096, start=start, base_offset=base_offset)
            for major, mode, bits in itertools.product(Major, SwizzleMode, (8, 16, 32))
            for base_offset, start in ((0, 0), (3, 1024 + 128 * 5 + 16 * 3), (7, 256))]


LAYOUTS = [probe_layout(device_case(source_for("wgmma.descriptor", 5, i))) for i in range(600)] + table_layouts()


@pytest.mark.slow
def test_every_layout_equals_the_one_layout_oracle():
    # one implementation per layout against one over arrays, on the generator's range and the table's corners
    got = canonical_addresses(LAYOUTS)
    differ = [i for i, (g, layout) in enumerate(zip(got, LAYOUTS)) if not np.array_equal(g, np.array(layout.addresses()))]
    assert differ == [], [LAYOUTS[i] for i in differ[:3]]
    assert {(lay.major, lay.swizzle, lay.elem_bits) for lay in LAYOUTS} == set(itertools.product(Major, SwizzleMode, (8, 16, 32)))


def test_an_operand_reads_each_element_from_its_own_address():
    # a canonical layout is injective: no two (mn, k) of an operand share a byte address, and each is element-aligned
    for layout, addresses in zip(LAYOUTS, canonical_addresses(LAYOUTS)):
        assert np.unique(addresses).size == addresses.size
        assert not np.any(addresses % (layout.elem_bits // 8))


@pytest.mark.slow
def test_highest_address_is_the_largest_address_the_one_layout_oracle_reads():
    # the generator and validate keep a case inside the probe's window by it: it must be the exact maximum
    assert [highest_address(layout) for layout in LAYOUTS] == [max(max(row) for row in layout.addresses()) for layout in LAYOUTS]


def test_highest_address_over_strides_starts_and_base_offsets():
    # exact over a whole grid, not only what the generator draws: zero and equal strides (chunks that coincide),
    # strides that are not powers of two, starts in every 16-byte chunk of a swizzle line, and starts that are not
    # 16-byte aligned (read element by element); each against the largest of every address the layout reads
    checked = 0
    for major, mode, bits in itertools.product(Major, SwizzleMode, (8, 16, 32)):
        for m, k, lbo, sbo in itertools.product((1, 3, 4), (1, 2), (0, 16, 48, 1024), (0, 32, 1040, 4096)):
            for start, base_offset in ((0, 0), (16, 5), (112, 0), (1024 + 128 * 3 + 16 * 7, 2), (8, 7), (2000 + 4, 1)):
                if start % (bits // 8):
                    continue
                layout = CanonicalLayout(major, mode, bits, m, k, lbo, sbo, start, base_offset)
                want = int(canonical_addresses([layout])[0].max())
                assert highest_address.__wrapped__(layout) == want, layout
                checked += 1
    assert checked > 5000
