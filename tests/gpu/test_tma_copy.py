"""tma.copy on the device (marked gpu): raw TMA loads and stores over global tensors from start coordinates, against
``oracles.tma_copy``; the guard zones catch a write past a tensor."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.generators.tma_copy import tensor_copy


@pytest.mark.gpu
def test_loads_and_stores_over_tensors_match_the_oracle():
    # 1,500 copies in one launch: every copy the driver accepts agrees with the oracle byte for byte, windows and
    # regions (guard zones included); each refusal is one the validity oracle predicts; and the granule rule is
    # exercised (stores cut inside a granule occur)
    from layoutfuzz.gpu.targets.tma_copy import TmaCopy

    target = TmaCopy()
    cases = [Case("tma.copy", 21, i, tensor_copy(source_for("tma.copy", 21, i))) for i in range(1500)]
    expected, observed = target.expected_batch(cases), target.observed_batch(cases)
    verdicts = target.compare_batch(cases, expected, observed)
    wrong = [(cases[i].params, v.signature) for i, v in enumerate(verdicts) if not v.ok]
    assert not wrong, wrong[:3]
    granule_stores = [c for c in cases if c.params["direction"] == "store" and c.params["places"][0] == "cut"
                      and c.params["global_dims"][0] * c.params["element_bytes"] % 16]
    assert len(granule_stores) > 50
    clusters = {(c.params["cluster"], c.params["multicast"]) for c, v in zip(cases, verdicts) if c.params["cluster"] > 1}
    assert {2, 4} <= {size for size, _ in clusters} and len(clusters) > 10  # multicast loads across clusters of 2 and 4


@pytest.mark.gpu
def test_a_planted_guard_write_and_the_per_case_path_agree_with_the_batch():
    from layoutfuzz.gpu.targets.tma_copy import CopyResult, TmaCopy
    from layoutfuzz.gpu.tma_driver import GUARD

    target = TmaCopy()
    cases = [Case("tma.copy", 22, i, tensor_copy(source_for("tma.copy", 22, i))) for i in range(60)]
    observed = target.observed_batch(cases)
    stores = [i for i, o in enumerate(observed) if isinstance(o, CopyResult) and cases[i].params["direction"] == "store"]
    for i in stores[:10]:
        assert observed[i].__json__() == target.observed(cases[i])  # one launch a case gives the batch's bytes
    i = stores[0]
    region = observed[i].region.copy()
    region[GUARD - 1] ^= 0x40  # a byte just before the tensor
    verdict = target.compare_batch([cases[i]], target.expected_batch([cases[i]]), [CopyResult(observed[i].window, region)])[0]
    assert not verdict.ok and verdict.signature == "store: wrote past the tensor (guard zone)"
    assert np.array_equal(observed[i].window, target.expected_batch([cases[i]])[0].result.window)
