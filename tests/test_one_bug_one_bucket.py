"""One planted bug, one bucket: a divergence's root cause is the kind of mismatch, never where it showed."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from layoutfuzz.harness.compare import compare_values
from tests.planted_faults import KINDS
from tests.test_cli import layoutfuzz

SPECS = [f"tests.planted_faults:PlantedFault[{kind}]" for kind in KINDS]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """300 cases of each planted fault, in one campaign with the default comparison."""
    where = tmp_path_factory.mktemp("faults")
    args = [a for spec in SPECS for a in ("--target", spec)]
    done = layoutfuzz("run", *args, "--cases", "300", "--jobs", "2", "-q", "--out", "out", cwd=where)
    assert done.returncode == 0, done.stderr
    return where / "out"


def _buckets(out, target: str) -> dict[str, int]:
    """Each diverging bucket of ``target``'s cases: its signature and case count (other outcomes: their own rows)."""
    rows = sqlite3.connect(out / "layoutfuzz.sqlite").execute(
        "SELECT outcome, signature, COUNT(*) FROM outcomes WHERE target = ? AND outcome != 'pass' GROUP BY bucket",
        (target,)).fetchall()
    return {f"{outcome}: {signature}": count for outcome, signature, count in rows}


@pytest.mark.parametrize("kind, signature", [("values", "array values"), ("shape", "shape"), ("missing", "missing key"),
                                             ("scalar", "scalar value"), ("dtype", "dtype")])
def test_each_planted_fault_lands_in_exactly_one_bucket(campaign, kind, signature):
    buckets = _buckets(campaign, f"test.fault.{kind}")
    assert list(buckets) == [f"diverge: {signature}"], buckets
    assert buckets[f"diverge: {signature}"] > 30  # the fault fired in many cases, in every dim


def test_where_a_mismatch_showed_stays_in_the_detail(campaign):
    details = {d for (d,) in sqlite3.connect(campaign / "layoutfuzz.sqlite").execute(
        "SELECT detail FROM outcomes WHERE target = 'test.fault.missing' AND outcome = 'diverge'")}
    assert {"missing key at dim0", "missing key at dim1", "missing key at dim2"} <= details


def test_the_signature_names_the_kind_and_the_note_where():
    verdict = compare_values({"dim0": np.arange(4), "dim1": np.arange(4)}, {"dim0": np.arange(4), "dim1": np.arange(4) ^ 2})
    assert (verdict.signature, verdict.note, verdict.mismatch_count) == ("array values", "array values at dim1", 4)
    assert compare_values({"a": [1, 2]}, {"a": [1, 2, 3]}).signature == "length"
    assert compare_values({"a": 1, "b": 2}, {"b": 2}).signature == "missing key"
    assert compare_values({"a": 1}, {"a": 1, "z": 0}).signature == "extra key"
    assert compare_values({"a": {"b": 1}}, {"a": None}).signature == "type"
    assert compare_values(np.zeros((2, 2)), np.zeros((2, 3))).signature == "shape"
    assert compare_values(np.zeros(2, np.int64), np.zeros(2, np.int32)).ok  # dtypes only where asked
    assert compare_values(np.zeros(2, np.int64), np.zeros(2, np.int32), dtypes=True).signature == "dtype"


def test_the_most_fundamental_kind_decides_and_by_field_keeps_a_targets_fields_apart():
    both = ({"x": np.arange(3), "y": np.arange(3)}, {"x": np.arange(2), "y": np.arange(3) + 1})
    assert compare_values(*both).signature == "shape"  # whichever other part also went wrong
    assert compare_values(*both, by_field=True).signature == "x: shape; y: array values"
    placement = ({"data_mismatches": 0, "placement": [0, 1, 2]}, {"data_mismatches": 0, "placement": [0, 2, 1]})
    assert compare_values(*placement, by_field=True).signature == "placement: scalar value"


def test_the_builtin_linear_layout_target_keeps_its_layouts_fields_apart():
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness.targets.triton_linear_layout import TritonLinearLayout

    layout = {"bases": [["register", [[1], [2]]]], "out_dims": [["dim0", 4]]}
    case = Case("triton.linear_layout", 0, 0, {"op": "invert", "layout": layout})
    wrong_basis = {"bases": [["register", [[2], [1]]]], "out_dims": [["dim0", 4]]}
    wrong_size = {"bases": [["register", [[1], [2]]]], "out_dims": [["dim0", 8]]}
    assert TritonLinearLayout().compare(case, layout, wrong_basis).signature == "bases: scalar value"
    assert TritonLinearLayout().compare(case, layout, wrong_size).signature == "out_dims: scalar value"


def test_a_fault_on_large_params_of_a_plug_in_without_shrinks_reduces_to_the_smallest_case_of_its_bucket(tmp_path):
    # the target has no shrinks of its own: the generic ones bring every integer, list and nested param down, and the
    # fault (scale > 600, three values or more) shows in another dim, element and bit on the way without a new bucket
    import json

    from tests.planted_faults import THRESHOLD

    params = {"scale": 1000, "values": [200, 17, 99, 5, 250, 3, 88, 41], "shape": {"dims": 3}}
    (tmp_path / "big.json").write_text(json.dumps({"target": "test.fault.values", "seed": 0, "index": 0, "params": params}))
    done = layoutfuzz("reduce", "big.json", "--write", "small.json", "--target", SPECS[0], "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "diverge (array values) kept through" in done.stdout and " 0 shrinking step" not in done.stdout
    reduced = json.loads((tmp_path / "small.json").read_text())["params"]
    assert reduced == {"scale": THRESHOLD + 1, "values": [0, 0, 0], "shape": {"dims": 1}}


def test_generic_integer_shrinks_come_ever_closer_to_the_value():
    from layoutfuzz.harness.reduce import candidates, smaller_integers

    assert list(smaller_integers(1000)) == [0, 1, 500, 750, 875, 938, 969, 985, 993, 997, 999]
    assert list(smaller_integers(-5)) == [0, -1, -2, -4] and list(smaller_integers(0)) == []
    halves = [c["v"] for c in candidates({"v": [1, 2, 3, 4]})][:2]
    assert halves == [[1, 2], [3, 4]]  # a long list loses half of itself first


def test_the_shared_memory_probe_keeps_corrupted_data_and_misplaced_data_apart():
    from layoutfuzz.generators.case import Case
    from layoutfuzz.gpu.targets.triton_shared_memory import TritonSharedMemory

    target, case = TritonSharedMemory(), Case("triton.shared_memory", 0, 0, {})
    expected = {"data_mismatches": 0, "placement": [0, 1, 2, 3]}
    corrupted = target.compare(case, expected, {"data_mismatches": 3, "placement": [0, 1, 2, 3]})
    misplaced = target.compare(case, expected, {"data_mismatches": 0, "placement": [0, 2, 1, 3]})
    assert (corrupted.signature, misplaced.signature) == ("data_mismatches: scalar value", "placement: scalar value")
