"""What a night prints: the new and regressed root causes first, then one line per target; the per-family tables and
every root cause stay in the night's files (and behind ``--verbose``). Under 60 lines and 120 columns when nothing is
new, however many targets, families and root causes the night has."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from layoutfuzz.reports.terminal import night_report

WIDTH, QUIET_LINES = 120, 60
TARGETS = [f"target{t:02d}.layouts_of_a_long_name" for t in range(36)]
FAMILIES = [f"family {f}: blocked 2x{f} over mma v3 with a long description" for f in range(12)]


def _table(unsupported: tuple[str, ...] = ()) -> pd.DataFrame:
    """A pass-rate table as a campaign writes it: per target its ``(all)`` row, then one row per family."""
    rows = []
    for target in TARGETS:
        if target in unsupported:
            rows.append({"target": target, "family": "(all)", "cases": 1, "pass": 0, "diverge": 0, "unsupported": 1,
                         "pass rate %": float("nan")})
            continue
        rows.append({"target": target, "family": "(all)", "cases": 1200, "pass": 1140, "diverge": 60, "unsupported": 0,
                     "pass rate %": 95.0})
        rows += [{"target": target, "family": f, "cases": 100, "pass": 95, "diverge": 5, "unsupported": 0,
                  "pass rate %": 95.0} for f in FAMILIES]
    return pd.DataFrame(rows)


def _causes(statuses: list[str]) -> pd.DataFrame:
    """Root causes, the i-th of target ``i % 36`` with status ``statuses[i]``."""
    return pd.DataFrame([{"status": status, "bucket": f"{i:012x}", "target": TARGETS[i % len(TARGETS)], "outcome": "diverge",
                          "signature": f"composition: unchecked precondition number {i} " + "x" * 80,
                          "attribution": "system under test (a library with a long name)", "cases": 5,
                          "replay": f"layoutfuzz reproduce nightly/reproducers/{i:012x}.json"}
                         for i, status in enumerate(statuses)])


def _too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


def test_a_night_with_nothing_new_is_a_line_per_target():
    causes = _causes(["persisting"] * 100 + ["known: open"] * 8)
    text = night_report("2026-05-02", _table(), causes, causes.iloc[0:0], "nightly/2026-05-02")
    lines = text.splitlines()
    assert len(lines) < QUIET_LINES and not _too_wide(text), (len(lines), _too_wide(text))
    assert lines[0] == "nightly 2026-05-02: 108 root cause(s): 100 persisting, 8 known"
    assert lines[1] == "nothing new or regressed"
    assert not any(family[:10] in line for line in lines for family in FAMILIES)  # the per-family rows are in the files
    row = next(line for line in lines if line.startswith("| target28."))  # causes 28 and 64 persist, 100 is known
    assert row.split("|")[2:5] == ["  1200 ", "  95.00 ", " 2 persisting, 1 known "], row
    assert lines[-1].startswith("per family and per root cause: nightly/2026-05-02/ ")


def test_new_root_causes_come_first_and_many_are_summed_up_after_the_first_dozen():
    causes = _causes(["new"] * 30 + ["persisting"] * 10)
    text = night_report("2026-05-01", _table(), causes, causes[causes["status"] == "new"], "nightly/2026-05-01")
    lines = text.splitlines()
    assert not _too_wide(text), _too_wide(text)
    new = [line for line in lines if line.startswith("NEW: ")]
    assert len(new) == 12 and new[0].startswith(f"NEW: {TARGETS[0]} diverge: composition: unchecked precondition number 0")
    assert "and 18 more new or regressed root cause(s): nightly/2026-05-01/root-causes.md" in lines
    assert lines.index(new[-1]) < next(i for i, line in enumerate(lines) if line.startswith("| target"))
    assert "  replay: layoutfuzz reproduce nightly/reproducers/00000000000b.json" in lines


def test_a_target_that_could_not_run_here_says_so():
    text = night_report("2026-05-03", _table(unsupported=(TARGETS[3],)), _causes([]), _causes([]), "nightly/2026-05-03")
    row = next(line for line in text.splitlines() if line.startswith(f"| {TARGETS[3]}"))
    assert "unsupported here" in row, row
    assert "none" in next(line for line in text.splitlines() if line.startswith(f"| {TARGETS[4]}"))


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """``layoutfuzz ARGS`` with its stdout on a terminal (a pseudo-terminal read here): exit code and what it printed
    there (stderr, the progress and the campaign's summary, is not part of it)."""
    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "layoutfuzz.harness.cli", *args]
    process = subprocess.Popen(command, cwd=cwd, stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's last writer is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=600), b"".join(chunks).decode().replace("\r\n", "\n")


def _besides_what_is_new(text: str) -> list[str]:
    """The lines of a night's stdout but for its new and regressed root causes (each a line and its indented lines)."""
    kept, failing = [], False
    for line in text.splitlines():
        failing = line.startswith(("NEW: ", "REGRESSED: ")) or (failing and line.startswith("  "))
        summed_up = line.startswith("and ") and line.endswith("root-causes.md")
        if not failing and not summed_up:
            kept.append(line)
    return kept


@pytest.mark.slow
def test_a_cpu_night_prints_under_60_lines_on_a_terminal_besides_what_is_new(tmp_path):
    # the second night draws other cases (its seed is its date): what it finds new, if anything, comes on top
    night = ["nightly", "--root", "nights", "--targets", "pycute.layouts,cute.smem_atoms", "--jobs", "2",
             "--reduce-tries", "5", "--known", "none.toml"]
    code, first = _on_a_terminal([*night, "--date", "2026-05-01", "--budget", "10s"], tmp_path)
    assert code == 1 and "NEW: pycute.layouts" in first, first
    code, second = _on_a_terminal([*night, "--date", "2026-05-02", "--budget", "3s"], tmp_path)
    assert code in (0, 1) and second.startswith("nightly 2026-05-02: "), second
    for text in (first, second):
        rest = _besides_what_is_new(text)
        assert len(rest) < QUIET_LINES and not _too_wide(text), (len(rest), _too_wide(text))
        assert any(line.startswith("| pycute.layouts ") for line in rest), text
    families = pd.read_csv(tmp_path / "nights" / "2026-05-01" / "table.csv")
    assert len(families) > len(_besides_what_is_new(first))  # the per-family table is in the night's files


def test_a_stored_reproducer_that_is_not_a_valid_case_is_one_line_of_stderr(capsys):
    from types import SimpleNamespace

    from layoutfuzz.harness.nightly import _valid
    from layoutfuzz.harness.target import Target

    class Refuses(Target):
        name = "test.refuses"

        def validate(self, case):
            raise ValueError("bases of the wrong length:\n" + "[[1, 0, 0]] " * 40)

    assert not _valid(Refuses(), SimpleNamespace(bucket="0123456789ab", reproducer=None))
    printed = capsys.readouterr().err.splitlines()
    assert len(printed) == 1 and len(printed[0]) == WIDTH, printed
    assert printed[0] == ("0123456789ab: its stored reproducer is not a valid case of test.refuses; not replayed "
                          "(bases of the wrong length: [[1, …")
