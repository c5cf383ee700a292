"""Triage across nights: root-cause signatures, the ledger, new/known/persisting/fixed/regressed, and
reduced cases that stay valid inputs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from layoutfuzz.harness.triton_compat import parse_version
from layoutfuzz.reports import ledger
from layoutfuzz.reports.outcome import Outcome, Result
from layoutfuzz.reports.signatures import crash_signature, divergence_signature, first_error, root_cause, top_frames
from tests.test_cli import layoutfuzz

PLANTED = "tests.planted_target:PlantedTarget"

ASSERT_311 = ("killed by SIGABRT\npython3: /project/lib/Tools/LinearLayout.cpp:391: LinearLayout "
              "mlir::triton::LinearLayout::reshapeIns(ArrayRef<std::pair<StringAttr, int32_t>>) const: Assertion "
              "`llvm::all_of(newInDims, [&](auto &inDim) { return llvm::isPowerOf2_32(inDim.second); })' failed.")


# ---- signatures ----------------------------------------------------------------------------------


def test_a_crash_signature_is_the_same_on_every_interpreter_path_and_line():
    other = ASSERT_311.replace("python3:", "python3.12:").replace("/project/lib", "/home/ci/triton/lib").replace(":391:", ":402:")
    assert crash_signature(ASSERT_311) == crash_signature(other)
    assert crash_signature(ASSERT_311).startswith("SIGABRT: LinearLayout.cpp reshapeIns: assertion `llvm::all_of(")
    assert "python" not in crash_signature(ASSERT_311) and "/project" not in crash_signature(ASSERT_311)


def test_crash_signatures_name_the_function_not_its_namespace_or_template():
    lstsq = ("killed by SIGABRT\npython3: /p/LinearLayout.cpp:975: LinearLayout mlir::triton::(anonymous namespace)::lstsq("
             "const LinearLayout &, const LinearLayout &): Assertion `c < numColsA && \"Precondition broken\"' failed.")
    assert crash_signature(lstsq) == 'SIGABRT: LinearLayout.cpp lstsq: assertion `c < numColsA && "Precondition broken"\''
    assert crash_signature(ASSERT_311) != crash_signature(lstsq)


def test_first_error_prefers_assertions_then_llvm_errors_and_skips_the_pipeline_summary():
    mlir = "<unknown>:0: error: Failures have been detected while processing an MLIR pass pipeline\nLLVM ERROR: Failed to find a valid layout\n"
    assert first_error(mlir) == "LLVM ERROR: Failed to find a valid layout"
    only_summary = "<unknown>:0: error: Failures have been detected while processing an MLIR pass pipeline\n"
    assert first_error(only_summary) == ""
    assert first_error("x\nerror: WGMMA type or shape is not supported\n") == "error: WGMMA type or shape is not supported"
    assert first_error("worker exited with code 70\ndevice fault: DeviceFault: CUDA error: an illegal instruction was "
                       "encountered\nCUDA kernel errors might be asynchronously reported") == \
        "CUDA error: an illegal instruction was encountered"


def test_a_crash_without_a_message_is_signed_by_its_top_python_frames():
    dump = ("killed by SIGSEGV\nFatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n"
            '  File "/tmp/x/tests/crashy_target.py", line 37 in observed\n  File "/w/harness/runner.py", line 120 in evaluate\n')
    assert top_frames(dump) == "crashy_target.py:observed < runner.py:evaluate"
    assert crash_signature(dump) == "SIGSEGV: crashy_target.py:observed < runner.py:evaluate"


def test_divergence_signatures_drop_indices_and_counts_but_keep_the_kind():
    assert divergence_signature("a[3].lane[12]:value") == "a[].lane[]:value"
    assert divergence_signature("under-count/lemma") == "under-count/lemma"
    assert divergence_signature("") == "values differ"


def test_a_root_cause_never_depends_on_the_family_or_the_case():
    from layoutfuzz.generators.case import Case

    one = Result(Case("t", 0, 1, {"n": 5}), "f", Outcome.DIVERGE, signature="x[1]:value")
    two = Result(Case("t", 7, 9, {"n": 900}), "g", Outcome.DIVERGE, signature="x[250]:value")
    assert root_cause(one) == root_cause(two)
    from layoutfuzz.reports.signatures import bucket_key

    assert bucket_key(one) == bucket_key(two)


# ---- the ledger ---------------------------------------------------------------------------------


def test_the_ledger_round_trips_and_refuses_what_it_does_not_know(tmp_path):
    path = tmp_path / "known.toml"
    problem = ledger.KnownProblem("t", "crash", "SIGABRT: x", "t aborts", "hardware behaviour", "hardware", "TMA unit",
                                  "https://example.invalid/1")
    assert ledger.add(path, problem) is True
    assert ledger.add(path, ledger.KnownProblem("t", "crash", "SIGABRT: x", "t aborts on x")) is False  # an update
    loaded = ledger.load(path)
    assert list(loaded) == [problem.bucket] and loaded[problem.bucket].title == "t aborts on x"
    assert loaded[problem.bucket].status == "hardware behaviour"  # kept: not given anew
    path.write_text('[[problem]]\ntarget = "t"\noutcome = "crash"\nsignature = "s"\ntitle = "x"\nstatus = "maybe"\n')
    with pytest.raises(ledger.LedgerError, match="status 'maybe'"):
        ledger.load(path)
    path.write_text("not toml [")
    with pytest.raises(ledger.LedgerError):
        ledger.load(path)


# ---- nights ---------------------------------------------------------------------------------------


def _night(tmp_path, date, *extra, env=None):
    return layoutfuzz("nightly", "--root", "nights", "--date", date, "--targets", PLANTED, "--budget", "3s", "--jobs", "2",
                      "-q", "--reduce-tries", "20", "--known", "known.toml", *extra, cwd=tmp_path, env=env)


def _statuses(tmp_path, date) -> dict[str, str]:
    table = pd.read_csv(tmp_path / "nights" / date / "root-causes.csv")
    return dict(zip(table["signature"], table["status"]))


@pytest.mark.slow
def test_nights_stay_quiet_until_something_new_and_call_fixed_only_what_replays_clean(tmp_path):
    first = _night(tmp_path, "2026-02-01")
    assert first.returncode == 1 and "NEW: test.planted diverge: register bit 2 dropped" in first.stdout, first.stderr
    assert "reducing the representatives of 1 bucket(s)..." in first.stderr
    for date in ("2026-02-02", "2026-02-03"):  # another sample, the same root cause: quiet
        again = _night(tmp_path, date)
        assert again.returncode == 0, again.stdout + again.stderr
        assert _statuses(tmp_path, date) == {"register bit 2 dropped": "persisting"}
        assert "reducing" not in again.stderr  # its reduced reproducer is on file since the first night
    planted = _night(tmp_path, "2026-02-04", env={"PLANTED_NEW": "1"})
    assert planted.returncode == 1
    assert "reducing the representatives of 1 bucket(s) (1 more have a reduced reproducer on file)" in planted.stderr
    news = [line for line in planted.stdout.splitlines() if line.startswith("NEW:")]
    assert len(news) == 1 and "crash" in news[0] and "SIGABRT" in news[0]  # exactly the planted root cause
    fixed = _night(tmp_path, "2026-02-05", env={"PLANTED_FIX_A": "1"})
    assert fixed.returncode == 0 and _statuses(tmp_path, "2026-02-05")["register bit 2 dropped"] == "fixed"
    history = sqlite3.connect(tmp_path / "nights" / "history.sqlite")
    assert history.execute("SELECT fixed_night FROM root_causes WHERE signature = 'register bit 2 dropped'").fetchone() == ("2026-02-05",)
    back = _night(tmp_path, "2026-02-06")
    assert back.returncode == 1 and _statuses(tmp_path, "2026-02-06")["register bit 2 dropped"] == "regressed"
    reproducer = json.loads(next((tmp_path / "nights" / "reproducers").glob("*.json")).read_text())
    assert reproducer["target"] == "test.planted"


@pytest.mark.slow
def test_a_known_problem_is_reported_but_never_fails_a_night(tmp_path):
    first = _night(tmp_path, "2026-03-01")
    assert first.returncode == 1
    bucket = pd.read_csv(tmp_path / "nights" / "2026-03-01" / "root-causes.csv")["bucket"].iloc[0]
    added = layoutfuzz("known", "add", str(bucket), "--root", "nights", "--known", "known.toml", "--title", "bit 2 dropped",
                       "--attribution", "hardware", "--status", "hardware behaviour", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    fresh = layoutfuzz("nightly", "--root", "other", "--date", "2026-03-02", "--targets", PLANTED, "--budget", "3s",
                       "--jobs", "2", "-q", "--reduce-tries", "5", "--known", "known.toml", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr  # a root that never saw it: known from the ledger, not new
    assert "reducing" not in fresh.stderr  # the ledger's root cause is not reduced again
    assert _statuses_root(tmp_path / "other" / "2026-03-02") == {"register bit 2 dropped": "known: hardware behaviour"}
    listed = layoutfuzz("known", "list", "--root", "nights", "--known", "known.toml", "--format", "csv", cwd=tmp_path)
    assert listed.returncode == 0 and "bit 2 dropped" in listed.stdout and "2026-03-01" in listed.stdout
    missing = layoutfuzz("known", "add", "000000000000", "--root", "nights", "--known", "known.toml", "--title", "x", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1


def _statuses_root(night_dir) -> dict[str, str]:
    table = pd.read_csv(night_dir / "root-causes.csv")
    return dict(zip(table["signature"], table["status"]))


@pytest.mark.slow
def test_every_reduced_case_of_a_campaign_is_a_valid_input(tmp_path):
    pytest.importorskip("triton")
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness.registry import load

    run = layoutfuzz("run", "--targets", "triton.layouts,triton.bank_conflicts", "--cases", "40", "--jobs", "2", "-q",
                     "--out", "out", "--reduce", "--reduce-tries", "40", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    reduced = sorted((tmp_path / "out" / "reports").glob("*.reduced.json"))
    assert len(reduced) >= 2  # the shared-layout abort and the bank-conflict findings at least
    for path in reduced:
        case = Case.from_dict(json.loads(path.read_text()))
        load(case.target).validate(case)  # raises if the reducer left the generators' domain
        report = json.loads(path.with_name(path.name.replace(".reduced", "")).read_text())
        assert report["reduced_fixpoint"] is True and len(case.params_json) <= len(json.dumps(report["case"]["params"]))


REPO = Path(__file__).resolve().parent.parent
CPU_TARGETS = ("triton.linear_layout", "triton.layouts", "triton.shared_layouts", "triton.bank_conflicts", "triton.compile")
CPU_FINDINGS = sorted((p for p in dict.fromkeys(ledger.load(REPO / "layoutfuzz-known.toml").values())
                       if p.target in CPU_TARGETS), key=lambda p: p.reproducer)
# every reduced case on a CPU target of any root cause: the reproducer's and its variants' (another route to it; a
# GPU finding's compile-only variant among them)
CPU_CASES = [(p, case) for p in sorted(dict.fromkeys(ledger.load(REPO / "layoutfuzz-known.toml").values()),
                                       key=lambda p: p.reproducer) for case in p.cases
             if json.loads((REPO / case).read_text())["target"] in CPU_TARGETS]


def test_every_cpu_finding_of_the_ledger_has_a_reproducer_and_a_range():
    assert len(CPU_FINDINGS) >= 4
    for problem in CPU_FINDINGS:
        assert (REPO / problem.reproducer).is_file(), problem.title
        assert problem.first_bad and problem.bisected, f"bisect it: layoutfuzz bisect {problem.reproducer}"


@pytest.mark.parametrize("problem, case_file", CPU_CASES, ids=[Path(c).stem for _, c in CPU_CASES])
def test_each_cpu_finding_reproduces_exactly_where_its_range_says(problem, case_file):
    # the ledger's range (from `layoutfuzz bisect`) says whether this Triton has the problem: where it does, the
    # reduced case lands in one of the problem's buckets; where it does not, the case passes (a masked release is
    # the reproducer's route's: another failure comes first there)
    triton = pytest.importorskip("triton")
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness.registry import load, resolve
    from layoutfuzz.harness.runner import Runner
    from layoutfuzz.reports.signatures import bucket_key

    case = Case.from_dict(json.loads((REPO / case_file).read_text()))
    target = load(case.target)
    target.validate(case)
    with Runner(jobs=1, timeout_s=120) as runner:
        runner.submit(resolve(case.target), case, target.family(case))
        (result,) = runner.results()
    if triton.__version__ in problem.masked:  # another failure comes first under this release, on the reproducer's route
        if case_file == problem.reproducer:
            assert result.outcome is not Outcome.PASS and bucket_key(result) not in problem.buckets
    elif problem.present_in(triton.__version__, parse_version):
        assert bucket_key(result) in problem.buckets, (result.outcome, root_cause(result))
    else:
        assert result.outcome is Outcome.PASS, (triton.__version__, result.outcome, root_cause(result))


@pytest.mark.parametrize("name", ["triton.linear_layout", "triton.layouts", "triton.bank_conflicts", "triton.compile",
                                  "triton.convert_layout", "tma.swizzle", "triton.tma", "triton.wgmma"])
def test_each_targets_own_shrinks_offer_valid_smaller_cases(name):
    # the reducer tries a target's own shrinks first: most generated cases must have a valid, smaller one
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness.reduce import size
    from layoutfuzz.harness.registry import load
    from layoutfuzz.harness.target import make_case

    target = load(name)
    with_valid = 0
    for index in range(30):
        case = make_case(target, 0, index)
        valid = []
        for params in target.shrink(case):
            smaller = Case(case.target, case.seed, case.index, params)
            try:
                target.validate(smaller)
            except (ValueError, KeyError, TypeError):
                continue
            if size(params) < size(case.params):  # what the reducer accepts as a step
                valid.append(smaller)
        with_valid += bool(valid)
        assert case.params == make_case(target, 0, index).params  # shrinking never edits the case it shrinks
    assert with_valid >= 15, f"only {with_valid} of 30 cases had a valid shrink of {name}'s own"


def test_a_clean_night_exits_0_and_writes_its_junit(tmp_path):
    # a night without a single problem still judges, reports and passes
    night = layoutfuzz("nightly", "--root", "nights", "--date", "2026-04-01", "--targets", "tests.crashy_target:SlowTarget",
                       "--budget", "2s", "--jobs", "2", "-q", "--known", "known.toml", cwd=tmp_path)
    assert night.returncode == 0, night.stderr
    assert (tmp_path / "nights" / "2026-04-01" / "junit.xml").exists()
