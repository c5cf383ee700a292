"""GPU driver throughput: cases per second with many cases per launch vs one case per launch.

    python benchmarks/gpu_throughput.py [--cases 2000]

Prints a table (batched, one per launch, ratio) for tma.swizzle and wgmma.descriptor; exits 2 with
a reason when there is no sm_90 device.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from layoutfuzz.generators.source import RandomSource  # noqa: E402
from layoutfuzz.gpu.record import throughput  # noqa: E402
from layoutfuzz.gpu.targets.base import cuda_device_availability
from layoutfuzz.gpu.targets.tma_swizzle import WINDOW, TmaSwizzle
from layoutfuzz.gpu.targets.wgmma_descriptor import WgmmaDescriptor
from layoutfuzz.oracles.tma import box_from_params  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    args = parser.parse_args()
    available = cuda_device_availability(9)
    if not available.available:
        print(f"gpu_throughput: {available.reason}", file=sys.stderr)
        return 2
    from layoutfuzz.gpu.tma_driver import TmaRunner
    from layoutfuzz.gpu.wgmma_probe import WgmmaRunner

    boxes = [box_from_params(TmaSwizzle().generate(RandomSource(f"bench/tma/{i}"))) for i in range(args.cases)]
    probes = [WgmmaDescriptor().generate(RandomSource(f"bench/wgmma/{i}")) for i in range(args.cases)]
    tma, wg = TmaRunner(), WgmmaRunner()
    rows = [
        ("tma.swizzle", *throughput(lambda b: tma.run(b, WINDOW), boxes, 100)[1:]),
        ("wgmma.descriptor", *throughput(wg.run, probes, 100)[1:]),
    ]
    print("| target | cases/s, one launch for all | cases/s, one launch per case | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for name, batched, single in rows:
        print(f"| {name} | {batched:,.0f} | {single:,.0f} | {batched / single:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
