"""The reproducer scripts of the Triton GPU targets (gpu/script_parts.py): on the CPU, each ledger case's script is
Python that imports no layoutfuzz, writes out the case's kernel, constexprs and layouts, and computes inline the same
answer as the target's oracle; ``export --check`` skips it where no GPU is; where there is one (marked gpu), it exits
as the ledger's range says for the installed Triton."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.campaign import load_target
from layoutfuzz.harness.export import needs_gpu, run_script
from layoutfuzz.harness.export_check import Exported, check_one, expected_codes, needed_gpu
from layoutfuzz.reports import ledger, schema

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "docs" / "results" / "cases"
# the ledger's reduced cases of the Triton GPU targets that run a Gluon kernel, and the kernel each script launches
GPU_CASES = {
    "convert-layout-8bit-min.json": "convert_probe_2d",
    "triton-cluster-scattered-blocks-abort.json": "convert_probe_2d",
    "wgmma-int8-n256-rejected.json": "wgmma_probe",
    "wgmma-unswizzled-32-byte-rows-wrong-products.json": "wgmma_probe",
    "wgmma-unswizzled-n8-b-wrong-products.json": "wgmma_probe",
    "triton-tma-cluster-copies-below-split.json": "tma_cluster_probe",
    "triton-tma-cluster-misaligned-slot.json": "tma_cluster_probe",
    "triton-tma-cluster-store-copies-below-split.json": "tma_cluster_store_probe",
    "layout-ops-run-gather-cga.json": "layout_op_kernel",
    "layout-ops-run-reduce-linear-3.6.json": "layout_op_kernel",
    "layout-ops-run-histogram-copies.json": "histogram_kernel",
    "layout-ops-run-scan-max-rank3.json": "rank3_op_kernel",
    "layout-ops-run-atomic-xchg-old-values.json": "rank2_atomic_kernel",
    "shared-memory-permute-unswizzled-nvmma.json": "shared_permute_probe_2d",
}


def _script(name: str) -> tuple[Case, str]:
    case, _ = schema.read_case_file(CASES / name)
    script = load_target(case.target).reproducer_script(case)
    assert script is not None, f"{case.target} has no script for {name}"
    return case, script


def _parent(script: str) -> dict:
    """The script's parent half run as a module (no main, no child): its make_inputs and expected."""
    space: dict = {"__name__": "repro"}
    exec(compile(script, "repro.py", "exec"), space)
    return space


@pytest.mark.parametrize("name", sorted(GPU_CASES))
def test_gpu_script_is_python_without_layoutfuzz_naming_its_kernel(name):
    pytest.importorskip("triton")
    case, script = _script(name)
    compile(script, name, "exec")
    child = script.split("CHILD = r'''", 1)[1].split("'''", 1)[0]
    compile(child, "kernel.py", "exec")
    assert not re.search(r"^\s*(import|from) layoutfuzz\b", script + child, re.MULTILINE)
    assert "layoutfuzz" not in child
    kernel = GPU_CASES[name]
    assert f"def {kernel}(" in child and f"launch({kernel}, " in child and "@gluon.jit" in child
    p = case.params
    launch = next(line for line in child.splitlines() if line.startswith(f"launch({kernel}, "))
    assert f"num_warps={p['num_warps']}" in launch
    ctas = p.get("num_ctas", 1 << len(p.get("splits", [])))
    assert (f"num_ctas={ctas}" in launch) == (ctas > 1)
    if "shape" in p and "layout" in p and p["op"] == "histogram":  # layout_ops_run: a histogram's size and bins
        assert f"M={p['shape'][0]}, B={p['bins']}" in launch
    elif "shape" in p and "layout" in p and "sem" in p:  # layout_ops_run: an atomic's memory order and scope
        assert f"M={p['shape'][0]}, N={p['shape'][1]}" in launch and f"OP={p['op']!r}, SEM={p['sem']!r}, SCOPE={p['scope']!r}" in launch
    elif "shape" in p and "layout" in p:  # layout_ops_run: M, N, op and axis
        assert f"M={p['shape'][0]}, N={p['shape'][1]}" in launch and f"OP={p['op']!r}, AXIS={p['axis']}" in launch
    if "mma" in p:
        assert f"M={p['M']}, N={p['N']}, K={p['K']}" in launch
        assert f"[16, {p['instr_n']}," in child and f"NVMMASharedLayout({p['a_swizzle']}," in child
    if "splits" in p:
        assert f"BUFFERS={p['buffers']}, SLOT={p['slot']}, COORD={tuple(p['coord'])!r}" in launch
    assert needs_gpu(script) and needed_gpu(script) == (9, 0)


