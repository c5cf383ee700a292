"""The wgmma probe's cost by kind of case: cases per second of ``WgmmaRunner.run_arrays`` in one process (launches,
decoding on the device, the copy back and splitting; no oracle), for the campaign's mix and for parts of it, each
with its ratio to the mix and the share of its first 300 tables the oracle does not reproduce.

    python benchmarks/wgmma_probe.py [--cases 8192]

Exits 2 with the reason where there is no sm_90a device."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from layoutfuzz.gpu.targets.base import cuda_device_availability
from layoutfuzz.gpu.targets.wgmma_descriptor import WgmmaDescriptor  # noqa: E402
from layoutfuzz.harness.target import make_case  # noqa: E402

KINDS = {
    "the campaign's mix": lambda p: True,
    "32 KiB windows": lambda p: p["window"] == 32768,
    "32 KiB windows at offset 0": lambda p: p["window"] == 32768 and p["window_offset"] == 0,
    "wide windows (222 KiB)": lambda p: p["window"] > 4 * 32768,
    "32 KiB windows, N <= 64": lambda p: p["window"] == 32768 and p["n"] <= 64,
    "32 KiB windows, N > 64": lambda p: p["window"] == 32768 and p["n"] > 64,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=8192, help="cases of each kind (8192)")
    args = parser.parse_args()
    available = cuda_device_availability(9)
    if not available.available:
        print(f"wgmma_probe: {available.reason}", file=sys.stderr)
        return 2
    from layoutfuzz.gpu.wgmma_probe import WgmmaRunner
    from layoutfuzz.oracles.wgmma import probe_layout
    from layoutfuzz.oracles.wgmma_addresses import canonical_addresses

    target = WgmmaDescriptor()
    pool = [make_case(target, 0, i).params for i in range(6 * args.cases)]
    runner = WgmmaRunner()
    runner.run_arrays(pool[:100])  # the cubin loaded, the buffers allocated
    rows, mix = [], None
    for kind, keep in KINDS.items():
        cases = [p for p in pool if keep(p)][:args.cases]
        start = time.perf_counter()
        tables = runner.run_arrays(cases)
        rate = len(cases) / (time.perf_counter() - start)
        mix = mix or rate
        expected = canonical_addresses([probe_layout(p) for p in cases[:300]])  # the oracle over arrays (as the target's)
        wrong = sum(not np.array_equal(t, e) for t, e in zip(tables, expected))
        rows.append(f"| {kind} | {len(cases)} | {rate:,.0f} | {rate / mix:.2f} | {wrong} of {min(300, len(cases))} |")
    print("| cases | n | cases/s (1 process) | / the mix | wrong |\n|:--|--:|--:|--:|--:|\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
