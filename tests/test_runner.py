"""Crash isolation: aborts, segfaults and hangs are recorded and the campaign goes on."""

from __future__ import annotations

import importlib.machinery
import re
from pathlib import Path

import pytest

from layoutfuzz.harness.runner import Shard, run_cases, share
from layoutfuzz.harness.target import Outcome
from tests.crashy_target import BEHAVIOURS, CrashyTarget
from tests.test_cli import layoutfuzz

SPEC = "tests.crashy_target:CrashyTarget"


def test_campaign_survives_abort_segfault_and_hang():
    target = CrashyTarget()
    results = []
    finished = run_cases([share(SPEC, target, 3, range(12))], results.extend, jobs=2, timeout_s=3)
    assert finished
    assert sorted(r.case.index for r in results) == list(range(12))
    by_index = {r.case.index: r for r in results}
    for index, result in by_index.items():
        behaviour = BEHAVIOURS[index % len(BEHAVIOURS)]
        want = {
            "pass": Outcome.PASS, "slow": Outcome.PASS, "abort": Outcome.CRASH, "segfault": Outcome.CRASH,
            "hang": Outcome.TIMEOUT, "diverge": Outcome.DIVERGE,
        }[behaviour]
        assert result.outcome is want, (index, result)
        assert result.family == behaviour
    assert "SIGABRT" in by_index[1].detail and "crashy: about to abort" in by_index[1].detail
    assert "SIGSEGV" in by_index[2].detail
    assert by_index[4].mismatch_count == 1 and by_index[4].mismatches == ("value: expected " + repr(
        by_index[4].case.params["value"]) + ", observed " + repr(by_index[4].case.params["value"] ^ 1),)


def test_shards_partition_the_indices():
    shards = [set(Shard(i, 3).indices(20)) for i in (1, 2, 3)]
    assert set().union(*shards) == set(range(20))
    assert sum(len(s) for s in shards) == 20
    assert Shard.parse("2/3") == Shard(2, 3)


