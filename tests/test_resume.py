"""Interrupted and resumed campaigns: a resume runs exactly each target's unrecorded cases, loses and repeats nothing,
says what it stored, and refuses options that would change the campaign it continues."""

from __future__ import annotations

import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from layoutfuzz.reports.store import Store
from tests.resume_targets import SPECS
from tests.test_cli import PYTHONPATH, layoutfuzz

pytestmark = pytest.mark.slow

ENV = {"RESUME_SLEEP_S": "0.03"}


def targets(count: int) -> list[str]:
    return [arg for spec in SPECS[:count] for arg in ("--target", spec)]


def rows(out: Path) -> dict[tuple[str, int], tuple]:
    """(target, index) -> (outcome, case, recorded_at) of every stored case."""
    with sqlite3.connect(out / "layoutfuzz.sqlite") as db:
        found = db.execute("SELECT target, idx, outcome, case_json, recorded_at FROM outcomes").fetchall()
    return {(t, i): (o, c, at) for t, i, o, c, at in found}


def ran(completed: subprocess.CompletedProcess) -> int:
    """The case count a run says it ran (its summary line)."""
    found = re.search(r"^(\d+) cases in ", completed.stderr, re.M)
    assert found, completed.stderr
    return int(found.group(1))


def test_resume_of_several_targets_runs_each_targets_own_missing_cases(tmp_path):
    # the first run stops on its budget with each target part-way; two resumes must finish every target
    first = layoutfuzz("run", *targets(2), "--cases", "150", "--budget", "1s", "--jobs", "2", "-q", "--out", "o",
                       cwd=tmp_path, env={"RESUME_SLEEP_S": "0.02"})
    assert first.returncode == 0, first.stderr
    before = rows(tmp_path / "o")
    assert len(before) < 300, "the budget must stop the first run part-way"
    for _ in range(2):
        again = layoutfuzz("run", "--out", "o", "--resume", *targets(2), "-q", cwd=tmp_path, env=ENV)
        assert again.returncode == 0, again.stderr
        after = rows(tmp_path / "o")
        assert ran(again) == len(after) - len(before)  # what it says it ran is what it stored
        before = after
    for name in ("test.resume1", "test.resume2"):
        assert sorted(i for t, i in before if t == name) == list(range(150)), name


def kill_at(tmp_path: Path, count: int, cases: int, stop_after: int) -> dict:
    """Starts a campaign of ``count`` targets, kills its whole process group once ``stop_after`` rows are stored,
    and returns the rows that survived."""
    args = [sys.executable, "-m", "layoutfuzz.harness.cli", "run", *targets(count), "--cases", str(cases),
            "--jobs", "2", "-q", "--out", "k"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=PYTHONPATH, **ENV),
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db, deadline = tmp_path / "k" / "layoutfuzz.sqlite", time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if db.exists() and sqlite3.connect(db).execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] >= stop_after:
                break
        except sqlite3.OperationalError:
            pass
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return rows(tmp_path / "k")


@pytest.mark.parametrize("count", [1, 2, 5])
def test_kill_and_resume_equals_an_uninterrupted_campaign(tmp_path, count):
    cases = 60
    whole = layoutfuzz("run", *targets(count), "--cases", str(cases), "--jobs", "2", "-q", "--out", "w",
                       cwd=tmp_path, env=ENV)
    assert whole.returncode == 0, whole.stderr
    expected = {key: value[:2] for key, value in rows(tmp_path / "w").items()}
    assert len(expected) == count * cases
    stop_after = random.Random(f"kill/{count}").randrange(5, count * cases // 2)
    killed = kill_at(tmp_path, count, cases, stop_after)
    assert len(killed) < count * cases, "the campaign must be killed part-way"
    resumed = layoutfuzz("run", "--out", "k", "--resume", *targets(count), "-q", cwd=tmp_path, env=ENV)
    assert resumed.returncode == 0, resumed.stderr
    final = rows(tmp_path / "k")
    assert {key: value[:2] for key, value in final.items()} == expected  # nothing lost, nothing different
    assert all(final[key][2] == killed[key][2] for key in killed)  # nothing recorded was run again
    assert ran(resumed) == len(final) - len(killed)


@pytest.mark.parametrize("extra", [["--targets", "triton.layouts"], ["--seed", "3"], ["--shard", "1/2"],
                                   ["--cases", "10"], ["--force"], ["--memory-limit", "4G"]])
def test_resume_refuses_options_that_would_change_the_campaign(tmp_path, extra):
    first = layoutfuzz("run", *targets(1), "--cases", "5", "-q", "--out", "o", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    refused = layoutfuzz("run", "--out", "o", "--resume", *targets(1), *extra, cwd=tmp_path, env=ENV)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and extra[0] in refused.stderr, refused.stderr
    assert len(rows(tmp_path / "o")) == 5


def test_a_refused_command_leaves_nothing_that_blocks_the_corrected_one(tmp_path):
    typo = layoutfuzz("run", "--targets", "triton.layout", "--cases", "5", cwd=tmp_path)
    assert typo.returncode == 2 and "did you mean 'triton.layouts'" in typo.stderr, typo.stderr
    assert not (tmp_path / "layoutfuzz-out").exists()
    corrected = layoutfuzz("run", *targets(1), "--cases", "5", "-q", cwd=tmp_path, env=ENV)
    assert corrected.returncode == 0, corrected.stderr


def test_an_empty_store_left_behind_is_replaced_without_force(tmp_path):
    Store(tmp_path / "o").close()  # what a refused command of an earlier release left: a store with no settings
    run = layoutfuzz("run", *targets(1), "--cases", "5", "-q", "--out", "o", cwd=tmp_path, env=ENV)
    assert run.returncode == 0, run.stderr
    assert len(rows(tmp_path / "o")) == 5


@pytest.mark.parametrize("names", [",,,", " ", ""])
def test_targets_naming_no_target_is_refused(tmp_path, names):
    refused = layoutfuzz("run", "--targets", names, "--cases", "5", cwd=tmp_path)
    assert refused.returncode == 2 and "names no target" in refused.stderr, refused.stderr
    assert refused.stderr.count("\n") == 1
