"""mosaic.gpu on the CPU: the expected shared-memory images worked by hand from PTX 5.5.7, the products, the judgement
of planted faults, the generator; and on an sm_90 device (skipped without one) Mosaic's kernels against them (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.mosaic_gpu import _data, expected_image
from layoutfuzz.harness import registry
from layoutfuzz.harness.runner import make_case


def _case(params):
    return Case("mosaic.gpu", 0, 0, params)


def test_a_128b_swizzled_window_by_hand():
    p = {"family": "tma", "element_bytes": 2, "swizzle": 128, "rows": 2, "columns": 64, "row_offset": 3, "data_seed": 5}
    source = _data(p)
    image = expected_image(p, source)
    window = source[3:5]
    assert (image[:128] == window[0].view(np.uint8)).all()  # row 0: every 16-byte chunk in place
    for chunk in range(8):  # row 1 of the 128B pattern: chunk c lands in chunk c ^ 1
        got = image[128 + 16 * (chunk ^ 1):128 + 16 * (chunk ^ 1) + 16]
        assert (got == window[1, 8 * chunk:8 * chunk + 8].view(np.uint8)).all()


def test_a_tiled_32b_swizzle_and_an_unswizzled_copy_by_hand():
    p = {"family": "tma_tiled", "element_bytes": 4, "swizzle": 32, "tile": [8, 8], "shape": [16, 16], "data_seed": 1}
    source = _data(p)
    image = expected_image(p, source).view(np.uint32)
    # tiles one after another, row-major over (2, 2) tiles of 8 x 8 (256 bytes each); inside, 32-byte rows whose two
    # 16-byte chunks swap on odd 128-byte lines (rows 4-7 of a tile)
    tile = image[3 * 64:4 * 64].reshape(8, 2, 4)  # tile (1, 1)
    assert (tile[0].ravel() == source[8, 8:16]).all()
    assert (tile[4, 0] == source[12, 12:16]).all() and (tile[4, 1] == source[12, 8:12]).all()
    plain = {"family": "tma", "element_bytes": 1, "swizzle": 0, "rows": 3, "columns": 32, "row_offset": 1, "data_seed": 2}
    assert (expected_image(plain, _data(plain)) == _data(plain)[1:4].ravel()).all()


def test_the_target_finds_a_moved_byte_and_a_wrong_product():
    target = registry.load("mosaic.gpu")
    case = _case({"family": "tma", "element_bytes": 2, "swizzle": 64, "rows": 5, "columns": 32, "row_offset": 0, "data_seed": 9})
    expected = target.expected(case)
    assert target.compare(case, expected, expected.copy()).ok
    moved = expected.copy()
    moved[[0, 200]] = moved[[200, 0]]
    verdict = target.compare(case, expected, moved)
    assert not verdict.ok and verdict.signature == "tma 64B: shared-memory bytes elsewhere" and verdict.mismatch_count == 2
    product = _case({"family": "wgmma", "dtype": "bf16", "swizzle": 32, "m": 64, "k": 16, "n": 64, "data_seed": 3})
    d = target.expected(product)
    a, b = _data(product.params)[:64, :16], _data(product.params)[64:80, :64]
    assert (d == a @ b).all() and np.abs(d).max() <= 16 * 9  # |a|, |b| <= 3: exact in every type
    wrong = d.copy()
    wrong[5, 7] += 1
    assert target.compare(product, d, wrong).signature == "wgmma 32B: a wrong product"


def test_generated_cases_are_valid_and_draw_every_value():
    target = registry.load("mosaic.gpu")
    cases = [make_case(target, 4, i) for i in range(400)]
    for case in cases:
        target.validate(case)
    families = {target.family(c) for c in cases}
    assert {f"tma {s} swizzle" for s in ("no", 32, 64, 128)} <= families
    assert {f"wgmma {t} {s}B" for t in ("f16", "bf16") for s in (32, 64, 128)} <= families
    with pytest.raises(ValueError):
        target.validate(_case({"family": "wgmma", "dtype": "f16", "swizzle": 128, "m": 64, "k": 48, "n": 64, "data_seed": 0}))


def test_without_a_device_the_target_says_why():
    availability = registry.load("mosaic.gpu").availability()
    if availability.available:
        pytest.skip("a CUDA device with jax's Mosaic GPU is here")
    assert availability.reason
