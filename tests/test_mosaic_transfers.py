"""mosaic.transfers: the oracle's worked examples (hand-derived values), its defining properties over small whole
domains, and the target's cases (deterministic, valid, judged)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from layoutfuzz.generators.mosaic_layouts import NAMED
from layoutfuzz.oracles import mosaic_transfers as mt

# ---- worked examples ------------------------------------------------------------------------------------------------

def test_swizzle_worked_examples():
    assert mt.swizzle(0x80, 128) == 0x90  # row 1, chunk 0 -> chunk 1
    assert mt.swizzle(0x3F0, 128) == 0x380  # row 7, chunk 7 -> chunk 0
    assert mt.swizzle(0x3F0, 32) == 0x3E0  # one bit: row bit 7 set, chunk bit 4 flips
    assert mt.swizzle(0x80, 16) == 0x80  # no swizzle


def test_bank_conflicts_worked_examples():
    lanes = np.arange(32)
    assert mt.conflicting_phases(lanes * 4, 4, 16) == 0  # one word each, 32 banks
    assert mt.conflicting_phases(lanes * 128, 4, 16) == 1  # every lane in bank 0
    assert mt.conflicting_phases(lanes * 16, 16, 16) == 0  # quarter warps of 128 contiguous bytes
    assert mt.conflicting_phases(lanes * 128, 16, 16) == 4  # every quarter warp on banks 0-3
    assert mt.conflicting_phases(lanes * 128, 16, 128) == 0  # the 128B swizzle spreads 8 rows over 8 chunks
    assert mt.conflicting_phases(np.array([0, 130] + [0] * 30), 2, 16) == 1  # words 0 and 32: bank 0 twice
    assert mt.conflicting_phases(np.array([0, 2] + [0] * 30), 2, 16) == 0  # one word: no conflict


def test_nested_address_docstring_example():
    shape, strides = ((2, 64), (2, 64)), ((2 * 64 * 64, 64), (64 * 64, 1))
    assert mt.nested_address(shape, strides, (65, 3)) == 8192 + 64 + 3


def test_nested_strided_worked_examples():
    assert mt.nested_strided(np.array([0, 1, 2, 3]))
    assert mt.nested_strided(np.array([0, 2, 1, 3]))  # sizes (2, 2), strides (1, 2)
    assert mt.nested_strided(np.array([0, 1, 2, 3, 2, 3, 4, 5]))  # sizes (2, 4), strides (2, 1)
    assert not mt.nested_strided(np.array([0, 1, 3]))
    assert not mt.nested_strided(np.array([0, 4, 3]))


def test_tiled_nested_docstring_example_and_refusals():
    # (128, 128) row-major tiled (64, 64): tiled dims (2, 2, 64, 64) at strides (64 * 128, 64, 128, 1)
    right = {"shape": [[2], [2], [64], [64]], "strides": [[8192], [64], [128], [1]]}
    assert mt.judge_nested([128, 128], [[128], [128]], [[128], [1]], [[64, 64]], right) is None
    wrong = {"shape": [[2], [2], [64], [64]], "strides": [[8192], [64], [1], [128]]}
    assert "address" in mt.judge_nested([128, 128], [[128], [128]], [[128], [1]], [[64, 64]], wrong)
    # a contiguous (2, 3) dim tiled by 2 is the contiguous 6 tiled by 2: a refusal is spurious
    assert mt.judge_nested([6], [[2, 3]], [[3, 1]], [[2]], None) is not None
    # (2, 3) at strides (1, 2): i -> 0 2 4 1 3 5; tiled by 2 the major map 0 4 3 has no strides: refusal right
    assert mt.judge_nested([6], [[2, 3]], [[1, 2]], [[2]], None) is None
    assert mt.judge_nested([6], [[6]], [[1]], [[4]], None) is None  # the tiling does not apply


def test_transpose_and_collapse_worked_examples():
    assert mt.judge_transpose([16, 32], [8, 16], [1, 0], {"tiling": [16, 8]}) is None
    assert mt.judge_transpose([16, 32], [8, 16], [1, 0], {"tiling": [8, 16]}) is not None
    assert mt.judge_transpose([16, 32], [8], [1, 0], "unsatisfiable") is None  # documented: untiled dim moved in
    assert mt.judge_transpose([2, 16, 32], [8, 16], [0, 2, 1], "unsatisfiable") is not None
    assert mt.judge_collapse([4, 8], [2, 8], [2], {"tiling": [16]}) is None
    assert mt.judge_collapse([4, 8], [2, 8], [2], "unsatisfiable") is not None
    # (4, 8) tiled (2, 4): element (0, 4) is at 8 in the source, at 4 in the collapsed ref tiled (8,)
    assert mt.judge_collapse([4, 8], [2, 4], [2], {"tiling": [8]}) is not None
    assert mt.judge_collapse([4, 8], [2, 4], [2], "unsatisfiable") is None
    assert mt.judge_collapse([4, 8], [8], [2], "unsatisfiable") is None  # documented: tiled and untiled in a group
    assert mt.judge_collapse([4, 6], [4, 4], [1, 1], "unsatisfiable") is None  # the tiling does not apply


def test_constraint_docstrings_worked_examples():
    assert mt.valid_mma_tiling([8, 64], 16, False)  # 128B of bf16
    assert mt.valid_mma_tiling([8, 32], 16, False)  # 64B
    assert not mt.valid_mma_tiling([8, 8], 16, False) and mt.valid_mma_tiling([8, 8], 16, True)  # 16B
    assert mt.valid_mma_tiling([8, 256], 4, False) and mt.valid_mma_tiling([8, 4], 64, False)
    assert not mt.valid_mma_tiling(None, 16, True) and not mt.valid_mma_tiling([16, 64], 16, False)
    assert mt.minor_dim_divisible(None, 7) and mt.minor_dim_divisible([], 7)
    assert mt.minor_dim_divisible([8, 24], 3) and not mt.minor_dim_divisible([8, 24], 16)


def _wgmma_transfer(columns: int, swizzle: int = 16, smem=None) -> mt.Transfer:
    layout = NAMED["WGMMA_LAYOUT"]
    nshape, nstrides = mt.tiled_memref_nested([64, columns], smem)
    return mt.Transfer([64, columns], layout, nshape, nstrides, 32, swizzle)


def test_wgmma_layout_transfer_worked_example():
    # f32 WGMMA_LAYOUT, 8 bytes a lane: lane l at row l // 4, columns 2 (l % 4); a half warp covers rows 0-3 of an
    # (64, 8) row-major ref: 128 contiguous bytes, no conflict. At 64 columns a row is 256 bytes: every row in the
    # same banks, four rows a half warp: both half warps conflict at every step.
    problem, bad = _wgmma_transfer(8).judge(mt.trivial)
    assert problem is None and bad == 0
    t = _wgmma_transfer(64)
    problem, bad = t.judge(mt.trivial)
    steps = int(np.prod([t.dims[k].size for k in t.tile_dims]))
    assert problem is None and bad == 2 * mt.WARPS * steps
    # in 32B-swizzled (8, 8) tiles (32 bytes a tile row) a half warp's rows 0-3 are bytes 0-127 of one tile: no conflict
    problem, bad = _wgmma_transfer(64, 32, [8, 8]).judge(mt.trivial)
    assert problem is None and bad == 0
    # in 128B-swizzled (8, 32) tiles row r's chunks 0, 1 go to chunks r ^ 0, r ^ 1: rows 0 and 1 both land on
    # chunks {0, 1} (banks 0-7), so each half warp conflicts at every step
    t = _wgmma_transfer(64, 128, [8, 32])
    problem, bad = t.judge(mt.trivial)
    assert problem is None and bad == 2 * mt.WARPS * int(np.prod([t.dims[k].size for k in t.tile_dims]))


# ---- defining properties over small whole domains -------------------------------------------------------------------

@pytest.mark.parametrize("swizzle", mt.SWIZZLES)
def test_swizzle_permutes_16_byte_chunks_of_each_1024_bytes(swizzle):
    a = np.arange(2048)
    s = mt.swizzle(a, swizzle)
    assert sorted(s[:1024]) == list(range(1024)) and np.all(s % 16 == a % 16) and np.all(s // 1024 == a // 1024)


def test_nested_strided_holds_exactly_for_nested_maps():
    for n in range(1, 13):
        for sizes in [c for r in (1, 2, 3) for c in itertools.product(range(1, n + 1), repeat=r) if np.prod(c) == n]:
            for strides in itertools.product((0, 1, 2, 3, 5), repeat=len(sizes)):
                f = np.array([mt.nested_address([sizes], [strides], (i,)) for i in range(n)])
                assert mt.nested_strided(f), (sizes, strides)
    assert not any(mt.nested_strided(np.array(f)) for f in ([0, 1, 3], [0, 2, 1, 5], [0, 1, 0, 2]))


def test_transpose_keeps_tiles_for_every_permutation():
    for rank in (1, 2, 3):
        shape = [4, 6, 8][:rank]
        for k in range(1, rank + 1):
            tiling = [2, 3, 4][:k]
            shape_k = shape[:rank - k] + [t * 2 for t in tiling]
            for perm in itertools.permutations(range(rank)):
                if mt.transpose_documented_reject(tiling, perm):
                    continue
                answer = [tiling[d - (rank - k)] for d in perm[-k:]]
                assert mt.judge_transpose(shape_k, tiling, list(perm), {"tiling": answer}) is None


def test_collapse_of_untiled_groups_keeps_the_tiling():
    for shape, tiling, groups in (([2, 3, 8], [4], [2, 1]), ([3, 5, 2, 8], [2, 8], [1, 1, 2]), ([6, 4], [1, 4], [2])):
        expect = [4] if groups == [2, 1] else [16] if groups == [1, 1, 2] else [4]
        assert mt.judge_collapse(shape, tiling, groups, {"tiling": expect}) is None


# ---- the target ------------------------------------------------------------------------------------------------------

def test_cases_are_deterministic_and_valid():
    from layoutfuzz.harness.target import make_case
    from layoutfuzz.harness.targets.mosaic_transfers import MosaicTransfers

    t = MosaicTransfers()
    a = [json.dumps(make_case(t, 31, i).params, sort_keys=True) for i in range(200)]
    b = [json.dumps(make_case(t, 31, i).params, sort_keys=True) for i in range(200)]
    assert a == b
    for i in range(200):
        t.validate(make_case(t, 31, i))


def test_target_judges_mosaic():
    pytest.importorskip("jax.experimental.mosaic.gpu")
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness.targets.mosaic_transfers import MosaicTransfers

    t = MosaicTransfers()

    def run(params):
        c = Case(t.name, 0, 0, params)
        return t.compare(c, t.expected(c), t.observed(c))

    for s in mt.SWIZZLES:
        assert run({"op": "transform_attr", "edge": False, "swizzle": s}).ok
    assert run({"op": "transform_attr", "edge": False, "tiling": [8, 64], "rounding": None}).ok
    assert run({"op": "mma_tiling", "edge": False, "tiling": [8, 64], "bits": 16, "allow_unswizzled": False}).ok
    assert run({"op": "plan_transfer", "edge": False, "shape": [64, 64], "layout": NAMED["WGMMA_LAYOUT"],
                "smem_tiling": [8, 8], "bits": 32, "swizzle": 32}).ok
    assert run({"op": "copy_layout", "edge": False, "row_tiles": 4, "col_tiles": 1, "swizzle": 128, "bits": 16}).ok
