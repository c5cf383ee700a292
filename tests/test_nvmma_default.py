"""triton.nvmma_default: Gluon's default NVMMA shared layout of a block is the largest swizzle the block takes (its
docstring), worked out by hand here from the 8-row atom rule."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.targets.triton_nvmma_default import TritonNvmmaDefault, largest_compatible


def _block(shape, bits=16, transposed=False, cga=(), fp4=False):
    return {"shape": list(shape), "bits": bits, "transposed": transposed, "fp4_padded": fp4,
            "cga_layout": [list(b) for b in cga]}


@pytest.mark.parametrize("block, want", [
    (_block([8, 128]), 128),           # rows of 256 bytes, 8 rows: the 8 x 64 atom of the 128-byte swizzle fits
    (_block([8, 32]), 64),             # rows of 64 bytes
    (_block([8, 16]), 32),             # rows of 32 bytes
    (_block([8, 8]), 0),               # rows of 16 bytes: no swizzle
    (_block([4, 128]), 0),             # 4 rows: no 8-row atom
    (_block([16, 128], cga=[[1, 0]]), 128),  # 8 rows a CTA
    (_block([8, 128], cga=[[1, 0]]), 0),     # 4 rows a CTA
    (_block([8], bits=8), 0),          # rank 1: unswizzled
])
def test_the_largest_compatible_swizzle_by_hand(block, want):
    assert largest_compatible(block) == want


def test_a_choice_below_the_atom_is_a_divergence_and_the_largest_is_a_pass():
    target = TritonNvmmaDefault()
    case = Case(target.name, 0, 0, _block([8, 2, 8], bits=32, transposed=True, cga=[[0, 0, 1]]))
    target.validate(case)
    assert target.expected(case) == 0  # each CTA's [8, 2, 4] holds 4 rows of the transposed atom's 8
    verdict = target.compare(case, 0, {"swizzle": 32})
    assert not verdict.ok and verdict.signature == "get_default_for: a swizzle its layout's precondition refuses"
    assert target.compare(case, 0, {"swizzle": 0}).ok
    smaller = target.compare(Case(target.name, 0, 0, _block([8, 128])), 128, {"swizzle": 64})
    assert not smaller.ok and "smaller" in smaller.signature


def test_fp4_padding_takes_the_128_byte_swizzle_only():
    target = TritonNvmmaDefault()
    case = Case(target.name, 0, 0, _block([16, 64], bits=8, fp4=True))
    assert target.compare(case, None, {"swizzle": 128}).ok
    assert target.compare(case, None, {"refused": "AssertionError: fp4_padded only supports 128 byte swizzling"}).ok
    assert not target.compare(case, None, {"swizzle": 64}).ok


def test_the_validator_takes_what_the_generator_draws_and_refuses_blocks_its_ctas_do_not_divide():
    from layoutfuzz.harness.target import make_case

    target = TritonNvmmaDefault()
    for index in range(300):
        target.validate(make_case(target, 0, index))
    with pytest.raises(ValueError):
        target.validate(Case(target.name, 0, 0, _block([1, 16], cga=[[1, 0]])))
