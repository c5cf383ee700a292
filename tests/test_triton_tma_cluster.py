"""triton.tma_cluster: TMA loads over a cluster of CTAs into a subview of a multi-buffer."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.triton_tma_cluster import TritonTmaCluster, block_values, cga_bases, cta_part, unwritten
from layoutfuzz.gpu.tensor_descriptors import encoded_maps
from layoutfuzz.harness.target import make_case


def test_cases_follow_the_generators_rules_and_repeat_for_a_seed():
    target = TritonTmaCluster()
    cases = [make_case(target, 3, i) for i in range(600)]
    for case in cases:
        target.validate(case)
    assert [c.params for c in cases[:50]] == [make_case(target, 3, i).params for i in range(50)]
    assert {len(c.params["splits"]) for c in cases} == {1, 2} and {c.params["buffers"] for c in cases} == {1, 2, 4}
    assert any(c.params["coord"][1] + c.params["block"][1] > c.params["global_shape"][1] for c in cases)  # over an edge


def test_cta_bases_move_one_cta_tile_along_their_dim_or_nowhere():
    # Gluon's cga_layout: CTA bit k's offset in CTA tiles (a [64, 64] block over [[1, 0]] is two [32, 64] parts)
    assert cga_bases(["rows"]) == [[1, 0]]
    assert cga_bases(["rows", "rows"]) == [[1, 0], [2, 0]]
    assert cga_bases(["columns", "rows"]) == [[0, 1], [1, 0]]
    assert cga_bases(["copies", "columns"]) == [[0, 0], [0, 1]]
    assert cta_part({"block": [64, 128], "splits": ["rows", "columns"]}) == [32, 64]
    assert cta_part({"block": [64, 128], "splits": ["copies", "copies"]}) == [64, 128]


def test_the_oracle_is_the_tensor_at_the_coordinate_and_zero_past_its_bounds():
    # a worked example by hand: a 2 x 20 int8 tensor, the [2, 16] block at (1, 16): row 1, columns 16-19, then zeros
    params = {"elem_bits": 8, "swizzle": 0, "splits": ["rows"], "block": [2, 16], "global_shape": [2, 20], "coord": [1, 16],
              "row_pad": 12, "buffers": 2, "slot": 1, "num_warps": 1}
    target = TritonTmaCluster()
    case = Case(target.name, 0, 5, params)
    target.validate(case)
    values = block_values(case)
    assert values.shape == (2, 32)
    block = np.frombuffer(bytes.fromhex(target.expected(case)["load"]), np.int8).reshape(2, 16)
    assert block[0, :4].tolist() == [values[1, 16], values[1, 17], values[1, 18], values[1, 19]]
    assert not block[0, 4:].any() and not block[1].any()  # columns 20-31 and row 2 lie outside the tensor


def test_a_wrong_part_names_its_kind_not_its_count():
    target = TritonTmaCluster()
    case = next(c for c in (make_case(target, 9, i) for i in range(200))
                if c.params["splits"] == ["rows"] and c.params["elem_bits"] == 16)
    expected = target.expected(case)
    assert target.compare(case, expected, expected).ok
    got = np.frombuffer(bytes.fromhex(expected["load"]), np.int16).copy().reshape(case.params["block"])
    rows = cta_part(case.params)[0]
    lost = got.copy()
    lost[rows:] = unwritten(2)  # the second CTA's part never arrived
    verdict = target.compare(case, expected, {**expected, "load": lost.tobytes().hex()})
    assert not verdict.ok and verdict.signature == "load: not written in some CTA tiles"
    swapped = np.concatenate([got[rows:], got[:rows]])  # each CTA got the other's part
    if not np.array_equal(swapped, got):
        verdict = target.compare(case, expected, {**expected, "load": swapped.tobytes().hex()})
        assert verdict.signature == "load: wrong data in every CTA tile"
    maps = [{**expected["tensor_maps"][0], "block_size": list(case.params["block"])}]  # the whole block, not a CTA's part
    assert target.compare(case, expected, {**expected, "tensor_maps": maps}).signature == "tensor-map"


def test_triton_encodes_the_tensor_map_the_oracle_expects_for_a_ctas_part(tmp_path, monkeypatch):
    pytest.importorskip("triton.experimental.gluon")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    from layoutfuzz.gpu.gluon_probes import tma_cluster_probe
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90
    from layoutfuzz.gpu.targets.triton_tma_cluster import probe_arguments, probe_signature

    target = TritonTmaCluster()
    seen = set()
    for index in range(200):
        p = make_case(target, 4, index).params
        key = ("+".join(p["splits"]), p["swizzle"])
        if key in seen:
            continue
        seen.add(key)
        layout, constexprs = probe_arguments(p)
        kernel = compile_for_sm90(tma_cluster_probe, probe_signature(p, layout), constexprs, p["num_warps"], 1 << len(p["splits"]))
        maps = encoded_maps(kernel.metadata.tensordesc_meta)
        assert maps == target.tensor_maps(p), p
        assert kernel.metadata.num_ctas == 1 << len(p["splits"])
        if len(seen) >= 10:
            break
    assert len(seen) >= 10


@pytest.mark.gpu
def test_cluster_tma_loads_on_the_gpu_match_the_oracle_outside_the_two_findings():
    from layoutfuzz.gpu.targets.triton_tma_cluster import copies_below_a_split, slot_misaligned

    target = TritonTmaCluster()
    ran = 0
    for index in range(60):
        case = make_case(target, 0, index)
        if copies_below_a_split(case.params) or slot_misaligned(case.params):
            continue  # docs/findings.md: Triton 3.6.0's wrong CTA parts, and its TMA into a misaligned buffer (a fault)
        assert target.compare(case, target.expected(case), target.observed(case)).ok, case.params
        ran += 1
    assert ran >= 40


@pytest.mark.gpu
def test_a_zero_cta_base_below_a_split_loads_the_wrong_part_under_triton_3_6():
    import json
    from pathlib import Path

    import triton

    from layoutfuzz.harness.triton_compat import parse_version

    if parse_version(triton.__version__) >= (3, 9, 0):
        pytest.skip("3.9.0 computes the coordinate from the split's own rank bit (PTX checked on a CPU)")
    case = Case.from_dict(json.loads((Path(__file__).resolve().parent.parent
                                      / "docs/results/cases/triton-tma-cluster-copies-below-split.json").read_text()))
    target = TritonTmaCluster()
    verdict = target.compare(case, target.expected(case), target.observed(case))
    assert not verdict.ok and verdict.signature == "load: wrong data in some CTA tiles"


def _rows_loaded(ptx: str, ranks: int) -> list[int]:
    """The row coordinate of the PTX's TMA load in each CTA of the cluster, as its integer instructions compute it from
    ``%cluster_ctarank`` (``gpu.ptx_eval``: an instruction it does not know fails the test)."""
    from layoutfuzz.gpu.ptx_eval import Kernel

    rows = {load.rank: load.coords[1] for load in Kernel(ptx).tensor_loads(32, ranks)}
    return [rows[rank] for rank in range(ranks)]


def test_triton_3_6_takes_a_ctas_part_from_the_low_bit_of_its_rank_where_the_cga_layout_puts_copies(tmp_path, monkeypatch):
    # the layer below the wrong data: the TMA row coordinate of the reproducer (CTA bases [[0, 0], [1, 0]]: bit 1 splits
    # the rows) comes from rank bit 0 under 3.6.0, and from rank bit 1 under 3.7.1, 3.8.0 and 3.9.0
    triton = pytest.importorskip("triton")
    import json
    from pathlib import Path

    from layoutfuzz.gpu.gluon_probes import tma_cluster_probe
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90
    from layoutfuzz.gpu.targets.triton_tma_cluster import probe_arguments

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    p = json.loads((Path(__file__).resolve().parent.parent / "docs/results/cases/triton-tma-cluster-copies-below-split.json")
                   .read_text())["params"]
    layout, constexprs = probe_arguments(p)
    ptx = compile_for_sm90(tma_cluster_probe, {"in_desc": f"tensordesc<i16[2, 8],{layout!r}>", "out": "*i16"}, constexprs,
                           p["num_warps"], 4).asm["ptx"]
    rows = _rows_loaded(ptx, 4)
    # each CTA's part by the layout's definition: rank bit k moves base k CTA tiles (bit 0 copies, bit 1 splits the rows)
    want = [p["coord"][0] + cta_part(p)[0] * sum((rank >> k & 1) * base[0] for k, base in enumerate(cga_bases(p["splits"])))
            for rank in range(4)]
    assert want == [0, 0, 1, 1]
    if triton.__version__ == "3.6.0":
        assert rows == [0, 1, 0, 1]
    elif triton.__version__ in ("3.7.1", "3.8.0", "3.9.0"):
        assert rows == want
    else:
        pytest.skip(f"Triton {triton.__version__} was not checked")


@pytest.mark.parametrize("probe", ["tma_cluster_probe", "tma_multicast_probe"])
def test_each_cta_completes_its_copies_on_its_own_barrier(probe, tmp_path, monkeypatch):
    # PTX: a non-multicast cp.async.bulk.tensor on sm_90 completes only a barrier in its destination's CTA, a multicast
    # one the barrier at the same offset in each destination; CTA r's shared::cta addresses carry r from bit 24. A
    # barrier of each CTA's own (Triton's own tests' allocate_mbarrier) keeps bit 24 of the address the CTA computed;
    # the lead CTA's barrier of the whole cluster clears it (``and.b32 %r, %r, -16777232``), which hangs an H100
    triton = pytest.importorskip("triton")
    from layoutfuzz.gpu import gluon_probes
    from layoutfuzz.gpu.ptx_eval import Kernel
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90
    from layoutfuzz.gpu.targets.triton_tma_cluster import probe_arguments, probe_signature
    from layoutfuzz.gpu.targets.triton_tma_multicast import multicast_missing

    if probe == "tma_multicast_probe" and multicast_missing():
        pytest.skip(multicast_missing())
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    for splits in (["rows"], ["copies", "rows"]):
        p = {"elem_bits": 16, "swizzle": 0, "splits": splits, "block": [8 << (len(splits) - 1), 16], "global_shape": [16, 16],
             "coord": [0, 0], "row_pad": 0, "buffers": 2, "slot": 1, "num_warps": 1}
        layout, constexprs = probe_arguments(p)
        ctas = 1 << len(splits)
        ptx = compile_for_sm90(getattr(gluon_probes, probe), probe_signature(p, layout), constexprs, 1, ctas).asm["ptx"]
        issued = 0
        for rank in range(ctas):  # a CTA whose part another multicasts to it issues none
            base = {"global_smem": rank << 24}  # where this CTA's shared::cta window starts, as the H100 numbers it
            loads = [load for load in Kernel(ptx).tensor_loads(32, ctas, base) if load.rank == rank]
            assert {load.barrier >> 24 for load in loads} <= {rank}, (triton.__version__, probe, splits, rank)
            issued += len(loads)
        assert issued >= ctas // 2, (triton.__version__, probe, splits)
