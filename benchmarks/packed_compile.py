"""Several cases in one kernel vs one kernel per case: Triton compile time for sm_90a (CPU only).

    python benchmarks/packed_compile.py [--groups 6] [--size 8]

Groups of ``--size`` 2-D ``triton.convert_layout`` cases sharing an element type and warp count
(what one kernel can hold) compile once as ``convert_probe_packed_2d`` and once as one
``convert_probe_2d`` each, every compile from an empty Triton cache. Prints cases per second and
the ratio.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--size", type=int, default=8, help="cases per packed kernel")
    args = parser.parse_args()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="packed-compile-")
    try:
        from layoutfuzz.gpu.gluon_probes import CONVERT_PROBES, convert_probe_packed_2d
        from layoutfuzz.gpu.targets.gluon_kernel import POINTERS, compile_for_sm90, gluon_layout
        from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
    except ImportError as exc:
        print(f"packed_compile: needs triton: {exc}", file=sys.stderr)
        return 2
    from layoutfuzz.harness.target import make_case
    from layoutfuzz.oracles.linear_layout import LinearLayout

    target = TritonConvertLayout()
    groups = collections.defaultdict(list)
    for index in range(5000):
        p = make_case(target, 11, index).params
        if len(p["shape"]) == 2 and len(groups[(p["elem_bits"], p["num_warps"])]) < args.size:
            groups[(p["elem_bits"], p["num_warps"])].append(p)
    full = [(key, g) for key, g in groups.items() if len(g) == args.size][: args.groups]
    packed = single = 0.0
    for (bits, warps), group in full:
        pointer = POINTERS[bits]
        signature = {"src": pointer, "dst": pointer, "tid_a": "*i32", "tid_b": "*i32"}
        layouts = [(gluon_layout(LinearLayout.from_dict(p["a"]), p["shape"]), gluon_layout(LinearLayout.from_dict(p["b"]), p["shape"]))
                   for p in group]
        offsets = [sum(q["shape"][0] * q["shape"][1] for q in group[:i]) for i in range(len(group))]
        start = time.perf_counter()
        for p, (a, b) in zip(group, layouts):
            compile_for_sm90(CONVERT_PROBES[2], signature, {"A": a, "B": b, "S0": p["shape"][0], "S1": p["shape"][1]}, warps)
        single += time.perf_counter() - start
        start = time.perf_counter()
        compile_for_sm90(convert_probe_packed_2d, signature,
                         {"AS": tuple(a for a, _ in layouts), "BS": tuple(b for _, b in layouts),
                          "S0S": tuple(p["shape"][0] for p in group), "S1S": tuple(p["shape"][1] for p in group),
                          "OFFS": tuple(offsets)}, warps)
        packed += time.perf_counter() - start
    cases = len(full) * args.size
    print("| mode | cases | compile s | cases/s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| one kernel per case | {cases} | {single:.2f} | {cases / single:.1f} | 1.0x |")
    print(f"| {args.size} cases per kernel | {cases} | {packed:.2f} | {cases / packed:.1f} | {single / packed:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
