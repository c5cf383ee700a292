"""Self-contained JSON reports of non-pass outcomes."""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from layoutfuzz.reports.bounded import summarised
from layoutfuzz.reports.outcome import Result

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


def bounded(value: Any, reproduce: str) -> Any:
    """``value``, or where its JSON is longer than VALUE_LIMIT (a TMA window of random bytes, a
    large matrix) its size and digest: the report stays small and ``reproduce`` shows it in full."""
    return summarised(value, VALUE_LIMIT, f"`{reproduce} --verbose` prints them")


def build_report(result: Result, signature: str, bucket: str, versions: Mapping[str, str], target_spec: str,
                 reproduce: str) -> dict[str, Any]:
    """Everything needed to understand and reproduce one non-pass outcome: its root-cause ``signature`` and ``bucket``
    as the caller computed them, and ``reproduce``, the command that replays it (naming ``target_spec`` where it is
    not an installed target: a report names no code it would import on its own)."""
    return {
        "schema": REPORT_SCHEMA,
        "case_id": result.case.case_id,
        "case": result.case.to_dict(),
        "target": result.case.target,
        "target_spec": target_spec,
        "family": result.family,
        "outcome": result.outcome.value,
        "detail": result.detail,
        "mismatch_count": result.mismatch_count,
        "first_mismatches": list(result.mismatches),
        "signature": result.signature,
        "root_cause": signature,
        "bucket": bucket,
        "expected": bounded(result.expected, reproduce),
        "observed": bounded(result.observed, reproduce),
        "duration_s": round(result.duration_s, 6),
        "versions": dict(versions),
        "reproduce": reproduce,
    }
