"""Findings that leave the repository (``layoutfuzz export``): a bucket, a report, a case id or a ledger entry's
reproducer becomes a folder a maintainer can read without layoutfuzz: ``repro.py`` (the target's
``reproducer_script``: only the system under test, expected and observed, exit 1 while the bug shows, 0 once gone, 2
where the release cannot express it) and ``ISSUE.md`` (an issue draft with the script, its output under the installed
release, the ledger's release range, the versions, the attribution and a regression test in the system's style)."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from layoutfuzz.generators.case import Case, parse_case_id
from layoutfuzz.harness import trust
from layoutfuzz.harness.campaign import UsageError, load_target, open_store
from layoutfuzz.harness.target import Target, make_case
from layoutfuzz.reports import ledger, schema
from layoutfuzz.reports.attribution import attribute
from layoutfuzz.reports.buckets import bucket_table
from layoutfuzz.reports.signatures import bucket_of
from layoutfuzz.reports.store import DB_NAME

SCRIPT_TIMEOUT = 300.0
BUCKET = re.compile(r"[0-9a-f]{12}")
# the system under test of a target, by the target's prefix: its name, its test style, its package(s)
SYSTEMS = {"triton": ("Triton", "pytest", ("triton",)), "cute": ("CuTe DSL", "pytest", ("nvidia-cutlass-dsl",)),
           "pycute": ("pycute", "pytest", ("nvidia-cutlass",)), "mosaic": ("JAX Mosaic GPU", "absltest", ("jax", "jaxlib"))}


@dataclass(frozen=True)
class Finding:
    """What is exported: the case, its ledger entry (if any) and where it was named from."""

    case: Case
    problem: ledger.KnownProblem | None
    origin: str
    case_file: Path | None = None  # the reduced case or report it was read from, if any


@dataclass(frozen=True)
class ScriptRun:
    """One run of a reproducer: its exit code and what it printed."""

    returncode: int
    output: str


def _matching_problem(known: dict[str, ledger.KnownProblem], ledger_dir: Path, path: Path,
                      report: dict | None) -> ledger.KnownProblem | None:
    """The ledger entry one of whose reduced cases is ``path``, else the one of the report's bucket."""
    for problem in dict.fromkeys(known.values()):
        if any((ledger_dir / case).resolve() == path.resolve() for case in problem.cases):
            return problem
    if report is not None:
        return known.get(bucket_of(report["case"]["target"], report["outcome"], report["signature"]))
    return None


def _from_file(path: Path, known: dict[str, ledger.KnownProblem], ledger_dir: Path) -> Finding:
    case, report = schema.read_case_file(path)
    return Finding(case, _matching_problem(known, ledger_dir, path, report), str(path), path)


def _case_of_bucket(problem: ledger.KnownProblem, bucket: str, ledger_dir: Path) -> Path:
    """The reduced case of ``problem`` that shows ``bucket``: the first of its cases on that bucket's target (its
    reproducer where none is)."""
    target = next(t for t, o, s in problem.identities if bucket_of(t, o, s) == bucket)
    for case in problem.cases:
        path = ledger_dir / case
        if path.is_file() and schema.read_case_file(path)[0].target == target:
            return path
    return ledger_dir / problem.reproducer


def _from_store(case_id: str, out: Path) -> Case | None:
    """The case stored under ``case_id`` in the campaign ``out`` (None where it is not there)."""
    if not (out / DB_NAME).exists():
        return None
    store = open_store(out)
    try:
        found = store.find(case_id)
    finally:
        store.close()
    return found[0] if found else None


def _bucket_case(bucket: str, out: Path) -> Case:
    """The representative case of a bucket of the campaign ``out``."""
    if not (out / DB_NAME).exists():
        raise UsageError(f"no bucket {bucket!r} in the ledger, and no campaign in {out} to look it up in (--out)")
    store = open_store(out)
    try:
        rows = bucket_table(store.frame())
    finally:
        store.close()
    row = rows[rows["bucket"] == bucket] if not rows.empty else rows
    if row.empty:
        raise UsageError(f"no bucket {bucket!r} in the ledger or in the campaign {out} (see `layoutfuzz buckets`)")
    case_id = str(row.iloc[0]["representative"])
    case = _from_store(case_id, out)
    return case if case is not None else _generated(case_id)


def _generated(case_id: str) -> Case:
    target_name, seed, index = parse_case_id(case_id)
    if trust.installed_spec(target_name) is None:
        raise UsageError(f"case {case_id}: no installed target {target_name!r} (see `layoutfuzz targets`)")
    return make_case(load_target(target_name), seed, index)


