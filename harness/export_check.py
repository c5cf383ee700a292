"""Exported reproducers re-run as their maintainers would run them (``layoutfuzz export --check DIR``): each
``DIR/<slug>/repro.py`` whose system is installed in an interpreter runs there with layoutfuzz unimportable (``None``
in ``sys.modules`` before the script runs through ``runpy``, ``PYTHONPATH=''``, an empty working folder), and its exit
code is judged against the ledger's range for the installed release: 1 where the release is bad, 0 where good (a
release where another failure masks the problem is not judged); an entry without a range is bad in the release it was
recorded in."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from layoutfuzz.harness.export import SCRIPT_TIMEOUT, SYSTEMS, clean_env
from layoutfuzz.harness.triton_compat import parse_version
from layoutfuzz.reports import ledger

ROOT_CAUSE = re.compile(r"root cause `([0-9a-f]{12})`")
CASE = re.compile(r"layoutfuzz case `([\w.]+)/")
# runs the script named by argv[1] as __main__ with layoutfuzz unimportable (its exit code is the script's)
BOOT = ("import runpy, sys; sys.modules['layoutfuzz'] = None; path = sys.argv[1]; sys.argv = [path]; "
        "runpy.run_path(path, run_name='__main__')")
# prints {package: installed version or None} for the packages of every system
# a GPU reproducer (gpu/script_parts.py) names the compute capability it needs; it runs only where the interpreter sees
# such a GPU (elsewhere it is skipped with that reason: no GPU is no verdict on the release)
NEEDS_GPU = re.compile(r"^NEEDS_CUDA_CAPABILITY = \((\d+), (\d+)\)", re.MULTILINE)
# prints the compute capability of the interpreter's first CUDA device through torch ([major, minor]), or null
GPU_PROBE = ("import json\ntry:\n    import torch\n    cap = list(torch.cuda.get_device_capability()) "
             "if torch.cuda.is_available() else None\nexcept Exception:\n    cap = None\nprint(json.dumps(cap))")
PROBE = ("import json, sys\nfrom importlib import metadata\nout = {}\nfor name in sys.argv[1:]:\n    try:\n"
         "        out[name] = metadata.version(name)\n    except metadata.PackageNotFoundError:\n        out[name] = None\n"
         "print(json.dumps(out))")


@dataclass(frozen=True)
class Exported:
    """One exported reproducer: its folder's name, its script, the target and the ledger bucket its draft names."""

    slug: str
    script: Path
    target: str
    bucket: str


@dataclass(frozen=True)
class Checked:
    """One script's run under an interpreter and the verdict: ``ok`` where the exit code is one the ledger allows."""

    slug: str
    target: str
    release: str  # the system's installed version ('' where not installed: not run)
    expected: tuple[int, ...]
    returncode: int | None  # None: not run
    ok: bool
    note: str


def exported(folder: Path) -> list[Exported]:
    """The reproducers under ``folder``: each ``<slug>/repro.py`` beside an ``ISSUE.md`` that names its case and root
    cause (as ``layoutfuzz export`` writes them)."""
    found = []
    for script in sorted(folder.glob("*/repro.py")):
        issue = script.parent / "ISSUE.md"
        text = issue.read_text() if issue.is_file() else ""
        bucket, case = ROOT_CAUSE.search(text), CASE.search(text)
        if bucket and case:
            found.append(Exported(script.parent.name, script, case[1], bucket[1]))
    return found


