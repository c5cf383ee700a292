"""Bisect answers only what it asked: a replay that could not run is neither good nor bad, no range is claimed
from refused replays, and prebuilt kernels stand in for a release only for a target that runs them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from layoutfuzz.harness import environments
from layoutfuzz.harness.bisect import Replay, bisect, kernels_refusal, replay
from layoutfuzz.harness.campaign import UsageError
from layoutfuzz.harness.cli.versions import BisectSettings, run_bisect
from layoutfuzz.harness.environments import TritonEnvironment

REPO = Path(__file__).resolve().parent.parent
CPU_CASE = REPO / "docs" / "results" / "cases" / "layouts-unswizzled-transposed-rank3.json"  # triton.layouts
GPU_CASE = REPO / "docs" / "results" / "cases" / "convert-layout-8bit-min.json"  # triton.convert_layout: prebuilt kernels


def _refusing_environment(tmp_path: Path, version: str) -> TritonEnvironment:
    """An environment whose ``reproduce`` refuses at once (exit 2, one line, no verdict), as a broken or
    mismatched environment does."""
    python = tmp_path / "refusing-python"
    python.write_text("#!/bin/sh\necho 'layoutfuzz: error: this environment refuses the case' >&2\nexit 2\n")
    python.chmod(0o755)
    return TritonEnvironment(version, python, version)


def _settings(tmp_path: Path, case: str, **given) -> BisectSettings:
    values = dict(case=case, triton="3.6.0,3.9.0", kernels=None, timeout=30.0, out=str(tmp_path / "out"),
                  root=str(tmp_path / "nightly"), known=str(tmp_path / "known.toml"), record=True)
    return BisectSettings(**{**values, **given})


# ---- the search itself, with fake replays -----------------------------------------------------------------


def _replays(states: dict[str, str], bucket: str = "b1"):
    def run(version: str) -> Replay:
        outcome, got = {"bad": ("crash", bucket), "good": ("pass", ""), "refused": ("refused", ""),
                        "unsupported": ("unsupported", "u1")}[states[version]]
        return Replay(version, version, outcome, got, "no verdict" if outcome == "refused" else "")
    return run


def test_when_every_replay_is_refused_bisect_claims_nothing():
    found = bisect(["3.6.0", "3.9.0"], _replays({"3.6.0": "refused", "3.9.0": "refused"}))
    assert found.stopped and not found.first_bad and not found.first_good
    assert "refused" in found.summary() and "not reproduced" not in found.summary()
    assert found.checked() == "3.6.0 refused, 3.9.0 refused"


def test_a_refused_or_unsupported_replay_is_neither_good_nor_bad():
    assert Replay("3.6.0", "3.6.0", "refused", "", "x").state("") == "refused"
    assert Replay("3.6.0", "3.6.0", "unsupported", "u1", "no GPU").state("u1") == "refused"
    assert Replay("3.6.0", "3.6.0", "crash", "", "").state("") == "other"  # no bucket asked: nothing is 'bad'
    versions = ["3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0"]
    found = bisect(versions, _replays({"3.6.0": "bad", "3.7.0": "bad", "3.7.1": "refused", "3.8.0": "good", "3.9.0": "good"}), "b1")
    assert found.stopped and "3.7.1" in found.stopped and "refused" in found.stopped and not found.first_good


def test_a_refused_end_is_set_aside_and_said_to_be_refused():
    found = bisect(["3.6.0", "3.7.0", "3.9.0"], _replays({"3.6.0": "refused", "3.7.0": "bad", "3.9.0": "bad"}), "b1")
    assert found.first_bad == "3.7.0" and found.masked == ("3.6.0",)  # not '<=3.6.0': 3.6.0 said nothing
    assert "3.6.0: replay refused" in found.summary() and "another failure" not in found.summary()
    found = bisect(["3.6.0", "3.9.0"], _replays({"3.6.0": "refused", "3.9.0": "good"}))
    assert found.summary() == "not reproduced under any of 3.9.0 (3.6.0: replay refused)"


def test_a_replay_without_a_verdict_is_refused(tmp_path):
    got = replay(_refusing_environment(tmp_path, "3.6.0"), CPU_CASE, 10)
    assert got.outcome == "refused" and got.state("") == "refused" and "refuses the case" in got.signature


# ---- the command ------------------------------------------------------------------------------------------


def test_bisect_of_a_case_whose_replays_are_all_refused_says_so_and_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(environments, "for_release", lambda version: _refusing_environment(tmp_path, version))
    code = run_bisect(_settings(tmp_path, str(CPU_CASE)))
    out = capsys.readouterr().out
    assert code == 1 and "every replay was refused" in out and "replayed: 3.6.0 refused, 3.9.0 refused" in out
    assert " bad" not in out and "not reproduced" not in out


def test_bisect_of_a_ledger_bucket_whose_replays_are_all_refused_writes_no_range(tmp_path, monkeypatch, capsys):
    from tests.conftest import known_problem

    problem = known_problem("layouts-unswizzled-transposed-rank3.json")
    shutil.copy(REPO / "layoutfuzz-known.toml", tmp_path / "known.toml")
    (tmp_path / problem.reproducer).parent.mkdir(parents=True)
    shutil.copy(REPO / problem.reproducer, tmp_path / problem.reproducer)
    before = (tmp_path / "known.toml").read_text()
    monkeypatch.setattr(environments, "for_release", lambda version: _refusing_environment(tmp_path, version))
    code = run_bisect(_settings(tmp_path, problem.bucket))
    out = capsys.readouterr().out
    assert code == 1 and "refused" in out and "recorded" not in out
    assert (tmp_path / "known.toml").read_text() == before


def test_kernels_are_refused_for_a_target_that_runs_none(tmp_path, monkeypatch):
    for version in ("3.6.0", "3.9.0"):
        (tmp_path / "kernels" / f"triton-{version}").mkdir(parents=True)
    # were it replayed, each "release" would be this interpreter's own Triton: fake it, so that nothing runs here
    monkeypatch.setattr(environments, "for_kernels", lambda folder: _refusing_environment(tmp_path, folder.name[7:]))
    with pytest.raises(UsageError) as refused:
        run_bisect(_settings(tmp_path, str(CPU_CASE), kernels=str(tmp_path / "kernels")))
    message = str(refused.value)
    assert "triton.layouts has no prebuilt kernels" in message and "\n" not in message
    assert not (tmp_path / "known.toml").exists()


def test_kernels_are_accepted_for_a_target_that_runs_prebuilt_kernels():
    pytest.importorskip("triton")
    assert kernels_refusal(GPU_CASE) == ""
    assert "no prebuilt kernels" in kernels_refusal(CPU_CASE)


def test_the_refusal_is_one_line_and_exit_2_from_the_command_line(tmp_path):
    from tests.test_cli import layoutfuzz

    for version in ("3.6.0", "3.9.0"):
        (tmp_path / "kernels" / f"triton-{version}").mkdir(parents=True)
    done = layoutfuzz("bisect", str(CPU_CASE), "--kernels", "kernels", "--no-record", cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no prebuilt kernels" in done.stderr, done.stderr
