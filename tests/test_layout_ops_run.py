"""triton.layout_ops_run: NumPy's answers worked by hand (the original operations, the user-written combines with
their ties, histograms, rank-3 tiles), the generator draws only runnable cases (scans on blocked layouts, bin counts
that are powers of two) of every operation and rank, the reproducer scripts compute the target's answer, and on the
device (marked gpu) the kernels' values match and a planted wrong value is seen."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from layoutfuzz.generators import gluon_ops
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.gpu.targets.triton_layout_ops_run import TritonLayoutOpsRun, expected_output, runnable, why_not

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


Y = np.array([[2, 2, 1], [2, 3, 3]], np.float32)  # offsets [[0, 1, 2], [3, 4, 5]]: ties in both rows and column 0


@pytest.mark.parametrize("op, axis, reverse, want", [
    ("scan_max", 1, False, [1, 1, 3, 4, 4, 4]),
    ("scan_max", 1, True, [3, 3, 3, 4, 0, -1]),
    ("scan_max", 0, False, [1, -2, 3, 4, 0, 3]),
    ("scan_max", 0, True, [4, 0, 3, 4, 0, -1]),
])
def test_max_scans_by_hand(op, axis, reverse, want):
    assert expected_output(op, axis, X, reverse).tolist() == want


# value + offset of the running argmax; between equal values the smaller offset (argmax_combine's tie rule)
@pytest.mark.parametrize("op, axis, reverse, want", [
    ("scan_pair", 1, False, [2, 2, 2, 5, 7, 7]),  # row 0: 2 at offsets 0 and 1, offset 0 kept
    ("scan_pair", 1, True, [2, 3, 3, 7, 7, 8]),  # row 1 from the end: (3, 5), then 3 at 4 and 5: offset 4
    ("scan_pair", 0, False, [2, 3, 3, 2, 7, 8]),  # column 0: 2 at 0 and 3, offset 0
    ("scan_pair", 0, True, [2, 7, 8, 5, 7, 8]),
    ("reduce_pair", 1, False, [2, 7, 0, 0, 0, 0]),  # row 0: (2, 0); row 1: (3, 4)
    ("reduce_pair", 0, False, [2, 7, 8, 0, 0, 0]),  # columns: (2, 0), (3, 4), (3, 5)
])
def test_value_index_pairs_by_hand(op, axis, reverse, want):
    assert expected_output(op, axis, Y, reverse).tolist() == want


def test_histograms_by_hand():
    values = np.array([0, 2, 2, 3, 1, 3], np.int32)  # the last value masked off by the kernel
    assert expected_output("histogram", 0, values, bins=4).tolist() == [1, 1, 2, 1]
    assert expected_output("histogram", 0, values, bins=8).tolist() == [1, 1, 2, 1, 0, 0, 0, 0]
    assert expected_output("histogram", 0, np.array([5], np.int32), bins=8).tolist() == [0] * 8
    assert expected_output("histogram", 0, values, bins=4).dtype == np.int32


Z = np.array([[[1, -2], [3, 0]], [[-1, 4], [2, 2]]], np.float32)  # 2 x 2 x 2, offsets 0..7 row-major


@pytest.mark.parametrize("op, axis, reverse, want", [
    ("sum", 0, False, [0, 2, 5, 2, 0, 0, 0, 0]),
    ("sum", 2, False, [-1, 3, 3, 4, 0, 0, 0, 0]),
    ("max", 1, False, [3, 0, 2, 4, 0, 0, 0, 0]),
    ("permute", 0, False, [1, -1, -2, 4, 3, 2, 0, 2]),  # (1, 2, 0): out[j, k, i] = z[i, j, k]
    ("permute", 1, False, [1, 3, -1, 2, -2, 0, 4, 2]),  # (2, 0, 1): out[k, i, j] = z[i, j, k]
    ("permute", 2, False, [1, 3, -2, 0, -1, 2, 4, 2]),  # (0, 2, 1): each z[i] transposed
    ("cumsum", 2, False, [1, -1, 3, 3, -1, 3, 2, 4]),
    ("scan_max", 1, True, [3, 0, 3, 0, 2, 4, 2, 2]),
    ("reduce_pair", 2, False, [1, 5, 9, 8, 0, 0, 0, 0]),  # (1, 0), (3, 2), (4, 5), (2, 6): a tie at 6 and 7
    ("broadcast", 0, False, [0, -6, 0, -2, -2, 0, -1, 0]),
    ("reshape", 1, False, [1, -2, 3, 0, -1, 4, 2, 2]),
    ("join_split", 2, False, [3, -3, 7, 1, -1, 9, 5, 5]),
    ("atomic_add", 0, False, [1, 0, 3, 0, 0, 4, 2, 0]),  # offsets 1, 4 and 7 masked off
    ("atomic_max", 0, False, [1, 0, 3, 0, 0, 4, 2, 0]),  # a max with the zeros there; 1, 4 and 7 masked off
    ("atomic_xchg", 0, False, [9, 0, 11, 8, 0, 12, 10, 0]),  # x + 8 swapped in but at 1, 4 and 7
    ("atomic_cas", 0, False, [9, 6, 11, 8, 7, 12, 10, 10]),  # x + 8 swapped in everywhere (no mask)
])
def test_rank3_tiles_by_hand(op, axis, reverse, want):
    assert expected_output(op, axis, Z, reverse).tolist() == want


def test_rank3_gather_by_hand():
    w = np.arange(1, 9, dtype=np.float32).reshape(1, 2, 4)  # index (offs * 7) % 4 = [0, 3, 2, 1] in each row
    assert expected_output("gather", 2, w).tolist() == [1, 4, 3, 2, 5, 8, 7, 6]


def test_generator_draws_the_added_operations_and_ranks():
    target = TritonLayoutOpsRun()
    cases = [Case(target.name, 2, i, target.generate(source_for(target.name, 2, i))) for i in range(400)]
    for case in cases:
        target.validate(case)
    drawn = {(c.params["op"], len(c.params["shape"])) for c in cases}
    assert {("scan_max", 3), ("scan_pair", 2), ("reduce_pair", 3), ("histogram", 1), ("gather", 3)} <= drawn
    orders = {(c.params["sem"], c.params["scope"]) for c in cases if "sem" in c.params}
    assert {("relaxed", "cta"), ("acq_rel", "gpu"), ("acquire", "sys"), ("release", "gpu")} <= orders
    assert all(("sem" in c.params) == (c.params["op"] in ("atomic_max", "atomic_xchg", "atomic_cas")) for c in cases)
    assert {c.params["reverse"] for c in cases if "reverse" in c.params} == {False, True}
    assert all(c.params["bins"] & (c.params["bins"] - 1) == 0 for c in cases if c.params["op"] == "histogram")
    scans = [c for c in cases if c.params["op"] in ("cumsum", "scan_max", "scan_pair")]
    assert scans and all(c.params["layout"]["kind"] == "blocked" for c in scans)
    again = [TritonLayoutOpsRun().generate(source_for(target.name, 2, i)) for i in range(40)]
    assert json.dumps(again, sort_keys=False) == json.dumps([c.params for c in cases[:40]], sort_keys=False)


def test_a_histogram_of_bins_not_a_power_of_two_is_not_a_case():
    target = TritonLayoutOpsRun()
    case = next(c for c in (Case(target.name, 2, i, target.generate(source_for(target.name, 2, i))) for i in range(400))
                if c.params["op"] == "histogram" and c.params["dst_layout"]["kind"] == "blocked")
    assert why_not({**case.params, "bins": 6}) and why_not({**case.params, "reverse": True})


def test_scripts_of_the_added_operations_compute_the_targets_answer():
    """The reproducer script's NumPy (its own lines, not expected_output) gives the target's expected buffer."""
    pytest.importorskip("triton")
    target = TritonLayoutOpsRun()
    cases = [Case(target.name, 3, i, target.generate(source_for(target.name, 3, i))) for i in range(300)]
    seen = set()
    for case in cases:
        p = case.params
        key = (p["op"], len(p["shape"]), p.get("reverse"))
        if key in seen or (p["op"] in ("sum", "max", "cumsum", "permute", "reshape", "join_split", "gather", "broadcast")
                           and len(p["shape"]) == 2):
            continue
        seen.add(key)
        space: dict = {"__name__": "repro"}
        exec(compile(target.reproducer_script(case), "repro.py", "exec"), space)
        want = space["expected"](space["make_inputs"]())["dst"]
        assert want.tolist() == target.expected(case)["output"], p
    assert {"scan_pair", "reduce_pair", "histogram", "scan_max"} <= {k[0] for k in seen} and len(seen) >= 12


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
    cases = [make_case(target, 5, i) for i in range(1500)]  # the original operations are a few of the cases
    plain = [c for c in cases if c.params["layout"]["kind"] == "blocked" and c.params["num_ctas"] == 1
             and c.params["op"] in gluon_ops.OPS and len(c.params["shape"]) == 2][:30]  # the original operations
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


@pytest.mark.gpu
def test_added_operations_on_the_device_match_numpy():
    """The user-written combines, histograms and rank-3 tiles over blocked layouts in one CTA: every one that
    compiles is right on the device under 3.9.0 (3.6.0's scans and histograms go wrong over many of these layouts:
    docs/results/layout-ops-h100.md; a refusal is the campaign's to judge)."""
    import triton

    from layoutfuzz.harness.target import make_case

    if tuple(int(x) for x in triton.__version__.split(".")[:2]) < (3, 9):
        pytest.skip(f"Triton {triton.__version__}: scans and histograms of wider-than-tensor layouts are wrong before 3.9.0")
    target = TritonLayoutOpsRun()
    assert target.availability().available, target.availability().reason
    cases = [make_case(target, 7, i) for i in range(300)]
    added = [c for c in cases if c.params["layout"]["kind"] == "blocked" and c.params["num_ctas"] == 1
             and (c.params["op"] in ("scan_max", "scan_pair", "reduce_pair", "histogram") or len(c.params["shape"]) == 3)]
    added = added[:24]
    assert len({c.params["op"] for c in added}) >= 4
    ran = 0
    for case in added:
        observed = target.observed(case)
        if "rejected" in observed:
            continue
        ran += 1
        assert target.compare(case, target.expected(case), observed).ok, case.params
    assert ran >= 12


def test_a_device_fault_is_signed_by_the_operation_whose_kernel_faulted():
    from layoutfuzz.reports.outcome import Outcome, Result
    from layoutfuzz.reports.signatures import root_cause

    target = TritonLayoutOpsRun()
    fault = ("worker exited with code 70\ndevice fault: CUDAError: CUDA_ERROR_ILLEGAL_ADDRESS: While executing a kernel, "
             "the device encountered a load or store instruction on an invalid memory address.")
    abort = "killed by SIGABRT\nLLVM ERROR: Invalid basis 16 for in-dim 'warp' and out-dim 'dim0'."
    cas = Case(target.name, 0, 0, {"op": "atomic_cas"})
    assert target.crash_cause(cas, fault) == "atomic_cas" and target.crash_cause(cas, abort) == ""
    signed = [root_cause(Result(cas, "f", Outcome.CRASH, fault, signature=op)) for op in ("atomic_cas", "gather")]
    assert signed == ["exit: CUDA_ERROR_ILLEGAL_ADDRESS: atomic_cas", "exit: CUDA_ERROR_ILLEGAL_ADDRESS: gather"]
    assert root_cause(Result(cas, "f", Outcome.CRASH, abort)).startswith("SIGABRT: LLVM ERROR: Invalid basis")


def test_the_fallback_sum_takes_none_of_the_drawn_operations_options(monkeypatch):
    from layoutfuzz.gpu.targets import triton_layout_ops_run as run

    real = run.why_not
    monkeypatch.setattr(run, "why_not", lambda p: "refused here" if p["op"] != "sum" else real(p))
    target = TritonLayoutOpsRun()
    drawn = [target.generate(source_for(target.name, 4, i)) for i in range(40)]
    fallbacks = [p for p in drawn if p["op"] == "sum"]
    assert fallbacks and all(real(p) is None for p in fallbacks)
    assert not any({"dtype", "sem", "scope", "reverse"} & set(p) for p in fallbacks)
