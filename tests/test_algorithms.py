"""oracles.algorithms: Section 5.1, 5.4 (Figure 4), Lemma 9.4 and the 9.2 swizzle vs Lemma 9.5."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuzz.generators import legacy_layouts
from layoutfuzz.generators.layouts import memory_layout
from layoutfuzz.generators.source import HypothesisSource
from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.oracles.algorithms import (
    contiguous_registers,
    conversion_plan,
    flat_columns,
    intersection_dim,
    optimal_swizzle,
    shared_access,
)
from layoutfuzz.oracles.linear_layout import LinearLayout


def test_section_5_1_contiguity_for_a_one_wide_tensor():
    # "when a dimension contained only one element, such as [128, 1], Triton disables vectorization"
    layout = tl.BlockedLayout((4, 1), (32, 1), (1, 1), (0, 1)).linear_layout([128, 1])
    assert contiguous_registers(layout) == 4
    assert contiguous_registers(tl.BlockedLayout((1, 4), (32, 1), (1, 1), (1, 0)).linear_layout([32, 4])) == 4
    assert contiguous_registers(tl.BlockedLayout((2, 4), (16, 2), (1, 1), (0, 1)).linear_layout([32, 8])) == 1


def test_figure_4_warp_shuffle():
    # 4 threads, one register, F2^3: I = {010}, G = {101}; span(V u I u G) = {000, 101, 010, 111}, 2 rounds
    a = LinearLayout.from_bases({"register": [[4]], "lane": [[1], [2]], "warp": []}, [("dim0", 8)])
    b = LinearLayout.from_bases({"register": [[1]], "lane": [[4], [2]], "warp": []}, [("dim0", 8)])
    plan = conversion_plan(a, b)
    assert (plan.kind, plan.vector, plan.common_lanes, plan.exchanged_lanes, plan.rounds) == ("shuffle", 0, 1, 1, 2)


def test_conversion_kinds():
    a = tl.BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0)).linear_layout([64, 64])
    same_threads = LinearLayout(tuple((n, tuple(reversed(bs)) if n == "register" else bs) for n, bs in a.in_dims), a.out_dims)
    assert conversion_plan(a, a).kind == "none"
    assert conversion_plan(a, same_threads).kind == "register"
    across_warps = tl.BlockedLayout((1, 4), (4, 8), (1, 4), (1, 0)).linear_layout([64, 64])
    assert conversion_plan(a, across_warps).kind == "shared"


@st.composite
def access_cases(draw):
    source = HypothesisSource(draw)
    layout, shape = legacy_layouts.distributed(source, draw(st.sampled_from(["blocked", "nvmma_v2", "nvmma_v3", "dot_operand"])))
    dist = layout.linear_layout(shape)
    dist = dist.sublayout(["register", "lane", "warp"], dist.out_dim_names)
    shared = memory_layout(source, "offset", outs=list(dist.out_dims))
    return shared, dist, draw(st.sampled_from([8, 16, 32, 64]))


@settings(max_examples=150, deadline=None)
@given(access_cases())
def test_lemma_9_4_is_exact_when_a_vector_covers_a_bank(case):
    shared, dist, bits = case
    access = shared_access(shared, dist, bits)
    if (1 << access.vector_log2) * bits >= 32:
        assert access.wavefronts_per_phase == access.lemma_c
    else:  # "not enough vectorization": at least c wavefronts
        assert access.wavefronts_per_phase >= access.lemma_c


def test_sub_word_accesses_can_conflict_beyond_lemma_9_4():
    # 8-bit elements of a row-major 2 x 128 tile, no vectorisation. Lane bit 0 moves one row
    # (+128 bytes: same bank, another word) and one byte (inside the word) at once, so pairs of
    # lanes conflict, although 128 + 1 is outside span(S_Idx) = {0, 128}: Lemma 9.4's c is 1.
    outs = [("dim0", 2), ("dim1", 128)]
    dist = LinearLayout.from_bases(
        {"register": [[0, 1], [0, 2], [0, 64]], "lane": [[1, 1], [0, 4], [0, 8], [0, 16], [0, 32]], "warp": []}, outs
    )
    shared = LinearLayout.from_bases({"offset": [[0, 1 << k] for k in range(7)] + [[1, 0]]}, outs)
    access = shared_access(shared, dist, 8)
    assert (access.vector_log2, access.lemma_c, access.wavefronts_per_phase) == (0, 1, 2)


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_optimal_swizzle_reaches_the_lemma_9_5_bound(data):
    source = HypothesisSource(data.draw)
    bits = data.draw(st.sampled_from([8, 16, 32]))
    layout, shape = legacy_layouts.distributed(source, "blocked")
    other = legacy_layouts.blocked(source, rank=len(shape))
    a = layout.linear_layout(shape).sublayout(["register", "lane", "warp"], [f"dim{i}" for i in range(len(shape))])
    b = other.linear_layout(shape).sublayout(["register", "lane", "warp"], a.out_dim_names)
    swz = optimal_swizzle(a, b, bits)
    assert swz.layout.is_invertible()
    assert swz.free == swz.bound  # |G| + |C| = d - max(dim U, dim V)
    vec = list(swz.vector)
    if len(swz.index) <= swz.bound:  # room for a conflict-free index space: no conflicts either way
        drop = max(1, (1 << len(vec)) * bits // 32).bit_length() - 1
        for layout_ in (a, b):
            lanes = [x for x in flat_columns(layout_, "lane") if x]
            lanes = lanes[: len(lanes) - drop] if drop else lanes
            assert intersection_dim(list(swz.index), lanes) == 0
