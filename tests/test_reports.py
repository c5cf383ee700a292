"""Pass-rate tables and bucket keys."""

from __future__ import annotations

import pandas as pd

from layoutfuzz.generators.case import Case
from layoutfuzz.reports.outcome import Outcome, Result
from layoutfuzz.reports.signatures import bucket_key
from layoutfuzz.reports.tables import pass_rate_table, render


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
    # regression: tables, reports and HTML were 0600 while the database was 0644
    import os

    from layoutfuzz.reports.files import write_atomically

    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "t.md", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "t.md").stat().st_mode & 0o777 == 0o644


def test_the_terminal_table_keeps_one_targets_metrics_out_of_every_row():
    # regression: the printed table carried five PTX-count columns that only triton.compile fills
    import pandas as pd

    from layoutfuzz.reports.tables import for_terminal

    table = pd.DataFrame({"target": ["a", "b"], "family": ["(all)", "(all)"], "cases": [1, 1], "pass rate %": [100.0, 100.0],
                          "mean shfl": [None, 2.0]})
    text = for_terminal(table, "md")
    main, _, rest = text.partition("\n\n")
    assert "mean shfl" not in main and "b: per-case metrics" in rest and "| a " not in rest


def test_nan_where_nan_is_expected_agrees_and_reports_stay_strict_json():
    # regression: NaN compared with NaN was a divergence, and such reports were not strict JSON
    import json

    import numpy as np

    from layoutfuzz.harness.compare import compare_values
    from layoutfuzz.reports.bounded import to_jsonable

    assert compare_values({"x": float("nan")}, {"x": float("nan")}).ok
    assert compare_values(np.array([1.0, np.nan]), np.array([1.0, np.nan])).ok
    assert not compare_values(np.array([1.0, np.nan]), np.array([np.nan, np.nan])).ok
    text = json.dumps(to_jsonable({"a": float("nan"), "b": np.array([np.inf, 1.0]), "c": np.float32("nan")}), allow_nan=False)
    assert json.loads(text) == {"a": "NaN", "b": ["Infinity", 1.0], "c": "NaN"}


def test_a_store_that_is_not_a_campaign_is_refused_not_read_as_empty(tmp_path):
    # regression: a 0-byte layoutfuzz.sqlite was read as an empty campaign; `diff` then reported "2 fixed"
    import pytest

    from layoutfuzz.reports.store import DB_NAME, Store, StoreError

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / DB_NAME).write_bytes(b"")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / DB_NAME).write_bytes(b"not a database at all, " * 100)
    for name in ("empty", "junk"):
        with pytest.raises(StoreError, match="not a"):
            Store(tmp_path / name, create=False)


def test_property_tests_have_no_wall_clock_deadline():
    # regression: test_rank_matches_galois exceeded Hypothesis's 200 ms deadline under load (flaky in CI)
    from hypothesis import settings

    assert settings().deadline is None


def test_a_batch_of_reports_appears_whole_and_a_failed_batch_leaves_no_temporary_files(tmp_path, monkeypatch):
    import os

    from layoutfuzz.reports import files

    files.write_many_atomically([(tmp_path / "r" / f"{i}.json", f"report {i}\n") for i in range(5)])
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [f"{i}.json" for i in range(5)]
    assert (tmp_path / "r" / "3.json").read_text() == "report 3\n"
    old = os.umask(0o022)
    try:
        files.write_many_atomically([(tmp_path / "u" / "a", "x"), (tmp_path / "u" / "b", "y")])
    finally:
        os.umask(old)
    assert (tmp_path / "u" / "a").stat().st_mode & 0o777 == 0o644

    def full(directory):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "sync_filesystem", full)
    try:
        files.write_many_atomically([(tmp_path / "s" / f"{i}.json", "z") for i in range(3)])
    except OSError:
        pass
    else:
        raise AssertionError("the failure was swallowed")
    assert list((tmp_path / "s").iterdir()) == []  # neither reports nor their temporary files


