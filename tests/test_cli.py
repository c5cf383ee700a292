"""The command line as a user drives it: run, reproduce, table, targets, bad input, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CRASHY = "tests.crashy_target:CrashyTarget"
# the checkout (for tests.*) before what the caller's PYTHONPATH already names (a source tree without an install)
PYTHONPATH = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])


def layoutfuzz(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=PYTHONPATH, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "layoutfuzz.harness.cli", *args], cwd=cwd, env=environment, capture_output=True, text=True,
        timeout=timeout,
    )


def ledgered_run(tmp_path: Path, targets: str, cases: int) -> tuple[subprocess.CompletedProcess, list[list[str]], list[str]]:
    """``layoutfuzz run`` of ``targets`` with the repository's ledger (``run`` reads it from its directory): the run,
    its pass-rate rows (cells stripped) and its root-cause lines that are not known problems."""
    shutil.copy(Path(__file__).parents[1] / "layoutfuzz-known.toml", tmp_path)
    import pandas as pd

    done = layoutfuzz("run", "--targets", targets, "--cases", str(cases), "--jobs", "2", "--out", "out", cwd=tmp_path)
    out = tmp_path / "out"  # the whole tables: a terminal shows them cut to its width
    table = pd.read_csv(out / "table.csv", dtype=str).fillna("-") if (out / "table.csv").exists() else pd.DataFrame()
    rows = [list(r) for r in table.itertuples(index=False) if len(r) >= 10 and r[0] in targets.split(",")]
    lines = (out / "buckets.md").read_text().splitlines()[2:] if (out / "buckets.md").exists() else []  # with statuses
    causes = [line for line in lines if "| diverge" in line or "| error " in line]
    return done, rows, [line for line in causes if not line.startswith("| known")]


@pytest.mark.slow
def test_run_then_reproduce_every_report(tmp_path):
    run = layoutfuzz("run", "--target", CRASHY, "--cases", "12", "--timeout", "2", "--jobs", "2", "-q",
                     "--out", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "| test.crashy" in run.stdout and "(all)" in run.stdout
    reports = sorted((tmp_path / "out" / "reports").glob("*.json"))
    # indices 0..11 cycle through 6 behaviours: abort, segfault, hang, diverge are reported, twice each
    assert len(reports) == 8
    outcomes = {}
    for path in reports:
        report = json.loads(path.read_text())
        outcomes[report["case"]["index"]] = report["outcome"]
        # the one command that replays it names the target, which is not installed (a report names no code to import)
        assert report["reproduce"] == f"layoutfuzz reproduce {Path('out', 'reports', path.name)} --target {CRASHY}"
        assert report["versions"]["python"] and report["bucket"]
    assert outcomes == {1: "crash", 2: "crash", 3: "timeout", 4: "diverge",
                        7: "crash", 8: "crash", 9: "timeout", 10: "diverge"}
    for path in reports:
        if json.loads(path.read_text())["outcome"] == "timeout":
            continue  # reproducing a hang takes the whole timeout; covered once below
        again = layoutfuzz("reproduce", str(path), "--target", CRASHY, cwd=tmp_path)
        assert again.returncode == 1, again.stdout + again.stderr
        assert "-> reproduced" in again.stdout
    diverged = layoutfuzz("reproduce", "out/reports/test.crashy-0-4.json", "--target", CRASHY, cwd=tmp_path)
    assert "1 mismatch(es)" in diverged.stdout and "value: expected" in diverged.stdout
    hang = layoutfuzz("reproduce", "out/reports/test.crashy-0-3.json", "--timeout", "1", "--target", CRASHY, cwd=tmp_path)
    assert hang.returncode == 1 and "outcome: timeout" in hang.stdout
    kept = dict(sqlite3.connect(tmp_path / "out" / "layoutfuzz.sqlite").execute("SELECT idx, case_json FROM outcomes"))
    assert kept[0] == "" and json.loads(kept[4])["index"] == 4  # a pass keeps no parameters, a finding does
    passing = layoutfuzz("reproduce", "test.crashy/0/0", "--out", "out", "--target", CRASHY, cwd=tmp_path)  # regenerated from its seed
    assert passing.returncode == 0 and "outcome: pass" in passing.stdout
    table = layoutfuzz("table", "--out", "out", "--format", "csv", cwd=tmp_path)
    assert table.returncode == 0
    assert "test.crashy,(all),12,4,2,4,2,0,0,33.33" in table.stdout
    assert (tmp_path / "out" / "table.html").read_text().startswith("<table")


def test_triton_campaign_and_reproduce_by_case_id(tmp_path):
    pytest.importorskip("triton._C.libtriton")
    run = layoutfuzz("run", "--targets", "triton.linear_layout", "--cases", "60", "-q", "--out", "o", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "triton.linear_layout | (all)" in run.stdout.replace("  ", " ") or "(all)" in run.stdout
    rows = sqlite3.connect(tmp_path / "o" / "layoutfuzz.sqlite").execute("SELECT COUNT(*) FROM outcomes").fetchone()
    assert rows == (60,)
    again = layoutfuzz("reproduce", "triton.linear_layout/0/5", cwd=tmp_path)
    assert again.returncode == 0 and "outcome: pass" in again.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--targets", "no.such.target"], "unknown target 'no.such.target'"),
        (["run", "--target", "no_such_module:Thing"], "cannot load target"),
        (["run", "--shard", "3/2"], "bad shard"),
        (["run", "--shard", "x"], "bad shard"),
        (["run", "--budget", "soon"], "bad duration"),
        (["run", "--cases", "0"], "must be from 1 to"),
        (["reproduce", "not-a-case"], "neither a file nor a case id"),
        (["reproduce", "broken.json"], "is not a layoutfuzz report or case"),
        (["reproduce", "six.json"], "must be a power of two, got 6"),
        (["table", "--out", "nowhere"], "no campaign in nowhere"),
        (["run", "--resume", "--out", "nowhere"], "nothing to resume"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "broken.json").write_text("{not json")
    case = {"target": "triton.linear_layout", "seed": 0, "index": 0,
            "params": {"op": "apply", "kind": "arbitrary",
                       "layout": {"bases": [["register", [[1]]]], "out_dims": [["dim0", 6]]}}}
    (tmp_path / "six.json").write_text(json.dumps(case))
    result = layoutfuzz(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_existing_campaign_is_not_overwritten_silently(tmp_path):
    first = layoutfuzz("run", "--target", "tests.crashy_target:SlowTarget", "--cases", "2", "-q", "--out", "o",
                       cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = layoutfuzz("run", "--target", "tests.crashy_target:SlowTarget", "--cases", "2", "-q", "--out", "o",
                        cwd=tmp_path)
    assert second.returncode == 2 and "--resume" in second.stderr
    forced = layoutfuzz("run", "--target", "tests.crashy_target:SlowTarget", "--cases", "3", "-q", "--out", "o",
                        "--force", cwd=tmp_path)
    assert forced.returncode == 0
    rows = sqlite3.connect(tmp_path / "o" / "layoutfuzz.sqlite").execute("SELECT COUNT(*) FROM outcomes").fetchone()
    assert rows == (3,)


@pytest.mark.slow
def test_sigkill_then_resume_loses_nothing_and_repeats_nothing(tmp_path):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    args = [sys.executable, "-m", "layoutfuzz.harness.cli", "run", "--target", "tests.crashy_target:SlowTarget",
            "--cases", "120", "--jobs", "2", "-q", "--out", "o"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = tmp_path / "o" / "layoutfuzz.sqlite"
    deadline = time.monotonic() + 60
    before = []
    while time.monotonic() < deadline:
        if db.exists():
            try:
                before = sqlite3.connect(db).execute("SELECT idx, recorded_at FROM outcomes").fetchall()
            except sqlite3.OperationalError:
                before = []
            if len(before) >= 20:
                break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = dict(sqlite3.connect(db).execute("SELECT idx, recorded_at FROM outcomes").fetchall())
    assert 20 <= len(killed) < 120, "the campaign must be killed mid-way"
    assert set(dict(before)) <= set(killed)  # what was seen recorded survived the kill

    resumed = layoutfuzz("run", "--out", "o", "--resume", "--target", "tests.crashy_target:SlowTarget", "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{120 - len(killed)} cases in" in resumed.stderr  # ran only what was missing
    after = dict(sqlite3.connect(db).execute("SELECT idx, recorded_at FROM outcomes").fetchall())
    assert sorted(after) == list(range(120))
    assert all(after[i] == killed[i] for i in killed)  # nothing recorded before was run again


def test_targets_lists_availability(tmp_path):
    result = layoutfuzz("targets", cwd=tmp_path)
    assert result.returncode == 0
    assert "triton.linear_layout" in result.stdout


def test_unavailable_target_is_unsupported_never_pass(tmp_path):
    run = layoutfuzz("run", "--target", "tests.crashy_target:UnavailableTarget", "--cases", "5", "-q", "--out", "o",
                     cwd=tmp_path)
    assert run.returncode == 0
    assert "unsupported here: needs hardware" in run.stderr
    rows = sqlite3.connect(tmp_path / "o" / "layoutfuzz.sqlite").execute("SELECT outcome FROM outcomes").fetchall()
    assert rows == [("unsupported",)]


def test_ctrl_c_stops_keeps_everything_and_says_how_to_resume(tmp_path):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    args = [sys.executable, "-m", "layoutfuzz.harness.cli", "run", "--target", "tests.crashy_target:SlowTarget",
            "--cases", "400", "--jobs", "2", "-q", "--out", "o"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    db = tmp_path / "o" / "layoutfuzz.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if db.exists() and sqlite3.connect(db).execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] >= 10:
                break
        except sqlite3.OperationalError:
            pass
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; continue with: layoutfuzz run --out o --resume --target tests.crashy_target:SlowTarget" in err
    assert "| test.slow" in out  # the table of what ran is still printed
    recorded = sqlite3.connect(db).execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
    assert 10 <= recorded < 400


@pytest.mark.parametrize("args, why", [
    (("run", "--budget", "0"), "more than 0"),
    (("nightly", "--budget", "0"), "more than 0"),
    (("run", "--jobs", "100000000000000000000"), "from 1 to 1024"),
    (("run", "--seed", str(1 << 63)), "from 0 to"),
    (("run", "--timeout", "0s"), "more than 0"),
])
def test_values_that_would_hang_or_overflow_are_one_line_and_exit_2(tmp_path, args, why):
    # regression: --budget 0 ran forever, --jobs 1e20 spawned without bound, a seed >= 2^63 raised OverflowError
    done = layoutfuzz(*args, cwd=tmp_path)
    assert done.returncode == 2 and why in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_huge_case_count_starts_at_once(tmp_path):
    # regression: --cases 1000000000000000 --budget 2s hung before starting (it counted the indices one by one)
    start = time.monotonic()
    done = layoutfuzz("run", "--target", CRASHY, "--cases", "1000000000000000", "--budget", "2s", "--jobs", "2", "-q",
                      "--timeout", "2", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 60


@pytest.mark.slow
def test_a_second_writer_of_a_campaign_is_refused_in_one_line(tmp_path):
    # two --resume runs duplicated work; a second --force deleted a running campaign's database
    first = subprocess.Popen([sys.executable, "-m", "layoutfuzz.harness.cli", "run", "--target", "tests.crashy_target:SlowTarget",
                              "--budget", "20s", "--jobs", "1", "-q", "--out", "out"], cwd=tmp_path,
                             env=dict(os.environ, PYTHONPATH=PYTHONPATH), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "out" / "layoutfuzz.sqlite").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        for extra in (("--resume",), ("--force", "--cases", "3")):
            second = layoutfuzz("run", "--target", "tests.crashy_target:SlowTarget", "-q", "--out", "out",
                                *extra, cwd=tmp_path)
            assert second.returncode == 2 and "being written by another layoutfuzz (pid" in second.stderr, second.stderr
            assert second.stderr.count("\n") == 1
    finally:
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert (tmp_path / "out" / "table.md").exists()


def test_a_full_disk_is_one_line_and_the_store_stays_resumable(tmp_path, monkeypatch, capsys):
    # disk-full trials ended with a raw traceback
    import errno

    from layoutfuzz.harness import cli
    from layoutfuzz.harness.campaign import Recorder
    from layoutfuzz.reports.store import Store

    real, calls = Store.record_many, []

    def record_many(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "record_many", record_many)
    monkeypatch.setattr(Recorder, "FLUSH_S", 0.0)  # each result stored as it comes: the disk fills mid-campaign
    out = str(tmp_path / "out")
    assert cli.main(["run", "--target", "tests.crashy_target:SlowTarget", "--cases", "8", "--jobs", "1", "-q", "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err[-1:]) == 1 and "no space left on the disk" in err[-1] and "--resume" in err[-1]
    monkeypatch.setattr(Store, "record_many", real)
    assert f"layoutfuzz run --out {out} --resume --target tests.crashy_target:SlowTarget" in err[-1]
    assert cli.main(["run", "--out", out, "--resume", "--target", "tests.crashy_target:SlowTarget", "-q"]) == 0  # the rest runs once there is room
    db = Store(out, create=False)
    assert len(db.recorded()) == 8
