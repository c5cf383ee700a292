"""The tiled Hopper shared-memory atoms: the oracle against seed 000's worked figures and hand-computed addresses,
its defining properties over every kind and width, and the cute.smem_atoms target's judgement."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case
from layoutfuzz.oracles import smem_atoms as atoms
from layoutfuzz.oracles.linear_layout import LayoutError


def _colex(shape, stride, coord):
    """A CuTe layout at a natural coordinate, by hand (first leaf fastest in each mode)."""
    total = 0
    for s, d, c in zip(shape, stride, coord):
        s, d = (s, d) if isinstance(s, tuple) else ((s,), (d,))
        for n, step in zip(s, d):
            total += (c % n) * step
            c //= n
    return total


def _byte_swizzle(address, bits):  # Swizzle<bits,4,3> on a byte address
    return address ^ (((address >> 7) & ((1 << bits) - 1)) << 4)


# seed 000, Figures 166, 168-170: the exact layouts (elements; the swizzle on bytes) of a whole repeat of atoms
FIGURES = [
    ("K_INTER", 32, (16, 16), ((8, 2), (4, 4)), ((4, 32), (1, 64)), 0),  # Figure 166, K major, no swizzle, tf32
    ("MN_INTER", 16, (16, 16), ((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128)), 0),  # Figure 168, bf16
    ("MN_SW32", 16, (32, 16), ((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256)), 1),  # Figure 169, bf16
    ("MN_SW64", 16, (64, 16), ((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512)), 2),  # Figure 170, bf16
]


@pytest.mark.parametrize("kind,bits,shape,fig_shape,fig_stride,swizzle", FIGURES)
def test_the_seeds_figures_are_their_atoms_tiled_mn_first(kind, bits, shape, fig_shape, fig_stride, swizzle):
    got = atoms.tile_bit_addresses(kind, bits, shape, (0, 1))
    for index, (mn, k) in enumerate((i % shape[0], i // shape[0]) for i in range(shape[0] * shape[1])):
        byte = _byte_swizzle(_colex(fig_shape, fig_stride, (mn, k)) * bits // 8, swizzle)
        assert got[index] == byte * 8, (mn, k)


def test_hand_computed_addresses():
    # K_SW128 f16 tiled (16,128): (9,70) is row 1, column 6 of atom (1,1), the 4th atom: 3072 + 128 + 12 = 3212,
    # whose row bits (3212 >> 7) & 7 = 1 flip bit 4 (clear in 3212): 3228
    k128 = atoms.tile_bit_addresses("K_SW128", 16, (16, 128), (0, 1))
    assert k128[9 + 70 * 16] == 3228 * 8
    # K first: atom (1,1) is the 4th again (1 + 2*1 = 3, K stride 1 atom, MN stride 2), the same address
    assert atoms.tile_bit_addresses("K_SW128", 16, (16, 128), (1, 0))[9 + 70 * 16] == 3228 * 8
    # ... and (9, 6) is atom (1,0): MN first it is the 2nd atom (1024 + 140 = 1164, row bits 1: 1180), K first the 3rd
    # (2048 + 140 = 2188, row bits 1: 2204)
    assert k128[9 + 6 * 16] == 1180 * 8
    assert atoms.tile_bit_addresses("K_SW128", 16, (16, 128), (1, 0))[9 + 6 * 16] == 2204 * 8
    # MN_SW32 f32, one atom (8,8): (5,4) is row 4 (k) at 128 + 5*4 = 148, bit 7 set flips bit 4: 132
    assert atoms.tile_bit_addresses("MN_SW32", 32, (8, 8), (0, 1))[5 + 4 * 8] == 132 * 8
    # K_INTER 4-bit, one atom (8,32): (3,17) is bit 3*128 + 17*4 = 452, no swizzle
    assert atoms.tile_bit_addresses("K_INTER", 4, (8, 32), (0, 1))[3 + 17 * 8] == 452
    # a stage mode: stage 1 of a (16,64) f16 K_SW128 tile of two atoms, stages fastest, starts at the second atom
    assert atoms.tile_bit_addresses("K_SW128", 16, (8, 64, 2), (1, 2, 0))[0 + 0 * 8 + 1 * 8 * 64] == 1024 * 8


@pytest.mark.parametrize("kind", sorted(atoms.KINDS))
@pytest.mark.parametrize("bits", [4, 8, 16, 32, 64])
def test_defining_properties_over_whole_tiles(kind, bits):
    major, mode = atoms.KINDS[kind]
    a_mn, a_k = atoms.atom_shape(kind, bits)
    T = 128 // bits
    assert a_mn * a_k * bits == atoms.atom_bits(kind, bits) == 8 * 128 * mode.width  # 8 rows of the swizzle width
    for reps, order in itertools.product([(1, 1), (2, 3), (3, 1, 2)], [(0, 1), (1, 0), (0, 1, 2), (2, 0, 1)]):
        if len(reps) != len(order):
            continue
        shape = (a_mn * reps[0], a_k * reps[1], *reps[2:])
        got = atoms.tile_bit_addresses(kind, bits, shape, order).reshape(shape, order="F")
        flat = np.sort(got.ravel())
        # dense: the tile is a bijection onto its size in bits
        assert (flat == np.arange(flat.size) * bits).all()
        # each atom fills one aligned block of its size, whatever the swizzle
        stages = got if got.ndim == 3 else got[:, :, None]
        for i, j, stage in itertools.product(range(reps[0]), range(reps[1]), range(stages.shape[2])):
            tile = stages[i * a_mn:(i + 1) * a_mn, j * a_k:(j + 1) * a_k, stage]
            start = tile.min()
            assert start % atoms.atom_bits(kind, bits) == 0
            assert tile.max() - start == atoms.atom_bits(kind, bits) - bits
        # every 16-byte unit holds T elements consecutive along the contiguous (major) dimension, in order
        along = got if major.name == "MN" else np.swapaxes(got, 0, 1)
        units = along.reshape(along.shape[0] // T, T, *along.shape[1:])
        assert (np.diff(units, axis=1) == bits).all()
        assert (units[:, 0] % 128 == 0).all()


def test_swizzle_over_arrays_is_the_ptx_rule():
    from layoutfuzz.oracles.wgmma import SwizzleMode, swizzle_address

    address = np.arange(1 << 14)
    for mode in SwizzleMode:
        assert (atoms.swizzled_bytes(address, mode) == [swizzle_address(int(a), mode) for a in address]).all()


def test_shapes_the_atom_does_not_divide_are_refused():
    assert atoms.divides("K_SW128", 16, (64, 128)) and not atoms.divides("K_SW128", 16, (64, 96))
    assert not atoms.divides("MN_SW64", 8, (192, 3, 4))
    with pytest.raises(LayoutError, match="does not divide"):
        atoms.tile_bit_addresses("K_SW128", 16, (12, 64), (0, 1))
    with pytest.raises(LayoutError, match="permutation"):
        atoms.ordered_strides((2, 3), (0, 0))


# the DSL's answer for K_SW128 f16 tiled (16,128), MN first (read off the DSL 4.8.1 once, checked by hand above)
K128 = {"swizzle": [3, 4, 3], "offset": 0, "shape": [[8, 2], [64, 2]], "stride": [[64, 512], [1, 1024]]}


def _case(params):
    from layoutfuzz.generators.case import Case

    return Case("cute.smem_atoms", 0, 0, params)


def test_the_target_judges_a_swizzled_pointer_and_measures_the_element_reading():
    target = registry.load("cute.smem_atoms")
    case = _case({"kind": "K_SW128", "element": "f16", "shape": [16, 128], "order": [0, 1]})
    expected = target.expected(case)
    assert target.compare(case, expected, K128).ok
    assert target.metrics(case, K128) == {"element_units_agree": 0.0}  # S<3,4,3> on f16 elements is not on bytes
    wrong = dict(K128, swizzle=[3, 3, 3])
    verdict = target.compare(case, expected, wrong)
    assert not verdict.ok and verdict.signature == "K_SW128: elements at other addresses than the hardware's"
    transposed = dict(K128, stride=[[64, 1024], [1, 512]])  # atoms K first, while the case asked MN first
    assert not target.compare(case, expected, transposed).ok
    byte_case = _case({"kind": "K_SW128", "element": "s8", "shape": [16, 256], "order": [0, 1]})
    s8 = {"swizzle": [3, 4, 3], "offset": 0, "shape": [[8, 2], [128, 2]], "stride": [[128, 1024], [1, 2048]]}
    assert target.compare(byte_case, target.expected(byte_case), s8).ok
    assert target.metrics(byte_case, s8) == {"element_units_agree": 1.0}


def test_the_target_expects_a_refusal_where_the_atom_does_not_divide():
    target = registry.load("cute.smem_atoms")
    case = _case({"kind": "MN_SW64", "element": "e4m3", "shape": [192, 3, 4], "order": [1, 2, 0]})
    assert target.expected(case) is None and target.family(case) == "not divided"
    assert target.compare(case, None, {"refused": "ValueError: does not divide"}).ok
    padded = {"swizzle": [2, 4, 3], "offset": 0, "shape": [[64, 3], [8, 1], [1, 4]], "stride": [[1, 2048], [64, 0], [0, 512]]}
    verdict = target.compare(case, None, padded)
    assert not verdict.ok and verdict.signature == "tile_to_shape accepted a shape its atom does not divide"
    divided = _case({"kind": "K_SW128", "element": "f16", "shape": [16, 128], "order": [0, 1]})
    assert target.compare(divided, target.expected(divided), {"refused": "x"}).signature == \
        "tile_to_shape refused a shape its atom divides"
    short = dict(K128, shape=[[8, 2], [64, 1]], stride=[[64, 512], [1, 1024]])
    assert target.compare(divided, target.expected(divided), short).signature == \
        "the tiled layout's shape is not the one asked for"


def test_generated_cases_are_valid_and_reach_every_kind_and_width():
    target = registry.load("cute.smem_atoms")
    cases = [make_case(target, 3, i) for i in range(600)]
    for case in cases:
        target.validate(case)
        assert np.prod(case.params["shape"]) <= 1 << 16
    assert {c.params["kind"] for c in cases} == set(atoms.KINDS)
    assert {c.params["element"] for c in cases} >= {"s4", "f16", "f64"}
    refused = sum(target.family(c) == "not divided" for c in cases)
    assert 30 <= refused <= 100  # about one in ten


def test_the_dsl_tiles_every_kind_as_the_hardware_lays_it_out():
    pytest.importorskip("cutlass.cute", reason="needs CUTLASS's Python DSL: pip install 'layoutfuzz[cutedsl]'")
    target = registry.load("cute.smem_atoms")
    cases = [c for c in (make_case(target, 1, i) for i in range(400)) if target.family(c) != "not divided"]
    observed = target.observed_batch(cases)
    for case, seen in zip(cases, observed):
        verdict = target.compare(case, target.expected(case), seen)
        assert verdict.ok, (case.params, verdict.signature, verdict.examples)
    assert {c.params["kind"] for c in cases} == set(atoms.KINDS)
    k128 = target.observed_batch([_case({"kind": "K_SW128", "element": "f16", "shape": [16, 128], "order": [0, 1]})])[0]
    assert k128 == K128


@pytest.mark.slow
def test_a_campaign_passes_every_divided_tile_and_knows_the_padding(tmp_path):
    pytest.importorskip("cutlass.cute", reason="needs CUTLASS's Python DSL: pip install 'layoutfuzz[cutedsl]'")
    from tests.test_cli import ledgered_run

    done, rows, unknown = ledgered_run(tmp_path, "cute.smem_atoms", 400)
    assert done.returncode == 0, done.stderr
    kinds = {r[1]: r for r in rows if r[1] in atoms.KINDS}
    assert set(kinds) == set(atoms.KINDS)
    assert all(r[2] == r[3] for r in kinds.values()), done.stdout  # cases == pass for every kind
    assert not unknown, done.stdout  # nothing new beyond the padding


def test_without_the_dsl_the_target_is_unsupported_with_the_reason(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cutlass", None)
    monkeypatch.setitem(sys.modules, "cutlass.cute", None)
    monkeypatch.setitem(sys.modules, "cutlass.cute.nvgpu", None)
    monkeypatch.setitem(sys.modules, "cutlass.cute.nvgpu.warpgroup", None)
    availability = registry.load("cute.smem_atoms").availability()
    assert not availability.available and "pip install 'layoutfuzz[cutedsl]'" in availability.reason
