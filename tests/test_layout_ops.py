"""triton.layout_ops: the generator draws only valid layouts over every operation, kind and CTA count; the target
judges a refused or aborted compile of a valid kernel; the exported script needs only Triton."""

from __future__ import annotations

import subprocess
import sys

import pytest

from layoutfuzz.generators import gluon_ops
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.oracles import gluon_layouts as oracle


def valid(layout, shape):
    return oracle.precondition(dict(layout), shape) is None


def test_generator_draws_valid_layouts_for_every_op_kind_and_cta_count():
    drawn = [gluon_ops.case(source_for("triton.layout_ops", 1, i), valid) for i in range(600)]
    assert all(valid(c["layout"], c["shape"]) for c in drawn)
    assert {c["op"] for c in drawn} == set(gluon_ops.OPS)
    assert {c["layout"]["kind"] for c in drawn} == set(gluon_ops.KINDS)
    assert {len(oracle.cga_bases(c["layout"])) for c in drawn} >= {0, 1, 2}
    assert any(not any(b) for c in drawn if c["layout"]["kind"] == "distributed_linear"
               for b in c["layout"]["lane_bases"] + c["layout"]["warp_bases"]), "broadcast bases drawn"
    assert all(c["shape"][0] * c["shape"][1] <= (16 if c["op"] == "gather" else 64) * 32 * c["num_warps"] for c in drawn)
    assert 0.15 < sum(c["edge"] for c in drawn) / len(drawn) < 0.35
    assert [gluon_ops.case(source_for("triton.layout_ops", 1, i), valid) for i in range(20)] == drawn[:20]


def test_linear_layouts_are_permutations_with_broadcasts_onto_the_shape():
    for i in range(200):
        layout = gluon_ops.linear_layout(source_for("linear", 0, i), [8, 16], 4, i % 3)
        assert oracle.precondition(layout, [8, 16]) is None, layout
        assert len(layout["lane_bases"]) == 5 and len(layout["warp_bases"]) == 2 and len(layout["block_bases"]) == i % 3


pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
from layoutfuzz.harness.target import Unsupported  # noqa: E402
from layoutfuzz.harness.targets.triton_layout_ops import TritonLayoutOps, standalone_script  # noqa: E402

BLOCKED = {"kind": "blocked", "size_per_thread": [1, 4], "threads_per_warp": [4, 8], "warps_per_cta": [2, 2],
           "order": [1, 0], "cga_layout": []}
# a valid linear layout (a permutation of the tile's bits, broadcast lanes) whose warp bits are in reverse order
REVERSED_WARPS = {"kind": "distributed_linear", "reg_bases": [], "lane_bases": [[0, 0]] * 5,
                  "warp_bases": [[2, 0], [1, 0], [0, 0]], "block_bases": [], "shape": [4, 1]}


@pytest.mark.parametrize("op", gluon_ops.OPS)
def test_every_op_compiles_on_a_plain_blocked_layout(op):
    target = TritonLayoutOps()
    case = Case(target.name, 0, 0, {"op": op, "axis": 1, "layout": BLOCKED, "shape": [32, 64], "num_warps": 4})
    target.validate(case)
    try:
        observed = target.observed(case)
    except Unsupported as exc:  # an operation this release's Gluon lacks (3.6.0: cumsum)
        pytest.skip(str(exc)[:120])
    assert target.compare(case, target.expected(case), observed).ok


def test_a_refused_valid_kernel_is_a_finding_bucketed_by_its_error():
    target = TritonLayoutOps()
    case = Case(target.name, 0, 0, {"op": "sum", "axis": 0, "layout": REVERSED_WARPS, "shape": [4, 1], "num_warps": 8})
    verdict = target.compare(case, {"compiles": True}, {"compiles": False, "error": "RuntimeError: planted"})
    assert not verdict.ok and verdict.signature == "compile error: RuntimeError: planted" and "sum" in verdict.note


def test_invalid_layouts_are_not_cases():
    target = TritonLayoutOps()
    bad = {**BLOCKED, "cga_layout": [[0, 2]]}  # CTA bit 0 missing
    with pytest.raises(ValueError, match="precondition"):
        target.validate(Case(target.name, 0, 0, {"op": "sum", "axis": 0, "layout": bad, "shape": [32, 64], "num_warps": 4}))


