"""Root-cause signatures and bucket keys: what makes two outcomes the same problem, whatever their case.

In the manner of ClusterFuzz's crash state: a crash is its signal and its first assertion or error
(file, function and message; line numbers, other numbers, addresses, paths and the interpreter's
name stripped), or where it printed none, its top frames; a divergence is the *kind* of mismatch
in the target's own terms (``Comparison.signature``), with indices and counts stripped. The family
and the case's sizes are never part of it: one root cause is one signature across families,
seeds, machines and Python versions. A bucket is a target, an outcome and a signature.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

from layoutfuzz.reports.outcome import Outcome, Result

LIMIT = 160  # characters of a message kept in a signature
# compute-sanitizer's tools: a target run under one is called NAME+TOOL (``harness.registry`` resolves the same names)
SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

_ASSERTION = re.compile(r"(?P<file>[\w.+-]+\.\w+):\d+:\s*(?P<func>.*?):\s*Assertion\s*[`'\"](?P<cond>.*?)['\"`]\s*failed")
_LLVM_ERROR = re.compile(r"LLVM ERROR:\s*(?P<msg>.+)")
_MLIR_ERROR = re.compile(r"(?m)(?:^|:\s)error:(?!\s*Failures have been detected)\s*(?P<msg>[^\n]+)")  # not the pipeline's summary
_CUDA_ERROR = re.compile(r"(CUDA_ERROR_\w+|CUDA error:\s*[^\n]+)")
_PY_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Fault|Interrupt|Exit|Failure))(?::\s*(?P<msg>.*))?$")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+(?:,)? in (?P<func>[\w<>.]+)')


def normalise(text: str, limit: int = LIMIT) -> str:
    """``text`` without what varies between occurrences of one problem: absolute paths (basename
    kept), hex addresses, numbers, repeated white space."""
    text = re.sub(r"(?<![\w.+-])(?:/[\w.+-]+)+/([\w.+-]+)", r"\1", text)  # /a/b/c.cpp -> c.cpp
    text = re.sub(r"0x[0-9a-fA-F]+", "ADDR", text)
    text = re.sub(r"\d+", "N", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:limit]


def _function_name(prototype: str) -> str:
    """``reshapeIns`` from ``LinearLayout mlir::triton::LinearLayout::reshapeIns(ArrayRef<...>) const``."""
    head = prototype.replace("(anonymous namespace)", "").split("(")[0]
    while "<" in head:  # template arguments
        head = re.sub(r"<[^<>]*>", "", head)
    words = head.replace("::", " ").split()
    return words[-1] if words else prototype[:40]


def native_fatal_lines(lines: Sequence[str]) -> list[str]:
    """The lines of a worker's log that state a native fatal error (an LLVM fatal error, a failed assertion): what a
    crash's signature is made of, however much its faulthandler dump printed after them."""
    return [line for line in lines if _LLVM_ERROR.search(line) or _ASSERTION.search(line)]


def first_error(detail: str) -> str:
    """The first assertion or error a crashed or failed worker printed, normalised; "" if none."""
    text = detail or ""
    match = _ASSERTION.search(text)
    if match:
        return normalise(f"{match['file']} {_function_name(match['func'])}: assertion `{match['cond']}'")
    for pattern in (_LLVM_ERROR, _CUDA_ERROR):
        match = pattern.search(text)
        if match:
            return normalise(match.group(0))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):  # a Python exception's last line
        match = _PY_EXCEPTION.match(line)
        if match:
            return normalise(f"{match['type'].rsplit('.', 1)[-1]}: {match['msg'] or ''}".rstrip(": "))
    match = _MLIR_ERROR.search(text)
    if match:
        return normalise("error: " + match["msg"])
    return ""


