"""Record hardware observations for CI: ``python -m layoutfuzz.gpu.record tma|wgmma|convert COUNT OUT.json [--raw]``.

Runs COUNT seeded cases and writes, per case, its params and the SHA-256 of what the GPU produced
(the TMA window; the table of addresses wgmma read, ``--raw`` keeping the table too; or which
thread held each element before and after a Gluon ``convert_layout``). TMA and wgmma run in one
launch, with the throughput against one case per launch. ``harness/truth/`` keeps the records;
``tests/test_hardware_truth.py`` and ``layoutfuzz selftest`` replay the oracles against them.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from layoutfuzz.generators.source import RandomSource


def throughput(run: Callable[[list], list], items: list, single: int = 50) -> tuple[list, float, float]:
    """(run(items), cases/s with all items in one call, cases/s one item per call), after a warm-up
    (compile, context, allocator)."""
    run(items[:8])
    start = time.perf_counter()
    results = run(items)
    batched = len(items) / (time.perf_counter() - start)
    start = time.perf_counter()
    for item in items[:single]:
        run([item])
    return results, batched, min(single, len(items)) / (time.perf_counter() - start)


def record_tma(count: int) -> dict:
    from cuda.core import Device

    from layoutfuzz.gpu.targets.tma_swizzle import WINDOW, TmaSwizzle
    from layoutfuzz.gpu.tma_driver import TmaRunner
    from layoutfuzz.oracles.tma import box_from_params

    params = [TmaSwizzle().generate(RandomSource(f"layoutfuzz/record/tma/{i}")) for i in range(count)]
    boxes = [box_from_params(p) for p in params]
    runner = TmaRunner()
    results, batched, single = throughput(lambda b: runner.run(b, WINDOW), boxes)
    cases = []
    for p, r in zip(params, results):
        entry = {"params": p}
        if isinstance(r, str):
            entry["refused"] = r
        else:
            entry["sha256"] = hashlib.sha256(r.tobytes()).hexdigest()
        cases.append(entry)
    return {
        "target": "tma.swizzle", "device": Device().name, "window": WINDOW, "cases": cases,
        "throughput": {"batched_cases_per_s": batched, "one_per_launch_cases_per_s": single},
    }


def record_wgmma(count: int, raw: bool = False) -> dict:
    from cuda.core import Device

    from layoutfuzz.gpu.targets.wgmma_descriptor import WgmmaDescriptor
    from layoutfuzz.gpu.wgmma_probe import WgmmaRunner

    params = [WgmmaDescriptor().generate(RandomSource(f"layoutfuzz/record/wgmma/{i}")) for i in range(count)]
    observed, batched, single = throughput(WgmmaRunner().run, params, single=30)
    cases = []
    for p, o in zip(params, observed):
        entry = {"params": p, "sha256": hashlib.sha256(json.dumps(o).encode()).hexdigest()}
        if raw:
            entry["observed"] = o
        cases.append(entry)
    return {
        "target": "wgmma.descriptor", "device": Device().name, "cases": cases,
        "throughput": {"batched_cases_per_s": batched, "one_per_launch_cases_per_s": single},
    }


def record_convert(count: int) -> dict:
    from cuda.core import Device

    from layoutfuzz.generators.case import Case
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    target = TritonConvertLayout()
    cases = []
    for i in range(count):
        params = json.loads(json.dumps(target.generate(RandomSource(f"layoutfuzz/record/convert/{i}"))))
        observed = target.observed(Case(target.name, 0, i, params))
        holders = [observed["holders_a"], observed["holders_b"]]
        cases.append({"params": params, "sha256": hashlib.sha256(json.dumps(holders).encode()).hexdigest(),
                      "data_mismatches": observed["data_mismatches"]})
    return {"target": target.name, "device": Device().name, "cases": cases, "throughput": {}}


def main(argv: list[str]) -> int:
    raw = "--raw" in argv
    argv = [a for a in argv if a != "--raw"]
    if len(argv) != 3 or argv[0] not in ("tma", "wgmma", "convert") or not argv[1].isdigit():
        print("usage: python -m layoutfuzz.gpu.record tma|wgmma|convert COUNT OUT.json [--raw]", file=sys.stderr)
        return 2
    recorders = {"tma": record_tma, "wgmma": lambda n: record_wgmma(n, raw), "convert": record_convert}
    data = recorders[argv[0]](int(argv[1]))
    Path(argv[2]).write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(json.dumps(data["throughput"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
