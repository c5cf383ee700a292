"""Mosaic GPU's layout relations: the oracle worked by hand and against the F2 oracle, the generator's domain (edges,
ranks, determinism), the judgement's power to fail on planted wrong answers, and the campaign meeting the splat
left-alignment bug of jax 0.10.2 (jax-ml/jax#39998) without a hand-written case."""

from __future__ import annotations

import collections

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_layouts import NAMED
from layoutfuzz.harness.target import Unsupported, make_case
from layoutfuzz.harness.targets.mosaic_layout_relations import MosaicLayoutRelations, relation_of
from layoutfuzz.oracles import mosaic_layouts as f2
from layoutfuzz.oracles import mosaic_relations as rel

WGMMA = NAMED["WGMMA_LAYOUT"]
ROW = NAMED["WGMMA_ROW_LAYOUT"]
MOSAIC = "needs JAX's Mosaic GPU: pip install 'layoutfuzz[mosaic]'"


def _dims(data):
    return [f2.Replicated(d["replicated"]) if isinstance(d, dict) else d for d in data]


def _tiled(layout, shape):
    return rel.tiled_placement(shape, layout["tiles"], _dims(layout["warp_dims"]), _dims(layout["lane_dims"]),
                               layout["vector_dim"])


def test_a_tiling_applies_to_trailing_dims_it_divides():
    tiles = WGMMA["tiles"]
    assert rel.tiling_applies(tiles, (64, 8)) and rel.tiling_applies(tiles, (4, 64, 8))
    assert rel.tiling_applies(tiles, (3, 192, 24))  # odd multiples of the base tile
    assert not rel.tiling_applies(tiles, (64,))  # fewer dims than the tile
    assert not rel.tiling_applies(tiles, (64, 12)) and not rel.tiling_applies(tiles, (8, 64))
    assert rel.divides([64, 8], [5, 128, 16]) and not rel.divides([64, 8], [8]) and rel.divides([8], [3, 16])


def test_placements_worked_by_hand():
    strided = rel.strided_placement((2, 256), 2)  # thread 1: elements 2, 3, then 2 + 256, 3 + 256
    assert strided[1].tolist() == [2, 3, 258, 259]
    wgmma = _tiled(WGMMA, (64, 8))  # the PTX accumulator: thread 5 (groupID 1, threadID_in_group 1) row 1 cols 2-3, row 9
    assert wgmma[5].tolist() == [1 * 8 + 2, 1 * 8 + 3, 9 * 8 + 2, 9 * 8 + 3]
    row = _tiled(ROW, (64,))  # WGMMA_ROW_LAYOUT: lane l of warp w holds row 16w + l // 4 and 16w + 8 + l // 4
    assert row[32 + 9].tolist() == [16 + 2, 16 + 8 + 2]


@pytest.mark.parametrize("name", sorted(NAMED))
def test_tiled_placement_is_the_f2_oracles_on_powers_of_two(name):
    layout = NAMED[name]
    shape = [2, *[b * 2 for b in layout["tiles"][0]]]
    want = f2.holders(f2.tiled_layout(shape, layout["tiles"], _dims(layout["warp_dims"]), _dims(layout["lane_dims"]),
                                      layout["vector_dim"]))
    assert (_tiled(layout, shape) == want).all()


def test_a_projection_is_what_each_thread_reduces_into():
    # a strided (2, 128) array, one element a thread a row: reducing the rows leaves thread t with element t
    assert rel.projected(rel.strided_placement((2, 128), 1), (2, 128), [0], False) == [frozenset({t}) for t in range(128)]
    # WGMMA rows reduced: each thread holds the 2 columns its lane group owns, in every row
    cols = rel.projected(_tiled(WGMMA, (64, 8)), (64, 8), [0], False)
    assert cols[0] == frozenset({0, 1}) and cols[5] == frozenset({2, 3}) and cols[32 + 5] == cols[5]
    assert rel.reduced_shape((3, 64, 8), [1], True) == (3, 1, 8)


def test_strided_broadcast_locality_worked_by_hand():
    assert rel.strided_broadcast_is_local((1, 128), (4, 128), (0, 1), 1)  # new rows: each thread copies its own
    assert not rel.strided_broadcast_is_local((128, 1), (128, 2), (0, 1), 1)  # a stretched minor dim crosses threads


def test_cases_cover_the_domain_with_a_quarter_on_its_edges():
    target = MosaicLayoutRelations()
    cases = [make_case(target, 0, i) for i in range(800)]
    assert {c.params["op"] for c in cases} == set(rel_ops())
    edge = sum(c.params["edge"] for c in cases) / len(cases)
    assert 0.18 < edge < 0.32
    ranks = collections.Counter(len(c.params["shape"]) for c in cases if "shape" in c.params)
    assert set(ranks) == {1, 2, 3, 4}
    dims = {n for c in cases if "shape" in c.params for n in c.params["shape"]}
    assert {1, 3, 5, 7, 13}.issubset(dims) and any(n & (n - 1) and n % 3 == 0 for n in dims)
    for c in cases:
        target.validate(c)
    assert make_case(target, 0, 17).params == make_case(target, 0, 17).params


def rel_ops():
    from layoutfuzz.generators.mosaic_relations import OPS
    return OPS