@pytest.mark.parametrize("name", sorted(GPU_CASES))
def test_gpu_scripts_expected_answer_is_the_targets_oracle(name):
    pytest.importorskip("triton")
    case, script = _script(name)
    target = load_target(case.target)
    space = _parent(script)
    want = space["expected"](space["make_inputs"]())
    oracle = target.expected(case)
    p = case.params
    if case.target.startswith("triton.convert_layout"):
        dtype = np.dtype(f"int{p['elem_bits']}")
        values = np.random.default_rng(case.index).integers(np.iinfo(dtype).min, np.iinfo(dtype).max,
                                                            int(np.prod(p["shape"])), dtype=dtype)
        assert np.array_equal(want["dst"], values) and oracle["data_mismatches"] == 0
    elif case.target == "triton.wgmma":
        assert want["d"].ravel().tolist() == oracle
    elif case.target == "triton.tma_cluster":
        assert want["block"].tobytes().hex() == oracle["load"]
    elif case.target == "triton.tma_cluster_store":
        assert want["tensor"].tobytes().hex() == oracle["store"]
    elif case.target == "triton.shared_memory":  # the permuted view: the tile transposed, which the oracle asks intact
        s0, s1 = p["shape"]
        assert want["dst"].tolist() == np.arange(s0 * s1).reshape(s0, s1).T.ravel().tolist()
        assert oracle == {"permuted view mismatches": 0}
    else:
        assert want["dst"].tolist() == oracle["output"]


def test_a_refusal_is_the_finding_except_where_releases_do_not_lower_the_case():
    pytest.importorskip("triton")
    assert "\nREFUSAL = 1 " in _script("wgmma-int8-n256-rejected.json")[1]
    assert "\nREFUSAL = 2 " in _script("wgmma-unswizzled-32-byte-rows-wrong-products.json")[1]


def test_gpu_script_without_a_gpu_says_it_cannot_run_here(tmp_path):
    pytest.importorskip("triton")
    _, script = _script("convert-layout-8bit-min.json")
    repro = tmp_path / "repro.py"
    repro.write_text(script.replace("TIMEOUT_S = 300", "TIMEOUT_S = 120"))
    run = run_script(repro)
    if "cannot run here" not in run.output:
        pytest.skip("a CUDA GPU of compute capability 9.0 is here: the gpu-marked test runs the script")
    assert run.returncode == 2 and "expected: dst == src" in run.output


def test_export_check_skips_a_gpu_script_where_there_is_no_gpu(tmp_path):
    _, script = _script("layout-ops-run-gather-cga.json")
    problem = ledger.KnownProblem("triton.layout_ops_run", "diverge", "gather: wrong values", "a gather", first_bad="<=3.6.0")
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "repro.py").write_text(script)
    item = Exported("x", folder / "repro.py", "triton.layout_ops_run", problem.bucket)
    result = check_one(item, problem, {"triton": "3.9.0"}, sys.executable, None)
    assert result.ok and result.returncode is None
    assert result.note == "needs a CUDA GPU of compute capability 9.0: none here, not run"
    older = check_one(item, problem, {"triton": "3.9.0"}, sys.executable, (8, 0))
    assert older.returncode is None and "this one is 8.0" in older.note


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_CASES))
def test_gpu_script_exits_as_the_ledger_says_on_this_gpu(tmp_path, name):
    import triton

    case, script = _script(name)
    repro = tmp_path / "repro.py"
    repro.write_text(script)
    run = run_script(repro)
    if "cannot run here" in run.output:
        pytest.skip(run.output.splitlines()[-1])
    problem = next(p for p in ledger.load(ROOT / "layoutfuzz-known.toml").values() if any(c.endswith(name) for c in p.cases))
    assert run.returncode in expected_codes(problem, triton.__version__), run.output
    assert json.dumps(case.params)  # the case is plain data