def installed(python: str) -> dict[str, str | None]:
    """The version of each system's first package in ``python`` (None where it is not installed)."""
    names = sorted({packages[0] for _, _, packages in SYSTEMS.values()})
    done = subprocess.run([python, "-c", PROBE, *names], capture_output=True, text=True, env=clean_env(), timeout=120)
    if done.returncode:
        raise RuntimeError(f"{python} cannot report its packages: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout)


def gpu_capability(python: str) -> tuple[int, int] | None:
    """The compute capability of the CUDA GPU ``python`` sees through torch (None: none, or no torch)."""
    try:
        done = subprocess.run([python, "-c", GPU_PROBE], capture_output=True, text=True, env=clean_env(), timeout=120)
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else None
    except (subprocess.TimeoutExpired, ValueError):
        return None
    return (int(found[0]), int(found[1])) if found else None


def needed_gpu(text: str) -> tuple[int, int] | None:
    """The compute capability a reproducer's text says it needs (None: it runs without a GPU)."""
    found = NEEDS_GPU.search(text)
    return (int(found[1]), int(found[2])) if found else None


def release_of(target: str, versions: Mapping[str, str | None]) -> str | None:
    """The installed release of the system ``target`` belongs to (None where it is not installed)."""
    system = SYSTEMS.get(target.split(".")[0])
    return versions.get(system[2][0]) if system else None


def expected_codes(problem: ledger.KnownProblem, release: str) -> tuple[int, ...]:
    """The exit codes the ledger allows under ``release``: Triton's range where one is recorded (a masked release, where
    another failure comes first on some route to the root cause, is not judged: 0, 1 or 2), else 1 (the entry was
    recorded as bad in the release it was found in)."""
    if problem.target.startswith("triton.") and problem.first_bad:
        present = problem.present_in(release, parse_version)
        return (0, 1, 2) if present is None else (1,) if present else (0,)
    return (1,)


def run_blocked(script: Path, python: str, timeout: float = SCRIPT_TIMEOUT) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``script`` run under ``python`` with layoutfuzz unimportable, in a clean
    environment and an empty folder; 124 past ``timeout``."""
    with tempfile.TemporaryDirectory() as cwd:
        try:
            done = subprocess.run([python, "-c", BOOT, str(script.resolve())], capture_output=True, text=True, cwd=cwd,
                                  env=clean_env(), timeout=timeout)
        except subprocess.TimeoutExpired:
            return 124, "", f"no answer in {timeout:.0f} s"
    return done.returncode, done.stdout, done.stderr


def check_one(item: Exported, problem: ledger.KnownProblem | None, versions: Mapping[str, str | None],
              python: str, gpu: tuple[int, int] | None = None) -> Checked:
    """Runs one script (where its system is installed, the GPU it needs is there (``gpu``: the capability of the one
    the interpreter sees) and the ledger knows its root cause) and judges its exit."""
    release = release_of(item.target, versions)
    if release is None:
        return Checked(item.slug, item.target, "", (), None, True, "system not installed: not run")
    if problem is None:
        return Checked(item.slug, item.target, release, (), None, True, f"root cause {item.bucket} not in the ledger")
    text = item.script.read_text()
    if re.search(r"^\s*(import|from) layoutfuzz\b", text, re.MULTILINE):
        return Checked(item.slug, item.target, release, (), None, False, "the script imports layoutfuzz")
    needs = needed_gpu(text)
    if needs is not None and (gpu is None or gpu < needs):
        return Checked(item.slug, item.target, release, (), None, True,
                       f"needs a CUDA GPU of compute capability {needs[0]}.{needs[1]}: "
                       f"{'none here' if gpu is None else f'this one is {gpu[0]}.{gpu[1]}'}, not run")
    want = expected_codes(problem, release)
    code, out, err = run_blocked(item.script, python)
    if "Traceback (most recent call last)" in err or "observed:" not in out:  # the script failed, not the system
        tail = (err.strip().splitlines() or out.strip().splitlines() or ["no output"])[-1]
        return Checked(item.slug, item.target, release, want, code, False, f"no verdict: {tail[:160]}")
    verdict = next((line for line in reversed(out.splitlines()) if line.startswith("observed:")), "")
    return Checked(item.slug, item.target, release, want, code, code in want, verdict[:160])


def check(folder: Path, known: Mapping[str, ledger.KnownProblem], python: str = sys.executable,
          jobs: int | None = None) -> list[Checked]:
    """Every reproducer under ``folder`` checked under ``python``, ``jobs`` at a time (default: one per core)."""
    versions = installed(python)
    items = exported(folder)
    gpu = gpu_capability(python) if any(needed_gpu(item.script.read_text()) for item in items) else None
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(lambda item: check_one(item, known.get(item.bucket), versions, python, gpu), items))


def summary(results: Sequence[Checked]) -> str:
    """One line: how many ran and exited as the ledger says, how many did not, how many were not run."""
    agreed = sum(r.ok and r.returncode is not None for r in results)
    skipped = sum(r.ok and r.returncode is None for r in results)
    return (f"{agreed} reproducer(s) exited as the ledger says, {len(results) - agreed - skipped} did not, "
            f"{skipped} not run")
