"""triton.layout_ops_run: NumPy's answers worked by hand, the generator draws only runnable cases (scans on blocked
layouts), and on the device (marked gpu) the kernels' values match and a planted wrong value is seen."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.gpu.targets.triton_layout_ops_run import TritonLayoutOpsRun, expected_output, runnable

X = np.array([[1, -2, 3], [4, 0, -1]], np.float32)  # 2 x 3


@pytest.mark.parametrize("op, axis, want", [
    ("sum", 0, [5, -2, 2, 0, 0, 0]),
    ("sum", 1, [2, 3, 0, 0, 0, 0]),
    ("max", 1, [3, 4, 0, 0, 0, 0]),
    ("cumsum", 1, [1, -1, 2, 4, 4, 3]),
    ("cumsum", 0, [1, -2, 3, 5, -2, 2]),
    ("permute", 0, [1, 4, -2, 0, 3, -1]),
    ("reshape", 0, [1, -2, 3, 4, 0, -1]),
    ("join_split", 0, [3, -3, 7, 9, 1, -1]),
    ("broadcast", 1, [-2, -5, 0, 0, -4, -5]),
    ("gather", 1, [1, -2, 3, 4, 0, -1]),  # index (offs * 7) % 3 = [[0, 1, 2], [0, 1, 2]]: the identity
])
def test_expected_outputs_by_hand(op, axis, want):
    assert expected_output(op, axis, X).tolist() == want


def test_gather_by_hand():
    y = np.arange(1, 9, dtype=np.float32).reshape(2, 4)  # index (offs * 7) % 4 = [[0, 3, 2, 1], [0, 3, 2, 1]]
    assert expected_output("gather", 1, y).tolist() == [1, 4, 3, 2, 5, 8, 7, 6]


def test_generator_draws_runnable_cases_with_clusters_and_every_op():
    target = TritonLayoutOpsRun()
    cases = [Case(target.name, 1, i, target.generate(source_for(target.name, 1, i))) for i in range(200)]
    for case in cases:
        target.validate(case)
        p = case.params
        assert runnable(p["layout"], p["shape"], p["op"], p["axis"])
    assert {c.params["op"] for c in cases} >= {"sum", "max", "cumsum", "permute", "reshape", "join_split", "gather"}
    assert all(c.params["layout"]["kind"] == "blocked" for c in cases if c.params["op"] == "cumsum")
    assert set(collections.Counter(c.params["num_ctas"] for c in cases)) >= {1, 2, 4}


def test_a_wrong_value_is_named_by_the_op():
    target = TritonLayoutOpsRun()
    case = Case(target.name, 0, 3, {"op": "sum", "axis": 1, "shape": [2, 3], "num_warps": 1, "num_ctas": 1,
                                    "layout": {"kind": "blocked", "size_per_thread": [1, 1], "threads_per_warp": [4, 8],
                                               "warps_per_cta": [1, 1], "order": [1, 0], "cga_layout": []}})
    want = target.expected(case)
    bad = {"output": list(want["output"])}
    bad["output"][0] += 1
    verdict = target.compare(case, want, bad)
    assert not verdict.ok and verdict.signature == "sum: wrong values" and verdict.mismatch_count == 1
    assert target.compare(case, want, want).ok


@pytest.mark.gpu
def test_kernels_on_the_device_match_numpy_and_a_wrong_answer_is_seen():
    """Blocked layouts in one CTA (no finding of docs/findings.md needs them): every operation right on the device;
    the same outputs judged against a shifted expectation are wrong."""
    from layoutfuzz.harness.target import Unsupported, make_case

    target = TritonLayoutOpsRun()
    assert target.availability().available, target.availability().reason
    cases = [make_case(target, 5, i) for i in range(200)]
    plain = [c for c in cases if c.params["layout"]["kind"] == "blocked" and c.params["num_ctas"] == 1][:30]
    assert len({c.params["op"] for c in plain}) >= 4
    ran = 0
    for case in plain:
        try:
            observed = target.observed(case)
        except Unsupported:  # an operation this Triton's Gluon lacks (3.6.0: cumsum)
            continue
        ran += 1
        last = (case, observed)
        assert "rejected" not in observed, observed
        assert target.compare(case, target.expected(case), observed).ok, case.params
    assert ran >= 8
    case, observed = last
    shifted = {"output": [v + 1 for v in target.expected(case)["output"]]}
    assert not target.compare(case, shifted, observed).ok
