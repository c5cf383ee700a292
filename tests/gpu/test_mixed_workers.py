"""A campaign whose workers run torch-free prebuilt-kernel targets and torch-using JIT targets side by side, on the
device: no case meets a module another thread is still importing (``harness.worker.worker_imports``)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

TORCH_FREE = ("triton.convert_layout", "triton.shared_memory")  # prebuilt kernels through cuda.core on NumPy's buffers
# raw kernels on torch tensors, torch's CUDA state begun on each worker's start-up thread (both run under every Triton)
TORCH_USING = ("tma.copy", "tma.swizzle")


@pytest.mark.gpu
def test_torch_free_and_torch_using_targets_share_workers_without_a_harness_error(tmp_path):
    jobs = str(min(8, os.cpu_count() or 1))
    env = {**os.environ, "LAYOUTFUZZ_CACHE": str(tmp_path / "cache"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    command = [sys.executable, "-m", "layoutfuzz.harness.cli", "run", "--targets", ",".join(TORCH_FREE + TORCH_USING),
               "--cases", "40", "--jobs", jobs, "--timeout", "120s", "-q", "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=590)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    rows = sqlite3.connect(tmp_path / "out" / "layoutfuzz.sqlite").execute(
        "SELECT target, outcome, count(*), min(detail) FROM outcomes GROUP BY target, outcome").fetchall()
    errors = [(target, count, detail[-600:]) for target, outcome, count, detail in rows if outcome == "error"]
    assert not errors, errors
    compared = {target for target, outcome, _, _ in rows if outcome in ("pass", "diverge")}  # each ran on the device
    assert compared == set(TORCH_FREE + TORCH_USING), rows
