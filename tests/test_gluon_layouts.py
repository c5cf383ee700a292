"""triton.gluon_layouts: the oracle's preconditions and properties on hand-worked examples, the generator's reach, and
the target judging refusals, answers and aborts (planted faults caught)."""

from __future__ import annotations

import collections
import subprocess
import sys

import pytest

from layoutfuzz.generators import gluon_layouts as gen
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.oracles import gluon_layouts as oracle


def blocked(cga: list[list[int]], spt=(1,), tpw=(32,), wpc=(1,), order=(0,)) -> dict:
    return {"kind": "blocked", "size_per_thread": list(spt), "threads_per_warp": list(tpw), "warps_per_cta": list(wpc),
            "order": list(order), "cga_layout": cga}


def nvmma_shared(swizzle: int, bits: int, rank: int, transposed=False, cga=()) -> dict:
    return {"kind": "nvmma_shared", "swizzle_byte_width": swizzle, "element_bitwidth": bits, "rank": rank,
            "transposed": transposed, "fp4_padded": False, "cga_layout": [list(b) for b in cga]}


@pytest.mark.parametrize("spec, shape, reason", [
    ({"kind": "nvmma_distributed", "version": [3, 0], "warps_per_cta": [4, 1], "instr_shape": [16, 24, 16],
      "cga_layout": []}, [64, 64], "nvmma"),  # PTX allows N = 24; no power-of-two tensor is tiled by it
    (nvmma_shared(128, 16, 1), [1024], "nvmma shared"),  # swizzled rank 1
    (nvmma_shared(128, 16, 2, cga=[[0, 1]]), [64, 64], "nvmma shared"),  # per CTA 64 x 32, the atom is 8 x 64
    (nvmma_shared(32, 16, 3, transposed=True), [32, 256, 1], "nvmma shared"),  # transposed: rows are the last dim
    ({"kind": "padded_shared", "interval_padding_pairs": [[16, 1]], "order": [0], "shape": [32], "cga_layout": []},
     [32], "padded shared"),
    (blocked([[2]]), [128], "cga layout"),  # CTA bit 0 missing
    (blocked([]), [24], "tensor dims"),
    ({"kind": "tensor_memory", "block": [64, 1], "col_stride": 1, "cga_layout": [], "two_ctas": False}, [1, 2],
     "tensor memory"),
    (nvmma_shared(0, 16, 3, cga=[[0, 0]]), [1, 16, 64], "cga layout"),  # bases of rank 2 for a rank-3 tensor
    ({"kind": "tensor_memory_scales", "cga_layout": []}, [1], "tensor memory scales"),  # scales are [M, K / 32]
    ({"kind": "tensor_memory_scales", "cga_layout": [[1, 0]]}, [128, 4, 2], "tensor memory scales"),
    ({"kind": "distributed_linear", "reg_bases": [[8]], "lane_bases": [[4], [0], [4], [1], [2]],
      "warp_bases": [[0], [1]], "block_bases": [], "shape": [16]}, [16], "linear bases"),  # lane 4 twice
])
def test_precondition_fails_where_documented(spec, shape, reason):
    assert oracle.precondition(spec, shape).startswith(reason + ":")


@pytest.mark.parametrize("spec, shape", [
    (blocked([[1]]), [64]),
    (blocked([[0]]), [64]),  # a broadcast CTA
    (nvmma_shared(128, 16, 2, cga=[[1, 0]]), [64, 64]),  # per CTA 32 x 64: the atom fits
    (nvmma_shared(0, 8, 3, transposed=True), [8, 8, 8]),
    ({"kind": "nvmma_distributed", "version": [3, 0], "warps_per_cta": [4, 1], "instr_shape": [16, 64, 16],
      "cga_layout": [[1, 0]]}, [128, 64]),
    ({"kind": "tensor_memory_scales", "cga_layout": [[1, 0]]}, [256, 4]),
])
def test_precondition_holds_on_documented_inputs(spec, shape):
    assert oracle.precondition(spec, shape) is None


def test_expected_cga_blocked_by_hand():
    """32 lanes along dim 0, two CTAs: each CTA holds 32 of 64 elements, CTA 1 the upper half; a broadcast CTA
    (basis 0) holds the same 64 as CTA 0, the lanes wrapping over registers."""
    lanes = [[1], [2], [4], [8], [16]]
    assert oracle.expected(blocked([[1]]), [64]) == {"register": [], "lane": lanes, "warp": [], "block": [[32]]}
    assert oracle.expected(blocked([[0]]), [64]) == {"register": [[32]], "lane": lanes, "warp": [], "block": [[0]]}
    assert oracle.expected(blocked([[1]]), [24]) is None  # precondition fails: no exact answer