@pytest.mark.slow
def test_standalone_script_tells_a_refusal_from_a_compile(tmp_path):
    import triton

    codes = []
    for layout, shape, warps in ((BLOCKED, [32, 64], 4), (REVERSED_WARPS, [4, 1], 8)):
        script = tmp_path / "repro.py"
        script.write_text(standalone_script(Case("triton.layout_ops", 0, 0, {"op": "sum", "axis": 0, "layout": layout,
                                                                           "shape": shape, "num_warps": warps})))
        assert "layoutfuzz" not in script.read_text()
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert "expected: compiled" in run.stdout
        codes.append(run.returncode)
    assert codes[0] == 0
    if triton.__version__ in ("3.8.0", "3.9.0"):  # the reduction regression (docs/findings.md)
        assert codes[1] == 1


def test_a_scan_refused_outside_its_documented_limit_is_right_and_inside_it_is_a_finding():
    target = TritonLayoutOps()
    refused = {"compiles": False, "error": "error: TODO: unsupported scan layout"}
    for layout, ok in ((REVERSED_WARPS, True), ({**BLOCKED, "cga_layout": [[0, 1]]}, True), (BLOCKED, False)):
        case = Case(target.name, 0, 0, {"op": "cumsum", "axis": 1, "layout": layout, "shape": [32, 64], "num_warps": 4})
        assert target.compare(case, target.expected(case), refused).ok is ok


# ---- histograms, user-written combines, rank-3 tiles (``gluon_ops.compile_case``, the compile target's cases) ----

BLOCKED_3D = {"kind": "blocked", "size_per_thread": [1, 1, 2], "threads_per_warp": [2, 4, 4], "warps_per_cta": [2, 2, 1],
              "order": [2, 1, 0], "cga_layout": []}
BLOCKED_1D = {"kind": "blocked", "size_per_thread": [2], "threads_per_warp": [32], "warps_per_cta": [4], "order": [0],
              "cga_layout": []}
SLICE_1D = {"kind": "slice", "dim": 0, "parent": BLOCKED}  # the columns of a 4-warp rank-2 blocked layout
LINEAR_1D_32 = {"kind": "distributed_linear", "reg_bases": [], "lane_bases": [[0], [16], [4], [2], [1]],
                "warp_bases": [[0], [8]], "block_bases": [], "shape": [32]}  # Triton's own histogram test's
SLICE_OF_RANK4 = {"kind": "slice", "dim": 1, "parent": {"kind": "blocked", "size_per_thread": [1, 1, 1, 2],
                                                        "threads_per_warp": [2, 2, 2, 4], "warps_per_cta": [1, 2, 1, 2],
                                                        "order": [3, 2, 1, 0], "cga_layout": []}}
NVMMA = {"kind": "nvmma_distributed", "version": [3, 0], "warps_per_cta": [4, 1], "instr_shape": [16, 32, 16],
         "cga_layout": []}


def compile_cases(n, seed=1):
    return [gluon_ops.compile_case(source_for("triton.layout_ops", seed, i), valid) for i in range(n)]


def test_compile_cases_draw_every_op_rank_histogram_layout_and_direction():
    drawn = compile_cases(1000)
    assert {c["op"] for c in drawn} == set(gluon_ops.ALL_OPS)
    assert {(c["op"], len(c["shape"])) for c in drawn} == (
        {(op, r) for op in gluon_ops.ALL_OPS if op != "histogram" for r in (2, 3)} | {("histogram", 1)})
    rank3 = [c for c in drawn if len(c["shape"]) == 3]
    assert {c["layout"]["kind"] for c in rank3} == set(gluon_ops.KINDS_3D) and {c["axis"] for c in rank3} == {0, 1, 2}
    assert all(valid(c["layout"], c["shape"]) and c["shape"][0] * c["shape"][1] * c["shape"][2] <= 64 * 32 * c["num_warps"]
               for c in rank3)
    hist = [c for c in drawn if c["op"] == "histogram"]
    assert {c["layout"]["kind"] for c in hist} == {c["dst_layout"]["kind"] for c in hist} == set(gluon_ops.KINDS_1D)
    assert {c["bins"] for c in hist} >= {1, 1024} and any(c["bins"] & (c["bins"] - 1) for c in hist)
    assert all(valid(c["layout"], c["shape"]) and len(c["shape"]) == 1 and c["axis"] == 0 for c in hist)
    scans = [c for c in drawn if c["op"] in ("scan_max", "scan_pair")]
    assert {c["reverse"] for c in scans} == {False, True}
    assert all("reverse" not in c for c in drawn if c["op"] not in ("scan_max", "scan_pair"))
    assert compile_cases(30) == drawn[:30]


