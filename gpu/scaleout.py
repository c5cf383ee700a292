"""The test that ``harness.pytest_plugin`` parametrises: one campaign shard per item (see there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from layoutfuzz.gpu.targets.base import cuda_device_count

IDENTIFY = ("from cuda.bindings import runtime\n"
            "err, prop = runtime.cudaGetDeviceProperties(0)\n"
            "print(f'{prop.name.decode().strip(chr(0))} pci {prop.pciDomainID:04x}:{prop.pciBusID:02x}:{prop.pciDeviceID:02x}')\n")


def test_campaign_shard(layoutfuzz_shard, request):
    config = request.config
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    env = dict(os.environ)
    gpus = cuda_device_count() or 0
    if gpus:
        env["CUDA_VISIBLE_DEVICES"] = str(int(worker.removeprefix("gw")) % gpus)
    shard = layoutfuzz_shard
    out = Path(config.getoption("--layoutfuzz-out")) / f"shard{shard.index}of{shard.count}"
    command = [sys.executable, "-m", "layoutfuzz.harness.cli", "run", "--targets", config.getoption("--layoutfuzz-targets"),
               "--seed", config.getoption("--layoutfuzz-seed"), "--shard", str(shard), "--out", str(out), "-q"]
    command += ["--resume"] if (out / "layoutfuzz.sqlite").exists() else []
    cases = config.getoption("--layoutfuzz-cases")
    command += ["--cases", cases] if cases else ["--budget", config.getoption("--layoutfuzz-budget")]
    if config.getoption("--layoutfuzz-jobs"):
        command += ["--jobs", config.getoption("--layoutfuzz-jobs")]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    out.mkdir(parents=True, exist_ok=True)
    device = subprocess.run([sys.executable, "-c", IDENTIFY], env=env, capture_output=True, text=True).stdout.strip() if gpus else ""
    summary = {"shard": str(shard), "xdist_worker": worker, "CUDA_VISIBLE_DEVICES": env.get("CUDA_VISIBLE_DEVICES"),
               "device": device,
               "exit": done.returncode, "summary": done.stderr.strip().splitlines()[-3:]}
    (out / "shard.json").write_text(json.dumps(summary, indent=1) + "\n")
    assert done.returncode == 0, done.stderr[-2000:]
