"""oracles.cute against pycute (the CuTe reference in Python) and seed 002's units trap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuzz.oracles.cute import ComposedLayout, Layout, Swizzle, parse_layout

pycute = pytest.importorskip("pycute", reason="pycute ships in the nvidia-cutlass wheel (the [crosscheck] extra; CI installs it)")


@st.composite
def layouts(draw):
    rank = draw(st.integers(1, 3))
    shape, stride = [], []
    for _ in range(rank):
        n = draw(st.integers(1, 2))
        modes_s = tuple(draw(st.sampled_from([1, 2, 3, 4, 8])) for _ in range(n))
        modes_d = tuple(draw(st.integers(0, 64)) for _ in range(n))
        shape.append(modes_s if n > 1 else modes_s[0])
        stride.append(modes_d if n > 1 else modes_d[0])
    return tuple(shape), tuple(stride)


@settings(max_examples=150, deadline=None)
@given(layouts())
def test_layout_offsets_match_pycute(shape_stride):
    shape, stride = shape_stride
    ours, theirs = Layout(shape, stride), pycute.Layout(shape, stride)
    assert ours.size() == pycute.size(theirs)
    assert ours.cosize() == pycute.cosize(theirs)
    assert [ours(i) for i in range(ours.size())] == [theirs(i) for i in range(ours.size())]
    coalesced = ours.coalesce()
    assert [coalesced(i) for i in range(ours.size())] == [theirs(i) for i in range(ours.size())]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 3), st.integers(0, 5), st.integers(0, 5), st.integers(0, 1 << 14))
def test_swizzle_matches_pycute_and_its_f2_matrix(bits, base, extra, offset):
    shift = max(1, bits + extra)  # pycute recurses forever on shift 0
    ours, theirs = Swizzle(bits, base, shift), pycute.Swizzle(bits, base, shift)
    assert ours(offset) == theirs(offset)
    table = ours.linear_layout(15).table()
    assert int(table[offset & 0x7FFF]) == ours(offset & 0x7FFF)


def test_split_is_cute_logical_divide():
    # seed 002, K-major none swizzle: (_64,(_1,_2)):(_1,(_1,_128)) divided by (8, 2)
    u128 = parse_layout("(_64,(_1,_2)):(_1,(_1,_128))")
    (a, b), (c, d) = u128.mode(0).split(8), u128.mode(1).split(2)
    assert (str(a), str(b), str(c), str(d)) == ("8:1", "8:8", "2:128", "1:0")


def test_units_trap_byte_half_and_128bit_swizzles_are_one_map():
    # seed 002: Layout_K_SW128_Atom is Sw<3,4,3> on bytes, printed as Sw<3,3,3> on half elements
    # and Sw<3,0,3> on 128-bit units; all three place every element at the same byte.
    on_bytes = ComposedLayout(Swizzle(3, 4, 3), 0, parse_layout("(_8,_64):(_64,_1)"), 16)
    on_half = ComposedLayout(Swizzle(3, 3, 3), 0, parse_layout("(_8,_64):(_64,_1)"))
    on_u128 = ComposedLayout(Swizzle(3, 0, 3), 0, parse_layout("(_8,_8):(_8,_1)"))
    for r in range(8):
        for c in range(64):
            assert on_bytes((r, c)) == 2 * on_half((r, c))
            assert on_bytes((r, c)) == 16 * on_u128((r, c // 8)) + 2 * (c % 8)
    assert Swizzle(3, 4, 3).in_units(1) == Swizzle(3, 3, 3)
    assert Swizzle(3, 4, 3).in_units(4) == Swizzle(3, 0, 3)
    # the trap itself: the byte swizzle applied to half-element offsets is another map
    assert any(Swizzle(3, 4, 3)(o) != Swizzle(3, 3, 3)(o) for o in range(512))


@pytest.mark.parametrize(
    "name, bits_swizzle, u128",
    [  # seed 002: the four K-major atoms printed for 128-bit units and for half
        ("INTER", Swizzle(0, 4, 3), "(_8,_1):(_1,_1)"),
        ("SW32", Swizzle(1, 4, 3), "(_8,_2):(_2,_1)"),
        ("SW64", Swizzle(2, 4, 3), "(_8,_4):(_4,_1)"),
        ("SW128", Swizzle(3, 4, 3), "(_8,_8):(_8,_1)"),
    ],
)
def test_k_major_atoms_in_bits_half_and_u128_agree(name, bits_swizzle, u128):
    width = parse_layout(u128).mode(1).size()
    in_bits = ComposedLayout(bits_swizzle, 0, Layout((8, 128 * width), (128 * width, 1)), 1)
    in_half = ComposedLayout(bits_swizzle.in_units(1), 0, Layout((8, 8 * width), (8 * width, 1)))
    for r in range(8):
        for c in range(8 * width):
            assert in_bits((r, 16 * c)) == 2 * in_half((r, c)), name