def test_unsupported_cases_get_a_few_reports_per_reason_and_every_row(tmp_path):
    from layoutfuzz.harness.campaign import UNSUPPORTED_REPORTS, Recorder
    from layoutfuzz.reports.store import Store

    target = Store(tmp_path)
    recorder = Recorder(target, {}, {}, None)
    refused = [Result(Case("t", 0, i, {"i": i}), "f", Outcome.UNSUPPORTED, f"the driver refused it ({'ab'[i % 2]})")
               for i in range(20)]
    diverged = [Result(Case("t", 0, 100 + i, {}), "f", Outcome.DIVERGE, "", signature="x") for i in range(6)]
    recorder(refused[:7])
    recorder(refused[7:] + diverged)
    recorder.flush()
    rows = target.frame()
    assert len(rows) == 26 and rows["report"].notna().sum() == 2 * UNSUPPORTED_REPORTS + 6
    reported = set(rows[rows["report"].notna() & (rows["outcome"] == "unsupported")]["idx"])
    assert reported == {0, 1, 2, 3, 4, 5}  # the first three of each reason
    assert len(list((tmp_path / "reports").iterdir())) == 2 * UNSUPPORTED_REPORTS + 6
    kept = dict(target.db.execute("SELECT outcome, max(case_json) FROM outcomes GROUP BY outcome"))
    assert kept["unsupported"] == "" and '"index":105' in kept["diverge"]  # only findings keep their parameters


def test_the_recorder_stores_results_together_at_most_a_flush_interval_apart(tmp_path, monkeypatch):
    # regression: a target that crashes on every fourth case sent its results one at a time, and each transaction
    # flushed its report to disk; results now wait up to FLUSH_S, and the campaign's end flushes the rest
    from layoutfuzz.harness.campaign import Recorder
    from layoutfuzz.reports.store import Store

    store = Store(tmp_path)
    recorder = Recorder(store, {}, {}, None)
    crashes = [Result(Case("t", 0, i, {}), "f", Outcome.CRASH, "abort", signature="abort") for i in range(5)]
    monkeypatch.setattr(Recorder, "FLUSH_S", 3600.0)
    for result in crashes[:3]:
        recorder([result])
    assert store.frame().empty and not (tmp_path / "reports").exists()  # neither rows nor reports yet
    assert recorder.counts["crash"] == 3  # the progress counts them at once
    recorder.flush()
    assert sorted(store.frame()["idx"]) == [0, 1, 2] and len(list((tmp_path / "reports").iterdir())) == 3
    monkeypatch.setattr(Recorder, "FLUSH_S", 0.0)
    recorder([crashes[3]])
    assert len(store.frame()) == 4  # past the interval: stored with the call
    monkeypatch.setattr(Recorder, "FLUSH_S", 3600.0)
    monkeypatch.setattr(Recorder, "FLUSH_ROWS", 1)
    recorder([crashes[4]])
    assert len(store.frame()) == 5  # enough rows: stored with the call


def test_the_table_counted_in_sqlite_is_the_table_of_every_row(tmp_path):
    # a night's millions of rows are counted in SQLite, not read back: the same table, metrics means included
    from layoutfuzz.reports.store import Store

    store = Store(tmp_path)
    outcomes = [Outcome.PASS, Outcome.DIVERGE, Outcome.UNSUPPORTED, Outcome.CRASH]
    rows = []
    for i in range(60):
        metrics = {"ptx loads": float(i % 7)} if i % 3 == 0 else {}
        result = Result(Case(f"t{i % 2}", 0, i, {}), f"f{i % 5}", outcomes[i % 4] if i % 11 else Outcome.PASS,
                        duration_s=0.001 * i, metrics=metrics)
        rows.append((result, "b", None, None))
    store.record_many(rows)
    by_row = pass_rate_table(store.frame())
    counted = pass_rate_table(store.counts(), store.metric_rows())
    pd.testing.assert_frame_equal(by_row, counted)
    assert "mean ptx loads" in counted and counted["cases"].sum() == 2 * 60
    assert list(store.frame(["crash"])["outcome"].unique()) == ["crash"]


