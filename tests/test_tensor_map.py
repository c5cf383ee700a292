"""The tensor-map validity oracle (oracles/tensor_map.py) against the requirements of cuTensorMapEncodeTiled as its
documentation states them (cuda.h), the sampler that breaks them one at a time, and tma.encode's verdicts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.generators.tensor_map import BREAKS, tiled_encoding
from layoutfuzz.gpu.targets.tma_encode import TmaEncode, encoding_of
from layoutfuzz.oracles.tensor_map import TiledEncoding, encoding_problems

HOPPER, BLACKWELL = (9, 0), (10, 0)
# a 64 x 64 tile of 2-byte elements in a 1024 x 1024 tensor, 128-byte rows swizzled: what a GEMM's TMA load encodes
GOOD = TiledEncoding(data_type=6, global_address=1 << 20, global_dims=(1024, 1024), global_strides=(2048,), box_dims=(64, 64),
                     element_strides=(1, 1), interleave=0, swizzle=3)


def rules(e: TiledEncoding, cc: tuple[int, int] = HOPPER) -> set[str]:
    return {rule for rule, _ in encoding_problems(e, cc)}


def test_a_gemm_tile_breaks_no_requirement():
    assert rules(GOOD) == set()
    assert rules(replace(GOOD, global_dims=(1, 1), box_dims=(8, 256), element_strides=(8, 8))) == set()  # a box past the tensor
    assert rules(replace(GOOD, global_dims=(1 << 32, 1 << 32), global_strides=((1 << 40) - 16,))) == set()  # the largest


# each documented requirement, broken alone: (change, the rule it breaks), quoting cuda.h
@pytest.mark.parametrize("change,rule", [
    ({"data_type": 13}, "data type"),  # a packed type: not byte-sized
    ({"global_dims": (8,) * 6, "global_strides": (16,) * 5, "box_dims": (8, 2, 2, 2, 2, 2), "element_strides": (1,) * 6}, "rank"),  # "<= 5"
    ({"global_dims": (), "global_strides": (), "box_dims": (), "element_strides": ()}, "rank"),  # "non-zero"
    ({"interleave": 1}, "interleave rank"),  # "If interleave is not NONE, then tensorRank must additionally be >= 3"
    ({"global_address": (1 << 20) + 8}, "global address alignment"),  # "must be 16 byte aligned"
    ({"global_dims": (0, 1024)}, "global dims"),  # "must be non-zero"
    ({"global_dims": (1024, (1 << 32) + 1)}, "global dims"),  # "less than or equal to 2^32"
    ({"global_strides": (2056,)}, "global strides"),  # "must be a multiple of 16"
    ({"global_strides": (1 << 40,)}, "global strides"),  # "and less than 2^40"
    ({"global_strides": ()}, "global stride count"),  # "each of the lower tensorRank - 1 dimensions"
    ({"box_dims": (64, 0)}, "box dims"),  # "must be non-zero"
    ({"box_dims": (64, 257)}, "box dims"),  # "less than or equal to 256"
    ({"box_dims": (60, 64), "swizzle": 0}, "inner box bytes"),  # "boxDim[0] * elementSize must be a multiple of 16 bytes"
    ({"element_strides": (1, 0)}, "element strides"),  # "must be non-zero"
    ({"element_strides": (9, 1)}, "element strides"),  # "less than or equal to 8"
    ({"box_dims": (128, 64)}, "inner box within the swizzle"),  # "CU_TENSOR_MAP_SWIZZLE_128B* require ... <= 128"
    ({"box_dims": (32, 64), "swizzle": 1}, "inner box within the swizzle"),  # "CU_TENSOR_MAP_SWIZZLE_32B requires ... <= 32"
    ({"oob_fill": 1, "data_type": 1}, "NaN fill type"),  # "can only be used when tensorDataType represents a floating-point"
    ({"l2_promotion": 4}, "enum"),
])
def test_each_requirement_broken_alone_is_the_one_reported(change, rule):
    assert rules(replace(GOOD, **change)) == {rule}


def test_interleave_requirements():
    base = replace(GOOD, global_dims=(64, 32, 16), global_strides=(128, 4096), box_dims=(32, 8, 4), element_strides=(1, 1, 1),
                   swizzle=1)
    assert rules(replace(base, interleave=2)) == set()  # 32B interleave with 32B swizzle, rank 3, 32-byte aligned
    assert rules(replace(base, interleave=2, swizzle=3)) == {"interleave 32B swizzle"}  # "swizzle must be ... 32B"
    assert rules(replace(base, interleave=2, global_address=(1 << 20) + 16)) == {"global address alignment"}  # "32 byte aligned"
    assert rules(replace(base, interleave=2, global_strides=(144, 4096))) == {"global strides"}  # "a multiple of 32"
    # with interleave the documented inner-box rules of interleave NONE do not apply (a 192-byte row past the 128B span)
    assert rules(replace(base, interleave=1, box_dims=(96, 8, 4), swizzle=3)) == set()
    # but the driver still wants whole 16-byte units (observed on an H100: 122 of 122 such encodings refused)
    assert rules(replace(base, interleave=1, box_dims=(30, 8, 4), swizzle=3)) == {"interleaved inner box bytes"}


def test_the_atomicity_sub_modes_need_compute_capability_10():
    # observed on an H100 (10,958,914 of 10,958,914 such tma.swizzle cases refused), the text being silent
    for swizzle in (4, 5, 6):
        assert rules(replace(GOOD, swizzle=swizzle), HOPPER) == {"atomicity compute capability"}
        assert rules(replace(GOOD, swizzle=swizzle), BLACKWELL) == set()


@pytest.mark.parametrize("data_type,box,steps,accepted", [
    # the boundaries an H100 showed when box dims were swept (docs/results/tensor-maps.md)
    (4, (256, 114), (1, 1), True), (4, (256, 115), (1, 1), False),  # 256 x 114 x 8 bytes = 233,472
    (4, (128, 228), (1, 1), True), (4, (128, 229), (1, 1), False),
    (2, (256, 228), (1, 1), True), (2, (256, 229), (1, 1), False),
    (4, (256, 229), (1, 2), True), (4, (256, 230), (1, 2), False),  # floor(229 / 2) = 114 rows taken
    (4, (256, 256), (1, 3), True),
    (0, (64, 64, 57), (1, 1, 1), True), (0, (64, 64, 58), (1, 1, 1), False),
    (0, (64, 64, 231), (1, 1, 4), True), (0, (64, 64, 232), (1, 1, 4), False),
    (0, (256, 256, 7), (1, 1, 2), True), (0, (256, 256, 8), (1, 1, 2), False),
])
def test_a_box_takes_at_most_228_kib_on_an_h100(data_type, box, steps, accepted):
    e = TiledEncoding(data_type, 0, (1,) * len(box), (0,) * (len(box) - 1), box, steps)
    assert rules(e) == (set() if accepted else {"box bytes"})
    assert rules(e, BLACKWELL) == set()  # not known there: not judged


def test_the_innermost_element_stride_counts_for_the_box_bytes():
    # the text says elementStrides[0] is ignored without interleave; the driver still divides boxDim[0] by it
    # (an H100 accepted a [32, 96, 216] box of 2-byte elements with element strides [6, 4, 1]: 5 x 24 x 216 x 2 bytes)
    assert rules(TiledEncoding(6, 0, (64, 96, 216), (128, 12288), (32, 96, 216), (6, 4, 1))) == set()
    assert rules(TiledEncoding(6, 0, (64, 96, 216), (128, 12288), (32, 96, 216), (1, 4, 1))) == {"box bytes"}


def test_the_sampler_breaks_exactly_the_rule_it_names():
    named = {"box dim 0": "box dims", "box dim 257": "box dims", "element stride 0": "element strides",
             "element stride 9": "element strides", "inner box bytes": "inner box bytes",
             "interleaved inner box bytes": "interleaved inner box bytes",
             "inner box past the swizzle": "inner box within the swizzle", "address 8-byte aligned": "global address alignment",
             "stride 8-byte aligned": "global strides", "stride 2^40": "global strides", "global dim 0": "global dims",
             "global dim 2^32 + 1": "global dims", "interleave below rank 3": "interleave rank",
             "interleave 32B without swizzle 32B": "interleave 32B swizzle", "NaN fill of an integer type": "NaN fill type",
             "rank 6": "rank", "enum out of range": ("enum", "data type")}  # a data type past the enum has no size
    assert set(named) == set(BREAKS)
    seen, valid = set(), 0
    for i in range(4000):
        p = tiled_encoding(source_for("tma.encode", 5, i))
        broken = rules(encoding_of(p), BLACKWELL)
        if p["broken"]:
            wanted = named[p["broken"]]
            assert broken & ({wanted} if isinstance(wanted, str) else set(wanted)), (i, p, broken)
            seen.add(p["broken"])
        else:
            assert broken == set(), (i, p, broken)  # every unbroken draw is one the documentation allows
            valid += 1
    assert seen == set(BREAKS) and 3000 < valid < 3800  # one in eight broken on purpose


def test_tma_encode_verdicts():
    target = TmaEncode()
    case = Case("tma.encode", 0, 0, tiled_encoding(source_for("tma.encode", 0, 0)))
    refuse = {"accepted": False, "problems": ["box dims [0] must be rank-many values 1..256"], "rules": ["box dims"]}
    accept = {"accepted": True, "problems": [], "rules": []}
    assert target.compare(case, refuse, {"accepted": False, "error": "CUDA_ERROR_INVALID_VALUE"}).ok
    assert target.compare(case, accept, {"accepted": True, "error": ""}).ok
    wrong = target.compare(case, refuse, {"accepted": True, "error": ""})
    assert not wrong.ok and wrong.signature == "accepted what the documentation refuses: box dims"
    wrong = target.compare(case, accept, {"accepted": False, "error": "CUDA_ERROR_INVALID_VALUE"})
    assert not wrong.ok and wrong.signature == "refused what the documentation allows: CUDA_ERROR_INVALID_VALUE"
    assert target.attribute("diverge", wrong.signature).party == "specification"
    for bad in ({**case.params, "box_dims": [1 << 70]}, {**case.params, "swizzle": 99}, {k: v for k, v in case.params.items() if k != "box_dims"}):
        with pytest.raises(ValueError):
            target.validate(Case("tma.encode", 0, 0, bad))
