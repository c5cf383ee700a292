"""What a terminal shows fits 120 columns: every command's stdout, on a small real campaign built once;
the wide data stays in the files (table.md, buckets.md, coverage.md, report.html) and in --format csv."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from layoutfuzz.harness.cli import main

WIDTH = 120  # columns a terminal line may take
ROOT = Path(__file__).resolve().parent.parent
PLANTED = "tests.planted_target:PlantedTarget"
TARGETS = "triton.layouts,triton.linear_layout,triton.shared_layouts"  # long family names, known root causes


@contextlib.contextmanager
def _inside(directory: Path):
    """The working directory for a while (``run`` reads the ledger from it)."""
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def _main(*args: str) -> tuple[int, str]:
    """``layoutfuzz ARGS`` in this process: its exit code and stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[Path, str]:
    """A campaign of a planted target and three CPU targets, 120 cases each, with the repository's ledger:
    its folder and what `run` printed."""
    home = tmp_path_factory.mktemp("width")
    shutil.copy(ROOT / "layoutfuzz-known.toml", home)
    with _inside(home):
        code, printed = _main("run", "--target", PLANTED, "--targets", TARGETS, "--cases", "120", "--jobs", "2", "-q",
                              "--out", "out")
    assert code == 0, printed
    return home, printed


def _too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


def test_the_files_hold_lines_wider_than_a_terminal(campaign):
    home, _ = campaign
    assert max(len(line) for line in (home / "out" / "table.md").read_text().splitlines()) > WIDTH
    assert max(len(line) for line in (home / "out" / "buckets.md").read_text().splitlines()) > WIDTH


def test_run_prints_lines_that_fit_with_each_replay_command_whole(campaign):
    home, printed = campaign
    assert not _too_wide(printed), _too_wide(printed)
    assert "test.planted (all)" in printed and "time s" in printed
    causes = pd.read_csv(io.StringIO(_in(home, "buckets", "--out", "out", "--format", "csv")[1]))
    for replay in causes["replay"]:
        assert any(line.endswith(replay) for line in printed.splitlines()), replay


def _in(home: Path, *args: str) -> tuple[int, str]:
    with _inside(home):
        return _main(*args)


@pytest.mark.parametrize("args", [("table", "--out", "out"), ("buckets", "--out", "out"), ("diff", "out", "out"),
                                  ("known", "list", "--known", "layoutfuzz-known.toml")])
def test_each_command_prints_lines_that_fit(campaign, args):
    code, printed = _in(campaign[0], *args)
    assert code == 0 and printed.count("\n") >= 4, printed
    assert not _too_wide(printed), _too_wide(printed)


def test_csv_stays_whole(campaign):
    home, _ = campaign
    table = pd.read_csv(io.StringIO(_in(home, "table", "--out", "out", "--format", "csv")[1]))
    assert list(table.columns[:3]) == ["target", "family", "cases"] and "unsupported" in table.columns
    assert "invert_and_compose/distributed/distributed" in set(table["family"])  # no family clipped
    causes = pd.read_csv(io.StringIO(_in(home, "buckets", "--out", "out", "--format", "csv")[1]))
    assert {"status", "attribution", "families", "reproducer", "replay", "evidence"} <= set(causes.columns)
    assert not any("…" in str(v) for v in causes.to_numpy().ravel())


def test_buckets_md_has_every_column_the_terminal_shows_and_more(campaign):
    home, _ = campaign
    lines = (home / "out" / "buckets.md").read_text().splitlines()
    header = [c.strip() for c in lines[0].split("|")[1:-1]]
    assert {"status", "bucket", "target", "outcome", "signature", "attribution", "cases", "families", "replay",
            "representative"} <= set(header)
    statuses = {line.split("|")[1].strip() for line in lines[2:]}
    assert "open" in statuses and any(s.startswith("known: ") for s in statuses)  # the planted one, and the ledger's
    assert all("layoutfuzz reproduce" in line for line in lines[2:])


