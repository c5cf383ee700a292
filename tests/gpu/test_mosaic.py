"""mosaic.gpu on the device (marked gpu): Mosaic GPU's TMA loads and wgmma against PTX, and a planted swizzle that the
check must see."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.mosaic_gpu import _data, expected_image
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case


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


@pytest.mark.gpu
def test_mosaic_multicast_loads_fill_every_cta_of_the_cluster():
    pytest.importorskip("jax._src.lib.mosaic_gpu", reason="needs jaxlib with Mosaic GPU")
    target = registry.load("mosaic.gpu")
    multicast = [c for c in (make_case(target, 9, i) for i in range(300)) if c.params.get("ctas", 1) > 1][:24]
    assert {c.params["ctas"] for c in multicast} == {2, 4}
    for case in multicast:
        verdict = target.compare(case, target.expected(case), target.observed(case))
        assert verdict.ok, (case.params, verdict)
    # one CTA's share missing from another CTA (its bytes as the single-CTA image with that share zeroed) is seen
    p = {"family": "tma", "element_bytes": 2, "swizzle": 64, "rows": 16, "columns": 32, "row_offset": 0, "data_seed": 3,
         "direction": "load", "ctas": 2}
    observed = target.observed(_case(p))
    expected = target.expected(_case(p))
    assert target.compare(_case(p), expected, observed).ok
    half = expected.copy()
    half[expected.size // 2:expected.size // 2 + expected.size // 4] = 0  # CTA 1 without CTA 0's rows
    assert not target.compare(_case(p), half, observed).ok


@pytest.mark.gpu
def test_a_multicast_share_off_128_bytes_faults_the_device_and_ends_the_worker():
    # Mosaic 0.11.2 splits this window (2 rows of 32 bytes over 2 CTAs) into 32-byte shares, each landing 32 bytes
    # apart in shared memory; a TMA destination must be 128-byte aligned, and the kernel faults with a misaligned
    # address on the device instead of being refused. validate() refuses such cases; the fault still ends the worker
    import subprocess
    import sys

    pytest.importorskip("jax._src.lib.mosaic_gpu", reason="needs jaxlib with Mosaic GPU")
    code = ("from layoutfuzz.harness import registry\n"
            "from layoutfuzz.generators.case import Case\n"
            "p = {'family': 'tma', 'element_bytes': 1, 'swizzle': 0, 'rows': 2, 'columns': 32, 'row_offset': 0,"
            " 'data_seed': 1, 'direction': 'load', 'ctas': 2}\n"
            "registry.load('mosaic.gpu').observed(Case('mosaic.gpu', 0, 0, p))\n"
            "print('no fault')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 70, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "device fault" in done.stderr and "misaligned address" in done.stderr