def _campaign(tmp_path, target: str, cases: int, jobs: int, query: str) -> dict:
    """Runs ``cases`` cases of a test target (exit 0 expected) and answers ``query`` on its store."""
    import sqlite3

    from tests.test_cli import layoutfuzz

    run = layoutfuzz("run", "--target", f"tests.faulty_target:{target}", "--cases", str(cases), "--jobs", str(jobs), "-q",
                     "--out", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return dict(sqlite3.connect(tmp_path / "out" / "layoutfuzz.sqlite").execute(query))


def test_a_base_exception_from_target_code_is_that_cases_outcome_not_the_campaigns(tmp_path):
    # regression: sys.exit(0), KeyboardInterrupt or a custom BaseException in a target ended or emptied the campaign
    from tests.test_cli import layoutfuzz

    rows = _campaign(tmp_path, "ExitingTarget", 10, 2, "SELECT family, group_concat(DISTINCT outcome) FROM outcomes GROUP BY family")
    assert rows == {"exit": "crash", "interrupt": "crash", "custom": "crash", "oracle-exit": "error", "pass": "pass"}
    again = layoutfuzz("reproduce", "test.exiting/0/0", "--target", "tests.faulty_target:ExitingTarget", cwd=tmp_path)
    assert again.returncode == 1 and "outcome: crash" in again.stdout and "SystemExit" in again.stdout


def test_workers_crashing_back_to_back_never_end_the_campaign(tmp_path):
    # regression: "All workers expired" (BrokenProcessPool) ended campaigns whose target aborts on half its cases
    counts = _campaign(tmp_path, "AbortingTarget", 60, 4, "SELECT outcome, count(*) FROM outcomes GROUP BY outcome")
    assert counts == {"pass": 30, "crash": 30}


def test_huge_values_and_output_spam_are_bounded_in_every_stored_field(tmp_path):
    # regression: a 100 MB observed value made a 105 MB report; 100 MB of output a 105 MB detail per row
    longest = _campaign(tmp_path, "HugeTarget", 4, 2, "SELECT outcome, max(length(detail)) FROM outcomes GROUP BY outcome")
    assert set(longest) == {"crash", "diverge"} and max(longest.values()) < 20_000
    reports = list((tmp_path / "out" / "reports").glob("*.json"))
    assert len(reports) == 4 and max(p.stat().st_size for p in reports) < 100_000


@pytest.mark.slow
def test_no_process_the_system_under_test_started_outlives_the_campaign(tmp_path):
    # regression: grandchildren of a worker (a hung child of the target) were never killed
    import subprocess

    from tests.test_cli import layoutfuzz

    marker = "9876"  # a sleep duration nothing else on the machine uses
    run = layoutfuzz("run", "--target", "tests.faulty_target:ForkingTarget", "--cases", "4", "--jobs", "2", "--timeout", "3",
                     "-q", "--out", "out", cwd=tmp_path, env={"FORKING_SLEEP": marker})
    assert run.returncode == 0, run.stderr
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
    assert left == [], f"{len(left)} child process(es) left behind"


def test_a_target_whose_cases_cannot_be_reproduced_is_named(tmp_path):
    # regression: a target whose generate was not deterministic went unnoticed (100 of 100 cases differed)
    from tests.test_cli import CRASHY, layoutfuzz

    drifting = layoutfuzz("run", "--target", "tests.faulty_target:DriftingTarget", "--cases", "3", "-q", "--out", "a", cwd=tmp_path)
    assert drifting.returncode == 0 and "test.drifting: generate is not deterministic" in drifting.stderr
    steady = layoutfuzz("run", "--target", CRASHY, "--cases", "1", "-q", "--out", "b", cwd=tmp_path)
    assert steady.returncode == 0 and "not deterministic" not in steady.stderr


@pytest.mark.slow
def test_a_case_past_the_memory_limit_is_a_crash_with_the_reason(tmp_path):
    # regression: the harness had no per-worker memory limit of its own
    import sqlite3

    from tests.test_cli import layoutfuzz

    limited = layoutfuzz("run", "--target", "tests.faulty_target:HungryTarget", "--cases", "2", "--jobs", "1", "-q",
                         "--memory-limit", "256M", "--out", "a", cwd=tmp_path)
    assert limited.returncode == 0, limited.stderr
    rows = sqlite3.connect(tmp_path / "a" / "layoutfuzz.sqlite").execute("SELECT outcome, detail FROM outcomes").fetchall()
    assert [r[0] for r in rows] == ["crash", "crash"] and all("memory limit" in r[1] for r in rows)
    free = layoutfuzz("run", "--target", "tests.faulty_target:HungryTarget", "--cases", "1", "--jobs", "1", "-q", "--out", "b",
                      cwd=tmp_path)
    assert free.returncode == 0 and "1 pass" in free.stderr
    bad = layoutfuzz("run", "--memory-limit", "lots", cwd=tmp_path)
    assert bad.returncode == 2 and "bad size" in bad.stderr


def test_os_exit_0_in_target_code_is_a_crash_at_once_not_a_timeout(tmp_path):
    # regression: os._exit(0) in a worker was recorded as a timeout (pebble reads exit status 0 as a normal end)
    import time

    start = time.monotonic()
    rows = _campaign(tmp_path, "QuittingTarget", 2, 1, "SELECT outcome, detail FROM outcomes")
    assert time.monotonic() - start < 25  # the campaign's timeout is the default 30 s: no case waited for it
    assert list(rows) == ["crash"] and "os._exit(0) called while the case ran" in rows["crash"]


def _rows(store: Path) -> list[tuple]:
    import sqlite3

    return sqlite3.connect(store / "layoutfuzz.sqlite").execute(
        "SELECT target, seed, idx, family, outcome, signature, bucket, mismatch_count, case_json FROM outcomes ORDER BY target, idx"
    ).fetchall()


@pytest.mark.slow
def test_batches_give_the_same_outcome_rows_as_one_case_per_call(tmp_path):
    # same seed, batch mode vs per-case mode, every row; crashes and hangs of a batch are bisected
    # down to the cases causing them (a batched target's launch aborts or hangs on any batch holding one)
    from tests.test_cli import layoutfuzz

    args = ["run", "--target", "tests.faulty_target:BatchedTarget", "--targets", "triton.layouts", "--cases", "42",
            "--seed", "5", "--timeout", "2", "-q"]
    per_case = layoutfuzz(*args, "--batch", "1", "--out", "one", cwd=tmp_path)
    batched = layoutfuzz(*args, "--out", "many", cwd=tmp_path)
    assert per_case.returncode == 0 and batched.returncode == 0, per_case.stderr + batched.stderr
    one, many = _rows(tmp_path / "one"), _rows(tmp_path / "many")
    assert len(one) == 84 and one == many
    outcomes = {(r[0], r[3]): r[4] for r in many if r[0] == "test.batched"}
    assert outcomes == {("test.batched", "pass"): "pass", ("test.batched", "oracle-error"): "error",
                        ("test.batched", "abort"): "crash", ("test.batched", "diverge"): "diverge",
                        ("test.batched", "unsupported"): "unsupported", ("test.batched", "hang"): "timeout"}
    assert "pass" in {r[4] for r in many if r[0] == "triton.layouts"}  # and under Triton 3.6, crashes of its shared families
    # the batched run's workers stored its passes themselves: the summary counts them all the same
    counted = [re.search(r"\): (.*)", run.stderr)[1] for run in (per_case, batched)]
    assert counted[0] == counted[1] and f"{sum(r[4] == 'pass' for r in many)} pass" in counted[1]


def test_workers_start_from_a_fork_server_that_imported_the_targets_modules(tmp_path):
    # regression: a replaced worker re-imported Triton (0.36 s a crash); the fork server imports it once
    counts = _campaign(tmp_path, "PreloadProbe", 4, 2, "SELECT outcome, count(*) FROM outcomes GROUP BY outcome")
    assert counts == {"pass": 4}


def test_workers_of_the_command_line_do_not_run_it_again(tmp_path):
    # regression: the fork server ran the command line as the workers' main module (harness.cli and pandas: 1.5 s of a
    # Triton campaign's start on an H100 machine), for nothing a worker uses
    counts = _campaign(tmp_path, "LeanMainProbe", 4, 2, "SELECT outcome, count(*) FROM outcomes GROUP BY outcome")
    assert counts == {"pass": 4}


def test_only_layoutfuzz_s_command_line_counts_as_the_command_line():
    import types

    from layoutfuzz.harness import cli
    from layoutfuzz.harness.forkserver import is_the_cli

    script = types.ModuleType("__main__")  # the `layoutfuzz` script: `from layoutfuzz.harness.cli import main`
    script.main = cli.main
    run_as_module = types.ModuleType("__main__")
    run_as_module.__spec__ = importlib.machinery.ModuleSpec("layoutfuzz.harness.cli", None)
    users = types.ModuleType("__main__")  # a user's script, whose targets a worker may need
    users.main = lambda: 0
    assert is_the_cli(script) and is_the_cli(run_as_module)
    assert not is_the_cli(users) and not is_the_cli(types.ModuleType("__main__")) and not is_the_cli(None)


@pytest.mark.slow
def test_a_time_budget_is_shared_by_time_not_by_turn(tmp_path):
    # regression: round-robin by case count gave a fast target a quarter of what a slow one got
    import sqlite3

    from tests.test_cli import layoutfuzz

    run = layoutfuzz("run", "--target", "tests.crashy_target:SlowTarget", "--target", "tests.faulty_target:PreloadProbe",
                     "--budget", "4s", "--jobs", "2", "-q", "--out", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = dict(sqlite3.connect(tmp_path / "out" / "layoutfuzz.sqlite").execute(
        "SELECT target, count(*) FROM outcomes GROUP BY target"))
    assert rows["test.preload"] > 20 * rows["test.slow"]  # 50 ms a case against microseconds: far more cases
    assert "time s" in run.stdout  # the table says how much worker time each target got


def test_a_budget_ends_near_its_deadline_even_with_a_hang_in_flight():
    # regression: at the end of a budget the runner waited for every batch in flight, queued ones too, so one slow
    # compile stretched a 60 s run to 79 s; now the running batches get DEADLINE_GRACE_S and the rest stay unrun
    import time

    from layoutfuzz.harness.runner import DEADLINE_GRACE_S

    target, results = CrashyTarget(), []
    started = time.monotonic()
    finished = run_cases([share(SPEC, target, 3, [0, 3, 5, 6, 9, 11, 12], batch=1)], results.extend, jobs=2, timeout_s=60,
                         deadline=started + 1.5)
    took = time.monotonic() - started
    assert not finished
    assert took < 1.5 + DEADLINE_GRACE_S + 5, took  # not the 60 s time limit of the hanging cases (3 and 9)
    outcomes = {r.case.index: r.outcome for r in results}
    assert outcomes.get(0) is Outcome.PASS  # what finished before the deadline is recorded
    assert Outcome.TIMEOUT not in outcomes.values()  # a case given up at the deadline has no outcome: a resume runs it
    assert 3 not in outcomes


def test_a_target_sets_how_much_work_a_batch_aims_at():
    # batch_seconds: 0.1 s by default; the batched GPU drivers ask for 0.5 s (a launch and a transaction a batch)
    from layoutfuzz.gpu.targets.tma_swizzle import TmaSwizzle
    from layoutfuzz.gpu.targets.wgmma_descriptor import WgmmaDescriptor
    from layoutfuzz.harness.batching import BatchSize
    from layoutfuzz.harness.runner import share
    from layoutfuzz.harness.target import Target

    quick, slow = BatchSize(100_000, 4, 0.1), BatchSize(100_000, 4, 0.5)
    for _ in range(20):  # 100 us a case
        quick.observe(quick.size, quick.size * 1e-4)
        slow.observe(slow.size, slow.size * 1e-4)
    assert (quick.size, slow.size) == (1000, 5000)
    assert Target.batch_seconds == 0.1 and TmaSwizzle.batch_seconds == WgmmaDescriptor.batch_seconds == 0.5
    assert share("x:y", TmaSwizzle(), 0, []).size.seconds == 0.5


def test_workers_write_no_core_files(tmp_path):
    # a target that aborts on a third of its cases (triton.layouts under Triton 3.6.0) would dump a core a crash
    # wherever the user's limit allows it
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))  # as permissive as this machine allows, inherited by the run
    try:
        counts = _campaign(tmp_path, "CoreProbe", 4, 2, "SELECT outcome, count(*) FROM outcomes GROUP BY outcome")
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))
    assert counts == {"pass": 4}


