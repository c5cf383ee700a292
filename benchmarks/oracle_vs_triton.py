"""Full-table evaluation: the oracle's vectorised apply_all against Triton's binding, same layouts.

Triton's Python binding evaluates one point per call, so its full table is a loop of ``apply``;
the oracle builds the whole table with XOR doubling in NumPy. Prints seconds per full table and
the ratio (Triton / oracle), measured in the same run.

    python benchmarks/oracle_vs_triton.py [--bits 8 12 16 20] [--layouts 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from layoutfuzz.generators.layouts import distributed_layout  # noqa: E402
from layoutfuzz.generators.source import source_for  # noqa: E402
from layoutfuzz.harness.targets.triton_linear_layout import apply_all, to_triton  # noqa: E402


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, nargs="+", default=[8, 12, 16, 20], help="input bits of each layout")
    parser.add_argument("--layouts", type=int, default=3, help="layouts per size")
    args = parser.parse_args()
    print("| input bits | inputs | oracle s/table | triton s/table | triton / oracle |")
    print("|---:|---:|---:|---:|---:|")
    for bits in args.bits:
        oracle_s = triton_s = 0.0
        for i in range(args.layouts):
            src = source_for("benchmark", bits, i)
            warps = min(2, bits - 6)
            layout = distributed_layout(src, max_out_bits=bits - 2, max_broadcast_bits=2,
                                        fixed_bits={"register": bits - 5 - warps, "lane": 5, "warp": warps})
            tt = to_triton(layout)
            oracle_s += _best(layout.apply_all, 5)
            triton_s += _best(lambda tt=tt, layout=layout: apply_all(tt, layout), 1 if bits >= 16 else 3)
        oracle_s /= args.layouts
        triton_s /= args.layouts
        print(f"| {bits} | {1 << bits} | {oracle_s:.6f} | {triton_s:.4f} | {triton_s / oracle_s:.0f}x |", flush=True)


if __name__ == "__main__":
    main()
