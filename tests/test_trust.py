"""Reports and stores are data, not code: what a downloaded report or campaign names is never
imported on its own, every file is checked against its schema before use, and the HTML stays inert."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from layoutfuzz.harness import trust
from layoutfuzz.reports import schema
from tests.test_cli import CRASHY, layoutfuzz

EVIL = "tests.sideeffect:Target"  # importing it leaves a mark file


def _mark(tmp_path: Path) -> dict[str, str]:
    return {"SIDEEFFECT_MARK": str(tmp_path / "MARK")}


def _one_line_refusal(done, *needles: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """A finished campaign of a target that is not installed (named with --target): crash and diverge reports."""
    home = tmp_path_factory.mktemp("campaign")
    run = layoutfuzz("run", "--target", CRASHY, "--cases", "6", "--timeout", "2", "--jobs", "2", "-q", "--out", "out", cwd=home)
    assert run.returncode == 0, run.stderr
    return home


def _copy(campaign: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(campaign / "out", tmp_path / "out")
    return tmp_path / "out"


def _edit(path: Path, **fields) -> None:
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


def test_a_report_naming_code_imports_nothing_and_says_how_to_trust_it(campaign, tmp_path):
    out = _copy(campaign, tmp_path)
    report = out / "reports" / "test.crashy-0-4.json"
    assert json.loads(report.read_text())["reproduce"].endswith(f"--target {CRASHY}")  # the one command, trust stated
    _edit(report, target_spec=EVIL)
    done = layoutfuzz("reproduce", str(report), cwd=tmp_path, env=_mark(tmp_path))
    _one_line_refusal(done, EVIL, f"--target {EVIL}")
    assert not (tmp_path / "MARK").exists()
    # the user's own choice on the command line runs it as before
    trusted = layoutfuzz("reproduce", str(report), "--target", CRASHY, cwd=tmp_path, env=_mark(tmp_path))
    assert trusted.returncode == 1 and "outcome: diverge" in trusted.stdout and "-> reproduced" in trusted.stdout
    assert not (tmp_path / "MARK").exists()


def test_a_builtin_target_name_loads_the_installed_target_whatever_the_spec_says(tmp_path):
    pytest.importorskip("triton._C.libtriton")
    case = {"target": "triton.linear_layout", "seed": 0, "index": 0,
            "params": {"op": "apply", "kind": "arbitrary", "layout": {"bases": [["register", [[1]]]], "out_dims": [["dim0", 2]]}}}
    report = {"schema": 1, "case": case, "target": "triton.linear_layout", "target_spec": EVIL, "outcome": "diverge"}
    (tmp_path / "r.json").write_text(json.dumps(report))
    done = layoutfuzz("reproduce", "r.json", cwd=tmp_path, env=_mark(tmp_path))
    assert done.returncode == 0 and "outcome: pass" in done.stdout, done.stdout + done.stderr
    assert not (tmp_path / "MARK").exists()


def test_a_case_file_or_case_id_naming_code_is_refused(tmp_path):
    (tmp_path / "case.json").write_text(json.dumps({"target": EVIL, "seed": 0, "index": 0, "params": {}}))
    for args in (["reproduce", "case.json"], ["reduce", "case.json"], [  # a case id names a target too
            "reproduce", f"{EVIL}/0/1"], ["kernels", "--case", "case.json"]):
        done = layoutfuzz(*args, cwd=tmp_path, env=_mark(tmp_path))
        _one_line_refusal(done, EVIL)
        assert not (tmp_path / "MARK").exists(), args


def test_a_store_naming_code_is_refused_by_resume_and_reproduce_and_ignored_by_readers(campaign, tmp_path):
    out = _copy(campaign, tmp_path)
    db = sqlite3.connect(out / "layoutfuzz.sqlite")
    with db:
        db.execute("UPDATE campaign SET value = ? WHERE key = 'targets'", (json.dumps([EVIL]),))
    db.close()
    resume = layoutfuzz("run", "--out", "out", "--resume", cwd=tmp_path, env=_mark(tmp_path))
    _one_line_refusal(resume, EVIL, f"--target {EVIL}")
    by_id = layoutfuzz("reproduce", "test.crashy/0/4", "--out", "out", cwd=tmp_path, env=_mark(tmp_path))
    _one_line_refusal(by_id, EVIL)
    for reading in (["table", "--out", "out"], ["buckets", "--out", "out"]):
        shown = layoutfuzz(*reading, cwd=tmp_path, env=_mark(tmp_path))
        assert shown.returncode == 0 and "test.crashy" in shown.stdout, shown.stderr
    assert not (tmp_path / "MARK").exists()


def test_resume_runs_a_stored_plugin_target_when_the_user_names_it(campaign, tmp_path):
    _copy(campaign, tmp_path)
    refused = layoutfuzz("run", "--out", "out", "--resume", cwd=tmp_path)
    _one_line_refusal(refused, CRASHY, f"--target {CRASHY}")
    resumed = layoutfuzz("run", "--out", "out", "--resume", "--target", CRASHY, "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr


def test_builtin_specs_written_before_the_rename_still_name_their_target():
    assert trust.trusted_spec("harness.targets.triton_layouts:TritonLayouts", "a store") == \
        "layoutfuzz.harness.targets.triton_layouts:TritonLayouts"
    assert trust.trusted_spec("gpu.targets.tma_swizzle:TmaSwizzle", "a store") == "layoutfuzz.gpu.targets.tma_swizzle:TmaSwizzle"
    with pytest.raises(trust.UntrustedTarget, match="this:s"):
        trust.trusted_spec("this:s", "a report")
    with pytest.raises(trust.UntrustedTarget, match="test.crashy.*not an installed target"):  # a name alone
        trust.trusted_spec("test.crashy", "a case file", "test.crashy")
    assert trust.trusted_spec(CRASHY, "a report", grants=[CRASHY]) == CRASHY


REPORT = {"schema": 1, "case": {"target": "test.crashy", "seed": 0, "index": 4, "params": {"value": 3}},
          "target": "test.crashy", "target_spec": CRASHY, "outcome": "diverge", "bucket": "0123456789ab"}


@pytest.mark.parametrize(("change", "message"), [
    ({"schema": 2}, "schema"),
    ({"unknown_field": 1}, "Additional properties"),
    ({"outcome": "exploded"}, "outcome"),
    ({"case": {"target": "test.crashy", "seed": -1, "index": 4, "params": {}}}, "case/seed"),
    ({"case": {"target": "test.crashy", "seed": 0, "index": 4, "params": []}}, "case/params"),
    ({"case": {"target": "test.crashy", "seed": 0, "index": 4, "params": {}, "code": "x"}}, "Additional properties"),
    ({"detail": "x" * (schema.TEXT + 1)}, "too long"),
    ({"first_mismatches": "not a list"}, "first_mismatches"),
    ({"reduced_case_file": "../../elsewhere.json"}, "reduced_case_file"),
    ({"target": "test.other"}, "not its case's"),
    ({"case_id": "test.crashy/0/5"}, "case_id"),
    ({"versions": {"python": 3}}, "versions/python"),
])
def test_reports_are_checked_against_their_schema_before_use(tmp_path, change, message):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({**REPORT, **change}))
    with pytest.raises(schema.SchemaError, match=message):
        schema.load_report(path)
    done = layoutfuzz("reproduce", str(path), "--target", CRASHY, cwd=tmp_path)
    _one_line_refusal(done, "not a valid layoutfuzz report")


def test_a_valid_report_passes_and_files_are_strict_and_bounded(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(REPORT))
    assert schema.load_report(path) == REPORT
    path.write_text(json.dumps(REPORT).replace('"value": 3', '"value": NaN'))
    with pytest.raises(schema.SchemaError, match="NaN is not JSON"):
        schema.load_report(path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(schema.SchemaError):
        schema.load_document(path)
    with open(path, "wb") as handle:  # sparse: larger than any report, without writing it
        handle.truncate(schema.MAX_FILE_BYTES + 1)
    with pytest.raises(schema.SchemaError, match="larger than any layoutfuzz report"):
        schema.load_document(path)


def test_a_store_is_checked_before_its_rows_are_used(campaign, tmp_path):
    out = _copy(campaign, tmp_path)
    db = sqlite3.connect(out / "layoutfuzz.sqlite")
    with db:  # a report path that leaves the campaign directory
        db.execute("UPDATE outcomes SET report = '../../../../etc/passwd' WHERE idx = 4")
    done = layoutfuzz("reproduce", "test.crashy/0/4", "--out", "out", "--target", CRASHY, cwd=tmp_path)
    _one_line_refusal(done, "outside its reports folder")
    shown = layoutfuzz("buckets", "--out", "out", cwd=tmp_path)
    _one_line_refusal(shown, "outside its reports folder")
    with db:
        db.execute("UPDATE outcomes SET report = NULL, case_json = '{\"target\": \"test.crashy\", \"seed\": 0}' WHERE idx = 4")
    done = layoutfuzz("reproduce", "test.crashy/0/4", "--out", "out", "--target", CRASHY, cwd=tmp_path)
    _one_line_refusal(done, "not a valid layoutfuzz case")
    with db:
        db.execute("UPDATE campaign SET value = '\"all of them\"' WHERE key = 'seed'")
    db.close()
    for args in (["run", "--out", "out", "--resume", "--target", CRASHY], ["table", "--out", "out"]):
        _one_line_refusal(layoutfuzz(*args, cwd=tmp_path), "not a valid layoutfuzz campaign", "seed")


def test_the_html_report_keeps_markup_from_the_system_under_test_inert(tmp_path):
    pytest.importorskip("matplotlib")
    run = layoutfuzz("run", "--target", "tests.crashy_target:MarkupTarget", "--cases", "4", "-q", "--out", "out",
                     cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert layoutfuzz("html", "--out", "out", cwd=tmp_path).returncode == 0
    pages = {"report.html": (tmp_path / "out" / "report.html").read_text(),
             "table.html": (tmp_path / "out" / "table.html").read_text(),
             "buckets": layoutfuzz("buckets", "--out", "out", "--format", "html", cwd=tmp_path).stdout}
    for name, page in pages.items():
        assert "test.markup" in page, name
        assert "<script" not in page.lower() and "<img src=x" not in page.lower(), name  # no tag of theirs is live
    assert "&lt;script&gt;" in pages["report.html"] and "&lt;script&gt;" in pages["table.html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages["report.html"]  # the crash's output, shown as text
