"""Pass-rate tables and bucket keys."""

from __future__ import annotations

import pandas as pd

from generators.case import Case
from harness.runner import Result
from harness.target import Outcome
from reports.report import bucket_key
from reports.tables import pass_rate_table, render


def test_pass_rate_table_counts_and_rates():
    rows = [("t", "a", "pass")] * 3 + [("t", "a", "diverge")] + [("t", "b", "unsupported")] * 2 + [("t", "b", "pass")]
    frame = pd.DataFrame(rows, columns=["target", "family", "outcome"])
    table = pass_rate_table(frame).set_index(["target", "family"])
    assert table.loc[("t", "a"), "cases"] == 4 and table.loc[("t", "a"), "pass rate %"] == 75.0
    assert table.loc[("t", "b"), "unsupported"] == 2 and table.loc[("t", "b"), "pass rate %"] == 100.0
    assert table.loc[("t", "(all)"), "cases"] == 7 and table.loc[("t", "(all)"), "pass"] == 4
    assert round(table.loc[("t", "(all)"), "pass rate %"], 2) == 80.0
    assert "| t" in render(pass_rate_table(frame), "md")


def test_crashes_with_the_same_message_share_a_bucket():
    def crash(index: int, detail: str) -> Result:
        return Result(Case("t", 0, index, {}), "f", Outcome.CRASH, detail)

    one = crash(1, "killed by SIGABRT\nfoo.cpp:975: Assertion `c < 12' failed.")
    two = crash(2, "killed by SIGABRT\nfoo.cpp:975: Assertion `c < 31' failed.")
    other = crash(3, "killed by SIGSEGV")
    assert bucket_key(one) == bucket_key(two) != bucket_key(other)


def test_atomic_writes_follow_the_umask_not_mkstemps_0600(tmp_path):
    # issue 19: tables, reports and HTML were 0600 while the database was 0644
    import os

    from reports.store import write_atomically

    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "t.md", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "t.md").stat().st_mode & 0o777 == 0o644


def test_the_terminal_table_keeps_one_targets_metrics_out_of_every_row():
    # issue 19: the printed table carried five PTX-count columns that only triton.compile fills
    import pandas as pd

    from reports.tables import for_terminal

    table = pd.DataFrame({"target": ["a", "b"], "family": ["(all)", "(all)"], "cases": [1, 1], "pass rate %": [100.0, 100.0],
                          "mean shfl": [None, 2.0]})
    text = for_terminal(table, "md")
    main, _, rest = text.partition("\n\n")
    assert "mean shfl" not in main and "b: per-case metrics" in rest and "| a " not in rest
