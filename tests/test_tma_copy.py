"""``oracles.tma_copy`` (TMA loads and stores over a global tensor) and the ``tma.copy`` target's CPU side: the worked
examples of docs/findings.md, written out by hand, and the rules' defining properties over generated copies."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import RandomSource
from layoutfuzz.generators.tma_copy import MAX_TENSOR_BYTES, tensor_copy
from layoutfuzz.gpu.targets.tma_copy import CopyResult, TmaCopy, compare_copy, copy_from_params, expected_result
from layoutfuzz.gpu.targets.tma_swizzle import WINDOW
from layoutfuzz.gpu.tma_driver import GUARD, initial_region, region_bytes, shared_pattern
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox
from layoutfuzz.oracles.tma_copy import TensorCopy, loaded_window, moves, stored_tensor
from layoutfuzz.oracles.tma_windows import FILL, expected_window


def _int32_rows(box_dims, coords, direction, dims=(21, 2), row_stride=128):
    return TensorCopy(TiledBox(box_dims, 4, (1,) * len(box_dims), SwizzleMode.NONE, 0), dims, (row_stride,), coords, direction)


def test_a_store_writes_the_granule_that_holds_the_innermost_bound_whole():
    # docs/findings.md (raw store on an H100): int32 rows of 21 elements padded to 32; an 8-element box at x = 16 writes
    # 16..20 (in bounds) and 21..23 (past the bound, in the granule [80, 96) that holds it), not 24.., not row 1
    copy = _int32_rows((8, 1), (16, 0), "store")
    shared = np.arange(256, dtype=np.uint8)
    out = stored_tensor(copy, shared, np.full(256, 0xEE, np.uint8)).view("<u4")
    words = shared[:32].view("<u4")
    assert (out[16:24] == words[:8]).all()
    assert (out[:16] == 0xEEEEEEEE).all() and (out[24:] == 0xEEEEEEEE).all()


def test_a_store_past_a_granule_aligned_bound_writes_nothing_past_it():
    # 20 int32 = 80 bytes: the bound is on a granule; a box at x = 16 writes 16..19 only
    copy = _int32_rows((8, 1), (16, 0), "store", dims=(20, 2))
    out = stored_tensor(copy, np.arange(256, dtype=np.uint8), np.zeros(256, np.uint8)).view("<u4")
    assert (out[16:20] != 0).all() and (out[20:] == 0).all()


def test_a_store_writes_no_row_outside_an_outer_bound():
    # a 4x3 box at (0, 1) over a 2-row tensor: only row 1 is inside; rows 2 and 3 of the box are not written
    copy = _int32_rows((4, 3), (0, 1), "store", dims=(4, 2), row_stride=16)
    shared = np.arange(1, 49, dtype=np.uint8)
    out = stored_tensor(copy, shared, np.zeros(32, np.uint8))
    assert (out[:16] == 0).all() and (out[16:32] == shared[:16]).all()


def test_a_load_at_a_negative_coordinate_zero_fills_the_elements_before_the_bound():
    # PTX 5.5.3.3 zero fill: a 16x2 int32 box at (-4, 0) over a 16x2 tensor: elements 0..3 of each row are zeros,
    # 4..15 hold tensor elements 0..11 of that row
    copy = _int32_rows((16, 2), (-4, 0), "load", dims=(16, 2), row_stride=64)
    tensor = np.arange(128, dtype=np.uint8) + 100
    window = loaded_window(copy, tensor, 256, 0xA5)
    for row in range(2):
        got = window[row * 64:row * 64 + 64].view("<u4")
        assert (got[:4] == 0).all()
        assert (got[4:] == tensor[row * 64:row * 64 + 48].view("<u4")).all()
    assert (window[128:] == 0xA5).all()


def test_a_nan_filled_load_writes_the_half_word_0x7ff7_where_zeros_would_be():
    # observed on an H100 (docs/findings.md): with CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA every out-of-bound
    # element is 0x7FF7 in each 16 bits (f32: 0x7FF77FF7), a NaN in every format; in-bound elements are the tensor's
    box = TiledBox((16, 2), 4, (1, 1), SwizzleMode.NONE, 0)
    copy = TensorCopy(box, (16, 2), (64,), (-4, 0), "load", data_type=7, oob_fill=1)  # FLOAT32
    tensor = np.arange(128, dtype=np.uint8) + 100
    window = loaded_window(copy, tensor, 256, 0xA5)
    for row in range(2):
        got = window[row * 64:row * 64 + 64].view("<u4")
        assert (got[:4] == 0x7FF77FF7).all() and np.isnan(got[:4].view("<f4")).all()
        assert (got[4:] == tensor[row * 64:row * 64 + 48].view("<u4")).all()
    half = TensorCopy(TiledBox((16, 1), 2, (1, 1), SwizzleMode.NONE, 0), (8, 1), (32,), (0, 0), "load", data_type=9, oob_fill=1)
    got = loaded_window(half, np.zeros(32, np.uint8), 64, 0).view("<u2")  # bf16: elements 8..15 past the bound
    assert (got[8:16] == 0x7FF7).all() and (got[:8] == 0).all()
    zero = TensorCopy(box, (16, 2), (64,), (-4, 0), "load", data_type=7, oob_fill=0)  # a float type, zero fill
    assert (loaded_window(zero, tensor, 256, 0xA5)[:16] == 0).all()


def test_a_tf32_load_rounds_as_the_h100_did():
    # read off an H100 (docs/findings.md): a load through a TFLOAT32 (or TFLOAT32_FTZ) tensor map of these f32 words
    from layoutfuzz.oracles.tma_copy import tf32_rounded

    seen = {0x3F800000: 0x3F800000, 0x3F800001: 0x3F800000, 0x3F801FFF: 0x3F802000, 0x3F802000: 0x3F802000,
            0x3F803000: 0x3F804000, 0x3F80F000: 0x3F810000, 0x7F800001: 0x7FFFE000, 0x00000001: 0x00000000,
            0x00400000: 0x00400000, 0x80000001: 0x80000000, 0x7FC00001: 0x7FFFE000, 0xFFFFFFFF: 0x7FFFE000,
            0x3F7FFFFF: 0x3F800000, 0x4F000FFF: 0x4F000000, 0x12345678: 0x12346000, 0x87654321: 0x87654000}
    words = np.array(list(seen), dtype="<u4")
    assert [int(w) for w in tf32_rounded(words)] == list(seen.values())
    box = TiledBox((4, 1), 4, (1, 1), SwizzleMode.NONE, 0)
    tensor = words[:4].view(np.uint8)
    for data_type, want in ((11, [seen[int(w)] for w in words[:4]]), (7, [int(w) for w in words[:4]])):  # TF32, FLOAT32
        copy = TensorCopy(box, (4, 1), (16,), (0, 0), "load", data_type=data_type)
        assert list(loaded_window(copy, tensor, 64, 0)[:16].view("<u4")) == want


def test_a_nan_fill_needs_a_floating_point_type_of_the_elements_width():
    box = TiledBox((16, 2), 4, (1, 1), SwizzleMode.NONE, 0)
    with pytest.raises(LayoutError, match="floating-point"):
        TensorCopy(box, (16, 2), (64,), (0, 0), "load", oob_fill=1)  # the unsigned type of 4 bytes
    with pytest.raises(LayoutError, match="not 4 bytes"):
        TensorCopy(box, (16, 2), (64,), (0, 0), "load", data_type=6, oob_fill=1)  # FLOAT16 for 4-byte elements


def test_traversal_strides_skip_elements_in_outer_dims():
    # PTX 5.5.3.2: element i of a dim with traversal stride 3 is at coordinate c + 3 i
    box = TiledBox((4, 5), 4, (1, 3), SwizzleMode.NONE, 0)  # loads ceil(5/3) = 2 rows: coordinates 1 and 4
    copy = TensorCopy(box, (4, 6), (16,), (0, 1), "load")
    tensor = np.arange(96, dtype=np.uint8)
    window = loaded_window(copy, tensor, 64, 0)
    assert (window[:16] == tensor[16:32]).all() and (window[16:32] == tensor[64:80]).all()


def test_copies_from_coordinate_zero_over_a_tensor_the_box_size_place_as_the_swizzle_oracle():
    # the box inside a tensor of its own size, from 0: oracles.tma_windows.expected_window (oracles.tma, element by element)
    for i in range(150):
        p = tensor_copy(RandomSource(f"same/{i}"))
        box = copy_from_params(p).box
        if box.interleave:  # tma.swizzle's oracle knows no interleaved slices (tests/test_tma_interleave.py does)
            continue
        from layoutfuzz.oracles.tma_windows import box_encoding, global_bytes

        encoding = box_encoding(box)
        copy = TensorCopy(box, encoding.global_dims, encoding.global_strides, (0,) * len(box.box_dims), "load")
        assert (loaded_window(copy, global_bytes(encoding), WINDOW, FILL) == expected_window(box, WINDOW)).all()


def test_a_store_then_a_load_of_the_same_box_gives_the_box_back_where_it_is_inside():
    for i in range(200):
        copy = copy_from_params(tensor_copy(RandomSource(f"round/{i}")))
        store = TensorCopy(copy.box, copy.global_dims, copy.global_strides, tuple(max(0, c) for c in copy.coords), "store")
        load = TensorCopy(copy.box, copy.global_dims, copy.global_strides, store.coords, "load")
        pattern = shared_pattern(WINDOW)
        tensor = stored_tensor(store, pattern, np.zeros(store.global_bytes + 16, np.uint8))
        window = loaded_window(load, tensor, WINDOW, FILL)
        m = moves(load)
        inside = (m.shared[m.inside][:, None] + np.arange(m.size)).ravel()
        assert (window[inside] == pattern[inside]).all()
        outside = (m.shared[~m.inside][:, None] + np.arange(m.size)).ravel()
        assert (window[outside] == 0).all()


def test_a_store_writes_only_what_the_rules_allow():
    # over generated copies: every written byte is in the tensor (its last granule at rank 1) and belongs to an element
    # whose outer coordinates are inside and whose innermost one is before the end of the bound's granule
    for i in range(300):
        copy = copy_from_params(tensor_copy(RandomSource(f"only/{i}")))
        store = TensorCopy(copy.box, copy.global_dims, copy.global_strides, tuple(max(0, c) for c in copy.coords), "store")
        m = moves(store)
        e = m.size  # an element, or 16 bytes of an interleaved slice
        assert (m.stored >= m.inside).all()
        granule_end = -(-copy.global_dims[0] * copy.box.unit_bytes // 16) * 16
        assert (m.global_offset[m.stored] % store.pitches[-1] < max(granule_end, store.pitches[-1])).all()
        before = np.zeros(store.global_bytes + 16, np.uint8)
        after = stored_tensor(store, np.full(WINDOW, 1, np.uint8), before)
        assert int(after.sum()) == int(m.stored.sum()) * e
        offsets = m.global_offset[m.inside]
        assert len(set(offsets.tolist())) == offsets.size and (offsets + e <= store.global_bytes).all()


def test_copies_refuse_what_is_not_a_tiled_copy():
    box = TiledBox((4,), 4, (1,), SwizzleMode.NONE, 0)
    with pytest.raises(LayoutError):
        TensorCopy(box, (4,), (), (2,), "load")  # dim 0 starts inside a granule
    with pytest.raises(LayoutError):
        TensorCopy(box, (4, 2), (16,), (0, 0), "load")  # rank differs
    with pytest.raises(LayoutError):
        TensorCopy(box, (4,), (), (0,), "sideways")


def test_generated_copies_are_valid_and_reach_every_bound():
    target = TmaCopy()
    places, filled = set(), set()
    for i in range(2000):
        case = Case("tma.copy", 0, i, tensor_copy(RandomSource(f"valid/{i}")))
        target.validate(case)
        copy = copy_from_params(case.params)
        filled.add((copy.data_type, copy.oob_fill, copy.direction))
        assert copy.global_bytes <= MAX_TENSOR_BYTES
        assert case.params["direction"] == "load" or min(copy.coords) >= 0  # a store before a bound traps: never drawn
        places.update((case.params["direction"], k == 0, p) for k, p in enumerate(case.params["places"]))
    assert {("store", True, "cut"), ("store", False, "cut"), ("load", True, "before"), ("load", False, "before"),
            ("store", True, "past")} <= places
    assert {(t, 1, "load") for t in (6, 7, 8, 9, 10, 11, 12)} <= filled  # every floating-point type NaN-filled
    assert all(direction == "load" for t, _, direction in filled if t is not None)


def test_the_comparison_names_what_a_store_got_wrong():
    copy = _int32_rows((8, 1), (16, 0), "store")  # the granule example: bytes 84..95 are past the bound
    expected = expected_result(copy)
    assert compare_copy(copy, expected, expected).ok

    def planted(at: int) -> CopyResult:
        region = expected.region.copy()
        region[at] ^= 0xFF
        return CopyResult(expected.window, region)

    assert compare_copy(copy, expected, planted(GUARD + 88)).signature == "store: granule past the innermost bound differs"
    assert compare_copy(copy, expected, planted(GUARD + 64)).signature == "store: in-bound element wrong"
    assert compare_copy(copy, expected, planted(GUARD + 100)).signature == "store: wrote where nothing belongs"
    assert compare_copy(copy, expected, planted(region_bytes(copy) - 1)).signature == "store: wrote past the tensor (guard zone)"
    assert (expected.region[:GUARD] == FILL).all() and (initial_region(copy) == FILL).all()


def test_the_comparison_names_what_a_load_got_wrong():
    copy = _int32_rows((16, 2), (-4, 0), "load", dims=(16, 2), row_stride=64)
    expected = expected_result(copy)
    window = expected.window.copy()
    window[0] = 1  # element 0 lies before the bound: the zero fill
    assert compare_copy(copy, expected, CopyResult(window, expected.region)).signature == "load: out-of-bound fill differs"
    region = expected.region.copy()
    region[GUARD] ^= 1
    assert compare_copy(copy, expected, CopyResult(expected.window, region)).signature == "load: a load wrote global memory"


def test_the_per_case_and_batch_comparisons_agree_on_the_cpu():
    # the batch methods' expected side, and compare_batch on observed results planted from it, give the per-case verdicts
    target = TmaCopy()
    cases = [Case("tma.copy", 0, i, tensor_copy(RandomSource(f"batch/{i}"))) for i in range(40)]
    expected = target.expected_batch(cases)
    observed = [e.result if not e.refused else None for e in expected]
    live = [i for i, o in enumerate(observed) if o is not None]
    bad = live[3]
    region = observed[bad].region.copy()
    region[0] ^= 1
    observed[bad] = CopyResult(observed[bad].window, region)
    verdicts = target.compare_batch([cases[i] for i in live], [expected[i] for i in live], [observed[i] for i in live])
    assert [live[k] for k, v in enumerate(verdicts) if not v.ok] == [bad]
    assert target.compare(cases[bad], expected[bad].__json__(), observed[bad].__json__()).signature == verdicts[live.index(bad)].signature


def test_a_multicast_load_lands_in_the_masked_ctas_alone():
    # PTX 9.7.9.25.5.2: the box lands at the same CTA-relative offset in each CTA whose ctaMask bit is set; ranks 1 and 3
    # of a cluster of 4 with mask 0b0101 keep their fill, whichever CTA issues the copy
    from layoutfuzz.oracles.tma_copy import multicast_windows

    box = TiledBox((8, 2), 4, (1, 1), SwizzleMode.NONE, 128)
    copy = TensorCopy(box, (8, 2), (32,), (0, 0), "load", cluster=4, multicast=0b0101, issuer=1)
    tensor = np.arange(64, dtype=np.uint8) + 1
    windows = multicast_windows(copy, tensor, 512, 0xA5).reshape(4, 512)
    assert (windows[0, 128:192] == tensor).all() and (windows[2] == windows[0]).all()
    assert (windows[1] == 0xA5).all() and (windows[3] == 0xA5).all() and (windows[0, :128] == 0xA5).all()
    with pytest.raises(LayoutError):
        TensorCopy(box, (8, 2), (32,), (0, 0), "store", cluster=2, multicast=3)  # only loads multicast
    with pytest.raises(LayoutError):
        TensorCopy(box, (8, 2), (32,), (0, 0), "load", cluster=2, multicast=4)  # a rank outside the cluster


def test_the_comparison_names_a_multicast_that_reached_a_cta_outside_its_mask():
    box = TiledBox((8, 2), 4, (1, 1), SwizzleMode.NONE, 128)
    copy = TensorCopy(box, (8, 2), (32,), (0, 0), "load", cluster=2, multicast=0b01, issuer=1)
    expected = expected_result(copy)
    assert expected.window.size == 2 * WINDOW and compare_copy(copy, expected, expected).ok
    window = expected.window.copy()
    window[WINDOW + 128:WINDOW + 192] = window[128:192]  # rank 1 got the box too
    assert compare_copy(copy, expected, CopyResult(window, expected.region)).signature == "load: multicast reached a CTA outside its mask"


def test_shrinking_a_multicast_copy_tries_one_cta_first_and_every_candidate_is_a_copy():
    target = TmaCopy()
    for i in range(400):
        p = tensor_copy(RandomSource(f"shrink/{i}"))
        if p["cluster"] > 1:
            break
    case = Case("tma.copy", 0, 0, p)
    candidates = list(target.shrink(case))
    assert candidates[0]["cluster"] == 1 and candidates[0]["multicast"] == 1
    valid = 0
    for candidate in candidates:
        try:
            target.validate(Case("tma.copy", 0, 0, candidate))
            valid += 1
        except ValueError:
            pass
    assert valid >= len(candidates) // 2


def test_an_interleaved_load_fills_each_element_of_a_slice_outside_the_tensor_with_the_types_nan():
    # interleaved tensor maps through floating-point types and the NaN fill (the rule confirmed on an H100,
    # docs/results/interleave-float-types-h100.md): a slice outside the tensor is its element type's NaN
    # pattern throughout, 16 bytes at a time, and a slice inside is the tensor's bytes
    import numpy as np

    from layoutfuzz.generators.source import source_for
    from layoutfuzz.generators.tma_copy import tensor_copy
    from layoutfuzz.gpu.targets.tma_copy import copy_from_params
    from layoutfuzz.oracles.tma_copy import NAN_FILL, loaded_window, moves

    found = 0
    for index in range(4000):
        p = tensor_copy(source_for("tma.copy", 99, index))
        if not (p.get("interleave") and p.get("oob_fill") and p["data_type"] not in (11, 12)):  # TF32 rounds its data
            continue
        copy = copy_from_params(p)
        m = moves(copy)
        if m.inside.all():
            continue
        tensor = np.random.default_rng(index).integers(0, 256, copy.global_bytes + 64, dtype=np.uint8)
        window = loaded_window(copy, tensor, 1 << 16, 0xA5)
        nan = NAN_FILL[p["data_type"]].to_bytes(p["element_bytes"], "little") * (16 // p["element_bytes"])
        for shared, offset, inside in zip(m.shared, m.global_offset, m.inside):
            got = window[shared:shared + 16].tobytes()
            assert got == (tensor[offset:offset + 16].tobytes() if inside else nan)
        found += 1
    assert found >= 5