def test_targets_warm_up_once_in_the_fork_server(tmp_path):
    # a worker forked from the server inherits what warm_up made there (a crashed worker's replacement starts warm)
    done = layoutfuzz("run", "--target", "tests.crashy_target:WarmTarget", "--cases", "4", "--jobs", "2", "-q",
                      "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "4 cases in" in done.stderr and ": 4 pass" in done.stderr, done.stdout + done.stderr


def test_workers_start_with_the_fork_servers_objects_frozen(tmp_path):
    # a worker's garbage collections skip the libraries the server imported (tens of thousands of objects, more with
    # torch): at thousands of cases a second, walking them again and again is time taken from the cases
    assert _campaign(tmp_path, "FrozenProbe", 4, 2, "SELECT outcome, count(*) FROM outcomes GROUP BY outcome") == {"pass": 4}


def test_a_crash_is_named_by_its_fatal_error_printed_before_a_long_dump():
    from layoutfuzz.reports.signatures import root_cause
    from tests.crashy_target import LlvmFatalTarget

    results = []
    run_cases([share("tests.crashy_target:LlvmFatalTarget", LlvmFatalTarget(), 0, range(2))], results.extend, jobs=1,
              timeout_s=30)
    assert [r.outcome for r in results] == [Outcome.CRASH] * 2
    assert all(root_cause(r).startswith("SIGABRT: LLVM ERROR: Invalid basis") for r in results), root_cause(results[0])


def test_a_profiled_campaign_leaves_each_workers_totals(tmp_path):
    # LAYOUTFUZZ_PROFILE: where the workers' time went, as the throughput work reads it (harness.profiling)
    from layoutfuzz.harness.profiling import main as show

    folder = tmp_path / "profiles"
    done = layoutfuzz("run", "--target", "tests.faulty_target:CoreProbe", "--cases", "40", "--jobs", "2", "-q",
                      "--out", "out", cwd=tmp_path, env={"LAYOUTFUZZ_PROFILE": str(folder)})
    assert done.returncode in (0, 1), done.stderr
    assert list(folder.glob("worker-*.prof"))
    assert show([str(folder), "5"]) == 0 and show([str(tmp_path / "none")]) == 2
    unprofiled = layoutfuzz("run", "--target", "tests.faulty_target:CoreProbe", "--cases", "4", "--jobs", "1", "-q",
                            "--out", "out2", cwd=tmp_path)
    profiles = sorted(folder.glob("worker-*.prof"))
    assert unprofiled.returncode in (0, 1) and sorted(folder.glob("worker-*.prof")) == profiles  # off unless asked for


def test_a_gpu_worker_s_start_up_thread_fails_quietly(monkeypatch, capfd):
    # a worker begins its CUDA context on a thread beside its first case; where that fails, the case meets the
    # failure and reports it, and no traceback from the thread lands in the case's log (its crash signature)
    import threading

    from layoutfuzz.gpu.targets import base as targets
    from layoutfuzz.harness import registry

    def no_device():
        raise RuntimeError("cuInit: no CUDA-capable device is detected")

    escaped = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)  # what would print a traceback into the worker's log
    monkeypatch.setattr(targets, "retain_primary_context", no_device)
    registry.load("tma.swizzle").warm_up_worker()
    for thread in threading.enumerate():
        if thread.name == "CUDA context":
            thread.join(10)
    assert escaped == [] and capfd.readouterr().err == ""


def test_a_timeout_is_signed_with_what_its_target_says_it_was_doing():
    from layoutfuzz.reports.signatures import root_cause
    from tests.crashy_target import NamedHangTarget

    results = []
    run_cases([share("tests.crashy_target:NamedHangTarget", NamedHangTarget(), 3, [3])], results.extend, jobs=1,
              timeout_s=2)
    assert [r.outcome for r in results] == [Outcome.TIMEOUT]
    assert root_cause(results[0]) == "timeout: spinning in hang"
    results = []
    run_cases([share(SPEC, CrashyTarget(), 3, [3])], results.extend, jobs=1, timeout_s=2)
    assert root_cause(results[0]) == "timeout"  # a target that names nothing: one root cause
