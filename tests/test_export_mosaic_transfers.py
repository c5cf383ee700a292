"""The reproducer scripts of mosaic.transfers (``harness/targets/mosaic_transfer_scripts.py``): the ledger's reduced
cases exit 1 in a clean child, passing cases exit 0, each script's verdict is the target's on generated cases, and a
wrong answer put in Mosaic's place makes each family's script exit 1."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import re
import runpy
from pathlib import Path

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_layouts import NAMED
from layoutfuzz.harness.cli import main
from layoutfuzz.harness.export import run_script
from layoutfuzz.harness.target import Unsupported, make_case
from layoutfuzz.harness.targets.mosaic_transfers import MosaicTransfers

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "layoutfuzz-known.toml"
CASES = ROOT / "docs" / "results" / "cases"
REDUCED = ("mosaic-transform-attr-rounding", "mosaic-nested-strides-refusal", "mosaic-plan-refusal",
           "mosaic-plan-subword-conflicts")
LAYOUTFUZZ = re.compile(r"^\s*(import|from) layoutfuzz\b", re.MULTILINE)


def _needs_jax() -> None:
    if importlib.util.find_spec("jax") is None or importlib.util.find_spec("jax.experimental.mosaic.gpu") is None:
        pytest.skip("needs jax with Mosaic GPU")


def _case(params: dict) -> Case:
    return Case("mosaic.transfers", 0, 0, params)


def _in_process(script: str, tmp_path: Path) -> tuple[int, str]:
    """The script's exit code and output, run in this process (Mosaic's functions as this process has them)."""
    path = tmp_path / "repro.py"
    path.write_text(script)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(str(path), run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue()


def _verdict(target: MosaicTransfers, case: Case) -> int:
    """The target's verdict as an exit code: 0 right, 1 a finding, 2 a case it cannot run."""
    try:
        return 0 if target.compare(case, target.expected(case), target.observed(case)).ok else 1
    except Unsupported:
        return 2


@pytest.mark.parametrize("name", REDUCED)
def test_reduced_case_script_exits_1_in_a_clean_child(tmp_path, name):
    _needs_jax()
    assert main(["export", str(CASES / f"{name}.json"), "--to", str(tmp_path), "--known", str(LEDGER)]) == 0
    script = tmp_path / name / "repro.py"
    assert not LAYOUTFUZZ.search(script.read_text()) and "layoutfuzz" not in script.read_text().split('"""', 2)[2]
    run = run_script(script)  # its own interpreter, PYTHONPATH='', an empty folder
    assert run.returncode == 1, run.output
    assert "expected:" in run.output and "observed:" in run.output


@pytest.mark.parametrize("params", [
    {"op": "transform_attr", "swizzle": 128},
    {"op": "plan_transfer", "shape": [64, 64], "layout": NAMED["WGMMA_LAYOUT"], "smem_tiling": [8, 8], "bits": 32,
     "swizzle": 32},
])
def test_passing_case_script_exits_0_in_a_clean_child(tmp_path, params):
    _needs_jax()
    script = tmp_path / "repro.py"
    script.write_text(MosaicTransfers().reproducer_script(_case(params)))
    run = run_script(script)
    assert run.returncode == 0, run.output
    assert "observed:" in run.output


def test_every_op_has_a_script_that_imports_only_jax_and_numpy():
    from layoutfuzz.generators.mosaic_transfers import OPS

    target, seen = MosaicTransfers(), set()
    for index in range(120):
        case = make_case(target, 31, index)
        script = target.reproducer_script(case)
        assert script is not None, case.params["op"]
        imported = {m for m in re.findall(r"^\s*(?:import|from) ([\w.]+)", script, re.MULTILINE)}
        stdlib = {"__future__", "dataclasses", "itertools", "sys", "math", "json", "os", "subprocess", "tempfile"}
        assert {m.split(".")[0] for m in imported} <= {"jax", "numpy", *stdlib}, imported
        compile(script, case.case_id, "exec")
        seen.add(case.params["op"])
    assert seen == set(OPS)