def test_findings_and_metrics_are_read_through_partial_indexes_not_a_scan_of_every_pass(tmp_path):
    import sqlite3

    from layoutfuzz.harness.campaign import PROBLEMS
    from layoutfuzz.reports.store import Store

    db = sqlite3.connect(tmp_path / "layoutfuzz.sqlite")  # a store written before the indexes existed
    db.executescript("CREATE TABLE campaign (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     "CREATE TABLE outcomes (target TEXT NOT NULL, seed INTEGER NOT NULL, idx INTEGER NOT NULL,"
                     " family TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL, signature TEXT NOT NULL,"
                     " bucket TEXT NOT NULL, mismatch_count INTEGER NOT NULL, duration_s REAL NOT NULL,"
                     " case_json TEXT NOT NULL, report TEXT, recorded_at TEXT NOT NULL DEFAULT '', PRIMARY KEY (target, seed, idx));")
    db.close()
    store = Store(tmp_path, create=False)
    store.record_many([(Result(Case("t", 0, i, {}), "f", Outcome.DIVERGE if i % 10 == 3 else Outcome.PASS,
                               metrics={"m": 1.0} if i == 5 else {}), "b", None, None) for i in range(100)])
    traced: list[str] = []
    store.db.set_trace_callback(traced.append)
    problems, metrics = store.frame(PROBLEMS), store.metric_rows()
    assert sorted(problems["idx"]) == [3, 13, 23, 33, 43, 53, 63, 73, 83, 93] and list(metrics["target"]) == ["t"]
    plans = [" ".join(str(step[3]) for step in store.db.execute("EXPLAIN QUERY PLAN " + sql)) for sql in traced]
    assert any("outcomes_problems" in plan for plan in plans) and any("outcomes_metrics" in plan for plan in plans), plans


def test_pythons_equality_shortcut_gives_the_walks_verdict_on_every_kind_of_value(monkeypatch):
    # regression: the walk took 6 ms a case over the holders of triton.convert_layout; `==` answers first where it can
    import numpy as np

    from layoutfuzz.harness import compare

    nan = float("nan")
    pairs = [({"a": [1, 2, 3], "b": {"c": 4}}, {"a": [1, 2, 3], "b": {"c": 4}}), ({"a": [1, 2]}, {"a": [1, 3]}),
             ([nan], [nan]), ([float("nan")], [float("nan")]), (1, True), (1, 1.0), ((1, 2), [1, 2]), ([1, 2], (1, 2)),
             ({"x": np.array([1, 2])}, {"x": np.array([1, 2])}), ({"x": np.array([1, 2])}, {"x": np.array([1, 3])}),
             (np.array([1.0, nan]), np.array([1.0, nan])), ({"k": 1}, {"k": 1, "extra": 2}), ("ab", "ab"), ("ab", "ba"),
             (list(range(4096)), list(range(4096))), (list(range(4096)), list(range(4095)) + [0])]
    with_shortcut = [compare.compare_values(e, o) for e, o in pairs]
    monkeypatch.setattr(compare, "_plainly_equal", lambda expected, observed: False)
    walked = [compare.compare_values(e, o) for e, o in pairs]
    assert with_shortcut == walked
    assert [v.ok for v in walked] == [True, False, True, True, True, True, True, True, True, False, True, False, True, False,
                                      True, False]


def test_a_cache_file_is_written_atomically_without_waiting_for_the_disk(tmp_path, monkeypatch):
    import os

    from layoutfuzz.reports.files import write_atomically

    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    write_atomically(tmp_path / "report.json", "kept")
    write_atomically(tmp_path / "kernel.json", "cached", durable=False)
    assert len(synced) == 1
    assert (tmp_path / "report.json").read_text() == "kept" and (tmp_path / "kernel.json").read_text() == "cached"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
