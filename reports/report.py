"""Self-contained JSON reports of non-pass outcomes, and their bucket keys."""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from layoutfuzz.harness.compare import summarised
from layoutfuzz.harness.runner import Result
from layoutfuzz.harness.signatures import root_cause
from layoutfuzz.harness.trust import installed_spec

REPORT_SCHEMA = 1
VALUE_LIMIT = 16 * 1024  # characters of JSON kept per expected/observed value; `reproduce` recomputes the rest
VERSIONED_PACKAGES = ("layoutfuzz", "numpy", "triton", "torch", "cuda-python", "cuda-core", "cuda-bindings", "hypothesis", "pandas")


def environment_versions() -> dict[str, str]:
    """Python, platform and the installed versions of the packages that matter."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def bucket_key(result: Result) -> str:
    """Groups outcomes of one root cause: target, outcome and root-cause signature (never the family)."""
    return root_cause_and_bucket(result)[1]


def root_cause_and_bucket(result: Result) -> tuple[str, str]:
    """A result's root-cause signature and its bucket key: what a stored row keys it by."""
    signature = root_cause(result)
    return signature, bucket_of(result.case.target, result.outcome.value, signature)


@lru_cache(maxsize=4096)  # a campaign's rows share a few root causes: hash each once
def bucket_of(target: str, outcome: str, signature: str) -> str:
    """The bucket key of a root cause. A target under compute-sanitizer (``NAME+memcheck``, ``gpu/sanitizer.py``) shares
    its target's buckets, but for what the tool itself reports: one disagreement with the oracle is one root cause
    however the system under test ran (and the ledger knows it already)."""
    from layoutfuzz.harness.registry import SANITIZER_TOOLS

    base, plus, tool = target.rpartition("+")
    if plus and tool in SANITIZER_TOOLS and "compute-sanitizer" not in signature:
        target = base
    return hashlib.sha1("\n".join((target, outcome, signature)).encode()).hexdigest()[:12]


def bounded(value: Any, reproduce: str) -> Any:
    """``value``, or where its JSON is longer than VALUE_LIMIT (a TMA window of random bytes, a
    large matrix) its size and digest: the report stays small and ``reproduce`` shows it in full."""
    return summarised(value, VALUE_LIMIT, f"`{reproduce} --verbose` prints them")


def build_report(
    result: Result, versions: Mapping[str, str], report_path: Path | None, target_spec: str
) -> dict[str, Any]:
    """Everything needed to understand and reproduce one non-pass outcome."""
    target = result.case.target
    reproduce = f"layoutfuzz reproduce {report_path}" if report_path else f"layoutfuzz reproduce {result.case.case_id}"
    if installed_spec(target_spec, target) != target_spec:  # a report names no code it would import on its own
        reproduce += f" --target {target_spec}"
    return {
        "schema": REPORT_SCHEMA,
        "case_id": result.case.case_id,
        "case": result.case.to_dict(),
        "target": target,
        "target_spec": target_spec,
        "family": result.family,
        "outcome": result.outcome.value,
        "detail": result.detail,
        "mismatch_count": result.mismatch_count,
        "first_mismatches": list(result.mismatches),
        "signature": result.signature,
        "root_cause": root_cause(result),
        "bucket": bucket_key(result),
        "expected": bounded(result.expected, reproduce),
        "observed": bounded(result.observed, reproduce),
        "duration_s": round(result.duration_s, 6),
        "versions": dict(versions),
        "reproduce": reproduce,
    }