def test_scripts_give_the_targets_verdict_on_generated_cases(tmp_path):
    """Every family but the round trip (its script runs Mosaic in a child), in this process: exit 0 where the target
    passes the case, 1 where it finds a problem, 2 where it cannot run it."""
    _needs_jax()
    target, verdicts = MosaicTransfers(), {}
    for index in range(240):
        case = make_case(target, 1, index)
        if case.params["op"] == "transform_attr":
            continue
        code, out = _in_process(target.reproducer_script(case), tmp_path)
        want = _verdict(target, case)
        assert code == want, (case.case_id, case.params, out[-800:])
        assert "observed:" in out
        verdicts.setdefault(case.params["op"], set()).add(code)
    assert len(verdicts) == 7 and all(0 in v for v in verdicts.values())
    assert 1 in verdicts["nested_strides"] and 1 in verdicts["plan_transfer"]  # the ledger's findings, met again


def test_passing_cases_of_every_family_exit_0(tmp_path):
    _needs_jax()
    passing = [
        {"op": "nested_strides", "shape": [6], "nested_shape": [[6]], "nested_strides": [[1]], "tiles": [[2]]},
        {"op": "nested_strides", "shape": [6], "nested_shape": [[2, 3]], "nested_strides": [[1, 2]], "tiles": [[2]]},
        {"op": "plan_transfer", "shape": [64, 64], "layout": NAMED["WGMMA_LAYOUT"], "smem_tiling": None, "bits": 32,
         "swizzle": 16},  # refused, and no trivial or staggered plan of the first 60 is conflict-free
        {"op": "copy_layout", "row_tiles": 4, "col_tiles": 1, "swizzle": 128, "bits": 16},
        {"op": "copy_layout", "row_tiles": 1, "col_tiles": 1, "swizzle": 128, "bits": 16},  # documented refusal
        {"op": "transpose", "shape": [16, 32], "tiling": [8, 16], "permutation": [1, 0]},
        {"op": "transpose", "shape": [16, 32], "tiling": [8], "permutation": [1, 0]},  # documented refusal
        {"op": "collapse_shape", "shape": [4, 8], "tiling": [2, 8], "groups": [2]},
        {"op": "minor_divisible", "tiling": [8, 24], "divisor": 3},
        {"op": "minor_divisible", "tiling": None, "divisor": 7},
    ]
    for params in passing:
        code, out = _in_process(MosaicTransfers().reproducer_script(_case(params)), tmp_path)
        assert code == 0, (params, out)


def _wrong(monkeypatch, tmp_path, module, name, value, params) -> str:
    monkeypatch.setattr(module, name, value)
    code, out = _in_process(MosaicTransfers().reproducer_script(_case(params)), tmp_path)
    monkeypatch.undo()
    assert code == 1, (name, params, out)
    return out


