"""Compile throughput of the Triton GPU targets: distinct cases per second, each a fresh Triton
compile and one launch, sequential (one process) vs the harness's parallel workers, and a rerun
served from Triton's on-disk cache (what `layoutfuzz reproduce` and resumed campaigns get).

    python benchmarks/triton_compile_throughput.py [--cases 300] [--sequential-cases 40] [--jobs 15]

Cases that trap the device (``triton.tma`` at negative coordinates, docs/findings.md) would end the
sequential process, so both modes leave them out.

Prints a table; exits 2 with a reason when there is no sm_90 device.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from layoutfuzz.gpu.targets.base import cuda_device_availability  # noqa: E402
from layoutfuzz.harness import registry  # noqa: E402
from layoutfuzz.harness.runner import run_cases, share  # noqa: E402
from layoutfuzz.harness.target import make_case  # noqa: E402

TARGETS = ("triton.convert_layout", "triton.shared_memory", "triton.tma", "triton.wgmma")
SEED = 7  # not a campaign seed: the cases are fresh for Triton's cache


def traps(case) -> bool:
    return case.target == "triton.tma" and min(case.params["coord"]) < 0


def sequential(name: str, cases: int) -> float:
    """Cases per second compiling and running one case after another in this process."""
    target = registry.load(name)
    start, count = time.perf_counter(), 0
    for index in range(cases):
        case = make_case(target, SEED, index)
        if not traps(case):
            target.compare(case, target.expected(case), target.observed(case))
            count += 1
    return count / (time.perf_counter() - start)


def parallel(name: str, cases: int, jobs: int) -> float:
    """Cases per second through the harness's worker pool (worker start-up included)."""
    target = registry.load(name)
    work = [i for i in range(cases) if not traps(make_case(target, SEED, i))]
    done: list = []
    start = time.perf_counter()
    run_cases([share(registry.resolve(name), target, SEED, work)], done.extend, jobs, 300.0)
    assert len(done) == len(work)
    return len(work) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300, help="distinct cases per target, parallel modes")
    parser.add_argument("--sequential-cases", type=int, default=40, help="distinct cases per target, sequential")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1), help="parallel workers")
    parser.add_argument("--targets", default=",".join(TARGETS))
    args = parser.parse_args()
    available = cuda_device_availability(9, ("torch", "triton"))
    if not available.available:
        print(f"triton_compile_throughput: {available.reason}", file=sys.stderr)
        return 2
    print(f"| target | sequential cases/s ({args.sequential_cases} cases) | {args.jobs} workers cases/s ({args.cases} cases)"
          " | ratio | cached rerun cases/s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.targets.split(","):
        with tempfile.TemporaryDirectory() as cold_a, tempfile.TemporaryDirectory() as cold_b:
            os.environ["TRITON_CACHE_DIR"] = cold_a  # each mode starts from an empty compile cache
            seq = sequential(name, args.sequential_cases)
            os.environ["TRITON_CACHE_DIR"] = cold_b
            par = parallel(name, args.cases, args.jobs)
            warm = parallel(name, args.cases, args.jobs)  # same cases, cache filled by the run before
        print(f"| {name} | {seq:.1f} | {par:.1f} | {par / seq:.1f}x | {warm:.1f} | {warm / seq:.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