def test_coverage_shows_what_informs_and_writes_every_pair(campaign, tmp_path):
    code, printed = _in(campaign[0], "coverage", "--targets", "triton.layouts", "--cases", "300", "--out", str(tmp_path))
    assert code == 0 and not _too_wide(printed), _too_wide(printed)
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in printed.splitlines() if " x " in line]
    assert rows and all(int(r[1]) > int(r[2]) for r in rows)  # only pairs with legal pairs never drawn together
    written = (tmp_path / "coverage.md").read_text()
    assert written.count(" x ") > 2 * len(rows) and "legal range from" in written  # the file: every pair, every column


def test_matrix_fits_for_five_versions(campaign):
    from layoutfuzz.harness.cli.versions import matrix_view
    from layoutfuzz.harness.matrix import pass_rates, root_cause_grid
    from layoutfuzz.reports.store import Store

    store = Store(campaign[0] / "out")
    frame = store.frame()
    store.close()
    by_version = {label: frame for label in ("3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0")}
    shown = matrix_view(pass_rates(by_version), root_cause_grid(by_version), "md")
    assert "present" in shown and not _too_wide(shown), _too_wide(shown)


def test_the_html_shows_findings_first_and_the_table_folded(campaign):
    pytest.importorskip("matplotlib")
    assert main(["html", "--out", str(campaign[0] / "out")]) == 0
    page = (campaign[0] / "out" / "report.html").read_text()
    assert -1 < page.index("<h3") < page.index("<table")  # the first finding, then the pass-rate table
    assert page.rindex("<details>", 0, page.index("<table")) > page.rindex("</details>", 0, page.index("<table"))
    assert "expected and observed in full" in page  # each picture's values as text too


def test_the_values_picture_wraps_values_instead_of_cutting_them():
    from layoutfuzz.reports.pictures import value_rows

    expected = {"offset": list(range(0, 600, 3))}
    report = {"expected": expected, "observed": {"offset": [1]}, "first_mismatches": [f"basis {i}: wrong" for i in range(8)]}
    rows = value_rows(report)
    start = [i for i, row in enumerate(rows) if row[0] == "expected"][0]
    end = [i for i, row in enumerate(rows) if row[0] == "observed"][0]
    assert "".join(row[1] for row in rows[start:end]) == json.dumps(expected)
    assert sum(row[0] == "mismatch" for row in rows) == 8


def _night(home: Path, date: str) -> tuple[int, str]:
    return _in(home, "nightly", "--root", "nights", "--date", date, "--targets", f"{PLANTED},{TARGETS}", "--budget", "3s",
               "--jobs", "2", "-q", "--reduce-tries", "5", "--known", "layoutfuzz-known.toml")


@pytest.mark.slow
def test_a_night_says_what_is_new_first_and_a_quiet_night_is_short(campaign):
    home, _ = campaign
    code, first = _night(home, "2026-05-01")
    assert code == 1 and not _too_wide(first), _too_wide(first)
    lines = first.splitlines()
    new = next(i for i, line in enumerate(lines) if line.startswith("NEW: test.planted diverge"))
    assert new < next(i for i, line in enumerate(lines) if "test.planted" in line and "|" in line)
    code, quiet = _night(home, "2026-05-02")
    assert code == 0 and not _too_wide(quiet), _too_wide(quiet)
    assert len(quiet.splitlines()) < 60 and "NEW" not in quiet, quiet
    families = pd.read_csv(home / "nights" / "2026-05-02" / "table.csv")
    assert len(families) > 60  # the per-family table is in the night's files


def test_history_shows_the_newest_nights_that_fit(campaign, tmp_path):
    from layoutfuzz.reports.history import record_night

    table = pd.read_csv(campaign[0] / "out" / "table.csv")
    for day in range(1, 31):
        record_night(tmp_path, f"2026-06-{day:02d}", table)
    code, printed = _main("history", "--root", str(tmp_path), "--families")
    assert code == 0 and not _too_wide(printed), _too_wide(printed)
    assert "2026-06-30" in printed and "2026-06-01" not in printed and "older night(s)" in printed


def test_targets_wraps_long_descriptions():
    code, printed = _main("targets")
    assert code == 0 and "triton.layouts" in printed and not _too_wide(printed), _too_wide(printed)