def test_a_wrong_answer_in_mosaics_place_fails_each_family(monkeypatch, tmp_path):
    _needs_jax()
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import launch_context as lc

    def smem(tiling):
        swizzled = "swizzle" in {f.name for f in dataclasses.fields(cs.SMEMTransforms)}
        return cs.SMEMTransforms(lc.TileTransform(tiling), *([None] if swizzled else []))

    nested = {"op": "nested_strides", "shape": [6], "nested_shape": [[6]], "nested_strides": [[1]], "tiles": [[2]]}
    out = _wrong(monkeypatch, tmp_path, fa.Tiling, "tile_nested_shape_strides",
                 lambda self, s, d: (((3,), (2,)), ((1,), (3,))), nested)
    assert "element" in out and "at address" in out
    _wrong(monkeypatch, tmp_path, fa.Tiling, "tile_nested_shape_strides",
           lambda self, s, d: (((3,), (2,)), ((2,),)), nested)

    # f32 WGMMA_LAYOUT on a (64, 64) ref in 128B-swizzled (8, 32) tiles: a trivial plan puts rows 0 and 1 of a half
    # warp on the same chunks (tests/test_mosaic_transfers.py); Mosaic staggers it
    wgmma = {"op": "plan_transfer", "shape": [64, 64], "layout": NAMED["WGMMA_LAYOUT"], "smem_tiling": [8, 32],
             "bits": 32, "swizzle": 128}
    out = _wrong(monkeypatch, tmp_path, fa, "plan_tiled_transfer", lambda *a: fa.TrivialTransferPlan(), wgmma)
    assert "conflicting phases" in out
    nested = fa.WGMMA_LAYOUT.tiling.tile_nested_shape_strides(((8, 8), (2, 32)), ((512, 32), (256, 1)))[0]
    warps = sum(len(d) for d in nested[:len(nested) + fa.WGMMA_LAYOUT.warp_dims[0]])  # the warps' flattened position
    out = _wrong(monkeypatch, tmp_path, fa, "plan_tiled_transfer",
                 lambda *a: fa.StaggeredTransferPlan(stagger=1, dim=warps, size=4, group_stride=1), wgmma)
    assert "a dim of the warps, lanes or vector" in out
    out = _wrong(monkeypatch, tmp_path, fa, "plan_tiled_transfer",
                 lambda *a: (_ for _ in ()).throw(fa.TransferPlanDerivationError("no plan")), wgmma)
    assert "is free of bank conflicts" in out

    copy = {"op": "copy_layout", "row_tiles": 4, "col_tiles": 1, "swizzle": 128, "bits": 16}
    _wrong(monkeypatch, tmp_path, fa, "tiled_copy_smem_gmem_layout", lambda *a: fa.WGMMA_LAYOUT, copy)
    _wrong(monkeypatch, tmp_path, fa, "tiled_copy_smem_gmem_layout",
           lambda *a: (_ for _ in ()).throw(NotImplementedError("no")), copy)

    transpose = {"op": "transpose", "shape": [16, 32], "tiling": [8, 16], "permutation": [1, 0]}
    _wrong(monkeypatch, tmp_path, cs, "reduce_transpose_expression", lambda e, a: smem((8, 16)), transpose)
    _wrong(monkeypatch, tmp_path, cs, "reduce_transpose_expression", lambda e, a: cs.Unsatisfiable(), transpose)
    collapse = {"op": "collapse_shape", "shape": [4, 8], "tiling": [2, 8], "groups": [2]}
    # (4, 8) tiled (2, 4): element (0, 4) sits at 8, where the collapsed (32,) tiled (8,) has 4 (Mosaic: unsatisfiable)
    partial = {"op": "collapse_shape", "shape": [4, 8], "tiling": [2, 4], "groups": [2]}
    assert _in_process(MosaicTransfers().reproducer_script(_case(partial)), tmp_path)[0] == 0
    _wrong(monkeypatch, tmp_path, cs, "reduce_collapse_shape_expression", lambda e, a: smem((8,)), partial)
    _wrong(monkeypatch, tmp_path, cs, "reduce_collapse_shape_expression", lambda e, a: cs.Unsatisfiable(), collapse)

    minor = {"op": "minor_divisible", "tiling": [8, 24], "divisor": 3}
    _wrong(monkeypatch, tmp_path, cs.MinorDimDivisibleBy, "holds", lambda self: False, minor)
    if hasattr(cs, "IsValidMmaTiling"):
        mma = {"op": "mma_tiling", "tiling": [8, 64], "bits": 16, "allow_unswizzled": False}
        assert _in_process(MosaicTransfers().reproducer_script(_case(mma)), tmp_path)[0] == 0
        _wrong(monkeypatch, tmp_path, cs.IsValidMmaTiling, "holds", lambda self: False, mma)


def test_the_round_trip_script_says_exit_2_where_jax_lacks_the_rounding(tmp_path):
    """A JAX whose launch_context has no Rounding cannot express the case: the child says so, the script exits 2."""
    _needs_jax()
    case = _case(json.loads((CASES / "mosaic-transform-attr-rounding.json").read_text())["params"])
    script = MosaicTransfers().reproducer_script(case).replace("lc.Rounding.DOWN", "lc.NoSuchRounding.DOWN")
    path = tmp_path / "repro.py"
    path.write_text(script)
    run = run_script(path)
    assert run.returncode == 2 and "lacks what the case needs" in run.output, run.output
