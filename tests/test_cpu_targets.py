"""The CPU targets triton.layouts, triton.bank_conflicts and triton.compile: campaigns end to end,
planted oracle faults caught, and the Triton 3.6.0 findings pinned."""

from __future__ import annotations

import sqlite3
from math import prod

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.runner import Runner
from layoutfuzz.harness.target import Outcome, make_case
from layoutfuzz.oracles import triton_layouts as tl
from tests.conftest import known_problem
from tests.test_cli import layoutfuzz

pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
import triton  # noqa: E402

from layoutfuzz.harness.targets.triton_bank_conflicts import TritonBankConflicts  # noqa: E402
from layoutfuzz.harness.targets.triton_compile import TritonCompile, ptx_counts  # noqa: E402
from layoutfuzz.harness.targets.triton_layouts import TritonLayouts  # noqa: E402
from layoutfuzz.harness.triton_compat import at_least, parse_version  # noqa: E402


def test_campaign_prints_families_with_shared_layout_aborts_as_crash_rows(tmp_path):
    run = layoutfuzz("run", "--targets", "triton.layouts,triton.bank_conflicts,triton.compile", "--cases", "40",
                     "--jobs", "2", "-q", "--out", "out", cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    for family in ("blocked", "slice", "nvmma_v3", "nvmma_shared", "swizzled_shared", "convert:shared", "mean st.shared"):
        assert family in run.stdout
    db = sqlite3.connect(tmp_path / "out" / "layoutfuzz.sqlite")
    rows = db.execute("SELECT family, outcome, detail FROM outcomes WHERE target='triton.layouts'").fetchall()
    shared = [r for r in rows if r[0].endswith("_shared")]
    assert shared
    if known_problem("layouts-shared-abort.json").present_in(triton.__version__, parse_version):  # the 3.6.0 abort, isolated
        assert all(o == "crash" and "SIGABRT" in d for _, o, d in shared)
    else:
        assert not [r for r in shared if r[1] == "crash"]
    assert all(o == "pass" for f, o, _ in rows if not f.endswith("_shared"))  # and the run went on
    metrics = db.execute("SELECT metrics FROM outcomes WHERE target='triton.compile' AND metrics IS NOT NULL").fetchall()
    assert metrics and all("st.shared" in m[0] for m in metrics)


def transposed_nvmma(layout) -> bool:
    return bool(layout) and layout.get("kind") == "nvmma_shared" and layout.get("transposed")


def _first(target, seed, predicate, limit=400) -> Case:
    for index in range(limit):
        case = make_case(target, seed, index)
        if predicate(case.params):
            return case
    raise AssertionError("no such case generated")


class SwappedLanes(TritonLayouts):
    """Planted fault: the oracle swaps the first two lane bases."""

    def expected(self, case):
        result = super().expected(case)
        result["lane"][0], result["lane"][1] = result["lane"][1], result["lane"][0]
        return result


@pytest.mark.parametrize("kind", ["blocked", "slice", "nvmma_v2", "nvmma_v3", "dot_operand"])
def test_layouts_agree_and_a_planted_fault_is_caught(kind):
    good, bad = TritonLayouts(), SwappedLanes()
    for index in range(200):
        case = make_case(good, 5, index)
        if case.params["kind"] != kind:
            continue
        observed = good.observed(case)
        assert good.compare(case, good.expected(case), observed).ok
        expected_bad = bad.expected(case)
        if expected_bad["lane"][0] != expected_bad["lane"][1]:
            assert not bad.compare(case, expected_bad, observed).ok


def test_bank_conflicts_agree_when_vectors_cover_a_bank():
    target = TritonBankConflicts()
    checked = 0
    for index in range(120):
        case = make_case(target, 3, index)
        expected = target.expected(case)
        if expected["vector"] * case.params["elem_bits"] < 32:
            continue
        if case.params["shape"][0] * case.params["elem_bits"] < 1024 and len(case.params["shape"]) == 1:
            continue  # tiny 1-D tensors abort Triton (pinned below); never in-process
        if transposed_nvmma(case.params.get("shared")) and at_least("3.9.0"):
            continue  # 3.9.0 lays transposed NVMMA buffers out otherwise than 3.6.0 and the oracle (docs/findings.md)
        assert target.compare(case, expected, target.observed(case)).ok, case.params
        checked += 1
    assert checked > 20


def test_finding_bank_conflicts_undercounts_sub_word_accesses():
    # Found by the campaign (seed 0): 16-bit elements, no vectorisation, on the 9.2 swizzle. Triton
    # 3.6.0 reports Lemma 9.4's c - 1 = 0; one warp's accesses put two words in one bank.
    target = TritonBankConflicts()
    mma = tl.NVMMADistributedLayout((2, 0), (2, 4), (16, 8))
    case = Case("triton.bank_conflicts", 0, 0, {
        "shared_kind": "optimal", "elem_bits": 16, "shape": [32, 8],
        "distributed": tl.to_dict(tl.BlockedLayout((8, 1), (1, 32), (8, 1), (1, 0))),
        "other": tl.to_dict(tl.DotOperandLayout(0, mma, 8)),
    })
    expected, observed = target.expected(case), target.observed(case)
    assert (expected["bank_conflicts"], expected["lemma_c"], expected["vector"]) == (1, 1, 1)
    assert observed == {"bank_conflicts": 0}
    assert target.compare(case, expected, observed).signature == "under-count/lemma"


def test_finding_bank_conflicts_aborts_on_tensors_under_128_bytes():
    target = TritonBankConflicts()
    case = Case("triton.bank_conflicts", 0, 0, {
        "shared_kind": "swizzled_shared", "elem_bits": 8, "shape": [32],
        "distributed": tl.to_dict(tl.BlockedLayout((4,), (32,), (2,), (0,))),
        "shared": tl.to_dict(tl.SwizzledSharedLayout(1, 4, 2, (0,))),
    })
    assert target.expected(case)["bank_conflicts"] == 0
    with Runner(jobs=1, timeout_s=60) as runner:
        runner.submit("layoutfuzz.harness.targets.triton_bank_conflicts:TritonBankConflicts", case, "swizzled_shared:8b")
        (result,) = runner.results(wait_s=60)
    assert result.outcome is Outcome.CRASH and "reshapeIns" in result.detail


def test_compile_counts_ptx_and_reports_compiler_errors():
    target = TritonCompile()
    case = _first(target, 2, lambda p: p["kernel"] == "shared")
    observed = target.observed(case)
    assert observed["compiles"] and target.compare(case, target.expected(case), observed).ok
    counts = observed["ptx"]
    assert counts["st.shared"] + counts["stmatrix"] > 0 and counts["ld.shared"] + counts["ldmatrix"] > 0
    # a kernel whose layouts span 4 warps compiled for 2 is rejected: a divergence, not a harness error
    bad = Case(case.target, 0, 0, dict(case.params, num_warps=2 if case.params["num_warps"] != 2 else 4))
    observed = target.observed(bad)
    assert observed["compiles"] is False
    assert not target.compare(bad, target.expected(bad), observed).ok


def test_ptx_counts_read_the_table_4_instructions():
    ptx = "st.shared.v4.b32 [r1], {..};\n ld.shared.b16 %h, [r2];\n shfl.sync.idx.b32 a;\n ldmatrix.sync.aligned.m8n8.x4.shared.b16 {..};"
    assert ptx_counts(ptx) == {"st.shared": 1, "ld.shared": 1, "shfl": 1, "ldmatrix": 1, "stmatrix": 0}


def test_targets_command_lists_every_target_with_availability(tmp_path):
    result = layoutfuzz("targets", cwd=tmp_path)
    assert result.returncode == 0
    for name in ("triton.linear_layout", "triton.layouts", "triton.bank_conflicts", "triton.compile"):
        assert name in result.stdout
    assert "available" in result.stdout


# ---- triton.shared_layouts: the compiler's own shared layouts, on every release ----------------------------


def _unsettled(params) -> bool:
    """Rank-3 unswizzled transposed NVMMA buffers: 3.8.0 and later lay them out with zero offset bases (docs/findings.md)."""
    layout = params["layout"]
    return (transposed_nvmma(layout) and layout["swizzle_byte_width"] == 0 and layout["rank"] >= 3
            and at_least("3.8.0"))


def test_the_compilers_shared_layouts_agree_with_the_oracle_on_this_release():
    from layoutfuzz.harness.targets.triton_shared_layouts import TritonSharedLayouts

    target = TritonSharedLayouts()
    kinds = set()
    for index in range(150):
        case = make_case(target, 11, index)
        if _unsettled(case.params) or prod(case.params["shape"]) < 2:  # a one-element buffer is unsupported
            continue
        verdict = target.compare(case, target.expected(case), target.observed(case))
        assert verdict.ok, (case.params, verdict.mismatches)
        kinds.add(target.family(case))
    assert {"nvmma_shared/rank3/64B/transposed", "nvmma_shared/rank2/0B/transposed"} <= kinds or len(kinds) > 12


def test_shared_layouts_catch_a_planted_fault_and_read_the_inferred_layout():
    from layoutfuzz.harness.targets.triton_shared_layouts import TritonSharedLayouts, inferred_offsets

    ir = ('#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = true, elementBitWidth = 16, rank = 3}>\n'
          '#shared1 = #ttg.shared_linear<{offset = [[64], [128], [8], [528], [1], [2]]}, alignment = 512>\n')
    assert inferred_offsets(ir) == [64, 128, 8, 528, 1, 2]
    assert inferred_offsets("#shared1 = #ttg.shared_linear<{offset = [[0, 1], [1, 0]]}>") is None  # not 1-D

    class SwappedOffsets(TritonSharedLayouts):
        def expected(self, case):
            offsets = list(super().expected(case)["offset"])
            offsets[0], offsets[-1] = offsets[-1], offsets[0]
            return {"offset": offsets}

    target, bad = TritonSharedLayouts(), SwappedOffsets()
    case = _first(target, 11, lambda p: p["kind"] == "nvmma_shared" and not p["layout"]["transposed"])
    observed = target.observed(case)
    assert target.compare(case, target.expected(case), observed).ok
    verdict = bad.compare(case, bad.expected(case), observed)
    assert not verdict.ok and verdict.signature == "the same offsets in another order"


def test_the_version_adapter_defines_unswizzled_transposed_nvmma_buffers_per_release(monkeypatch):
    # H100 read-back (docs/findings.md): row-major up to 3.7.1, dim 0 fastest from 3.8.0
    from layoutfuzz.harness import triton_compat
    from layoutfuzz.harness.triton_compat.layouts import shared_layout

    layout = tl.NVMMASharedLayout(0, 16, 2, True)
    seen = {}
    for version in ("3.6.0", "3.7.1", "3.8.0", "3.9.0"):
        monkeypatch.setenv("LAYOUTFUZZ_KERNELS", f"/k/triton-{version}")
        triton_compat.version.cache_clear()
        seen[version] = [tuple(b) for b in dict(shared_layout(layout, [16, 8]).in_dims)["offset"]]
    triton_compat.version.cache_clear()
    row_major = [(0, 1), (0, 2), (0, 4), (1, 0), (2, 0), (4, 0), (8, 0)]
    assert seen["3.6.0"] == seen["3.7.1"] == row_major
    assert seen["3.8.0"] == seen["3.9.0"] == [(1, 0), (2, 0), (4, 0), (8, 0), (0, 1), (0, 2), (0, 4)]
