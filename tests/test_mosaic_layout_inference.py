"""Mosaic GPU's layout inference: the oracle on hand-worked programs, the generator's reach (every op, ranks 1-4, a
quarter on the edges, determinism), planted faults (a wrong inferred layout, a spurious refusal) caught, and a short
campaign meeting the rank-1-tile Reshape bug of jax 0.10.2-0.12.0.1 without a hand-written case."""

from __future__ import annotations

import collections

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_programs import ALL_NAMED, CHAIN_OPS, named
from layoutfuzz.harness.target import Unsupported, make_case
from layoutfuzz.harness.targets.mosaic_layout_inference import MosaicLayoutInference, reshape_within_rule
from layoutfuzz.oracles import mosaic_inference as inf

MOSAIC = "needs JAX's Mosaic GPU: pip install 'layoutfuzz[mosaic]'"
WGMMA, ROW, COL = named("WGMMA_LAYOUT"), named("WGMMA_ROW_LAYOUT"), named("WGMMA_COL_LAYOUT")
TRANSPOSED = named("WGMMA_TRANSPOSED_LAYOUT")
# undef (64, 8) cast to WGMMA, reduced over axis 0 into an undef accumulator of (8,)
REDUCE = [{"op": "undef", "shape": [64, 8]}, {"op": "cast", "src": 0, "layout": WGMMA}, {"op": "undef", "shape": [8]},
          {"op": "reduce", "src": 1, "acc": 2, "axes": [0]}]


def _splat(shape):
    return {"kind": "splat", "shape": list(shape)}


def _assign(outs, ins):
    return [{"in": i, "out": [o]} for o, i in zip(outs, ins)]


def _reduce_assignment(result):
    return _assign([WGMMA, WGMMA, result, result], [[], [WGMMA], [], [WGMMA, result]])


def test_a_reduction_over_rows_holds_each_threads_columns():
    # WGMMA: thread t holds columns 2(t%4), 2(t%4)+1 of its rows; the column sums held so are WGMMA_COL's
    assert inf.check(REDUCE, _reduce_assignment(COL)) == []
    wrong = inf.check(REDUCE, _reduce_assignment(named("TMA_INDICES_4_LAYOUT")))  # every thread holds all
    assert [v.signature for v in wrong] == ["vector.multi_reduction: result does not hold what each thread's operand "
                                            "elements reduce into"]


def test_broadcast_locality_worked_by_hand():
    # WGMMA_ROW on (64,): a thread holds the rows WGMMA gives it; broadcasting over columns keeps them in place
    assert inf.broadcast_is_local(ROW, WGMMA, [64], [64, 8], [0])
    assert not inf.broadcast_is_local(COL, WGMMA, [8], [64, 8], [0])  # COL's elements are columns, not rows
    assert inf.broadcast_is_local(COL, WGMMA, [8], [64, 8], [1])
    assert inf.broadcast_is_local(_splat([8]), WGMMA, [8], [64, 8], [1])


def test_relayouts_and_reshapes_worked_by_hand():
    assert inf.relayout_ok(_splat([64, 8]), WGMMA, [64, 8], cast=False)
    assert not inf.relayout_ok(WGMMA, TRANSPOSED, [64, 8], cast=False)  # strict: identity or from a splat only
    assert inf.relayout_ok(WGMMA, TRANSPOSED, [64, 8], cast=True)  # a layout cast transposes
    assert inf.relayout_ok(WGMMA, named("WGMMA_LAYOUT_ACC_32BIT"), [64, 8], cast=False)  # same places: an identity
    assert not inf.relayout_ok(WGMMA, named("TCGEN05_TRANSPOSED_LAYOUT"), [128, 8], cast=True)  # not a pair
    assert inf.same_flat(ROW, ROW, [5, 1, 1, 128], [5, 1, 128])  # dropping leading 1s moves nothing
    assert not inf.same_flat(WGMMA, WGMMA, [2, 64, 8], [64, 16])
    assert reshape_within_rule([64], [5, 1, 1, 128], [5, 1, 128]) and not reshape_within_rule([64, 8], [64, 8], [512])


