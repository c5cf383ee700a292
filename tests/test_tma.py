"""oracles.tma against every table of seed 004 (PTX ISA 5.5.7)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuzz.harness.truth import SEED004_TABLES
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox

IDENTITY = [0, 1, 2, 3, 4, 5, 6, 7]
# 5.5.7's destination tables, 16-byte cells per 128-byte line, until "Pattern repeats"; 32-byte
# atomicity reads "0 1 | 2 3 | 4 5 | 6 7", "2 3 | 0 1 | 6 7 | 4 5", ...; 64-byte "0 1 2 3 | 4 5 6 7", ...
TABLES = {SwizzleMode[name]: rows for name, rows in SEED004_TABLES["tables"].items()}


@pytest.mark.parametrize("mode", list(TABLES))
def test_destination_tables_and_their_repeat(mode):
    rows = len(TABLES[mode])
    assert mode.cell_table(rows) == TABLES[mode]
    assert mode.cell_table(2 * rows)[rows:] == TABLES[mode]  # "... Pattern repeats ..."
    assert mode.spec.repeat in (1, rows * 128)


def test_32b_atomicity_with_8b_flip():
    # like 32-byte atomicity, with the two 8-byte halves of each 16 bytes swapped on every other line
    flip = SwizzleMode.B128_ATOM_32B_FLIP_8B
    plain = SwizzleMode.B128_ATOM_32B
    for address in range(0, 1024, 8):
        line = address // 128
        assert flip(address) == plain(address) ^ (8 if line % 2 else 0)


@pytest.mark.parametrize(
    "mode, boundary, modulus",
    [  # the two tables after Table 14: repeating-pattern boundary and base-offset formula
        (SwizzleMode.B128, 1024, 8),
        (SwizzleMode.B96, 256, 2),
        (SwizzleMode.B64, 512, 4),
        (SwizzleMode.B32, 256, 2),
    ],
)
def test_base_offset_table(mode, boundary, modulus):
    assert mode.spec.repeat == boundary
    for dst in range(0, 4096, 128):
        expected = 0 if dst % boundary == 0 else (dst // 128) % modulus
        assert mode.base_offset(dst) == expected


def test_table_14_atomicity_and_cuda_values():
    assert {m: m.spec.atomicity for m in SwizzleMode} == {
        SwizzleMode.NONE: 16, SwizzleMode.B32: 16, SwizzleMode.B64: 16, SwizzleMode.B96: 16, SwizzleMode.B128: 16,
        SwizzleMode.B128_ATOM_32B: 32, SwizzleMode.B128_ATOM_32B_FLIP_8B: 32, SwizzleMode.B128_ATOM_64B: 64,
    }
    # CUtensorMapSwizzle: NONE 0, 32B 1, 64B 2, 128B 3, 128B_ATOM_32B 4, ..._FLIP_8B 5, 128B_ATOM_64B 6
    assert [SwizzleMode.from_cuda(v) for v in range(7)] == [
        SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128,
        SwizzleMode.B128_ATOM_32B, SwizzleMode.B128_ATOM_32B_FLIP_8B, SwizzleMode.B128_ATOM_64B,
    ]
    assert SwizzleMode.B128_ATOM_32B.spec.alignment == 32  # "requires 32 byte alignment"
    assert SwizzleMode.B128_ATOM_64B.spec.alignment == 64  # "requires 64-byte alignment"
    with pytest.raises(LayoutError):
        SwizzleMode.from_cuda(7)


@pytest.mark.parametrize("mode", list(SwizzleMode))
def test_every_mode_is_an_invertible_f2_map_that_keeps_its_atoms(mode):
    layout = mode.linear_layout(12)
    assert layout.is_invertible()
    for k in range(12):
        assert int(layout.table()[1 << k]) == mode(1 << k)
    atom = mode.spec.atomicity
    for address in range(0, 4096, atom):
        moved = sorted(mode(address + i) for i in range(atom))
        assert moved == list(range(moved[0], moved[0] + atom))  # atoms stay together
        if mode is not SwizzleMode.B128_ATOM_32B_FLIP_8B:  # ... and intact, but for the 8-byte flip
            assert mode(address + atom - 1) == mode(address) + atom - 1
        assert mode(address) // 128 == address // 128  # data stays in its 128-byte line


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_tiled_box_placement_is_a_dense_swizzled_bijection(data):
    mode = data.draw(st.sampled_from(list(SwizzleMode)))
    elem = data.draw(st.sampled_from([1, 2, 4, 8]))
    span = mode.spec.span or 256
    inner_max = max(1, min(256, span // elem))
    inner = data.draw(st.sampled_from([n for n in (16 // elem, 32 // elem, 64 // elem, 128 // elem, 256 // elem) if 1 <= n <= inner_max and n * elem % 16 == 0] or [16 // elem]))
    outer = data.draw(st.lists(st.integers(1, 12), min_size=0, max_size=2))
    dst = data.draw(st.integers(0, 63)) * max(128, mode.spec.repeat)
    box = TiledBox((inner, *outer), elem, (1,) * (1 + len(outer)), mode, dst + data.draw(st.sampled_from([0, 128, 256, 384])) * (mode.spec.repeat > 128))
    placement = box.placement()
    assert len(set(placement)) == len(placement)
    lo, inner_n = box.dst, box.loaded_dims[0]
    rows = [lo + (i // inner_n) * box.row_bytes + (i % inner_n) * elem for i in range(len(placement))]
    assert [mode(p) for p in placement] == rows  # the swizzle is an involution on each row
    assert box.row_bytes == (box.inner_bytes if mode is SwizzleMode.NONE else max(box.inner_bytes, mode.spec.span))
    if mode is SwizzleMode.NONE:
        assert placement == [lo + i * elem for i in range(len(placement))]


def test_element_strides_shrink_the_copied_box_and_bad_boxes_are_refused():
    box = TiledBox((64, 10), 2, (2, 3), SwizzleMode.B64, 0)
    assert box.loaded_dims == (32, 4)  # ceil(boxDim / elementStride)
    with pytest.raises(LayoutError, match="exceeds"):
        TiledBox((128,), 2, (1,), SwizzleMode.B128.name, 0)  # 256 bytes > the 128-byte span
    with pytest.raises(LayoutError, match="aligned"):
        TiledBox((32,), 2, (1,), SwizzleMode.B128_ATOM_64B, 32)
