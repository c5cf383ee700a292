"""Campaigns under compute-sanitizer: any GPU target's system under test run in a child process under a sanitizer tool
(``memcheck`` by default), so that a kernel that reads or writes outside its allocations is a recorded crash of the case
that did it, even where the wrong access happened to give the right answer.

``layoutfuzz run --sanitize`` (or a target named ``NAME+memcheck``) wraps each target in ``Sanitized``: the oracle and the
comparison are the target's own, run in the worker; the system under test runs in ``compute-sanitizer --tool memcheck
python -m layoutfuzz.gpu.sanitizer``, a batch a child. A batch the tool reports errors for (or whose child dies) is split
in halves until the cases that cause them are found; each such case is a crash whose detail is the tool's report.
CUDA API calls that return an error are not reported (``--report-api-errors no``): libraries probe the driver that way
(cuda.core asks for a current context before there is one), and the child raises on the errors that matter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution, Availability, Target
from layoutfuzz.reports.bounded import to_jsonable
from layoutfuzz.reports.signatures import SANITIZER_TOOLS as TOOLS  # noqa: E402  (the names the registry resolves)

RAISED = "__raised_in_child__"  # a case whose observed raised in the child: its traceback
ERROR_EXIT = 86  # the child's exit status when the tool reported errors (--error-exitcode)
CHILD_TIMEOUT_S = 1800.0  # the harness's own per-case timeout ends a worker long before this
SEARCHED = ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer")


def sanitizer_path() -> str | None:
    """compute-sanitizer on PATH, in the CUDA toolkit's usual places, or in ``$LAYOUTFUZZ_SANITIZER``."""
    found = os.environ.get("LAYOUTFUZZ_SANITIZER") or shutil.which("compute-sanitizer")
    return found or next((p for p in SEARCHED if Path(p).is_file()), None)


class SanitizerFault(BaseException):
    """What the tool reported against a case (raised in the system under test: the harness records a crash)."""


@dataclass(frozen=True)
class ChildRun:
    """One child's answer: the observed values (JSON) of its cases, or None where the tool reported errors or the
    child died (``report`` says what)."""

    values: list[Any] | None
    report: str


def headline(log: str) -> str:
    """The tool's first error, with the kernel it happened in: "Invalid __global__ read of size 4 bytes in read_past"."""
    lines = [line.removeprefix("=========").strip() for line in log.splitlines() if line.startswith("=========")]
    for k, line in enumerate(lines):
        if line and not line.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "at ", "by ", "Address", "Saved host",
                                          "Host Frame", "Device Frame", "Program hit", "=")):
            kernel = next((m.group(1) for m in (re.match(r"at (?:0x[0-9a-f]+ in )?([\w:~<>]+)", x) for x in lines[k + 1:k + 4]) if m), "")
            return f"{line} in {kernel}" if kernel else line
    return "no error line in the tool's report"


def first_errors(log: str, lines: int = 12) -> str:
    """The tool's report without its banner: the first error blocks and the summary."""
    body = [line.removeprefix("=========").rstrip() for line in log.splitlines() if line.startswith("=========")]
    body = [line.removeprefix(" ") for line in body if line.strip() and not line.strip().startswith("COMPUTE-SANITIZER")]
    summary = [line for line in body if line.startswith("ERROR SUMMARY")]
    return "\n".join(body[:lines] + [s for s in summary if s not in body[:lines]])


# the tool's headlines for exceptions the device raises with or without it (compute-sanitizer documentation, memcheck's
# "hardware exceptions"), as opposed to the memory errors its instrumentation finds
DEVICE_EXCEPTIONS = ("illegal instruction", "illegal address", "invalid pc", "misaligned pc", "hardware stack overflow",
                     "warp illegal", "invalid address space", "device-side assert")


def device_exception(fault: BaseException) -> bool:
    """Whether the tool's report is a device exception (which a plain run meets too), not one of its own findings."""
    first = str(fault).splitlines()[0].lower() if str(fault) else ""
    return any(kind in first for kind in DEVICE_EXCEPTIONS)


def replayed_plain(answers: list[Any], plain: Callable[[int], Any]) -> list[Any]:
    """``answers`` with each device-exception fault replayed one layer down, without the tool (``plain(i)``, in this
    worker): a plain run that ends the same way is the target's own crash (its bucket, its ledger entry; a run that ends
    the worker is bisected to the case by the runner); a plain run that answers keeps the tool's report."""
    out = list(answers)
    for i, answer in enumerate(answers):
        if isinstance(answer, SanitizerFault) and device_exception(answer):
            value = plain(i)
            if isinstance(value, BaseException):
                out[i] = value
    return out