def compile_error(exc: BaseException, diagnostics: str) -> str:
    """Why a compiler refused a kernel: its first diagnostic error (MLIR and LLVM print them to fd 2,
    the exception then only says ``PassManager::run failed``), else the exception's last line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    return first_error(diagnostics + "\n" + str(exc)) or normalise(f"{type(exc).__name__}: {lines[-1]}")


def top_frames(detail: str, count: int = 2) -> str:
    """The innermost ``count`` Python frames of a traceback or a faulthandler dump, as file:function."""
    frames = [f"{m['path'].rsplit('/', 1)[-1]}:{m['func']}" for m in _FRAME.finditer(detail or "")]
    if "Current thread" in (detail or "") or "most recent call first" in (detail or ""):
        frames = frames[:count]  # faulthandler lists the innermost frame first
    else:
        frames = frames[-count:][::-1]
    return " < ".join(frames)


def _how_it_ended(detail: str) -> str:
    """``SIGABRT``, ``exit N`` or "" from the runner's first detail line."""
    first = (detail or "").strip().splitlines()[:1]
    if not first:
        return ""
    match = re.match(r"killed by (SIG\w+|signal \d+)", first[0])
    if match:
        return match[1]
    return "exit" if first[0].startswith("worker exited") else ""


def crash_signature(detail: str) -> str:
    """The signal and the first assertion or error; where none was printed, the top frames."""
    how = _how_it_ended(detail)
    what = first_error(detail) or top_frames(detail) or "no message"
    return f"{how}: {what}" if how else what


@lru_cache(maxsize=4096)  # pure, and asked once per recorded case
def divergence_signature(kind: str) -> str:
    """A target's mismatch kind without element indices (``a[3].lane:value`` -> ``a[].lane:value``);
    the kind itself is the target's, in its own terms and without counts (``register bit 2 dropped``)."""
    kind = re.sub(r"\[\d+\]", "[]", kind or "")
    return re.sub(r"\s+", " ", kind).strip()[:LIMIT] or "values differ"


def root_cause(result: Result) -> str:
    """The signature that decides a result's bucket."""
    if result.outcome is Outcome.CRASH:  # and what it was doing, where its target tells that apart
        how = crash_signature(result.detail)
        return f"{how}: {result.signature}" if result.signature else how
    if result.outcome is Outcome.TIMEOUT:  # what it was doing, where its target tells slow operations apart
        return f"timeout: {result.signature}" if result.signature else "timeout"
    if result.outcome is Outcome.ERROR:  # a harness bug: its exception and where it was raised
        error = first_error(result.detail) or "no message"
        phase = re.search(r"exception (in [\w' ]+|generating the case)", result.detail or "")
        where = top_frames(result.detail, 1)
        return "; ".join(x for x in (phase[1] if phase else "", error, where) if x)
    if result.outcome is Outcome.UNSUPPORTED:
        return normalise(result.detail.splitlines()[0] if result.detail else "")
    return divergence_signature(result.signature)


def bucket_key(result: Result) -> str:
    """Groups outcomes of one root cause: target, outcome and root-cause signature (never the family)."""
    return root_cause_and_bucket(result)[1]


def root_cause_and_bucket(result: Result) -> tuple[str, str]:
    """A result's root-cause signature and its bucket key: what a stored row keys it by."""
    signature = root_cause(result)
    return signature, bucket_of(result.case.target, result.outcome.value, signature)


@lru_cache(maxsize=4096)  # a campaign's rows share a few root causes: hash each once
def bucket_of(target: str, outcome: str, signature: str, tools: tuple[str, ...] = SANITIZER_TOOLS) -> str:
    """The bucket key of a root cause. A target under compute-sanitizer (``NAME+TOOL``, one of ``tools``) shares
    its target's buckets, but for what the tool itself reports: one disagreement with the oracle is one root cause
    however the system under test ran (and the ledger knows it already)."""
    base, plus, tool = target.rpartition("+")
    if plus and tool in tools and "compute-sanitizer" not in signature:
        target = base
    return hashlib.sha1("\n".join((target, outcome, signature)).encode()).hexdigest()[:12]
