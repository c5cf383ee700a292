"""Mosaic GPU's register layouts: the oracle against PTX's wgmma fragments (worked by hand), Mosaic's own docstring
example and Triton's wgmma layouts, its defining properties over generated layouts, and the mosaic.layouts target's
judgement."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_layouts import NAMED
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case
from layoutfuzz.oracles import mosaic_layouts as oracle
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.triton_layouts import DotOperandLayout, NVMMADistributedLayout


def test_wgmma_fragments_worked_by_hand():
    d = oracle.wgmma_fragment("accumulator", 16)  # thread 0: d0..d3 in rows 0 and 8, columns 0-1; d4 at column 8
    assert [tuple(x) for x in d[0, :6]] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9)]
    assert tuple(d[5, 0]) == (1, 2)  # lane 5: groupID 1, threadID_in_group 1
    assert tuple(d[32, 0]) == (16, 0) and tuple(d[127, 3]) == (63, 7)  # warp 1 starts at row 16; the last thread
    a8 = oracle.wgmma_fragment("a8", 32)
    assert [tuple(x) for x in a8[0, :5]] == [(0, 0), (0, 1), (0, 2), (0, 3), (8, 0)] and tuple(a8[0, 8]) == (0, 16)
    assert tuple(a8[6, 0]) == (1, 8)  # lane 6: groupID 1, threadID_in_group 2
    with pytest.raises(LayoutError):
        oracle.wgmma_fragment("a8", 24)


def test_tiling_follows_mosaics_docstring_example():
    # fragmented_array.TiledLayout's docstring: (64, 8)(16, 8)(8, 8)(1, 2) on a 128 x 128 array
    assert oracle.tiled_shape((128, 128), [[64, 8], [16, 8], [8, 8], [1, 2]]) == (2, 16, 4, 1, 2, 1, 8, 4, 1, 2)


def _fragment_index(fragment, n):
    rc = oracle.wgmma_fragment(fragment, n)
    return rc[..., 0] * n + rc[..., 1]


def _triton_index(layout, n):
    ll = layout.linear_layout([64, n])
    coords = ll.apply_all()
    index = coords["dim0"] * n + coords["dim1"]  # register fastest, then lane, then warp
    return index.reshape(128, -1)


@pytest.mark.parametrize("n", [8, 16, 64, 256])
def test_mosaics_wgmma_layout_is_the_ptx_accumulator_and_tritons(n):
    name = NAMED["WGMMA_LAYOUT"]
    mosaic = oracle.holders(oracle.tiled_layout((64, n), name["tiles"], name["warp_dims"], name["lane_dims"], name["vector_dim"]))
    assert (mosaic == _fragment_index("accumulator", n)).all()
    triton = NVMMADistributedLayout((3, 0), (4, 1), (16, n, 16))
    assert (_triton_index(triton, n) == mosaic).all()


@pytest.mark.parametrize("n", [32, 64, 128])
def test_mosaics_8bit_layout_is_the_ptx_8bit_a_fragment_and_tritons(n):
    name = NAMED["WGMMA_LAYOUT_8BIT"]
    mosaic = oracle.holders(oracle.tiled_layout((64, n), name["tiles"], name["warp_dims"], name["lane_dims"], name["vector_dim"]))
    assert (mosaic == _fragment_index("a8", n)).all()
    triton = DotOperandLayout(0, NVMMADistributedLayout((3, 0), (4, 1), (16, 64, 32)), 4)
    assert (_triton_index(triton, n) == mosaic).all()


def test_every_generated_layout_holds_every_element_its_replication_times():
    target = registry.load("mosaic.layouts")
    cases = [make_case(target, 2, i) for i in range(300)]
    assert {c.params["family"] for c in cases} == {"wgmma", "named", "random"}
    for case in cases:
        target.validate(case)
        held = target.expected(case)
        p = case.params
        copies = int(np.prod([d["replicated"] for d in (*p["warp_dims"], *p["lane_dims"]) if isinstance(d, dict)]))
        counts = np.bincount(held.ravel(), minlength=int(np.prod(p["shape"])))
        assert (counts == copies).all(), p


def test_a_replicated_dim_is_a_broadcast():
    layout = oracle.tiled_layout((64,), [[64], [16], [8], [1]], [-4], [-2, oracle.Replicated(4)], -1)  # WGMMA_ROW
    assert layout.apply({"lane": 1}) == {"dim0": 0} and layout.apply({"lane": 4}) == {"dim0": 1}
    assert layout.apply({"warp": 1}) == {"dim0": 16}
    with pytest.raises(LayoutError, match="hold"):
        oracle.tiled_layout((64,), [[64], [16], [8], [1]], [-4], [-2], -1)  # 8 lanes, not 32


def _case(params):
    return Case("mosaic.layouts", 0, 0, params)


WGMMA_CASE = {"family": "wgmma", "name": "WGMMA_LAYOUT", **NAMED["WGMMA_LAYOUT"], "shape": [64, 24]}


def test_the_target_finds_a_register_out_of_place_and_a_raising_canonicalize():
    target = registry.load("mosaic.layouts")
    case = _case(WGMMA_CASE)
    expected = target.expected(case)
    assert target.compare(case, expected, {"holders": expected, "canonical": expected}).ok
    swapped = expected.copy()
    swapped[:, [0, 1]] = swapped[:, [1, 0]]  # the two columns of a register pair in the other order
    verdict = target.compare(case, expected, {"holders": swapped, "canonical": expected})
    assert not verdict.ok and verdict.signature == "holders: elements in other threads or registers"
    assert verdict.mismatch_count == 256
    verdict = target.compare(case, expected, {"holders": expected, "canonical": swapped})
    assert verdict.signature == "canonical: elements in other threads or registers"
    raised = target.compare(case, expected, {"holders": expected, "canonical": "raised ValueError: Duplicate"})
    assert raised.signature == "canonical: raised ValueError: Duplicate"
    short = target.compare(case, expected, {"holders": expected[:, :4], "canonical": expected})
    assert short.signature == "holders: another number of registers"


def test_mosaic_holds_the_wgmma_fragments_and_its_named_layouts():
    pytest.importorskip("jax.experimental.mosaic.gpu", reason="needs JAX's Mosaic GPU: pip install 'layoutfuzz[mosaic]'")
    target = registry.load("mosaic.layouts")
    verdict = target.compare(_case(WGMMA_CASE), target.expected(_case(WGMMA_CASE)), target.observed(_case(WGMMA_CASE)))
    assert verdict.ok, verdict
    for name, layout in NAMED.items():
        case = _case({"family": "named", "name": name, **layout, "shape": [n * 2 for n in layout["tiles"][0]]})
        verdict = target.compare(case, target.expected(case), target.observed(case))
        assert verdict.ok, (name, verdict)


@pytest.mark.slow
def test_a_campaign_passes_every_named_layout_and_knows_the_rest(tmp_path):
    pytest.importorskip("jax.experimental.mosaic.gpu", reason="needs JAX's Mosaic GPU: pip install 'layoutfuzz[mosaic]'")
    from tests.test_cli import ledgered_run

    done, rows, unknown = ledgered_run(tmp_path, "mosaic.layouts", 400)
    assert done.returncode == 0, done.stderr
    fixed = [r for r in rows if r[1].startswith(("wgmma:", "named:"))]
    assert fixed and all(r[2] == r[3] for r in fixed), done.stdout  # cases == pass
    assert not unknown, done.stdout
    assert registry.load("mosaic.layouts").versions()["jax"]


def test_without_jax_the_target_is_unsupported_with_the_reason(monkeypatch):
    import sys

    for module in ("jax", "jax.experimental", "jax.experimental.mosaic", "jax.experimental.mosaic.gpu"):
        monkeypatch.setitem(sys.modules, module, None)
    availability = registry.load("mosaic.layouts").availability()
    assert not availability.available and "pip install 'layoutfuzz[mosaic]'" in availability.reason