def bisected(run: Callable[[list[int]], ChildRun], count: int) -> list[Any]:
    """Each of ``count`` cases' observed value, or a ``SanitizerFault`` for the cases whose runs the tool reported
    against: a failing group is split in halves until each failing case stands alone."""
    out: list[Any] = [None] * count

    def visit(group: list[int]) -> None:
        answer = run(group)
        if answer.values is not None:
            for i, value in zip(group, answer.values):
                out[i] = value
        elif len(group) == 1:
            out[group[0]] = SanitizerFault(answer.report)
        else:
            visit(group[:len(group) // 2])
            visit(group[len(group) // 2:])

    if count:
        visit(list(range(count)))
    return out


class Sanitized(Target):
    """``inner``'s cases with its system under test run under compute-sanitizer's ``tool``."""

    # a child starts Python, imports torch and initialises CUDA under the tool (about 10 s on an H100 host) before its
    # first case: batches grow (doubling) until that start is a small part of a call, up to the target's max_batch
    # (120 s reached the same sizes on an H100 but kept a 270 s --budget running past 330 s: in-flight batches finish)
    batch_seconds = 30.0

    def __init__(self, argument: str) -> None:
        from layoutfuzz.harness import registry

        inner_spec, _, tool = argument.rpartition("@") if "@" in argument else (argument, "", "memcheck")
        if tool not in TOOLS:
            raise registry.TargetNotFound(f"unknown compute-sanitizer tool {tool!r}; known: {', '.join(TOOLS)}")
        self.inner_spec, self.tool = registry.resolve(inner_spec), tool
        self.inner = registry.load(self.inner_spec)
        self.name = f"{self.inner.name}+{tool}"  # type: ignore[misc]
        self.description = f"{self.inner.description}, its system under test under compute-sanitizer --tool {tool}"  # type: ignore[misc]
        self.requires = (*self.inner.requires, "compute-sanitizer")  # type: ignore[misc]
        self.layer = self.inner.layer  # type: ignore[misc]
        self.case_model = self.inner.case_model or self.inner.name  # type: ignore[misc]
        self.max_batch = self.inner.max_batch  # type: ignore[misc]
        self.preload = self.inner.preload  # type: ignore[misc]

    def availability(self) -> Availability:
        if sanitizer_path() is None:
            return Availability(False, "needs compute-sanitizer (CUDA toolkit; or set LAYOUTFUZZ_SANITIZER to its path)")
        return self.inner.availability()

    def versions(self) -> Mapping[str, str]:
        out = dict(self.inner.versions())
        try:
            done = subprocess.run([sanitizer_path() or "compute-sanitizer", "--version"], capture_output=True, text=True, timeout=60)
            out["compute-sanitizer"] = done.stdout.strip().splitlines()[-1]
        except Exception:
            pass
        return out

    # the inner target's own oracle, comparison and case handling
    def generate(self, source: Source) -> Mapping[str, Any]:
        return self.inner.generate(source)

    def validate(self, case: Case) -> None:
        self.inner.validate(case)

    def family(self, case: Case) -> str:
        return self.inner.family(case)

    def parameter_space(self) -> Space | None:
        return self.inner.parameter_space()

    def shrink(self, case: Case) -> Iterator[Mapping[str, Any]]:
        return self.inner.shrink(case)

    def expected(self, case: Case) -> Any:
        return to_jsonable(self.inner.expected(case), limit=1 << 62)

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        return self.inner.compare(case, expected, observed)

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        if outcome == "crash" and "compute-sanitizer" in signature:
            return Attribution("system under test", self.layer, f"compute-sanitizer --tool {self.tool} reported the case's kernel")
        return self.inner.attribute(outcome, signature)

    def observed(self, case: Case) -> Any:
        (answer,) = self.observed_batch([case])
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def observed_batch(self, cases: Sequence[Case]) -> list[Any]:
        """The cases' observed values from children under the tool, a failing batch bisected (``bisected``); a case the
        tool saw end in a device exception is replayed without the tool (``replayed_plain``)."""
        answers = bisected(lambda group: self._child([cases[i] for i in group]), len(cases))
        return replayed_plain(answers, lambda i: self.inner.observed_batch([cases[i]])[0])

    def _child(self, cases: list[Case]) -> ChildRun:
        with tempfile.TemporaryDirectory(prefix="layoutfuzz-sanitizer-") as folder:
            results, log = Path(folder) / "results.json", Path(folder) / "sanitizer.log"
            command = [sanitizer_path() or "compute-sanitizer", "--tool", self.tool, "--error-exitcode", str(ERROR_EXIT),
                       "--print-limit", "20", "--report-api-errors", "no", "--log-file", str(log), sys.executable, "-m", "layoutfuzz.gpu.sanitizer", str(results)]
            payload = json.dumps({"spec": self.inner_spec, "cases": [c.to_dict() for c in cases]})
            done = subprocess.run(command, input=payload, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
            report = log.read_text(errors="replace") if log.exists() else ""
            if done.returncode == 0 and results.exists():
                values = json.loads(results.read_text())
                return ChildRun([RuntimeError(f"in the sanitizer's child:\n{v[RAISED]}") if isinstance(v, dict) and RAISED in v else v
                                 for v in values], "")
            what = (f"compute-sanitizer --tool {self.tool}: {headline(report)}\n{first_errors(report)}" if done.returncode == ERROR_EXIT
                    else f"compute-sanitizer child exited with status {done.returncode}:\n{done.stderr[-2000:]}\n{first_errors(report)}")
            return ChildRun(None, what)


def _child_main(results_path: str) -> int:
    """In the child under the tool: the inner target's observed values of the cases on stdin, as JSON to ``results_path``."""
    from layoutfuzz.harness import registry
    from layoutfuzz.harness.target import batched

    request = json.loads(sys.stdin.read())
    target = registry.load(request["spec"])
    cases = [Case.from_dict(c) for c in request["cases"]]
    try:
        answers = list(target.observed_batch(cases)) if batched(target) and len(cases) > 1 else None
    except Exception:
        answers = None
    if answers is None or len(answers) != len(cases):
        answers = []
        for case in cases:
            try:
                answers.append(target.observed(case))
            except Exception as exc:
                answers.append(exc)
    values = [{RAISED: "".join(traceback.format_exception(a, limit=8))} if isinstance(a, Exception) else to_jsonable(a, limit=1 << 62)
              for a in answers]
    Path(results_path).write_text(json.dumps(values))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1]))
