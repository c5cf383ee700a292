"""How a GPU target's batches scale with processes sharing one GPU, without the harness: where the time goes
when 1, 4, 8 or 15 processes each run the target's batch stages in a loop.

    python benchmarks/gpu_scaling.py [--targets tma.swizzle] [--processes 1,4,8,15] [--seconds 10] [--batch 4096]

Each process generates a batch (seed 0, its own range of indices), runs the oracle, the system under test and
the comparison, and adds up each stage's time; the table gives, per process count, the cases/s of all processes
together and each stage's microseconds per case (mean over processes). A stage whose time grows with the number
of processes is where they contend (the GPU, or the host's memory). Needs the target's device.

The timed part starts once every process has warmed up (a first batch: imports, the CUDA context, kernel builds; on
a fresh machine the wgmma probe's NVRTC build takes 41 s), however long that took; the slowest warm-up is its own
column, apart from the steady-state rates.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STAGES = ("generate", "oracle", "system under test", "comparison")
WARM_UP_LIMIT_S = 900.0  # the longest every process together may take to warm up (NVRTC builds on a fresh machine)


def worker(name: str, rank: int, batch: int, seconds: float, ready, out) -> None:  # type: ignore[no-untyped-def]
    from layoutfuzz.harness import registry
    from layoutfuzz.harness.target import make_case

    began = time.perf_counter()
    target = registry.load(registry.resolve(name))
    offset = (rank + 1) * 10**8
    cases = [make_case(target, 0, offset + i) for i in range(min(batch, 256))]  # warm up: compile, buffers
    expected, observed = target.expected_batch(cases), target.observed_batch(cases)
    live = [i for i, o in enumerate(observed) if not isinstance(o, BaseException)]
    target.compare_batch([cases[i] for i in live], [expected[i] for i in live], [observed[i] for i in live])
    warm_up_s = time.perf_counter() - began
    ready.wait()  # every process warmed up: the timed part starts together
    start_at = time.time()
    spent = dict.fromkeys(STAGES, 0.0)
    done, end = 0, start_at + seconds
    while time.time() < end:
        t0 = time.perf_counter()
        cases = [make_case(target, 0, offset + done + i) for i in range(batch)]
        t1 = time.perf_counter()
        expected = target.expected_batch(cases)
        t2 = time.perf_counter()
        observed = target.observed_batch(cases)
        t3 = time.perf_counter()
        live = [i for i, o in enumerate(observed) if not isinstance(o, BaseException)]
        target.compare_batch([cases[i] for i in live], [expected[i] for i in live], [observed[i] for i in live])
        t4 = time.perf_counter()
        for stage, seconds_ in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            spent[stage] += seconds_
        done += batch
    out.put((rank, done, time.time() - start_at, spent, warm_up_s))


def measure(name: str, processes: int, batch: int, seconds: float) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")  # each process its own CUDA context, as the campaign's workers
    out = context.Queue()
    ready = context.Barrier(processes + 1)
    procs = [context.Process(target=worker, args=(name, r, batch, seconds, ready, out)) for r in range(processes)]
    for p in procs:
        p.start()
    ready.wait(timeout=WARM_UP_LIMIT_S)  # a process that died warming up: BrokenBarrierError, not a hang
    results = [out.get(timeout=4 * seconds + 60) for _ in procs]
    for p in procs:
        p.join()
    cases = sum(r[1] for r in results)
    wall = max(r[2] for r in results)
    rate = cases / wall if wall > 0 else 0.0
    row = {"processes": processes, "slowest warm-up s": round(max(r[4] for r in results), 1), "cases/s (all)": round(rate, 1),
           "cases/s per process": round(rate / processes, 1)}
    for stage in STAGES:
        row[f"{stage} us/case"] = round(sum(r[3][stage] for r in results) / cases * 1e6, 1) if cases else math.nan
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="tma.swizzle")
    parser.add_argument("--processes", default="1,4,8,15")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=4096)
    args = parser.parse_args()
    for name in args.targets.split(","):
        rows = [measure(name, int(p), args.batch, args.seconds) for p in args.processes.split(",")]
        base = rows[0]["cases/s (all)"]
        for row in rows:
            row["x one process"] = round(row["cases/s (all)"] / base, 2) if base else math.nan
        print(f"\n{name}: batches of {args.batch}, {args.seconds:.0f} s a run")
        print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
