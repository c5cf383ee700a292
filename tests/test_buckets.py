"""Buckets (distinct problems) and the diff between two campaigns, from the store and the CLI."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.reports.buckets import bucket_table, diff_buckets
from layoutfuzz.reports.outcome import Outcome, Result
from layoutfuzz.reports.signatures import bucket_key, root_cause
from layoutfuzz.reports.store import Store
from tests.test_cli import CRASHY, layoutfuzz


def _store(path, rows):
    store = Store(path)
    for index, family, outcome, signature in rows:
        result = Result(Case("t", 0, index, {}), family, Outcome(outcome), "detail", signature=signature)
        store.record(result, bucket_key(result), None, root_cause(result))
    return store.frame()


def test_buckets_count_cases_and_pick_the_lowest_index(tmp_path):
    frame = _store(tmp_path / "a", [(5, "f", "diverge", "x"), (2, "f", "diverge", "x"), (3, "g", "diverge", "x"),
                                    (4, "f", "diverge", "y"), (1, "f", "pass", ""), (6, "f", "unsupported", "")])
    table = bucket_table(frame)
    assert list(table["cases"]) == [3, 1]  # x three times whatever the family, y once: a bucket is a root cause
    first = table.iloc[0]
    assert (first["families"], first["signature"], first["representative"]) == ("f, g", "x", "t/0/2")


def test_diff_says_new_persisting_and_fixed(tmp_path):
    old = _store(tmp_path / "old", [(1, "f", "diverge", "x"), (2, "f", "crash", ""), (3, "f", "diverge", "gone")])
    new = _store(tmp_path / "new", [(1, "f", "diverge", "x"), (2, "f", "crash", ""), (4, "f", "diverge", "fresh"),
                                    (5, "f", "diverge", "fresh")])
    changes = diff_buckets(old, new).set_index("signature")
    assert changes.loc["fresh", "status"] == "new" and changes.loc["fresh", "new cases"] == 2
    assert changes.loc["x", "status"] == "persisting" and changes.loc["gone", "status"] == "not seen"  # not re-run
    assert list(diff_buckets(new, new)["status"].unique()) == ["persisting"]


@pytest.mark.slow
def test_cli_diff_and_baseline_exit_1_only_on_new_buckets(tmp_path):
    base = layoutfuzz("run", "--target", CRASHY, "--cases", "3", "--jobs", "2", "-q", "--out", "base", cwd=tmp_path)
    assert base.returncode == 0, base.stderr  # pass, abort, segfault
    assert "2 distinct problem(s)" in base.stdout
    listed = layoutfuzz("buckets", "--out", "base", "--format", "csv", cwd=tmp_path)
    assert listed.returncode == 0
    assert sorted(pd.read_csv(io.StringIO(listed.stdout))["outcome"]) == ["crash", "crash"]
    new = layoutfuzz("run", "--target", CRASHY, "--cases", "5", "--timeout", "2", "--jobs", "2", "-q", "--out", "new",
                     "--baseline", "base", cwd=tmp_path)  # adds a hang (timeout) and a divergence
    assert new.returncode == 1 and "2 new, 2 persisting, 0 fixed, 0 not seen" in new.stdout, new.stdout + new.stderr
    forward = layoutfuzz("diff", "base", "new", cwd=tmp_path)
    assert forward.returncode == 1 and "2 new, 2 persisting, 0 fixed, 0 not seen" in forward.stderr
    backward = layoutfuzz("diff", "new", "base", cwd=tmp_path)
    assert backward.returncode == 0 and "0 new, 2 persisting, 0 fixed, 2 not seen" in backward.stderr  # base ran 3 cases
    assert "timeout" in backward.stdout and "diverge" in backward.stdout
    missing = layoutfuzz("diff", "base", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no campaign in nowhere" in missing.stderr
