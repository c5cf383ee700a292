"""Every Triton: the version adapters, per-version environments, the matrix and bisect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness import environments
from layoutfuzz.harness.bisect import Replay, bisect
from layoutfuzz.harness.environments import EnvironmentFailure, release_range
from layoutfuzz.harness.matrix import pass_rates, root_cause_grid, version_span
from layoutfuzz.harness.triton_compat import parse_version
from layoutfuzz.reports.ledger import KnownProblem
from tests.test_cli import ROOT, layoutfuzz

# ---- bisect ----------------------------------------------------------------------------------

VERSIONS = ["3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0", "3.10.0", "3.11.0", "3.12.0", "3.13.0"]


def _history(states: dict[str, str], bucket: str = "b1"):
    """A fake replay per version from 'bad', 'good' or 'other', counting the replays."""
    calls = []

    def run(version: str) -> Replay:
        calls.append(version)
        state = states[version]
        outcome, got = {"bad": ("crash", bucket), "good": ("pass", ""), "other": ("diverge", "b2")}[state]
        return Replay(version, version, outcome, got, "sig" if got else "")

    return run, calls


@pytest.mark.parametrize("fixed_at", range(1, len(VERSIONS)))
def test_bisect_finds_the_release_that_fixed_a_problem_in_few_replays(fixed_at):
    states = {v: "bad" if i < fixed_at else "good" for i, v in enumerate(VERSIONS)}
    run, calls = _history(states)
    found = bisect(VERSIONS, run)
    assert (found.first_bad, found.first_good, found.last_good, found.stopped) == ("<=3.6.0", VERSIONS[fixed_at], "", "")
    assert len(calls) <= 2 + 3  # both ends, then log2(9) rounded up
    assert found.summary() == f"first bad <=3.6.0; first good {VERSIONS[fixed_at]}"


@pytest.mark.parametrize("broken_at", range(1, len(VERSIONS)))
def test_bisect_finds_the_release_that_broke_something(broken_at):
    states = {v: "good" if i < broken_at else "bad" for i, v in enumerate(VERSIONS)}
    run, _ = _history(states)
    found = bisect(VERSIONS, run, "b1")
    assert (found.first_bad, found.last_good, found.first_good) == (VERSIONS[broken_at], VERSIONS[broken_at - 1], "")
    assert "still bad in 3.13.0" in found.summary()


def test_without_a_bucket_bisect_follows_the_problem_the_newest_release_shows():
    states = {v: "other" if i < 4 else "bad" for i, v in enumerate(VERSIONS)}  # b2 until 3.8.0, then b1
    run, _ = _history(states)
    found = bisect(VERSIONS, run)
    assert found.bucket == "b1" and found.first_bad == "3.9.0" and found.masked == ("3.6.0", "3.7.0", "3.7.1", "3.8.0")


def test_bisect_says_when_a_problem_is_everywhere_or_nowhere_or_another_one_gets_in_the_way():
    run, calls = _history(dict.fromkeys(VERSIONS, "bad"))
    found = bisect(VERSIONS, run)
    assert found.first_bad == "<=3.6.0" and not found.first_good and len(calls) == 2
    run, _ = _history(dict.fromkeys(VERSIONS, "good"))
    assert bisect(VERSIONS, run, "b1").summary().startswith("not reproduced")
    states = {v: "bad" if i < 3 else "good" for i, v in enumerate(VERSIONS)}
    states["3.9.0"] = "other"  # the middle replay fails another way: no range is claimed
    run, _ = _history(states)
    found = bisect(VERSIONS, run, "b1")
    assert found.stopped and "another root cause" in found.stopped and not found.first_good
    assert "3.9.0 other" in found.checked()


def test_bisect_sets_aside_releases_where_another_failure_comes_first():
    # 3.6.0 and 3.7.0 abort before the problem can show (another root cause); it is present from 3.7.1 and gone in 3.11.0
    states = {v: "bad" for v in VERSIONS}
    states.update({"3.6.0": "other", "3.7.0": "other", "3.11.0": "good", "3.12.0": "good", "3.13.0": "good"})
    run, _ = _history(states)
    found = bisect(VERSIONS, run, "b1")
    assert found.masked == ("3.6.0", "3.7.0")
    assert (found.first_bad, found.first_good) == ("3.7.1", "3.11.0")
    assert "another failure comes first" in found.summary()


# ---- releases, ledger ranges -----------------------------------------------------------------


def test_release_ranges_and_bad_versions():
    assert release_range("3.6.0..3.9.0") == ["3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0"]
    assert release_range("3.9.0,3.6.0") == ["3.6.0", "3.9.0"]
    assert release_range("3.7.1..3.10.0")[-1] == "3.10.0"  # a release newer than the list is kept
    for bad in ("3.5.1", "banana", "3.9", "", "3.6.0..x", "3.8.0..3.7.1"):
        with pytest.raises(EnvironmentFailure):
            release_range(bad)
    assert parse_version("3.10.0+git1a2b") == (3, 10, 0) and parse_version("3.8.0rc1") == (3, 8, 0)


def test_a_ledger_range_says_which_releases_have_the_problem():
    fixed = KnownProblem("t", "crash", "s", "x", first_bad="<=3.6.0", first_good="3.8.0")
    assert [fixed.present_in(v, parse_version) for v in ("3.6.0", "3.7.1", "3.8.0", "3.9.0")] == [True, True, False, False]
    regression = KnownProblem("t", "crash", "s", "x", first_bad="3.8.0")
    assert [regression.present_in(v, parse_version) for v in ("3.7.1", "3.8.0", "3.10.0")] == [False, True, True]
    assert KnownProblem("t", "crash", "s", "x").present_in("3.9.0", parse_version) is None


# ---- the matrix's tables ---------------------------------------------------------------------


def _rows(target, outcomes, bucket="", family="f", signature="sig"):
    return [{"target": target, "family": family, "outcome": o, "seed": 0, "idx": i, "bucket": bucket if o != "pass" else "",
             "signature": signature if o != "pass" else "", "detail": "", "report": "", "metrics": None}
            for i, o in enumerate(outcomes)]


def test_the_root_cause_grid_says_present_absent_or_unsupported_per_version():
    old = pd.DataFrame(_rows("a", ["pass", "crash", "crash"], "k1") + _rows("b", ["pass", "diverge"], "k2", signature="d"))
    new = pd.DataFrame(_rows("a", ["pass", "pass", "pass"]) + _rows("b", ["unsupported"]))
    grid = root_cause_grid({"3.6.0": old, "3.9.0": new}).set_index("bucket")
    assert grid.loc["k1", "3.6.0"] == "present (2)" and grid.loc["k1", "3.9.0"] == "absent"
    assert grid.loc["k1", "versions"] == "3.6.0 only"
    assert grid.loc["k2", "3.9.0"] == "unsupported"  # b could not run under 3.9.0: no claim either way
    rates = pass_rates({"3.6.0": old, "3.9.0": new}).set_index(["target", "family"])
    assert rates.loc[("a", "(all)"), "3.6.0"] == "33.33" and rates.loc[("a", "(all)"), "3.9.0"] == "100.00"
    assert rates.loc[("b", "(all)"), "3.9.0"] == "unsupported"
    assert rates.loc[("a", "(all)"), "cases 3.9.0"] == 3


def test_version_spans_read_as_words():
    labels = ["3.6.0", "3.7.1", "3.8.0", "3.9.0"]
    assert version_span(labels, labels) == "all"
    assert version_span([], labels) == "none"
    assert version_span(["3.6.0", "3.7.1"], labels) == "3.6.0 to 3.7.1"
    assert version_span(["3.6.0", "3.9.0"], labels) == "3.6.0, 3.9.0"


# ---- environments and the commands, end to end -----------------------------------------------


def test_the_linked_source_holds_only_layoutfuzz_packages(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTFUZZ_CACHE", str(tmp_path))
    folder = environments.linked_source()
    assert [p.name for p in folder.iterdir()] == ["layoutfuzz"]
    assert sorted(p.name for p in (folder / "layoutfuzz").iterdir()) == sorted(environments.PACKAGES)
    assert (folder / "layoutfuzz" / "harness" / "cli" / "__init__.py").is_file()
    # an interpreter without site-packages finds layoutfuzz's code there, under its one import name
    found = subprocess.run([sys.executable, "-S", "-c", "import layoutfuzz; print(*layoutfuzz.__path__)"],
                           env={"PYTHONPATH": str(folder)}, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert (Path(found.stdout.strip()) / "harness").resolve() == ROOT / "harness"
    assert environments.requirements() and not any(r.startswith(("triton", "uv")) for r in environments.requirements())


def test_matrix_and_bisect_refuse_bad_input_in_one_line(tmp_path):
    for args in (["matrix", "--targets", "triton.layouts"], ["matrix", "--triton", "2.3.1"], ["matrix", "--triton", "3.9"],
                 ["matrix", "--triton-python", str(tmp_path / "nopython")], ["bisect", "nothing-here"],
                 ["matrix", "--triton-wheel", str(tmp_path)]):
        done = layoutfuzz(*args, cwd=tmp_path, env={"LAYOUTFUZZ_CACHE": str(tmp_path / "cache")})
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.slow
def test_a_matrix_of_interpreters_runs_the_same_cases_under_each(tmp_path):
    # the user's own interpreters (--triton-python): here twice this one, under two names
    pytest.importorskip("triton")
    other = tmp_path / "bin" / "python-again"
    other.parent.mkdir()
    other.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    other.chmod(0o755)
    env = {"LAYOUTFUZZ_CACHE": str(tmp_path / "cache")}
    args = ["matrix", "--triton-python", sys.executable, "--triton-python", str(other), "--targets", "triton.linear_layout",
            "--cases", "30", "--jobs", "2", "--out", "m"]
    done = layoutfuzz(*args, cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    stores = sorted(p.name for p in (tmp_path / "m").iterdir() if p.is_dir())
    assert len(stores) == 2 and all(s.startswith("triton-") for s in stores)
    rates = pd.read_csv(tmp_path / "m" / "pass-rates.csv")
    counts = [c for c in rates.columns if c.startswith("cases ")]
    assert len(counts) == 2 and (rates[counts[0]] == rates[counts[1]]).all()  # the same cases under each
    assert (rates.loc[rates["family"] == "(all)", counts[0]] == 30).all()
    grid = pd.read_csv(tmp_path / "m" / "root-causes.csv")
    assert grid.empty or set(grid["versions"]) == {"all"}  # one Triton twice: every root cause under both
    again = layoutfuzz(*args, cwd=tmp_path, env=env, timeout=600)  # the same command resumes: nothing re-runs
    assert again.returncode == 0 and again.stderr.count("\n0 cases in") == 2, again.stderr
    changed = layoutfuzz(*args[:-2], "--seed", "5", "--out", "m", cwd=tmp_path, env=env)
    assert changed.returncode == 2 and "other settings" in changed.stderr


def test_reproduce_writes_a_verdict_that_bisect_reads(tmp_path):
    pytest.importorskip("triton")
    case = Path(__file__).resolve().parent.parent / "docs" / "results" / "cases" / "bank-conflicts-under-count.json"
    done = layoutfuzz("reproduce", str(case), "--json", str(tmp_path / "v.json"), cwd=tmp_path)
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert done.returncode == 1 and verdict["outcome"] == "diverge" and verdict["signature"] == "under-count/lemma"
    assert verdict["bucket"] and verdict["versions"]["triton"]


def test_for_python_probes_the_interpreter():
    pytest.importorskip("triton")
    import triton

    env = environments.for_python(sys.executable)
    assert env.triton == triton.__version__ and env.python == Path(sys.executable)
    assert os.pathsep in env.env()["PYTHONPATH"] or env.env()["PYTHONPATH"].endswith(str(environments.linked_source()))


# ---- kernels compiled anywhere ---------------------------------------------------------------


def test_a_compiled_kernel_survives_its_file_and_its_key_ignores_the_version():
    from layoutfuzz.gpu.prebuilt import CompiledKernel, entry_params, kernel_key

    kernel = CompiledKernel("k", "3.9.0", 4, 2048, 6, 0, 0, bytes(range(256)) * 40)
    assert CompiledKernel.from_json(kernel.to_json()) == kernel
    assert len(kernel.to_json()) < len(kernel.cubin)  # kept compressed
    ptx = ".visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0,\n\t.param .u64 k_param_1\n)\n{\n}"
    assert entry_params(ptx, "k") == 2
    params = {"shape": [4, 8], "elem_bits": 8}
    assert kernel_key("t", params) == kernel_key("t", dict(reversed(params.items())))
    assert kernel_key("t", params) != kernel_key("t", {**params, "elem_bits": 16}) != kernel_key("u", params)


@pytest.mark.slow
def test_kernels_compiles_each_case_once_per_release_and_files_rejections(tmp_path):
    pytest.importorskip("triton.experimental.gluon")
    import triton

    from layoutfuzz.gpu.prebuilt import CompiledKernel, kernel_path
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
    from layoutfuzz.harness.target import make_case

    args = ["kernels", "--targets", "triton.convert_layout", "--cases", "3", "--seed", "4", "--out", "k", "--jobs", "2", "-q"]
    done = layoutfuzz(*args, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "k" / f"triton-{triton.__version__}"
    assert "3 compiled" in done.stdout
    target = TritonConvertLayout()
    for index in range(3):
        case = make_case(target, 4, index)
        kernel = CompiledKernel.from_json(kernel_path(folder, target.name, case.params).read_text())
        assert kernel.name.startswith("convert_probe_") and kernel.cubin[:4] == b"\x7fELF"
        assert kernel.params == 4 + 2 and kernel.num_warps == case.params["num_warps"]  # 4 buffers + Triton's scratch
        assert kernel.triton == triton.__version__
    again = layoutfuzz(*args, cwd=tmp_path, timeout=600)
    assert "3 cached" in again.stdout
    # a case Triton refuses to compile (layouts over 4 warps in a 2-warp kernel) is filed with the compiler's error
    case = make_case(target, 4, 0)
    bad = dict(case.params, num_warps=case.params["num_warps"] * 2)
    (tmp_path / "bad.json").write_text(json.dumps({**case.to_dict(), "params": bad}))
    refused = layoutfuzz("kernels", "--case", "bad.json", "--out", "k", "-q", cwd=tmp_path, timeout=600)
    assert refused.returncode == 2 and "malformed case" in refused.stderr, refused.stderr  # a case file is data: validated first
    from layoutfuzz.gpu.precompile import Job, compile_all
    from layoutfuzz.harness.registry import resolve

    counts = compile_all([Job(resolve(target.name), Case.from_dict({**case.to_dict(), "params": bad}))], folder, 1, 600, True)
    assert counts == {"rejected": 1}
    assert CompiledKernel.from_json(kernel_path(folder, target.name, bad).read_text()).rejected


def test_without_a_gpu_prebuilt_kernels_are_unsupported_with_the_reason(tmp_path, monkeypatch):
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
    from layoutfuzz.gpu.targets.triton_shared_memory import TritonSharedMemory
    from layoutfuzz.gpu.targets.triton_wgmma import TritonWgmma
    from layoutfuzz.harness.triton_compat import ENV

    monkeypatch.setenv(ENV, str(tmp_path))
    assert not TritonConvertLayout().availability().available
    wgmma = TritonWgmma().availability()  # compiled ahead too, from 3.6.0 to 3.9.0: none in this folder yet
    assert not wgmma.available and "no triton.wgmma kernels in" in wgmma.reason
    monkeypatch.setenv(ENV, str(tmp_path / "none"))
    assert "no prebuilt kernels" in TritonSharedMemory().availability().reason


@pytest.mark.gpu
def test_prebuilt_kernels_give_what_the_same_kernels_give_through_triton(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTFUZZ_CACHE", str(tmp_path / "cache"))
    # the cubin paths (the kernel cache; prebuilt kernels), launched by cuda.core, against Triton's own launch
    from layoutfuzz.gpu.kernel_cache import JIT
    from layoutfuzz.gpu.prebuilt import kernel_path
    from layoutfuzz.gpu.targets.base import cuda_device_availability
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
    from layoutfuzz.gpu.targets.triton_shared_memory import TritonSharedMemory
    from layoutfuzz.harness.target import make_case
    from layoutfuzz.harness.triton_compat import ENV

    if not cuda_device_availability(9, ("torch", "cuda.core", "triton")).available:
        pytest.skip("no sm_90 CUDA device with torch, cuda.core and Triton")
    import triton

    from layoutfuzz.gpu.targets.triton_convert_layout_cluster import TritonConvertLayoutCluster
    from layoutfuzz.harness.triton_compat import parse_version

    folder = tmp_path / f"triton-{triton.__version__}"
    for target in (TritonConvertLayout(), TritonSharedMemory(), TritonConvertLayoutCluster()):  # the last: clusters
        for index in range(6):
            case = make_case(target, 9, index)
            if "scattered" in target.family(case) and parse_version(triton.__version__) < (3, 9, 0):
                continue  # aborts Triton 3.6.0's compiler (tests/test_triton_clusters.py)
            monkeypatch.setenv(JIT, "1")
            through_triton = target.observed(case)
            monkeypatch.delenv(JIT)
            assert target.observed(case) == through_triton, case.params  # the kernel cache, launched by cuda.core
            path = kernel_path(folder, target.name, case.params)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(target.compile(case).to_json())
            monkeypatch.setenv(ENV, str(folder))
            assert target.observed(case) == through_triton, case.params
            monkeypatch.delenv(ENV)


@pytest.mark.slow
def test_an_interrupted_matrix_keeps_what_ran_and_the_same_command_finishes_it(tmp_path):
    # 60,000 cases: a run of 20,000 (7 s with Triton 3.9.0) once ended on a loaded machine before its Ctrl-C arrived
    import subprocess

    pytest.importorskip("triton")
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root), LAYOUTFUZZ_CACHE=str(tmp_path / "cache"))
    cases, out = 60_000, tmp_path / "m"
    args = [sys.executable, "-m", "layoutfuzz.harness.cli", "matrix", "--triton-python", sys.executable,
            "--targets", "triton.linear_layout", "--cases", str(cases), "--jobs", "2", "--out", out.name]
    returncode, err = _interrupted_once(args, tmp_path, env, out)
    assert returncode == 130 and "resumes" in err, err
    # no traceback of the matrix, its campaign or a worker (once, Ctrl-C reached a spawned worker before its
    # initializer ignored SIGINT; workers now fork from a server that ignores it)
    assert "Traceback" not in err, err
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rates = pd.read_csv(out / "pass-rates.csv")
    assert int(rates.loc[rates["family"] == "(all)"].iloc[0, 3]) == cases  # every case once, none lost


def _interrupted_once(args: list[str], cwd: Path, env: dict, out: Path) -> tuple[int, str]:
    """Starts the matrix, sends Ctrl-C to its process group once its workers have recorded 50 cases, and returns its
    exit status and stderr."""
    import signal
    import sqlite3
    import subprocess
    import time

    # Ctrl-C as a terminal delivers it: its default action in the child, whatever this process's is (a test before
    # this one, in the same pytest worker, may have left SIGINT ignored, and an ignored signal stays so across exec)
    child = subprocess.Popen(args, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def recorded() -> int:
        stores = list(out.glob("triton-*/layoutfuzz.sqlite"))
        try:
            return sqlite3.connect(stores[0]).execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] if stores else 0
        except sqlite3.Error:
            return 0

    seen = []  # the campaign's start line first (read off stderr: on a loaded machine the store alone once told too late)
    while not any(line.startswith("layoutfuzz:") for line in seen):
        line = child.stderr.readline()
        if not line:
            break
        seen.append(line)
    deadline = time.monotonic() + 60  # a loaded machine may take long to start its workers
    while recorded() < 50 and time.monotonic() < deadline:  # interrupt mid-run, with every worker up
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group, as in a terminal
    _, rest = child.communicate(timeout=300)
    return child.returncode, "".join(seen) + rest


def test_a_night_whose_replay_passes_under_a_newer_release_records_it_as_fixed_in_the_ledger(tmp_path):
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness.nightly import record_fixes, triton_release
    from layoutfuzz.reports import ledger
    from layoutfuzz.reports.triage import RootCause

    path = tmp_path / "known.toml"
    problem = KnownProblem("triton.layouts", "crash", "SIGABRT: x", "an abort", first_bad="<=3.6.0", bisected="3.6.0 bad")
    other = KnownProblem("triton.layouts", "crash", "SIGABRT: y", "another abort", first_bad="<=3.6.0", first_good="3.7.0")
    ledger.save(path, [problem, other])
    known = ledger.load(path)

    def cause(p: KnownProblem, status: str, night: str, version: str) -> RootCause:
        return RootCause(p.bucket, p.target, p.outcome, p.signature, "f", p.target, Case(p.target, 0, 0, {}), True,
                         "2026-11-01", "triton 3.6.0", night, version, status, night if status == "fixed" else None,
                         version if status == "fixed" else None)

    class Root:
        def causes(self):
            return {problem.bucket: cause(problem, "fixed", "2026-11-23", "triton 3.9.0, torch 2.11"),
                    other.bucket: cause(other, "fixed", "2026-11-23", "triton 3.9.0")}

    assert triton_release("triton 3.9.0, torch 2.11") == "3.9.0" and triton_release("torch 2.11") is None
    assert record_fixes(path, known, Root(), "2026-11-23") == [problem.bucket]  # `other`'s range already says so
    after = ledger.load(path)
    assert after[problem.bucket].first_good == "3.9.0" and "nightly 2026-11-23: passes under 3.9.0" in after[problem.bucket].bisected
    assert after[other.bucket].first_good == "3.7.0"
    assert record_fixes(path, after, Root(), "2026-11-24") == []  # only the night that saw it pass


def test_bisect_finds_a_buckets_reproducer_in_the_ledger(tmp_path):
    from layoutfuzz.harness.campaign import UsageError
    from layoutfuzz.harness.cli.versions import find_reproducer

    root = Path(__file__).resolve().parent.parent
    from tests.conftest import known_problem

    problem = known_problem("layouts-shared-abort.json")
    where = {"known": root / "layoutfuzz-known.toml", "root": tmp_path, "out": tmp_path}
    assert find_reproducer(problem.bucket, **where) == (root / problem.reproducer, problem.bucket)
    with pytest.raises(UsageError, match="neither a case or report file nor a bucket"):
        find_reproducer("000000000000", **where)
    (tmp_path / "broken.json").write_text("{not json")
    from layoutfuzz.reports.schema import SchemaError

    with pytest.raises(SchemaError, match="is not a layoutfuzz report or case"):
        find_reproducer(str(tmp_path / "broken.json"), **where)


def test_an_environment_made_by_an_older_layoutfuzz_gets_the_requirements_added_since(tmp_path, monkeypatch):
    # CI's cached 3.6.0 environment predated the jsonschema requirement: every campaign in it ended in a traceback
    import json

    from layoutfuzz.harness import environments

    folder = tmp_path / "triton-3.6.0-py311"
    folder.mkdir()
    (folder / environments.READY).write_text(json.dumps({"triton": "3.6.0", "packages": ["triton==3.6.0"]}))
    calls = []
    monkeypatch.setattr(environments, "_run", lambda command, what: calls.append(command) or "")
    monkeypatch.setattr(environments, "uv", lambda: "uv")
    env = environments._make(folder, ["triton==3.6.0"], "3.6.0")
    assert env.triton == "3.6.0"
    assert len(calls) == 1 and calls[0][:3] == ["uv", "pip", "install"]
    assert set(environments.requirements()) <= set(calls[0])
    assert json.loads((folder / environments.READY).read_text())["requirements"] == environments.requirements()
    environments._make(folder, ["triton==3.6.0"], "3.6.0")  # now up to date: nothing installed
    assert len(calls) == 1