def test_validate_refuses_what_the_generator_never_makes():
    target = MosaicLayoutRelations()
    layout = {"kind": "tiled", **WGMMA}
    bad = [{"op": "nope", "edge": False},
           {"op": "divides", "layout": layout, "shape": [0, 8], "edge": False},
           {"op": "reduce", "layout": layout, "shape": [64, 12], "axes": [0], "keep_dims": False, "edge": False},
           {"op": "reshape", "layout": layout, "shape": [64, 8], "target": [64, 16], "edge": False},
           {"op": "divides", "layout": {**layout, "warp_dims": [-3]}, "shape": [64, 8], "edge": False}]
    for params in bad:
        with pytest.raises(ValueError):
            target.validate(Case(target.name, 0, 0, params))


def _judge(params, observed):
    target = MosaicLayoutRelations()
    case = Case(target.name, 0, 0, {"edge": False, **params})
    return target.compare(case, target.expected(case), {"given": None, **observed})


def test_the_judgement_fails_on_planted_wrong_answers():
    layout = {"kind": "tiled", **WGMMA}
    # a boolean relation answered against its definition, both ways, is one bucket
    no = _judge({"op": "splat_compatible", "layout": layout, "shape": [64]}, {"answer": True})
    yes = _judge({"op": "relayout", "layout": layout, "shape": [4, 64, 8], "bitwidth": 16}, {"answer": False})
    assert not no.ok and not yes.ok and no.signature == yes.signature
    assert _judge({"op": "splat_compatible", "layout": layout, "shape": [4, 64, 8]}, {"answer": True}).ok
    # a reduction that keeps the operand's layout instead of projecting it
    reduce = {"op": "reduce", "layout": layout, "shape": [64, 16], "axes": [0], "keep_dims": False}
    assert not _judge(reduce, {"answer": {**layout, "tiles": [[8], [2]], "warp_dims": [{"replicated": 4}],
                                          "lane_dims": [-2, {"replicated": 8}], "vector_dim": -1}}).ok
    right = {"kind": "tiled", **NAMED["WGMMA_COL_LAYOUT"]}
    assert _judge(reduce, {"answer": right}).ok
    # a reshape answered with a layout that moves elements
    reshape = {"op": "reshape", "layout": {"kind": "tiled", **NAMED["TCGEN05_LAYOUT"]}, "shape": [128, 16], "target": [2, 64, 16]}
    assert not _judge(reshape, {"answer": layout}).ok
    # a refusal inside the domain; a wrong merge; a broadcast that crosses threads called supported
    assert "spurious refusal" in _judge(reduce, {"raised": "ValueError: no"}).signature
    assert not _judge({"op": "merge_divides", "multiples": [[64, 8], [32, 12]]}, {"answer": [32, 8]}).ok
    assert _judge({"op": "merge_divides", "multiples": [[64, 8], [32, 12]]}, {"answer": [32, 4]}).ok
    broadcast = {"op": "strided_broadcast", "layout": {"kind": "strided", "shape": [128, 1], "vec_size": 1},
                 "target": [128, 2], "dims": [0, 1]}
    assert not _judge(broadcast, {"answer": True}).ok and _judge(broadcast, {"answer": False}).ok
    assert relation_of({"op": "relayout", "layout": layout}) == relation_of({"op": "splat_compatible"})


def test_mosaics_tiled_placement_is_the_oracles_on_odd_multiples():
    pytest.importorskip("jax.experimental.mosaic.gpu", reason=MOSAIC)
    from layoutfuzz.harness.targets.mosaic_layout_relations import _mosaic
    from layoutfuzz.harness.targets.mosaic_layouts import thread_holders

    for name, layout in NAMED.items():
        shape = (3, *(b * (2 * i + 3) for i, b in enumerate(layout["tiles"][0])))
        got = thread_holders(_mosaic({"kind": "tiled", **layout}), shape)
        assert (got == _tiled(layout, shape)).all(), name


def test_a_short_campaign_meets_the_splat_left_alignment_bug():
    pytest.importorskip("jax.experimental.mosaic.gpu", reason=MOSAIC)
    import jax
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import layouts

    fixed = not layouts.splat_is_compatible_with_tiled(fa.WGSplatFragLayout((64,)), fa.WGMMA_LAYOUT)
    target = MosaicLayoutRelations()
    signatures = collections.Counter()
    for i in range(400):
        case = make_case(target, 0, i)
        if case.params["op"] not in ("splat_compatible", "relayout"):
            continue
        try:
            observed = target.observed(case)
        except Unsupported:  # a drawn layout whose canonical form Mosaic cannot build (mosaic.layouts' finding)
            continue
        result = target.compare(case, target.expected(case), observed)
        signatures[result.signature] += not result.ok
    bug = signatures["splat->tiled compatibility: answer differs from its definition"]
    assert (bug == 0) if fixed else (bug > 0), (jax.__version__, signatures)
    assert sum(signatures.values()) == bug  # nothing else fails


def test_the_broadcast_rule_holds_past_numpys_array_size_limit():
    """The second implementation of the broadcast rule sees only ones and equal sizes: shapes whose result NumPy could
    not allocate are judged as their small renamings are (a splat of (65536, 1, 1) broadcasts to (65536,) * 4)."""
    from layoutfuzz.harness.targets.mosaic_layout_relations import _numpy_broadcasts

    assert _numpy_broadcasts([65536, 1, 1], [65536] * 4)
    assert not _numpy_broadcasts([65536, 2], [65536, 65536])
    assert _numpy_broadcasts([3, 1, 1], [5, 3, 7, 7]) and not _numpy_broadcasts([4], [1])