def resolve(what: str, out: Path, known_path: Path) -> Finding:
    """The finding ``what`` names: a ledger bucket, a campaign bucket, a report or case file (a ledger entry's
    reproducer among them) or a case id ``TARGET/SEED/INDEX`` (stored in ``out``, else generated)."""
    known = ledger.load(known_path)
    ledger_dir = known_path.resolve().parent
    if BUCKET.fullmatch(what):
        problem = known.get(what)
        if problem is None:
            case = _bucket_case(what, out)
            return Finding(case, None, f"bucket {what} of {out}")
        if not problem.reproducer:
            raise UsageError(f"ledger entry {what} ({problem.target}) has no reproducer case to export")
        path = _case_of_bucket(problem, what, ledger_dir)
        return Finding(_from_file(path, known, ledger_dir).case, problem, f"ledger {what}", path)
    path = Path(what)
    if path.is_file():
        return _from_file(path, known, ledger_dir)
    if parse_case_id(what) is None:
        raise UsageError(f"{what!r} is neither a bucket id, a report or case file, nor a case id TARGET/SEED/INDEX")
    case = _from_store(what, out) or _generated(what)
    return Finding(case, None, f"case {what}")


def target_of(case: Case) -> Target:
    """The installed target of ``case`` (a target only data names is never imported)."""
    if trust.installed_spec(case.target) is None:
        raise UsageError(f"case {case.case_id}: no installed target {case.target!r} (see `layoutfuzz targets`)")
    return load_target(case.target)


def script_of(target: Target, case: Case, problem: ledger.KnownProblem | None = None) -> str:
    """The target's reproducer of ``case`` (for ``problem``, the ledger entry it reproduces, where that is of the
    case's target); a one-line refusal where it has none."""
    if problem is not None and problem.target == case.target:
        script = target.problem_script(case, problem.signature)
    else:
        script = target.reproducer_script(case)
    if script is None:
        raise UsageError(f"target {target.name} has no reproducer script for case {case.case_id} "
                         f"({case.params.get('op') or case.params.get('kind') or 'this case'})")
    if "import layoutfuzz" in script or "from layoutfuzz" in script:
        raise UsageError(f"target {target.name}'s reproducer imports layoutfuzz: it would not run upstream")
    return script


def slug(finding: Finding) -> str:
    """The folder name: the stem of the case file it was read from, else the case id."""
    if finding.case_file is not None:
        return finding.case_file.name.split(".")[0]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", finding.case.case_id)


