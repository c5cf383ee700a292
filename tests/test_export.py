"""``layoutfuzz export``: each CPU system's ledger entry becomes a script that runs without layoutfuzz (a clean
environment, an empty folder) and exits 1 where the ledger says the release is bad, 0 where it says good; the issue
draft; the refusals; ``known report`` and ``known list``'s counts."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from layoutfuzz.harness.cli import main
from layoutfuzz.harness.export import clean_env, run_script
from layoutfuzz.reports import ledger

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "layoutfuzz-known.toml"
ENVS = Path.home() / ".cache" / "layoutfuzz" / "envs"
CASES = "docs/results/cases/"


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module}")


def _export(case_file: str, to: Path, capsys) -> Path:
    assert main(["export", str(ROOT / CASES / case_file), "--to", str(to), "--known", str(LEDGER)]) == 0
    folder = to / Path(case_file).stem
    assert (folder / "ISSUE.md").is_file()
    return folder / "repro.py"


def _standalone(script: Path) -> str:
    text = script.read_text()
    assert "import layoutfuzz" not in text and "from layoutfuzz" not in text
    return text


@pytest.mark.parametrize("case_file, module", [
    ("pycute-complement-size-0.json", "pycute"),
    ("pycute-swizzle-shift-0-recursion.json", "pycute"),
])
def test_pycute_reproducer_exits_1_on_the_installed_release(tmp_path, capsys, case_file, module):
    _needs(module)
    script = _export(case_file, tmp_path, capsys)
    _standalone(script)
    run = run_script(script)
    assert run.returncode == 1, run.output
    assert "expected:" in run.output and "observed:" in run.output


@pytest.mark.slow
@pytest.mark.parametrize("case_file", ["cute-dsl-composition-carry.json", "cute-dsl-product-sigfpe.json"])
def test_cute_dsl_reproducer_exits_1_on_the_installed_release(tmp_path, capsys, case_file):
    _needs("cutlass")
    run = run_script(_export(case_file, tmp_path, capsys))
    assert run.returncode == 1, run.output


@pytest.mark.slow
def test_mosaic_reproducer_exits_1_on_the_installed_release(tmp_path, capsys):
    _needs("jax")
    script = _export("mosaic-canonicalize-raises.json", tmp_path, capsys)
    run = run_script(script)
    assert run.returncode == 1, run.output
    assert "absltest" in (script.parent / "ISSUE.md").read_text()


def _release_python(version: str) -> Path:
    python = ENVS / f"triton-{version}-py311" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no cached Triton {version} environment under {ENVS}")
    return python


@pytest.mark.slow
@pytest.mark.parametrize("case_file, version, code", [
    ("linear-layout-invert-and-compose-abort.json", "3.8.0", 1),  # ledger: first bad <=3.6.0, first good 3.9.0
    ("linear-layout-invert-and-compose-abort.json", "3.9.0", 0),
    ("layouts-shared-abort.json", "3.6.0", 1),  # first good 3.7.0
    ("layouts-shared-abort.json", "3.7.1", 0),
    ("layouts-unswizzled-transposed-rank3.json", "3.7.1", 0),  # first bad 3.8.0
    ("layouts-unswizzled-transposed-rank3.json", "3.8.0", 1),
    ("gluon-default-nvmma-cga-halves.json", "3.6.0", 1),  # get_default_for's refusal; first good 3.7.0
    ("gluon-default-nvmma-cga-halves.json", "3.7.1", 0),
])
def test_triton_reproducer_follows_the_ledger_range(tmp_path, capsys, case_file, version, code):
    _needs("triton")
    python = _release_python(version)
    script = _export(case_file, tmp_path, capsys)
    _standalone(script)
    problem = next(p for p in dict.fromkeys(ledger.load(LEDGER).values()) if p.reproducer == CASES + case_file)
    assert problem.present_in(version, lambda v: tuple(int(x) for x in v.split("."))) is bool(code)
    run = run_script(script, str(python))
    assert run.returncode == code, run.output


def test_clean_environment_has_no_layoutfuzz(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text("import importlib.util, sys\nsys.exit(1 if importlib.util.find_spec('layoutfuzz') else 0)\n")
    env = clean_env()
    assert env["PYTHONPATH"] == "" and "VIRTUAL_ENV" not in env
    # the venv installs layoutfuzz in development mode: only a python outside it proves the script needs none
    outside = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if outside is None:
        pytest.skip("no system python3")
    assert subprocess.run([outside, str(script)], env=env, cwd=tmp_path).returncode == 0


def test_issue_draft_has_every_section(tmp_path, capsys):
    _needs("pycute")
    issue = (_export("pycute-complement-size-0.json", tmp_path, capsys).parent / "ISSUE.md").read_text()
    for heading in ("# [pycute]", "## Summary", "## Reproducer", "## Expected and observed", "## Releases",
                    "## Versions and toolchain", "## Attribution", "## Regression test (pytest)"):
        assert heading in issue
    assert "def test_" in issue and "nvidia-cutlass" in issue


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["export", "not-a-finding", "--to", str(tmp_path), "--known", str(LEDGER)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "neither a bucket id" in err


def test_a_target_without_a_reproducer_is_refused_by_name(tmp_path, capsys):
    assert main(["export", str(ROOT / CASES / "tma-encode-interleave-32b-accepted.json"), "--to", str(tmp_path),
                 "--known", str(LEDGER)]) == 2
    assert "tma.encode has no reproducer script" in capsys.readouterr().err


def test_known_report_records_status_and_link(tmp_path, capsys):
    known = tmp_path / "known.toml"
    shutil.copy(LEDGER, known)
    problem = next(p for p in dict.fromkeys(ledger.load(known).values()) if p.target == "pycute.layouts")
    assert main(["known", "report", problem.bucket, "--link", "https://example.org/1", "--known", str(known)]) == 0
    after = ledger.load(known)[problem.bucket]
    assert (after.status, after.link, after.title) == ("open upstream", "https://example.org/1", problem.title)
    assert main(["known", "report", problem.bucket, "--link", "not a url", "--known", str(known)]) == 2
    assert main(["known", "report", "000000000000", "--link", "https://x.org", "--known", str(known)]) == 2


def test_known_list_counts_root_causes_per_system_and_status(tmp_path, capsys):
    main(["known", "list", "--known", str(LEDGER), "--root", str(tmp_path)])
    err = capsys.readouterr().err
    problems = list(dict.fromkeys(ledger.load(LEDGER).values()))
    pycute = sum(p.target.startswith("pycute.") for p in problems)
    assert f"pycute: {pycute} root cause(s)" in err


def test_export_has_no_import_cycle():
    run = subprocess.run([sys.executable, "-c", "import layoutfuzz.harness.cli.export, layoutfuzz.harness.export"])
    assert run.returncode == 0


def test_a_variants_bucket_exports_the_variants_reduced_case_under_its_root_cause(tmp_path, capsys):
    _needs("triton")
    from layoutfuzz.reports.signatures import bucket_of

    variant = bucket_of("triton.shared_layouts", "diverge", "not a memory layout (a zero offset basis)")
    problem = ledger.load(LEDGER)[variant]
    assert problem.target == "triton.layouts"  # one root cause, reached through triton.layouts first
    assert main(["export", variant, "--to", str(tmp_path), "--known", str(LEDGER)]) == 0
    folder = tmp_path / "shared-layouts-unswizzled-transposed-rank3-zero-offset"  # the variant's case, not the entry's
    issue = (folder / "ISSUE.md").read_text()
    assert "`triton.shared_layouts/3/36`" in issue and f"root cause `{problem.bucket}`" in issue
    assert "allocate_shared_memory" in (folder / "repro.py").read_text()