def test_an_add_of_two_different_layouts_is_flagged():
    ops = [{"op": "undef", "shape": [64, 8]}, {"op": "cast", "src": 0, "layout": WGMMA},
           {"op": "undef", "shape": [64, 8]}, {"op": "cast", "src": 2, "layout": TRANSPOSED}, {"op": "add", "a": 1, "b": 3}]
    bad = _assign([WGMMA, WGMMA, TRANSPOSED, TRANSPOSED, WGMMA], [[], [WGMMA], [], [TRANSPOSED], [WGMMA, TRANSPOSED]])
    assert [v.signature for v in inf.check(ops, bad)] == ["arith.addf: operands and result do not share a layout"]
    undef_mismatch = _assign([WGMMA, WGMMA, WGMMA, TRANSPOSED, WGMMA], [[], [WGMMA], [], [TRANSPOSED], [WGMMA, WGMMA]])
    assert [v.signature for v in inf.check(ops, undef_mismatch)] == [
        "mgpu.layout_cast: operand not relaid out from its producer by a supported relayout",
        "arith.addf: operand not relaid out from its producer by a supported relayout"]


def test_the_generator_reaches_every_op_rank_and_edge_deterministically():
    target = MosaicLayoutInference()
    cases = [make_case(target, 0, i) for i in range(600)]
    chain = collections.Counter(k for c in cases for k in c.params["chain"])
    assert set(chain) == set(CHAIN_OPS)
    kinds = {op["op"] for c in cases for op in c.params["ops"]}
    assert kinds == set(inf.OPERANDS)
    assert {len(c.params["ops"][0]["shape"]) for c in cases} == {1, 2, 3, 4}
    assert {len(c.params["chain"]) for c in cases} == {1, 2, 3, 4}
    assert 0.18 < sum(c.params["edge"] for c in cases) / len(cases) < 0.32
    middle = [c for c in cases for op in c.params["ops"] if op["op"] == "reduce"
              and 0 < op["axes"][0] < len(c.params["ops"][op["src"]].get("shape", [0, 0, 0])) - 1]
    assert middle  # middle axes of rank-3/4 arrays
    cast = {op["layout"].get("name") for c in cases for op in c.params["ops"] if op["op"] == "cast"}
    assert set(ALL_NAMED) <= cast
    for c in cases:
        target.validate(c)
    assert make_case(target, 0, 17).params == cases[17].params


def test_validate_refuses_what_the_generator_never_makes():
    target = MosaicLayoutInference()
    for ops in ([{"op": "cast", "src": 0, "layout": WGMMA}], [*REDUCE[:3], {**REDUCE[3], "axes": [2]}],
                [*REDUCE[:3], {**REDUCE[3], "acc": 0}]):
        with pytest.raises(ValueError):
            target.validate(Case(target.name, 0, 0, {"ops": ops, "chain": [], "edge": False}))


def _case(ops):
    return Case("mosaic.layout_inference", 0, 0, {"ops": ops, "chain": ["reduce"], "edge": False})


def test_planted_faults_are_caught():
    target = MosaicLayoutInference()
    case = _case(REDUCE)
    right = {"layouts": _reduce_assignment(COL)}
    assert target.compare(case, None, right).ok
    wrong = target.compare(case, None, {"layouts": _reduce_assignment(named("TMA_INDICES_4_LAYOUT"))})
    assert not wrong.ok and wrong.signature == ("vector.multi_reduction: result does not hold what each thread's "
                                                "operand elements reduce into")
    refusal = {"raised": "ValueError: Failed to infer", "decisive": 3, "witness": _reduce_assignment(COL),
               "diagnosis": "search: the consistent layouts are never proposed"}
    spurious = target.compare(case, None, refusal)
    assert not spurious.ok and spurious.signature.startswith("spurious refusal")
    assert target.compare(case, None, {**refusal, "witness": None}).ok  # no consistent assignment: a right refusal
    assert target.compare(case, None, {**refusal, "witness": _reduce_assignment(ROW)}).ok  # a witness that fails