def clean_env() -> dict[str, str]:
    """An environment with nothing of layoutfuzz's: a plain PATH, no PYTHONPATH."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": "", "HOME": os.environ.get("HOME", "/tmp")}


def run_script(script: Path, python: str = sys.executable, timeout: float = SCRIPT_TIMEOUT) -> ScriptRun:
    """Runs a reproducer as a maintainer would: its own interpreter, a clean environment, an empty folder."""
    with tempfile.TemporaryDirectory() as cwd:
        try:
            done = subprocess.run([python, str(script.resolve())], capture_output=True, text=True, cwd=cwd,
                                  env=clean_env(), timeout=timeout)
        except subprocess.TimeoutExpired:
            return ScriptRun(124, f"(no answer in {timeout:.0f} s)")
    return ScriptRun(done.returncode, (done.stdout.strip() or done.stderr.strip()[-2000:]))


def needs_gpu(script: str) -> bool:
    """Whether a reproducer runs its kernel on a CUDA GPU (the marker of gpu/script_parts.py's scripts)."""
    return re.search(r"^NEEDS_CUDA_CAPABILITY = ", script, re.MULTILINE) is not None


def gpu_lines() -> list[str]:
    """The GPU and driver ``nvidia-smi`` reports here (a line saying there is none, where it reports none)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ["GPU: none here (no nvidia-smi)"]
    found = [line.strip() for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []
    return [f"GPU: {line} (name, driver, compute capability)" for line in found[:1]] or ["GPU: none here"]


def versions(target: Target, case_target: str, gpu: bool = False) -> list[str]:
    """The installed versions of the system under test and the toolchain, as lines (``gpu``: torch and the GPU too)."""
    from importlib import metadata

    _, _, packages = SYSTEMS.get(case_target.split(".")[0], ("", "", ()))
    packages = (*packages, "torch") if gpu else packages
    lines = []
    for name in packages:
        try:
            lines.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{name} (not installed)")
    lines.append(f"Python {platform.python_version()}, {platform.system()} {platform.machine()}, "
                 f"{platform.libc_ver()[0]} {platform.libc_ver()[1]}".rstrip())
    return lines + (gpu_lines() if gpu else [])


def release_range(problem: ledger.KnownProblem | None) -> str:
    """The ledger's first bad and last good release, as one paragraph."""
    if problem is None or not (problem.first_bad or problem.bisected):
        return "No release range recorded: only the installed release below was tried."
    parts = []
    if problem.first_bad:
        parts.append(f"first bad release: {problem.first_bad}")
    if problem.first_good:
        parts.append(f"first good release: {problem.first_good}")
    if problem.masked:
        parts.append(f"masked (another failure comes first) in {problem.masked}")
    if problem.bisected:
        parts.append(f"releases replayed: {problem.bisected}")
    return "; ".join(parts) + "."


def regression_test(name: str, style: str, script: str, title: str) -> str:
    """A regression test in the system's own test style that runs the reproducer's check (in a child process: the
    bug can kill its process) and fails while the bug shows."""
    func = re.sub(r"\W+", "_", name).strip("_").lower()
    body = script.replace("'''", "\\'\\'\\'")
    if style == "absltest":
        return f'''import subprocess
import sys

from absl.testing import absltest

REPRO = \'\'\'{body}\'\'\'


class {"".join(w.title() for w in func.split("_"))}Test(absltest.TestCase):

  def test_{func}(self):
    """{title}"""
    run = subprocess.run([sys.executable, "-c", REPRO], capture_output=True, text=True)
    if run.returncode == 2:
      self.skipTest(run.stdout)
    self.assertEqual(run.returncode, 0, run.stdout)


if __name__ == "__main__":
  absltest.main()
'''
    return f'''import subprocess
import sys

import pytest

REPRO = \'\'\'{body}\'\'\'


def test_{func}(tmp_path):
    """{title}"""
    script = tmp_path / "repro.py"  # a file: some systems read a traced function's source
    script.write_text(REPRO)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    if run.returncode == 2:
        pytest.skip(run.stdout)
    assert run.returncode == 0, run.stdout
'''


def issue_markdown(finding: Finding, target: Target, script: str, run: ScriptRun, name: str) -> str:
    """The issue draft."""
    problem = finding.problem
    system, style, _ = SYSTEMS.get(finding.case.target.split(".")[0], (target.name, "pytest", ()))
    title = problem.title if problem else f"{target.name}: {finding.case.case_id}"
    outcome = problem.outcome if problem else "diverge"
    signature = problem.signature if problem else ""
    blame = attribute(target, outcome, signature, problem)
    state = {0: "not reproduced (exit 0: the answer is right here)", 1: "reproduced (exit 1)",
             2: "cannot be expressed by this release (exit 2)"}.get(run.returncode, f"exit {run.returncode}")
    if run.returncode == 2 and "observed: cannot run here" in run.output:
        state = "cannot run here (exit 2)"
    note = f" {problem.note}." if problem and problem.note else ""
    gpu = needs_gpu(script)
    needs = (f"{system}, torch and NumPy, and a Hopper GPU (compute capability 9.0): it runs the kernel through "
             f"{system}'s own JIT in a child process" if gpu else f"only {system} and runs on a CPU")
    summary = (f"{title}. Layer: {blame.layer or target.layer or target.name}.{note} The script below needs "
               f"{needs}; it exits 1 while the problem shows and 0 once it is fixed.")
    lines = [f"# [{system}] {title}", "", "## Summary", "", summary, "", "## Reproducer", "", "```python",
             script.rstrip(), "```", "", f"## Expected and observed ({state})", "", "```", run.output.rstrip(), "```",
             "", "## Releases", "", release_range(problem), "", "## Versions and toolchain", "",
             *[f"- {v}" for v in versions(target, finding.case.target, gpu)], "", "## Attribution", "",
             f"{blame.party}" + (f" ({blame.layer})" if blame.layer else "") + f". Evidence: {blame.evidence or 'the script above'}.",
             "", f"Found by differential testing (layoutfuzz case `{finding.case.case_id}`, from {finding.origin}"
             + (f"; root cause `{problem.bucket}`: {problem.signature}" if problem else "") + ").", "",
             f"## Regression test ({style})", "", "```python",
             regression_test(name, style, script, title.replace('"', "'")[:200]).rstrip(), "```", ""]
    return "\n".join(lines)


def export(finding: Finding, to: Path) -> tuple[Path, ScriptRun]:
    """Writes ``to/<slug>/repro.py`` and ``ISSUE.md``; the script's run under this interpreter."""
    target = target_of(finding.case)
    script = script_of(target, finding.case, finding.problem)
    name = slug(finding)
    folder = to / name
    folder.mkdir(parents=True, exist_ok=True)
    repro = folder / "repro.py"
    repro.write_text(script)
    run = run_script(repro)
    (folder / "ISSUE.md").write_text(issue_markdown(finding, target, script, run, name))
    return folder, run
