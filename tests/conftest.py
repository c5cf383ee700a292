"""GPU-marked tests are skipped, with the reason, on machines without a CUDA device."""

from __future__ import annotations

import functools

import pytest
from hypothesis import settings

# Property tests check properties, not speed: a wall-clock deadline only makes them flaky under load.
settings.register_profile("layoutfuzz", deadline=None)
settings.load_profile("layoutfuzz")


@functools.cache
def cuda_device_missing() -> str | None:
    """Why no CUDA device can be used here, or None if one can."""
    try:
        from cuda.bindings import runtime
    except ImportError:
        return "no CUDA device: cuda-python is not installed"
    try:
        err, count = runtime.cudaGetDeviceCount()
    except RuntimeError as exc:  # cuda-bindings 13 raises where no driver is installed
        return f"no CUDA device: {exc}"
    if int(err) != 0 or count < 1:
        return f"no CUDA device (cudaGetDeviceCount: {err}, {count})"
    return None


def pytest_report_header(config) -> str:
    """Says where the version tests keep one Triton environment per release (0.7-1.0 GB each) and how much is there."""
    from layoutfuzz.harness.triton_compat import cache_root

    envs = cache_root() / "envs"
    size = sum(f.stat().st_size for f in envs.rglob("*") if f.is_file() and not f.is_symlink()) if envs.is_dir() else 0
    return (f"layoutfuzz: per-release Triton environments in {envs} ({size / 2**30:.1f} GB now; the slow version tests "
            "add one per release; LAYOUTFUZZ_CACHE moves them, `layoutfuzz matrix --prune` removes them)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            reason = cuda_device_missing()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


def known_problem(case_file: str):
    """This repository's ledger entry whose reproducer is ``docs/results/cases/CASE_FILE`` (its release range
    says which Tritons have the problem)."""
    from pathlib import Path

    from layoutfuzz.reports import ledger

    root = Path(__file__).resolve().parent.parent
    return next(p for p in ledger.load(root / "layoutfuzz-known.toml").values() if p.reproducer.endswith(case_file))
