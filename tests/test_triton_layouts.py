"""oracles.triton_layouts against Section 4.1, Props 4.6-4.8/4.12, 9.1, 9.2 and Defs 4.10/4.14."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuzz.generators import legacy_layouts
from layoutfuzz.generators.source import HypothesisSource
from layoutfuzz.oracles import triton_layouts as tl
from tests.test_linear_layout import PAPER_MATRIX_A


def is_distributed(layout) -> bool:
    """Def 4.10: surjective, columns with at most one bit, no repeated non-zero column."""
    cols = [c for c in layout.columns if c]
    return layout.is_surjective() and all(c & (c - 1) == 0 for c in cols) and len(set(cols)) == len(cols)


def test_section_4_1_layout_a_is_a_blocked_layout():
    # "layout A tiles a 16 x 16 tensor using 2 x 2 registers, 4 x 8 threads, and 2 x 1 warps", j fastest
    layout = tl.BlockedLayout((2, 2), (4, 8), (2, 1), (1, 0)).linear_layout([16, 16])
    matrix = layout.sublayout(["register", "lane", "warp"], ["dim0", "dim1"]).transpose_outs(["dim1", "dim0"]).matrix()
    assert np.array_equal(matrix, PAPER_MATRIX_A)
    # Table 1: r1 of t9 in w0 is at (2, 3)
    assert layout.apply({"register": 1, "lane": 9, "warp": 0, "block": 0}) == {"dim0": 2, "dim1": 3}


def test_prop_9_2_mma_tile_registers_and_lanes():
    # mma v2 accumulator of one warp, 16 x 8: kWidth=2 registers and 4 lanes along the inner dim,
    # 8 lanes along the outer dim, then 2 register rows (the id_2^Thr,1 x id_3^Thr,0 structure)
    layout = tl.NVMMADistributedLayout((2, 0), (1, 1), (16, 8)).linear_layout([16, 8])
    bases = dict(layout.in_dims)
    assert bases["register"] == ((0, 1), (8, 0))
    assert bases["lane"] == ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
    # wgmma: the warp-group's 4 warps stack along M (Prop 9.2: "multiplying by id_2^Wrp,0")
    hopper = tl.NVMMADistributedLayout((3, 0), (4, 1), (16, 64, 16)).linear_layout([64, 64])
    assert dict(hopper.in_dims)["warp"] == ((16, 0), (32, 0))


def test_prop_9_2_dot_operand_broadcasts_warps_along_k():
    # "broadcast (add a column of all zeros) for every warp owning data on the inner dimension"
    mma = tl.NVMMADistributedLayout((2, 0), (2, 2), (16, 8))
    a = tl.DotOperandLayout(0, mma, 2).linear_layout([64, 64])
    b = tl.DotOperandLayout(1, mma, 2).linear_layout([64, 64])
    assert (0, 0) in dict(a.in_dims)["warp"] and (0, 0) in dict(b.in_dims)["warp"]
    assert a.free_variable_masks()["warp"] == 0b01 and b.free_variable_masks()["warp"] == 0b10


def test_section_5_1_tiles_larger_than_the_tensor_broadcast():
    # a 4x8 thread tile over a 2x4 tensor: lanes beyond the tensor get zero columns
    layout = tl.BlockedLayout((1, 1), (4, 8), (1, 1), (1, 0)).linear_layout([2, 4])
    assert layout.free_variable_masks()["lane"] == 0b10100  # lane bit 2 (dim1 4) and bit 4 (dim0 2)
    assert layout.is_surjective()


def test_prop_4_12_swizzled_shared_matrix_structure():
    # [[I_n, C], [0, I_m]] with row c_i = (vec * (2^i / per_phase mod max_phase)) mod 2^n
    vec, per_phase, max_phase, rows, cols = 2, 2, 4, 16, 32
    layout = tl.SwizzledSharedLayout(vec, per_phase, max_phase, (1, 0)).linear_layout([rows, cols])
    bases = dict(layout.in_dims)["offset"]
    for k in range(5):
        assert bases[k] == (0, 1 << k)
    for i in range(4):
        assert bases[5 + i] == (1 << i, (vec * ((1 << i) // per_phase % max_phase)) % cols)
    assert layout.is_invertible()


def test_nvmma_shared_is_the_byte_swizzle_of_seed_003():
    # 128B swizzle, 16-bit, 8 x 64 atom: element (r, c) at offset r*64 + (c ^ 8*(r%8)) per Swizzle<3,4,3>
    layout = tl.NVMMASharedLayout(128, 16).linear_layout([16, 64])
    table = layout.apply_all()
    for off in range(16 * 64):
        r, c = int(table["dim0"][off]), int(table["dim1"][off])
        byte = 2 * (r * 64 + c)
        assert byte ^ ((byte >> 7) & 7) << 4 == 2 * off


def test_transposed_rank3_nvmma_shared_follows_tritons_definition():
    # Triton's nvmmaSharedToLinearLayout (LinearLayoutConversions.cpp), worked by hand for [256, 16, 8], 8-bit, 64B,
    # transposed: TMA block [64, 16, 8] (dim 0 clamped to the 64-element atom), collapsed [8, 1024]; the atom's 6
    # column bits run along dim 0, its 3 rows along dim 1 = 2, 4, 8 (XOR 16 elements of dim 0 per phase); the 1024
    # columns, reshaped row-major to the rotated block [16, 8, 64] and permuted back, give dim 2 = 1, 2, 4, then
    # dim 1 = 1; the rest of dim 0 (64, 128) last. Offsets as row-major flat indices (strides 128, 8, 1); Triton
    # 3.6.0's compiler and 3.9.0's to_linear_layout give the same (triton.shared_layouts, triton.layouts)
    layout = tl.NVMMASharedLayout(64, 8, 3, True).linear_layout([256, 16, 8])
    flat = [b[0] * 128 + b[1] * 8 + b[2] for b in dict(layout.in_dims)["offset"]]
    assert flat == [128, 256, 512, 1024, 2048, 4096, 16, 2080, 4160, 1, 2, 4, 8, 8192, 16384]


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_every_nvmma_shared_layout_is_a_memory_layout_whose_atom_rows_are_contiguous(rank, transposed):
    # over the whole domain of widths, swizzles and shapes from 8 to 512: Def 4.14 (invertible), and the first
    # atom-width offsets walk the contiguous dim (dim 0 when transposed, the last otherwise) element by element, as
    # far as that dim goes (a transposed atom's columns run on through the other outer dims: Triton collapses them)
    import itertools

    contig = 0 if transposed else rank - 1
    checked = 0
    for swizzle, bits in itertools.product((32, 64, 128), (8, 16, 32)):
        width = 8 * swizzle // bits
        for shape in itertools.product((8, 16, 64, 512), repeat=rank):
            try:
                layout = tl.NVMMASharedLayout(swizzle, bits, rank, transposed).linear_layout(list(shape))
            except tl.LayoutError:
                continue  # smaller than the atom
            memory = layout.sublayout(["offset"], [f"dim{i}" for i in range(rank)])
            assert memory.is_invertible(), (swizzle, bits, shape)
            bases = dict(layout.in_dims)["offset"]
            for k in range(min(width, shape[contig]).bit_length() - 1):
                assert bases[k] == tuple(1 << k if d == contig else 0 for d in range(rank)), (swizzle, bits, shape, k)
            checked += 1
    assert checked > 50


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_every_generated_distributed_layout_is_distributed(data):
    layout, shape = legacy_layouts.distributed(HypothesisSource(data.draw))
    ll = layout.linear_layout(shape)
    assert [s for _, s in ll.out_dims] == shape
    assert is_distributed(ll)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_every_generated_shared_layout_is_a_memory_layout(data):
    layout, shape, _ = legacy_layouts.shared(HypothesisSource(data.draw))
    ll = layout.linear_layout(shape).sublayout(["offset"], [f"dim{i}" for i in range(len(shape))])
    assert ll.is_invertible()  # Def 4.14: invertible, columns with one or two bits
    assert all(1 <= bin(c).count("1") <= 2 for c in ll.columns)


def test_dict_round_trip_and_bad_kind():
    layout = tl.SliceLayout(1, tl.DotOperandLayout(0, tl.NVMMADistributedLayout((2, 0), (2, 2), (16, 8)), 4))
    assert tl.from_dict(tl.to_dict(layout)) == layout
    with pytest.raises(ValueError):
        tl.from_dict({"kind": "nope"})
