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
