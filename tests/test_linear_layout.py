"""The F2 oracle against the paper's worked example (Section 4.1, Table 1) and its algebra laws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuzz.generators.strategies import (
    arbitrary_layouts,
    distributed_layouts,
    injective_layouts,
    invertible_layouts,
    memory_layouts,
)
from layoutfuzz.oracles import LayoutError, LinearLayout

# Section 4.1: layout A tiles 16x16 with 2x2 registers, 4x8 threads, 2x1 warps; the paper's
# output vector is w = (j bits, i bits), j the fastest-moving dim.
LAYOUT_A = LinearLayout.from_bases(
    [
        ("register", [[1, 0], [0, 1]]),
        ("lane", [[2, 0], [4, 0], [8, 0], [0, 2], [0, 4]]),
        ("warp", [[0, 8]]),
    ],
    [("j", 16), ("i", 16)],
)

# The 8x8 matrix printed in Section 4.1 (rows j0..j3, i0..i3; columns Reg, Thr, Wrp bits).
PAPER_MATRIX_A = np.array(
    [
        [1, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 1, 0, 0, 0, 0, 0],
        [0, 0, 0, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 1, 0, 0, 0],
        [0, 1, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 1, 0, 0],
        [0, 0, 0, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 1],
    ],
    dtype=np.uint8,
)

# Table 1: location (i, j) -> (register, thread, warp).
TABLE_1 = [
    ((0, 0), (0, 0, 0)),
    ((0, 1), (1, 0, 0)),
    ((0, 2), (0, 1, 0)),
    ((0, 3), (1, 1, 0)),
    ((1, 0), (2, 0, 0)),
    ((1, 1), (3, 0, 0)),
    ((2, 2), (0, 9, 0)),
    ((2, 3), (1, 9, 0)),
    ((3, 2), (2, 9, 0)),
    ((3, 3), (3, 9, 0)),
]


def test_section_4_1_matrix():
    assert np.array_equal(LAYOUT_A.matrix(), PAPER_MATRIX_A)


@pytest.mark.parametrize(("location", "hardware"), TABLE_1)
def test_table_1_rows(location, hardware):
    i, j = location
    register, lane, warp = hardware
    assert LAYOUT_A.apply({"register": register, "lane": lane, "warp": warp}) == {"j": j, "i": i}
    # and back: the inverse recovers the hardware index from the location (Def 4.5)
    assert LAYOUT_A.invert().apply({"j": j, "i": i}) == {"register": register, "lane": lane, "warp": warp}


def test_section_4_1_xor_of_tiles():
    # loc_w0 ⊕ loc_t9 ⊕ loc_r1 = (2, 3): r1 at (0, 1), t9's tile at (2, 2), w0 at (0, 0).
    assert LAYOUT_A.apply({"register": 1}) == {"j": 1, "i": 0}
    assert LAYOUT_A.apply({"lane": 9}) == {"j": 2, "i": 2}
    assert LAYOUT_A.apply({"register": 1, "lane": 9, "warp": 0}) == {"j": 3, "i": 2}


def test_section_5_1_zero_register_column_broadcasts():
    # "adding a zero column in A_reg means that registers 4-7 map to the same elements as 0-3"
    bases = [("register", [[1, 0], [0, 1], [0, 0]]), *LAYOUT_A.to_dict()["bases"][1:]]
    wider = LinearLayout.from_bases(bases, [("j", 16), ("i", 16)])
    assert wider.free_variable_masks() == {"register": 0b100, "lane": 0, "warp": 0}
    for r in range(4):
        assert wider.apply({"register": r + 4, "lane": 5}) == wider.apply({"register": r, "lane": 5})
    assert wider.is_surjective() and not wider.is_injective()


def test_apply_all_is_apply_everywhere_on_layout_a():
    table = LAYOUT_A.apply_all()
    for flat in range(256):
        point = {"register": flat & 3, "lane": flat >> 2 & 31, "warp": flat >> 7}
        assert LAYOUT_A.apply(point) == {"j": table["j"][flat], "i": table["i"][flat]}


def test_apply_all_of_2_to_the_20_inputs():
    layout = LinearLayout.from_bases(
        [("register", [[1 << k] for k in range(10)]), ("lane", [[1 << (k + 10)] for k in range(10)])],
        [("dim0", 1 << 20)],
    )
    assert np.array_equal(layout.apply_all()["dim0"], np.arange(1 << 20))


def test_bad_sizes_and_preconditions_are_layout_errors():
    with pytest.raises(LayoutError, match="power of two"):
        LinearLayout.from_bases([("register", [[1]])], [("dim0", 6)])
    with pytest.raises(LayoutError, match="leaves"):
        LinearLayout.from_bases([("register", [[4]])], [("dim0", 4)])
    not_surjective = LinearLayout.from_bases([("register", [[1]])], [("dim0", 4)])
    with pytest.raises(LayoutError, match="surjective"):
        not_surjective.right_inverse()
    with pytest.raises(LayoutError, match="not invertible"):
        not_surjective.invert()


@given(arbitrary_layouts(max_in_bits=8, max_out_bits=8), st.data())
def test_compose_is_matrix_product_and_associative(inner, data):
    names = list(inner.out_dim_names)
    bits = [s.bit_length() - 1 for _, s in inner.out_dims]
    from layoutfuzz.generators.layouts import arbitrary_layout
    from layoutfuzz.generators.source import HypothesisSource

    src = HypothesisSource(data.draw)
    middle = arbitrary_layout(src, names, in_bits=bits, max_out_bits=6)
    outer = arbitrary_layout(
        src, list(middle.out_dim_names), in_bits=[s.bit_length() - 1 for _, s in middle.out_dims], max_out_bits=6
    )
    composed = inner.compose(middle)
    assert np.array_equal(composed.matrix(), (middle.matrix().astype(int) @ inner.matrix()) % 2)
    assert inner.compose(middle).compose(outer) == inner.compose(middle.compose(outer))
    # pointwise: (middle ∘ inner)(x) = middle(inner(x))
    for x in range(min(1 << inner.total_in_bits, 64)):
        point, shift = {}, 0
        for name, bases in inner.in_dims:
            point[name] = x >> shift & ((1 << len(bases)) - 1)
            shift += len(bases)
        assert composed.apply(point) == middle.apply(inner.apply(point))


@given(arbitrary_layouts(max_in_bits=6, max_out_bits=6), arbitrary_layouts(max_in_bits=6, max_out_bits=6))
def test_product_is_block_diagonal_and_left_division_undoes_it(a, b):
    b = LinearLayout.from_dict(
        {"bases": [[f"{n}2", bs] for n, bs in b.to_dict()["bases"]],
         "out_dims": [[f"{n}b", s] for n, s in b.out_dims]}
    )
    product = a * b
    m = product.matrix()
    ra, ca = a.matrix().shape
    assert np.array_equal(m[:ra, :ca], a.matrix())
    assert np.array_equal(m[ra:, ca:], b.matrix())
    assert not m[:ra, ca:].any() and not m[ra:, :ca].any()
    quotient = product.divide_left(a)
    assert quotient is not None
    assert quotient.sublayout(b.in_dim_names, b.out_dim_names) == b


@given(distributed_layouts(max_out_bits=6), distributed_layouts(max_out_bits=6))
def test_product_with_shared_dims_stacks_self_minor(a, b):
    quotient = (a * b).divide_left(a)
    assert quotient is not None
    got = quotient.sublayout(b.in_dim_names, b.out_dim_names).transpose_ins(b.in_dim_names)
    assert got.transpose_outs(b.out_dim_names) == b
    # whatever b lacks is trivial in the quotient
    assert all(size == 1 for name, size in quotient.out_dims if name not in b.out_dim_names)
    assert all(not bases for name, bases in quotient.in_dims if name not in b.in_dim_names)


@given(st.one_of(distributed_layouts(max_out_bits=8), memory_layouts(max_bits=8), invertible_layouts(max_bits=8)))
def test_right_inverse_is_a_right_inverse(layout):
    right = layout.right_inverse()
    assert np.array_equal(right.compose(layout).table(), LinearLayout.identity(layout.out_dims).table())


@given(distributed_layouts(max_out_bits=8))
def test_right_inverse_of_distributed_reads_first_copy(layout):
    # Section 5.4: slack variables zero -> each element read from its first holder; never a broadcast bit
    right = layout.right_inverse()
    masks = layout.free_variable_masks()
    for _, bases in right.in_dims:
        for basis in bases:
            coords = dict(zip(right.out_dim_names, basis))
            assert all(coords[n] & masks[n] == 0 for n in masks)
            assert sum(bin(v).count("1") for v in basis) == 1


@given(st.one_of(memory_layouts(max_bits=8), invertible_layouts(max_bits=8)))
def test_invert_twice_is_identity_and_inverse_on_both_sides(layout):
    inverse = layout.invert()
    assert inverse.invert() == layout
    assert np.array_equal(layout.compose(inverse).table(), LinearLayout.identity(layout.in_sizes).table())


@given(arbitrary_layouts(max_in_bits=8, max_out_bits=8))
def test_pseudoinverse_is_a_generalised_inverse(layout):
    g = layout.pseudoinverse()
    assert np.array_equal(layout.compose(g).compose(layout).table(), layout.table())


@given(st.data())
def test_invert_and_compose_solves_a_equals_b_after_c(data):
    from layoutfuzz.generators.layouts import arbitrary_layout, distributed_layout
    from layoutfuzz.generators.source import HypothesisSource

    src = HypothesisSource(data.draw)
    b = distributed_layout(src, max_out_bits=7)
    a = arbitrary_layout(src, outs=b.out_dims, max_in_bits=7)
    c = a.invert_and_compose(b)
    assert np.array_equal(c.compose(b).table(), a.table())
    # Section 5.4: converting B to itself is the identity on B's bits, and broadcast copies
    # (zero columns) read from the first copy: they map to zero
    same = b.invert_and_compose(b)
    for name, bases in b.in_dims:
        for k, basis in enumerate(bases):
            image = same.apply({name: 1 << k})
            want = {n: (1 << k if n == name and any(basis) else 0) for n in same.out_dim_names}
            assert image == want


def test_invert_and_compose_found_aborting_triton_3_6():
    # the case triton.linear_layout reduced to: B surjective, A shares B's lane dim
    a = LinearLayout.from_bases([("register", [[1, 1]]), ("lane", [[0, 1]])], [("dim0", 2), ("dim1", 2)])
    b = LinearLayout.from_bases([("register", [[0, 0], [1, 0]]), ("lane", [[0, 1]])], [("dim0", 2), ("dim1", 2)])
    c = a.invert_and_compose(b)
    assert c.apply({"register": 1}) == {"register": 2, "lane": 1}
    assert c.apply({"lane": 1}) == {"register": 0, "lane": 1}


@given(st.one_of(injective_layouts(max_out_bits=8), arbitrary_layouts(max_out_bits=8, max_in_bits=8)))
def test_injective_surjective_match_rank(layout):
    assert layout.is_injective() == (len(set(layout.table().tolist())) == 1 << layout.total_in_bits)
    assert layout.is_surjective() == (len(set(layout.table().tolist())) == 1 << layout.total_out_bits)


@settings(max_examples=50)
@given(arbitrary_layouts(max_in_bits=8, max_out_bits=8), st.randoms(use_true_random=False))
def test_transpose_reshape_and_sublayout(layout, rnd):
    ins = list(layout.in_dim_names)
    outs = list(layout.out_dim_names)
    rnd.shuffle(ins)
    rnd.shuffle(outs)
    moved = layout.transpose_ins(ins).transpose_outs(outs)
    assert moved.transpose_ins(layout.in_dim_names).transpose_outs(layout.out_dim_names) == layout
    point = {n: rnd.randrange(layout.in_dim_size(n)) for n in layout.in_dim_names}
    assert moved.apply(point) == layout.apply(point)
    flat = layout.reshape_ins([("flat", 1 << layout.total_in_bits)]).reshape_outs([("x", 1 << layout.total_out_bits)])
    assert np.array_equal(flat.table(), layout.table())
    keep = layout.out_dim_names[:1]
    sub = layout.sublayout(layout.in_dim_names[:1], keep)
    first = layout.in_dim_names[0]
    for v in range(layout.in_dim_size(first)):
        assert sub.apply({first: v}) == {k: layout.apply({first: v})[k] for k in keep}
