"""triton.layout_chains and its GPU run: the grammar's shapes and NumPy's answers worked by hand, the generator draws
every step legally (one conversion at most, its layout valid for the shape it meets), refusals are judged by the
documented limits, the kernels compile, and on the device (marked gpu) the chains' values match NumPy."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from layoutfuzz.generators import gluon_chains
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.oracles import gluon_chains as oracle
from layoutfuzz.oracles import gluon_layouts

X = np.array([[1, -2, 3, 0], [4, 0, -1, 2]], np.float32)  # 2 x 4
BLOCKED = {"kind": "blocked", "size_per_thread": [1, 4], "threads_per_warp": [4, 8], "warps_per_cta": [2, 2],
           "order": [1, 0], "cga_layout": []}


def valid(layout, shape):
    return gluon_layouts.precondition(dict(layout), shape) is None


@pytest.mark.parametrize("steps, want", [
    ([["sum", 0]], [5, -2, 2, 2]),
    ([["max", 1]], [3, 4]),
    ([["keep", 1]], [[2], [5]]),
    ([["center", 0]], [[-3, -2, 0, -2], [0, 0, -4, 0]]),
    ([["cumsum", 1]], [[1, -1, 2, 2], [4, 4, 3, 5]]),
    ([["trans", 0]], [[1, 4], [-2, 0], [3, -1], [0, 2]]),
    ([["flat", 0]], [1, -2, 3, 0, 4, 0, -1, 2]),
    ([["unflat", 0]], [[[1, -2], [3, 0]], [[4, 0], [-1, 2]]]),
    ([["join", 0], ["split", 0]], [[4, -5, 10, 1], [13, 1, -2, 7]]),  # 2 x + (x + 1)
    ([["trans", 0], ["sum", 1]], [5, -2, 2, 2]),  # the columns' sums, through a transposed tile
    ([["unflat", 0], ["rot", 0], ["sum", 2]], [[5, -2], [2, 2]]),  # the two rows of 2 x 2 blocks added
    ([["convert", 0], ["flat", 0]], [1, -2, 3, 0, 4, 0, -1, 2]),
])
def test_chains_by_hand(steps, want):
    assert oracle.evaluate(steps, X).tolist() == want


def test_the_grammar_says_each_steps_shape_and_legality():
    steps = [["join", 0], ["trans", 0], ["sum", 0]]
    assert gluon_chains.shapes(steps, [4, 8]) == [[4, 8], [4, 8, 2], [2, 8, 4], [8, 4]]
    assert gluon_chains.step_shape("unflat", 0, [4, 8]) == [4, 2, 4]
    assert gluon_chains.step_shape("keep", 1, [4, 8]) == [4, 1]
    assert not gluon_chains.legal("split", 0, [4, 8]) and gluon_chains.legal("split", 0, [4, 2])
    assert not gluon_chains.legal("rot", 0, [4, 8]) and not gluon_chains.legal("join", 0, [2, 2, 2])
    assert not gluon_chains.legal("sum", 0, [8]) and gluon_chains.legal("cumsum", 0, [8])


def test_generator_draws_every_step_legally_with_at_most_one_valid_conversion():
    drawn = [gluon_chains.chain_case(source_for("triton.layout_chains", 1, i), valid) for i in range(600)]
    steps = collections.Counter(step for c in drawn for step, _ in c["steps"])
    assert set(steps) == set(gluon_chains.STEPS), steps
    assert {len(c["steps"]) for c in drawn} == set(gluon_chains.DEPTHS)
    for c in drawn:
        at = c["shape"]
        for step, axis in c["steps"]:
            assert gluon_chains.legal(step, axis, at), c
            at = gluon_chains.step_shape(step, axis, at)
        converts = [i for i, (step, _) in enumerate(c["steps"]) if step == "convert"]
        assert len(converts) <= 1 and bool(converts) == ("convert_layout" in c)
        if converts:
            assert valid(c["convert_layout"], gluon_chains.shapes(c["steps"], c["shape"])[converts[0]])
    assert any(gluon_layouts.cga_bases(c["layout"]) for c in drawn), "clusters drawn"
    assert [gluon_chains.chain_case(source_for("triton.layout_chains", 1, i), valid) for i in range(20)] == drawn[:20]


pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
from layoutfuzz.harness.targets.triton_layout_chains import TritonLayoutChains, chain_limit, why_not  # noqa: E402


def case_of(steps, layout=BLOCKED, shape=(8, 16), **extra):
    return Case("triton.layout_chains", 0, 0, {"op": "chain", "steps": steps, "layout": layout, "shape": list(shape),
                                               "num_warps": 4, "edge": False, **extra})


@pytest.mark.parametrize("steps", [
    [["trans", 0], ["sum", 1]], [["join", 0], ["trans", 0], ["flat", 0]], [["unflat", 0], ["rot", 0], ["max", 2]],
    [["keep", 0], ["center", 1]], [["cumsum", 1], ["flat", 0]], [["join", 0], ["split", 0], ["trans", 0]],
])
def test_chains_of_a_plain_blocked_layout_compile(steps):
    target = TritonLayoutChains()
    case = case_of(steps)
    target.validate(case)
    observed = target.observed(case)
    assert target.compare(case, target.expected(case), observed).ok, observed


def test_a_conversion_in_a_chain_compiles_into_a_valid_layout():
    target = TritonLayoutChains()
    into = {"kind": "blocked", "size_per_thread": [2], "threads_per_warp": [32], "warps_per_cta": [4], "order": [0],
            "cga_layout": []}
    case = case_of([["sum", 0], ["convert", 0]], convert_layout=into)
    target.validate(case)
    assert target.observed(case) == {"compiles": True}


def test_refusals_are_judged_by_the_documented_limits():
    target = TritonLayoutChains()
    refused = {"compiles": False, "error": "RuntimeError: planted"}
    # a scan of an inferred layout and a split no join prepared are documented limits; a permute then a sum is not
    for steps, ok in (([["trans", 0], ["cumsum", 0]], True), ([["cumsum", 1], ["trans", 0]], False),
                      ([["unflat", 0], ["trans", 0], ["split", 0]], True), ([["trans", 0], ["sum", 1]], False)):
        case = case_of(steps, shape=(8, 4) if steps[0][0] == "unflat" else (8, 16))
        verdict = target.compare(case, target.expected(case), refused)
        assert verdict.ok is ok, steps
    assert chain_limit(case_of([["cumsum", 0]], layout={**BLOCKED, "cga_layout": [[1, 0]]}).params)  # split on axis 0
    assert chain_limit(case_of([["cumsum", 1]], layout={**BLOCKED, "cga_layout": [[1, 0]]}).params) is None
    bad = target.compare(case_of([["trans", 0], ["sum", 1]]), {"compiles": True, "limit": None}, refused)
    assert not bad.ok and bad.signature == "compile error: RuntimeError: planted" and "trans" in bad.note


def test_a_refused_conversion_over_a_cluster_is_that_limit_and_a_later_refusal_is_not():
    target = TritonLayoutChains()
    case = case_of([["convert", 0], ["sum", 0]], layout={**BLOCKED, "cga_layout": [[1, 0]]})
    refused = {"compiles": False, "error": "RuntimeError: planted"}
    assert target.compare(case, {"compiles": True, "limit": None}, {**refused, "conversion_refused": True}).ok
    assert not target.compare(case, {"compiles": True, "limit": None}, {**refused, "conversion_refused": False}).ok


@pytest.mark.parametrize("params, why", [
    ({"steps": [["split", 0]]}, "legal"),
    ({"steps": [["trans", 0], ["warp", 0]]}, "legal"),
    ({"steps": [["convert", 0]]}, "convert"),
    ({"steps": []}, "steps"),
])
def test_malformed_chains_are_not_cases(params, why):
    p = {**case_of([["trans", 0]]).params, **params}
    assert why in why_not(p)


def test_shrinks_drop_a_step_and_keep_the_case_valid():
    target = TritonLayoutChains()
    case = case_of([["join", 0], ["trans", 0], ["flat", 0]])
    smaller = list(target.shrink(case))
    assert smaller and all(why_not(q) is None and len(q["steps"]) == 2 for q in smaller)


# ---- triton.layout_chains_run: the same chains run on the GPU ----

from layoutfuzz.gpu.targets import triton_layout_chains_run as run  # noqa: E402


def test_the_run_target_draws_only_runnable_chains_with_every_step():
    target = run.TritonLayoutChainsRun()
    drawn = [target.generate(source_for(target.name, 1, i)) for i in range(300)]
    assert all(run.why_not(p) is None for p in drawn)
    assert {step for p in drawn for step, _ in p["steps"]} == set(gluon_chains.STEPS)
    assert any(p["num_ctas"] > 1 for p in drawn), "clusters drawn"


def test_the_output_buffer_holds_the_chain_first_and_a_wrong_value_is_named_by_the_chain():
    p = {**case_of([["join", 0], ["trans", 0]], shape=(2, 4)).params, "num_ctas": 1}
    out = run.expected_output(p, X)
    assert out.size == 16 and out.tolist() == np.stack([X, X + 1], -1).T.ravel().tolist()
    target = run.TritonLayoutChainsRun()
    case = Case(target.name, 0, 0, p)
    want = {"output": out.tolist()}
    bad = {"output": [*out.tolist()[:-1], out[-1] + 1]}
    verdict = target.compare(case, want, bad)
    assert not verdict.ok and verdict.signature == "data movement: wrong values" and verdict.mismatch_count == 1
    assert run.lowering({"steps": [["trans", 0], ["keep", 1]]}) == "reduction"
    assert run.lowering({"steps": [["cumsum", 0], ["flat", 0]]}) == "scan"
    assert target.compare(case, want, want).ok


@pytest.mark.gpu
def test_chains_on_the_device_match_numpy_and_a_wrong_answer_is_seen():
    """Chains over blocked layouts in one CTA: every one that compiles is right on the device (before 3.9.0 no scan:
    its scans go wrong over layouts wider than the tensor, docs/findings.md); the same outputs judged against a
    shifted expectation are wrong."""
    import triton

    from layoutfuzz.harness.target import make_case

    scans_right = tuple(int(x) for x in triton.__version__.split(".")[:2]) >= (3, 9)
    target = run.TritonLayoutChainsRun()
    assert target.availability().available, target.availability().reason
    cases = [make_case(target, 5, i) for i in range(400)]
    plain = [c for c in cases if c.params["layout"]["kind"] == "blocked" and c.params["num_ctas"] == 1
             and (scans_right or all(step != "cumsum" for step, _ in c.params["steps"]))][:30]
    ran = 0
    for case in plain:
        observed = target.observed(case)
        if "rejected" in observed:
            continue
        ran += 1
        last = (case, observed)
        assert target.compare(case, target.expected(case), observed).ok, case.params
    assert ran >= 15
    case, observed = last
    shifted = {"output": [v + 1 for v in target.expected(case)["output"]]}
    assert not target.compare(case, shifted, observed).ok
