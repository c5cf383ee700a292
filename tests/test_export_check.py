"""``layoutfuzz export --check DIR``: exported reproducers run with layoutfuzz unimportable, each exit code judged by
the ledger's range for the installed release; a script that fails (a traceback, no verdict) is no verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from layoutfuzz.harness.cli import main
from layoutfuzz.harness.export_check import Exported, check, check_one, expected_codes, exported
from layoutfuzz.reports import ledger

PYCUTE = ledger.KnownProblem("pycute.layouts", "diverge", "swizzle: spurious refusal", "a pycute problem")
TRITON = ledger.KnownProblem("triton.layouts", "diverge", "offset bases: different", "a Triton problem",
                             first_bad="3.8.0", masked="3.6.0")


def _folder(root: Path, slug: str, problem: ledger.KnownProblem, script: str) -> Path:
    """An exported reproducer as ``layoutfuzz export`` lays it out: repro.py and an ISSUE.md naming case and bucket."""
    folder = root / slug
    folder.mkdir(parents=True)
    (folder / "repro.py").write_text(script)
    (folder / "ISSUE.md").write_text(f"# [x] {problem.title}\n\nFound by differential testing (layoutfuzz case "
                                     f"`{problem.target}/0/1`, from ledger {problem.bucket}; root cause "
                                     f"`{problem.bucket}`: {problem.signature}).\n")
    return folder


BLOCKED = ('import sys\ntry:\n    __import__("layoutfuzz")\n    print("observed: layoutfuzz imported")\n    sys.exit(0)\n'
           'except ImportError:\n    print("observed: layoutfuzz is not importable")\n    sys.exit(1)\n')


def test_the_ledgers_range_sets_the_exit_codes_allowed():
    assert expected_codes(TRITON, "3.9.0") == (1,)  # bad from 3.8.0 on
    assert expected_codes(TRITON, "3.7.1") == (0,)
    assert expected_codes(TRITON, "3.6.0") == (0, 1, 2)  # masked: another failure first on some route, not judged
    assert expected_codes(PYCUTE, "4.2.0.0") == (1,)  # no range: bad in the release it was recorded in


def test_a_script_runs_with_layoutfuzz_unimportable_and_is_judged_by_the_ledger(tmp_path):
    pytest.importorskip("pycute")
    import layoutfuzz  # noqa: F401  (importable here: the check must hide it)

    _folder(tmp_path, "blocked", PYCUTE, BLOCKED)
    _folder(tmp_path, "fixed", PYCUTE, 'print("observed: the right answer")\n')  # exit 0: the ledger says bad
    _folder(tmp_path, "broken", PYCUTE, "raise KeyError('a bug of the script')\n")
    results = {r.slug: r for r in check(tmp_path, {PYCUTE.bucket: PYCUTE}, jobs=2)}
    assert results["blocked"].ok and results["blocked"].returncode == 1, results["blocked"]
    assert results["blocked"].note == "observed: layoutfuzz is not importable"
    assert not results["fixed"].ok and results["fixed"].returncode == 0
    broken = results["broken"]  # exit 1, as a bad release gives, but a traceback and no verdict
    assert not broken.ok and broken.returncode == 1 and broken.note.startswith("no verdict: KeyError")


def test_a_system_not_installed_or_a_root_cause_not_in_the_ledger_is_not_run(tmp_path):
    folder = _folder(tmp_path, "x", PYCUTE, "raise SystemExit(1)\n")
    item = Exported("x", folder / "repro.py", "pycute.layouts", PYCUTE.bucket)
    assert check_one(item, PYCUTE, {"nvidia-cutlass": None}, sys.executable).note == "system not installed: not run"
    unknown = check_one(item, None, {"nvidia-cutlass": "4.2.0.0"}, sys.executable)
    assert unknown.ok and unknown.returncode is None and "not in the ledger" in unknown.note


def test_a_script_that_imports_layoutfuzz_fails_without_running(tmp_path):
    folder = _folder(tmp_path, "x", PYCUTE, "from layoutfuzz.oracles import cute\n")
    item = exported(tmp_path)[0]
    assert item == Exported("x", folder / "repro.py", "pycute.layouts", PYCUTE.bucket)
    result = check_one(item, PYCUTE, {"nvidia-cutlass": "4.2.0.0"}, sys.executable)
    assert not result.ok and result.returncode is None and result.note == "the script imports layoutfuzz"


def test_the_command_exits_1_on_a_wrong_exit_and_2_on_bad_input(tmp_path, capsys):
    pytest.importorskip("pycute")
    known = tmp_path / "known.toml"
    ledger.save(known, [PYCUTE])
    reports = tmp_path / "reports"
    _folder(reports, "blocked", PYCUTE, BLOCKED)
    args = ["export", "--check", str(reports), "--known", str(known)]
    assert main(args) == 0
    assert "1 reproducer(s) exited as the ledger says, 0 did not" in capsys.readouterr().err
    _folder(reports, "fixed", PYCUTE, 'print("observed: the right answer")\n')
    assert main(args) == 1
    shown = capsys.readouterr()
    assert "| NO " in shown.out and "1 did not" in shown.err
    assert main(["export", "--check", str(tmp_path / "none"), "--known", str(known)]) == 2
    assert main(["export", "--known", str(known)]) == 2
    assert capsys.readouterr().err.count("\n") == 2  # one line each