def test_mosaic_infers_the_column_layout_and_refuses_what_has_no_assignment():
    pytest.importorskip("jax.experimental.mosaic.gpu", reason=MOSAIC)
    target = MosaicLayoutInference()
    case = _case(REDUCE)
    observed = target.observed(case)
    assert "layouts" in observed and target.compare(case, None, observed).ok
    clash = [{"op": "undef", "shape": [64, 8]}, {"op": "cast", "src": 0, "layout": WGMMA},
             {"op": "undef", "shape": [64, 8]}, {"op": "cast", "src": 2, "layout": TRANSPOSED},
             {"op": "add", "a": 1, "b": 3}]
    observed = target.observed(_case(clash))
    assert "raised" in observed and observed["witness"] is None and target.compare(_case(clash), None, observed).ok


def test_a_short_campaign_meets_the_rank_one_tile_reshape_bug():
    pytest.importorskip("jax.experimental.mosaic.gpu", reason=MOSAIC)
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    reshaped = cs.reduce_reshape_expression(cs.Reshape(cs.RegisterLayout(fa.WGMMA_ROW_LAYOUT), (128,), (1, 128)), {})
    fixed = isinstance(reshaped, cs.RegisterLayout)
    target = MosaicLayoutInference()
    signatures = collections.Counter()
    for i in range(60):
        case = make_case(target, 0, i)
        if not any(op["op"] == "shape_cast" for op in case.params["ops"]):
            continue
        try:
            observed = target.observed(case)
        except Unsupported:
            continue
        result = target.compare(case, None, observed)
        signatures[result.signature] += not result.ok
    bug = signatures["spurious refusal at vector.shape_cast: Reshape of the TiledLayout left unreduced inside its own "
                     "rule's cases"]
    assert (bug == 0) if fixed else (bug > 0), signatures


def test_a_tiled_broadcast_result_has_a_tiling_of_its_rank():
    # FragmentedArray.broadcast_in_dim lowers tiled -> tiled only where the result's tiling has the result's rank
    ops = [{"op": "undef", "shape": [64]}, {"op": "cast", "src": 0, "layout": ROW},
           {"op": "broadcast", "src": 1, "shape": [64, 8], "dims": [0]}]
    assert inf.check(ops, _assign([ROW, ROW, WGMMA], [[], [ROW], [ROW]])) == []
    tma4 = named("TMA_INDICES_4_LAYOUT")
    ops = [{"op": "undef", "shape": [4]}, {"op": "cast", "src": 0, "layout": tma4},
           {"op": "broadcast", "src": 1, "shape": [4, 16], "dims": [0]}]
    assert [v.signature for v in inf.check(ops, _assign([tma4, tma4, tma4], [[], [tma4], [tma4]]))] == [
        "mgpu.broadcast_in_dim: tiled result whose tiling rank is not the result's rank"]


def test_a_tiled_broadcast_operand_is_the_results_projection():
    # a fully replicated operand keeps every copy local, but Mosaic's lowering wants the result's reduced layout
    tma4 = named("TMA_INDICES_4_LAYOUT")
    ops = [{"op": "undef", "shape": [1, 8]}, {"op": "cast", "src": 0, "layout": tma4},
           {"op": "broadcast", "src": 1, "shape": [128, 8], "dims": [0, 1]}]
    assert inf.broadcast_is_local(tma4, WGMMA, [1, 8], [128, 8], [0, 1])
    assert [v.signature for v in inf.check(ops, _assign([tma4, tma4, WGMMA], [[], [tma4], [tma4]]))] == [
        "mgpu.broadcast_in_dim: tiled operand is not the result's layout reduced over the new dims"]
    assert inf.broadcast_is_projection(COL, WGMMA, [8], [64, 8], [1])


def test_strided_broadcasts_mosaic_lowers_add_leading_dims_only():
    """FragmentedArray.broadcast_in_dim lowers a strided broadcast that adds leading dims and stretches size-1 dims
    before every kept one; a new middle dim is outside it (a refusal there is right)."""
    from layoutfuzz.oracles.mosaic_inference import into_leading_dims

    assert into_leading_dims([3, 128], [3, 3, 128], [1, 2])
    assert not into_leading_dims([3, 128], [3, 3, 128], [0, 2])
    assert into_leading_dims([1, 128], [4, 128], [0, 1])
    assert not into_leading_dims([128, 1], [128, 4], [0, 1])
