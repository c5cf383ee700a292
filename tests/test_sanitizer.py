"""``gpu/sanitizer.py``: campaigns under compute-sanitizer. CPU: names and specs, trust, the bisection of a batch the
tool reports against, the report's parsing, the command line; GPU (marked): a read past an allocation that every
plain case passes is a crash of exactly the cases that made it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from layoutfuzz.gpu.sanitizer import (
    ChildRun,
    SanitizerFault,
    bisected,
    device_exception,
    first_errors,
    headline,
    replayed_plain,
    sanitizer_path,
)
from layoutfuzz.harness import registry, trust

ROOT = Path(__file__).resolve().parent.parent
# the shape of memcheck's report (compute-sanitizer documentation, "Memcheck Tool"): a banner, an error block, a summary
LOG = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at read_past+0x90
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f2a00000500 is out of bounds
=========     and is 253 bytes after the nearest allocation at 0x7f2a00000000 of size 1024 bytes
=========
========= ERROR SUMMARY: 1 error
"""


def test_a_name_with_a_tool_is_the_target_under_compute_sanitizer():
    spec = registry.resolve("tma.copy+memcheck")
    assert spec == registry.sanitized_spec(registry.resolve("tma.copy"), "memcheck")
    assert registry.sanitized_parts(spec) == (registry.resolve("tma.copy"), "memcheck")
    target = registry.load("tma.copy+racecheck")
    assert target.name == "tma.copy+racecheck" and target.inner.name == "tma.copy" and target.tool == "racecheck"
    with pytest.raises(registry.TargetNotFound):
        registry.resolve("tma.copy+nosuchtool")
    with pytest.raises(registry.TargetNotFound):
        registry.resolve("no.such.target+memcheck")


def test_a_wrapped_spec_is_trusted_only_as_its_target_is():
    builtin = registry.sanitized_spec(registry.resolve("tma.swizzle"))
    assert trust.installed_spec(builtin) == builtin and trust.installed_spec("tma.swizzle+memcheck") == builtin
    foreign = registry.sanitized_spec("os:system")  # a store naming other code, wrapped, is still other code
    assert trust.installed_spec(foreign) is None
    with pytest.raises(trust.UntrustedTarget):
        trust.trusted_spec(foreign, "a store")


def test_a_batch_the_tool_reports_against_is_split_down_to_the_cases_that_did_it():
    bad, runs = {3, 10}, []

    def run(group):
        runs.append(list(group))
        if bad & set(group):
            return ChildRun(None, f"memcheck: cases {sorted(bad & set(group))}")
        return ChildRun([i * 10 for i in group], "")

    out = bisected(run, 16)
    assert [i for i, v in enumerate(out) if isinstance(v, SanitizerFault)] == [3, 10]
    assert all(out[i] == i * 10 for i in range(16) if i not in bad)
    assert len(runs) <= 1 + 2 * 2 * 4  # a root, then at most two halves a level down each bad case's path
    assert bisected(run, 0) == []


def test_a_device_exception_is_replayed_without_the_tool_and_a_memory_error_is_not():
    # on an H100 a TMA at a negative coordinate raised "Illegal instruction" under memcheck and plainly alike: the plain
    # crash is the one the ledger knows; an access past an allocation is the tool's own finding and stays
    exception = SanitizerFault("compute-sanitizer --tool memcheck: Illegal instruction in tma_probe\n...")
    access = SanitizerFault("compute-sanitizer --tool memcheck: Invalid __global__ read of size 4 bytes in read_past")
    assert device_exception(exception) and not device_exception(access)
    plain_crash = RuntimeError("CUDA error: an illegal instruction was encountered")
    replays = []

    def plain(i):
        replays.append(i)
        return {0: plain_crash, 2: "a value"}[i]

    out = replayed_plain([exception, access, exception, 7], plain)
    assert replays == [0, 2]  # the memory error and the plain value are not replayed
    assert out[0] is plain_crash and out[1] is access and out[2] is exception and out[3] == 7


def test_a_sanitized_target_shares_its_targets_buckets_but_for_the_tools_own_reports():
    from layoutfuzz.harness.registry import resolve, sanitized_spec
    from layoutfuzz.reports.signatures import SANITIZER_TOOLS, bucket_of

    # the names the registry resolves are the ones a bucket folds
    assert all(resolve(f"tma.encode+{tool}") == sanitized_spec(resolve("tma.encode"), tool) for tool in SANITIZER_TOOLS)

    signature = "accepted what the documentation refuses: interleave N swizzle"
    assert bucket_of("tma.encode+memcheck", "diverge", signature) == bucket_of("tma.encode", "diverge", signature)
    tool = "SanitizerFault: compute-sanitizer --tool memcheck: Invalid __global__ read of size N bytes in read_past"
    assert bucket_of("tma.copy+memcheck", "crash", tool) != bucket_of("tma.copy", "crash", tool)
    assert bucket_of("a+b", "diverge", signature) != bucket_of("a", "diverge", signature)  # not a tool: its own name


def test_the_report_is_read_for_its_first_error_and_kernel():
    assert headline(LOG) == "Invalid __global__ read of size 4 bytes in read_past"
    text = first_errors(LOG)
    assert text.startswith("Invalid __global__ read") and text.endswith("ERROR SUMMARY: 1 error") and "COMPUTE-SANITIZER" not in text
    assert headline("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n") == "no error line in the tool's report"


def _layoutfuzz(*args, tmp_path, env=None):
    return subprocess.run([sys.executable, "-m", "layoutfuzz.harness.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, env={**os.environ, **(env or {})})


def test_the_command_line_names_a_tool_or_refuses_it(tmp_path):
    bad = _layoutfuzz("run", "--targets", "tma.copy", "--sanitize", "valgrind", "--cases", "2", "--out", str(tmp_path / "a"), tmp_path=tmp_path)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and "Traceback" not in bad.stderr
    if sanitizer_path() is None:  # here (CI): the wrapped target says what it needs, and nothing runs
        done = _layoutfuzz("run", "--targets", "tma.copy", "--sanitize", "--cases", "2", "--out", str(tmp_path / "b"), tmp_path=tmp_path)
        assert done.returncode == 0 and "tma.copy+memcheck" in done.stdout and "needs compute-sanitizer" in done.stderr


@pytest.mark.gpu
def test_a_read_past_an_allocation_is_a_crash_under_memcheck_and_a_pass_without(tmp_path):
    if sanitizer_path() is None:
        pytest.skip("compute-sanitizer is not installed")
    target = "tests.faulty_target:ReadPastAllocation"
    plain = _layoutfuzz("run", "--target", target, "--cases", "21", "--out", str(tmp_path / "plain"), tmp_path=tmp_path)
    assert plain.returncode == 0 and "21 pass" in plain.stderr, plain.stdout + plain.stderr
    watched = _layoutfuzz("run", "--target", target, "--sanitize", "--cases", "21", "--jobs", "2", "--out", str(tmp_path / "watched"),
                          tmp_path=tmp_path)
    from layoutfuzz.generators.source import source_for
    from tests.faulty_target import ReadPastAllocation

    reading = sum(ReadPastAllocation().generate(source_for("test.read_past_allocation", 0, i))["extra"] > 0 for i in range(21))
    assert 0 < reading < 21
    assert f"{reading} crash" in watched.stderr and f"{21 - reading} pass" in watched.stderr, watched.stdout + watched.stderr
    reports = list((tmp_path / "watched" / "reports").glob("*.json"))
    assert len(reports) == reading and all("Invalid __global__ read" in r.read_text() for r in reports)
