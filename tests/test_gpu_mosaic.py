"""mosaic.gpu on the device (marked gpu): Mosaic GPU's TMA loads and wgmma against PTX, and a planted swizzle that the
check must see (issue 18)."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.mosaic_gpu import _data, expected_image
from layoutfuzz.harness import registry
from layoutfuzz.harness.runner import make_case


def _case(params):
    return Case("mosaic.gpu", 0, 0, params)


@pytest.mark.gpu
def test_mosaic_kernels_match_ptx_and_a_planted_swizzle_does_not():
    pytest.importorskip("jax._src.lib.mosaic_gpu", reason="needs jaxlib with Mosaic GPU")
    target = registry.load("mosaic.gpu")
    assert target.availability().available, target.availability().reason
    cases = [make_case(target, 7, i) for i in range(45)]
    for case in cases:
        verdict = target.compare(case, target.expected(case), target.observed(case))
        assert verdict.ok, (case.params, verdict)
    # the 128B kernel's image judged as if the load had not swizzled: the check sees the difference on the device
    p = {"family": "tma", "element_bytes": 2, "swizzle": 128, "rows": 8, "columns": 64, "row_offset": 1, "data_seed": 11}
    observed = target.observed(_case(p))
    assert target.compare(_case(p), expected_image(p, _data(p)), observed).ok
    unswizzled = expected_image({**p, "swizzle": 0}, _data(p))
    verdict = target.compare(_case(p), unswizzled, observed)
    assert not verdict.ok and verdict.mismatch_count > 7 * 128 * 0.9  # every row but the first moves


@pytest.mark.gpu
def test_mosaic_stores_match_ptx_and_keep_the_rest_of_the_array():
    pytest.importorskip("jax._src.lib.mosaic_gpu", reason="needs jaxlib with Mosaic GPU")
    target = registry.load("mosaic.gpu")
    stores = [c for c in (make_case(target, 8, i) for i in range(200)) if c.params.get("direction") == "store"][:30]
    assert {c.params["swizzle"] for c in stores} == {0, 32, 64, 128}
    for case in stores:
        verdict = target.compare(case, target.expected(case), target.observed(case))
        assert verdict.ok, (case.params, verdict)
    # the 128B store judged as if it had not swizzled: the check sees the difference on the device
    p = {"family": "tma", "element_bytes": 2, "swizzle": 128, "rows": 8, "columns": 64, "row_offset": 1, "data_seed": 11,
         "direction": "store"}
    observed = target.observed(_case(p))
    assert target.compare(_case(p), target.expected(_case(p)), observed).ok
    verdict = target.compare(_case(p), target.expected(_case({**p, "swizzle": 0})), observed)
    assert not verdict.ok and verdict.signature == "tma store 128B: global-memory bytes elsewhere"