def test_properties_name_what_an_answer_breaks():
    good = {"register": [], "lane": [[1], [2], [4], [8], [16]], "warp": [], "block": [[32]]}
    assert oracle.properties(blocked([[1]]), [64], good) == []
    not_onto = {**good, "block": [[16]]}
    assert [p.split(":")[0] for p in oracle.properties(blocked([[1]]), [64], not_onto)] == ["onto"]
    four_lanes = {**good, "lane": good["lane"][:4], "register": [[16]]}
    assert [p.split(":")[0] for p in oracle.properties(blocked([[1]]), [64], four_lanes)] == ["lanes"]
    no_block = {**good, "block": [], "register": [[32]]}
    assert [p.split(":")[0] for p in oracle.properties(blocked([[1]]), [64], no_block)] == ["blocks"]
    shared = nvmma_shared(0, 16, 2)
    aliasing = {"offset": [[0, 1], [0, 2], [1, 0], [2, 0], [0, 1]], "block": []}
    assert "one-to-one" in oracle.properties(shared, [4, 4], aliasing)[0] or "onto" in oracle.properties(
        shared, [4, 4], aliasing)[0]


def test_generator_reaches_every_kind_edge_rank_and_cta_count():
    drawn = [gen.case(source_for("triton.gluon_layouts", 1, i)) for i in range(1500)]
    kinds = collections.Counter(c["layout"]["kind"] for c in drawn)
    assert set(kinds) == set(gen.KINDS)
    edges = sum(c["edge"] for c in drawn) / len(drawn)
    assert 0.2 < edges < 0.3
    assert {len(c["shape"]) for c in drawn} >= {1, 2, 3, 4}
    ctas = {len(oracle.cga_bases(c["layout"])) for c in drawn}
    assert ctas >= {0, 1, 2, 3}
    wgmma_n = {c["layout"]["instr_shape"][1] for c in drawn if c["layout"]["kind"] == "nvmma_distributed"
               and c["layout"]["version"][0] == 3}
    assert any(n & (n - 1) for n in wgmma_n), "a non-power-of-two wgmma N"
    both = collections.Counter(oracle.precondition(c["layout"], c["shape"]) is None for c in drawn)
    assert both[True] > 300 and both[False] > 300
    again = [gen.case(source_for("triton.gluon_layouts", 1, i)) for i in range(50)]
    assert again == drawn[:50]


pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
from triton.experimental.gluon import language as ttgl  # noqa: E402

from layoutfuzz.harness.targets.triton_gluon_layouts import TritonGluonLayouts, standalone_script  # noqa: E402
from layoutfuzz.harness.triton_compat import at_least  # noqa: E402

needs_cga = pytest.mark.skipif(
    "cga_layout" not in ttgl.BlockedLayout.__dataclass_fields__ or not at_least("3.7.0"),
    reason="this Triton's Gluon has no cga_layout argument, or aborts on every shared layout (3.6.0)")


def judge(target: TritonGluonLayouts, params: dict):
    case = Case(target.name, 0, 0, params)
    return target.compare(case, target.expected(case), target.observed(case))


@needs_cga
def test_answers_on_modelled_cga_layouts_agree():
    target = TritonGluonLayouts()
    for params in ({"layout": blocked([[1]]), "shape": [64], "num_warps": 1},
                   {"layout": nvmma_shared(128, 16, 2, cga=[[1, 0]]), "shape": [64, 64], "num_warps": 4}):
        assert judge(target, params).ok


class DropsBlocks(TritonGluonLayouts):
    """A planted fault: the answer loses its CTA bases."""

    def observed(self, case):
        answer = super().observed(case)
        if "layout" in answer:
            answer["layout"]["block"] = []
        return answer


class RefusesAll(TritonGluonLayouts):
    """A planted fault: every layout refused."""

    def observed(self, case):
        return {"refused": "RuntimeError: planted", "by": "to_linear_layout"}


@needs_cga
def test_planted_faults_are_judged():
    params = {"layout": blocked([[1]]), "shape": [64], "num_warps": 1}
    assert not judge(DropsBlocks(), params).ok
    verdict = judge(RefusesAll(), params)
    assert not verdict.ok and "spurious refusal" in verdict.signature
    bad = {"layout": blocked([[1]]), "shape": [24], "num_warps": 1}  # refusing a non-power-of-two tensor is right
    assert judge(RefusesAll(), bad).ok


@pytest.mark.slow
@needs_cga
def test_standalone_script_needs_only_triton_and_tells_abort_from_answer(tmp_path):
    """The script a finding exports: exit 1 where the process aborts, 0 where Triton answers."""
    aborts = {"layout": nvmma_shared(128, 16, 1), "shape": [1024], "num_warps": 4}
    answers = {"layout": blocked([[1]]), "shape": [64], "num_warps": 1}
    codes = []
    for params in (aborts, answers):
        script = tmp_path / "repro.py"
        script.write_text(standalone_script(Case("triton.gluon_layouts", 0, 0, params)))
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert "expected:" in run.stdout and "observed:" in run.stdout
        assert "layoutfuzz" not in script.read_text()
        codes.append(run.returncode)
    assert codes[1] == 0
    import triton
    if triton.__version__ == "3.9.0":  # aborts on a rank-1 swizzled NVMMA layout (docs/findings.md)
        assert codes[0] == 1
