"""Reduction of failing cases: the shrinking edits, `layoutfuzz reduce`, and `run --reduce`."""

from __future__ import annotations

import json

import pytest

from layoutfuzz.harness.reduce import candidates
from tests.test_cli import CRASHY, layoutfuzz


def test_candidates_drop_list_elements_and_move_integers_towards_zero_in_a_fixed_order():
    params = {"a": [3, [1, 2]], "flag": True, "n": -5}
    got = list(candidates(params))
    assert got[:2] == [{"a": [[1, 2]], "flag": True, "n": -5}, {"a": [3], "flag": True, "n": -5}]
    assert {"a": [0, [1, 2]], "flag": True, "n": -5} in got and {"a": [3, [1, 2]], "flag": True, "n": -2} in got
    assert all(c["flag"] is True for c in got)  # booleans are not integers to shrink
    assert got == list(candidates(params)) and params == {"a": [3, [1, 2]], "flag": True, "n": -5}


@pytest.mark.slow
def test_reduce_keeps_the_failure_and_records_it_in_the_report(tmp_path):
    run = layoutfuzz("run", "--target", CRASHY, "--cases", "5", "--timeout", "2", "--jobs", "2", "-q", "--out", "out",
                     cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    report = tmp_path / "out" / "reports" / "test.crashy-0-4.json"  # a divergence
    done = layoutfuzz("reduce", str(report), "--write", "small.json", "--target", CRASHY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "small.json").read_text())["params"] == {"value": 0}
    assert json.loads(report.read_text())["reduced_case"]["params"] == {"value": 0}
    assert json.loads(report.read_text())["case"]["params"]["value"] != 0  # the original is kept
    again = layoutfuzz("reproduce", "small.json", "--target", CRASHY, cwd=tmp_path)
    assert again.returncode == 1 and "outcome: diverge" in again.stdout
    crash = layoutfuzz("reduce", "out/reports/test.crashy-0-1.json", "--write", "abort.json", "--target", CRASHY, cwd=tmp_path)
    assert crash.returncode == 0 and "crash (SIGABRT: " in crash.stdout
    passing = layoutfuzz("reduce", "test.crashy/0/0", "--target", CRASHY, cwd=tmp_path)
    assert passing.returncode == 1 and "nothing to reduce" in passing.stdout


@pytest.mark.slow
def test_run_reduce_reduces_each_buckets_representative(tmp_path):
    run = layoutfuzz("run", "--target", CRASHY, "--cases", "5", "--timeout", "2", "--jobs", "2", "-q", "--out", "out",
                     "--reduce", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    reduced = sorted(p.name for p in (tmp_path / "out" / "reports").glob("*.reduced.json"))
    assert reduced == [f"test.crashy-0-{i}.reduced.json" for i in (1, 2, 3, 4)]
    listed = layoutfuzz("buckets", "--out", "out", "--format", "csv", cwd=tmp_path)
    assert listed.returncode == 0 and "reports/test.crashy-0-4.reduced.json" in listed.stdout


def test_reduce_of_a_case_id_saves_beside_the_campaign_and_never_into_the_working_directory(tmp_path):
    # regression: `reduce TARGET/SEED/INDEX --out DIR` crashed after writing, and reductions landed in the cwd
    run = layoutfuzz("run", "--target", CRASHY, "--cases", "5", "--timeout", "2", "--jobs", "2", "-q", "--out", "out",
                     cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    done = layoutfuzz("reduce", "test.crashy/0/4", "--out", "out", "--target", CRASHY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob("*.reduced.json"))
    report = json.loads((tmp_path / "out" / "reports" / "test.crashy-0-4.json").read_text())
    assert report["reduced_case"]["params"] == {"value": 0} and report["reduced_fixpoint"] is True
    assert (tmp_path / "out" / "reports" / "test.crashy-0-4.reduced.json").exists()
    assert "layoutfuzz reproduce out/reports/test.crashy-0-4.reduced.json" in report["reduced_replay"]