def test_op_preconditions_of_the_new_ops():
    assert oracle.op_precondition("scan_pair", 0, REVERSED_WARPS) == "scan: a distributed_linear layout (blocked only)"
    assert oracle.op_precondition("scan_max", 2, {**BLOCKED_3D, "cga_layout": [[0, 0, 1]]}) == (
        "scan: the scanned axis split across CTAs")
    assert oracle.op_precondition("scan_max", 1, {**BLOCKED_3D, "cga_layout": [[0, 0, 1]]}) is None
    assert oracle.op_precondition("reduce_pair", 0, REVERSED_WARPS) is None
    assert oracle.op_precondition("histogram", 0, BLOCKED_1D, 6) == "histogram: 6 bins, not a power of two"
    assert oracle.op_precondition("histogram", 0, BLOCKED_1D, 1024) is None


@pytest.mark.parametrize("params", [
    {"op": "histogram", "axis": 0, "layout": BLOCKED_1D, "shape": [256], "bins": 512, "dst_layout": BLOCKED_1D},
    {"op": "histogram", "axis": 0, "layout": LINEAR_1D_32, "shape": [32], "bins": 32, "dst_layout": SLICE_1D},
    {"op": "histogram", "axis": 0, "layout": SLICE_1D, "shape": [64], "bins": 2, "dst_layout": BLOCKED_1D},
    {"op": "scan_max", "axis": 1, "layout": BLOCKED, "shape": [32, 64], "reverse": True},
    {"op": "scan_pair", "axis": 0, "layout": BLOCKED, "shape": [32, 64], "reverse": False},
    {"op": "scan_pair", "axis": 2, "layout": BLOCKED_3D, "shape": [4, 8, 16], "reverse": True},
    {"op": "reduce_pair", "axis": 1, "layout": NVMMA, "shape": [64, 32]},
    {"op": "reduce_pair", "axis": 0, "layout": SLICE_OF_RANK4, "shape": [4, 8, 16]},
    {"op": "atomic_add", "axis": 0, "layout": NVMMA, "shape": [64, 32]},
    {"op": "atomic_max", "axis": 0, "layout": BLOCKED, "shape": [32, 64], "sem": "relaxed", "scope": "cta"},
    {"op": "atomic_xchg", "axis": 0, "layout": NVMMA, "shape": [64, 32], "sem": "acq_rel", "scope": "gpu"},
    {"op": "atomic_cas", "axis": 1, "layout": BLOCKED_3D, "shape": [4, 8, 16], "sem": "release", "scope": "sys"},
    *({"op": op, "axis": axis, "layout": BLOCKED_3D, "shape": [4, 8, 16]}
      for op, axis in (("sum", 0), ("max", 2), ("cumsum", 1), ("permute", 0), ("permute", 1), ("permute", 2),
                       ("reshape", 1), ("join_split", 2), ("gather", 1), ("broadcast", 2), ("atomic_add", 1))),
], ids=lambda p: f"{p['op']}-{len(p['shape'])}d-{p['layout']['kind']}-axis{p['axis']}")
def test_hand_written_new_kernels_compile(params):
    target = TritonLayoutOps()
    case = Case(target.name, 0, 0, {**params, "num_warps": 4})
    target.validate(case)
    assert target.expected(case)["limit"] is None
    try:
        observed = target.observed(case)
    except Unsupported as exc:  # an operation this release's Gluon lacks (3.6.0: cumsum)
        pytest.skip(str(exc)[:120])
    assert observed == {"compiles": True}, observed


def test_a_histogram_of_bins_not_a_power_of_two_is_refused_and_that_is_right():
    target = TritonLayoutOps()
    case = Case(target.name, 0, 0, {"op": "histogram", "axis": 0, "layout": BLOCKED_1D, "shape": [256], "bins": 6,
                                    "dst_layout": BLOCKED_1D, "num_warps": 4})
    target.validate(case)
    observed = target.observed(case)
    assert not observed["compiles"] and "must be a power of" in observed["error"]
    verdict = target.compare(case, target.expected(case), observed)
    assert verdict.ok and "not a power of two" in verdict.note


