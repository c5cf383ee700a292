"""Where one worker's time goes in a batch of a GPU target: microseconds per case for generating the cases, the
oracle, the system under test (for tma.swizzle split into tensor-map encoding and the rest: launch, copy back)
and the comparison, in this process on the current device; the batch methods against one case per call.
With ``--processes 1,8,15`` the same stages run in that many processes at once (as a campaign's workers do, each
also storing its passes in one shared store), to show which stage slows down when they share the CPU and GPU.

    python benchmarks/batch_stages.py [--targets tma.swizzle,wgmma.descriptor] [--batch 4096] [--repeat 3]
    python benchmarks/batch_stages.py --processes 1,8,15 [--targets ...] [--batch 4096] [--repeat 3]

Needs the target's device (an sm_90 GPU); prints a table per target, the best of ``--repeat`` batches after one
to warm up (kernel compilation, the source buffer, torch's allocators); with ``--processes``, the mean over the
processes of their ``--repeat`` batches, and the cases/s of all of them together.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from layoutfuzz.harness import registry  # noqa: E402
from layoutfuzz.harness.target import make_case  # noqa: E402
from layoutfuzz.harness.worker import evaluate  # noqa: E402


def stages(name: str, size: int, offset: int, store: str | None = None) -> dict[str, float]:
    """Seconds of each stage for one batch of ``size`` cases starting at index ``offset`` (seed 0)."""
    target = registry.load(registry.resolve(name))
    encode_s = [0.0]
    if name == "tma.swizzle":  # the tensor-map encoding inside observed_batch, timed on its own
        from layoutfuzz.gpu.targets import tma_swizzle

        runner = tma_swizzle._tma_runner()
        encode = type(runner).encode

        def timed(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return encode(self, *args, **kwargs)
            finally:
                encode_s[0] += time.perf_counter() - start

        runner.encode = timed.__get__(runner)
    out = {}
    start = time.perf_counter()
    cases = [make_case(target, 0, offset + i) for i in range(size)]
    out["generate"] = time.perf_counter() - start
    start = time.perf_counter()
    expected = target.expected_batch(cases)
    out["oracle (expected_batch)"] = time.perf_counter() - start
    start = time.perf_counter()
    observed = target.observed_batch(cases)
    out["system under test (observed_batch)"] = time.perf_counter() - start
    if name == "tma.swizzle":
        out["  of which tensor-map encoding"] = encode_s[0]
    live = [i for i, o in enumerate(observed) if not isinstance(o, BaseException)]
    start = time.perf_counter()
    target.compare_batch([cases[i] for i in live], [expected[i] for i in live], [observed[i] for i in live])
    out["comparison (compare_batch)"] = time.perf_counter() - start
    if store:  # each case as a pass in a campaign's store, as a campaign's worker stores its batch's passes
        from layoutfuzz.harness.stored_passes import store_passes

        start = time.perf_counter()
        answer = {"outcome": "pass", "detail": "", "mismatch_count": 0, "mismatches": [], "signature": "", "duration_s": 1e-5}
        store_passes(store, [(case, target.family(case), answer) for case in cases])
        out["store the passes"] = time.perf_counter() - start
    return out


def worker(name: str, size: int, repeat: int, rank: int, store: str) -> None:
    """One of ``--processes``: a warm-up batch, "ready", and after a line on stdin ``repeat`` batches, as JSON."""
    stages(name, min(size, 256), 10**7 + rank * 1000)
    print("ready", flush=True)
    sys.stdin.readline()
    began = time.perf_counter()
    runs = [stages(name, size, (rank * repeat + r) * size, store) for r in range(repeat)]
    print(json.dumps({"runs": runs, "wall": time.perf_counter() - began}))


def contention(name: str, counts: list[int], size: int, repeat: int) -> None:
    """The stages in 1, 8, 15, ... processes at once: microseconds a case of each, and the cases/s of all."""
    from layoutfuzz.reports.store import Store

    rows = []
    for count in counts:
        with tempfile.TemporaryDirectory() as folder:
            Store(folder).close()
            store = str(Path(folder) / "layoutfuzz.sqlite")
            procs = [subprocess.Popen([sys.executable, __file__, "--worker", f"{name},{size},{repeat},{rank},{store}"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for rank in range(count)]
            for proc in procs:  # every process loaded and warmed up before any starts
                assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", "a process failed to warm up"
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            answers = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        walls = max(a["wall"] for a in answers)
        means = {k: sum(r[k] for a in answers for r in a["runs"]) / (count * repeat) for k in answers[0]["runs"][0]}
        row = {"processes": count} | {k: round(v / size * 1e6, 1) for k, v in means.items()}
        row["cases/s, all processes"] = round(count * repeat * size / walls)
        rows.append(row)
    print(f"\n{name}: microseconds a case of each stage (mean over the processes), batches of {size}, {repeat} each")
    print(pd.DataFrame(rows).to_markdown(index=False))


def one_per_call(name: str, count: int) -> float:
    """Seconds per case of ``evaluate`` (one case per call: the per-case methods)."""
    target = registry.load(registry.resolve(name))
    cases = [make_case(target, 1, i) for i in range(count)]
    evaluate(target, cases[0])
    start = time.perf_counter()
    for case in cases:
        evaluate(target, case)
    return (time.perf_counter() - start) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="tma.swizzle,wgmma.descriptor")
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--processes", default="", help="comma-separated process counts: the stages in that many at once")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        name, size, repeat, rank, store = args.worker.split(",")
        worker(name, int(size), int(repeat), int(rank), store)
        return
    if args.processes:
        for name in args.targets.split(","):
            contention(name, [int(n) for n in args.processes.split(",")], args.batch, args.repeat)
        return
    for name in args.targets.split(","):
        stages(name, min(args.batch, 256), 10**6)  # warm up
        runs = [stages(name, args.batch, r * args.batch) for r in range(args.repeat)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        total = sum(v for k, v in best.items() if not k.startswith("  "))
        single = one_per_call(name, 100)
        rows = [{"stage": k, "us/case": round(v / args.batch * 1e6, 1)} for k, v in best.items()]
        rows.append({"stage": "all stages, batched", "us/case": round(total / args.batch * 1e6, 1)})
        rows.append({"stage": "one case per call (evaluate)", "us/case": round(single * 1e6, 1)})
        print(f"\n{name}: batches of {args.batch}, best of {args.repeat}; batched {args.batch / total:.0f} cases/s on one "
              f"core, {single / (total / args.batch):.1f}x one case per call")
        print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