@pytest.mark.parametrize("params, why", [
    ({"op": "histogram", "axis": 0, "layout": BLOCKED, "shape": [32, 64], "bins": 8, "dst_layout": BLOCKED_1D}, "shape"),
    ({"op": "histogram", "axis": 0, "layout": BLOCKED_1D, "shape": [64], "bins": 8}, "dst_layout"),
    ({"op": "histogram", "axis": 0, "layout": BLOCKED_1D, "shape": [64], "bins": 8,
      "dst_layout": {**BLOCKED_1D, "cga_layout": [[1]]}}, "CTAs"),
    ({"op": "sum", "axis": 0, "layout": BLOCKED, "shape": [32, 64], "reverse": True}, "reverse"),
    ({"op": "scan_max", "axis": 0, "layout": BLOCKED, "shape": [32, 64]}, "reverse"),
    ({"op": "sum", "axis": 2, "layout": BLOCKED, "shape": [32, 64]}, "axis"),
    ({"op": "sum", "axis": 0, "layout": BLOCKED, "shape": [32, 64], "sem": "relaxed", "scope": "gpu"}, "sem"),
    ({"op": "atomic_max", "axis": 0, "layout": BLOCKED, "shape": [32, 64]}, "sem"),
    ({"op": "atomic_cas", "axis": 0, "layout": BLOCKED, "shape": [32, 64], "sem": "relaxed", "scope": "block"}, "scope"),
    ({"op": "sum", "axis": 0, "layout": BLOCKED, "shape": [4, 8, 16]}, "precondition"),
])
def test_malformed_new_cases_are_not_cases(params, why):
    target = TritonLayoutOps()
    with pytest.raises(ValueError, match=why):
        target.validate(Case(target.name, 0, 0, {**params, "num_warps": 4}))


@pytest.mark.slow
def test_standalone_scripts_of_the_new_kernels_compile(tmp_path):
    for params in ({"op": "histogram", "axis": 0, "layout": LINEAR_1D_32, "shape": [32], "bins": 64,
                    "dst_layout": BLOCKED_1D},
                   {"op": "scan_pair", "axis": 1, "layout": BLOCKED_3D, "shape": [4, 8, 16], "reverse": True}):
        script = tmp_path / "repro.py"
        script.write_text(standalone_script(Case("triton.layout_ops", 0, 0, {**params, "num_warps": 4})))
        assert "layoutfuzz" not in script.read_text()
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert run.returncode == 0 and "observed: compiled" in run.stdout, run.stdout + run.stderr[-2000:]


def test_an_operation_missing_in_a_called_function_is_found_through_the_exception_chain():
    from layoutfuzz.harness.targets.triton_layout_ops import MISSING_OP, _causes

    try:
        try:
            raise AttributeError("module 'triton.experimental.gluon.language' has no attribute 'cumsum'")
        except AttributeError as inner:
            raise RuntimeError("at 7:4:\n    apply_op(dst, x)\n    ^") from inner
    except RuntimeError as outer:
        chain = _causes(outer)
    assert not MISSING_OP.search(str(chain[0])) and any(MISSING_OP.search(str(e)) for e in chain)


def test_a_timeout_is_signed_with_its_operation():
    # a gather's compile time and a histogram's are two root causes (two ledger entries)
    from layoutfuzz.harness import registry

    target = registry.load("triton.layout_ops")
    for op in ("gather", "histogram"):
        assert target.timeout_cause(Case("triton.layout_ops", 0, 0, {"op": op})) == op


@pytest.mark.parametrize("op, dtype", [("atomic_add", "fp16"), ("atomic_add", "bf16"), ("atomic_cas", "fp16"),
                                       ("atomic_cas", "bf16"), ("atomic_max", "fp64"), ("atomic_xchg", "i32")])
def test_every_atomic_element_type_triton_takes_compiles(op, dtype):
    target = TritonLayoutOps()
    orders = {"sem": "acq_rel", "scope": "gpu"} if op != "atomic_add" else {}
    case = Case(target.name, 0, 0, {"op": op, "axis": 0, "layout": BLOCKED, "shape": [32, 64], "dtype": dtype,
                                    "num_warps": 4, **orders})
    target.validate(case)
    assert target.observed(case) == {"compiles": True}


@pytest.mark.parametrize("op, dtype", [("atomic_max", "fp16"), ("atomic_xchg", "bf16"), ("sum", "fp32")])
def test_an_element_type_triton_refuses_or_a_typed_non_atomic_is_not_a_case(op, dtype):
    target = TritonLayoutOps()
    orders = {"sem": "relaxed", "scope": "cta"} if op.startswith("atomic") else {}
    with pytest.raises(ValueError, match="dtype"):
        target.validate(Case(target.name, 0, 0, {"op": op, "axis": 0, "layout": BLOCKED, "shape": [32, 64],
                                                 "dtype": dtype, "num_warps": 4, **orders}))
