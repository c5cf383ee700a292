"""How many cases of a ``tma.copy`` campaign exercise each bounds rule of ``oracles.tma_copy`` (CPU only: the cases are
regenerated from the seed, and each rule counted where the oracle says it decides some byte of a tensor map an sm_90
driver accepts).

    python benchmarks/tma_copy_rules.py [--seed 2] [--cases 1000000] [--jobs 2]

Prints one row per rule: cases that exercise it, and the share of all cases.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def classify(span: tuple[int, int, int]) -> Counter:
    """Rule counts of cases [start, stop) of seed ``seed``."""
    from layoutfuzz.generators.source import source_for
    from layoutfuzz.generators.tma_copy import tensor_copy
    from layoutfuzz.gpu.targets.tma_copy import copy_from_params
    from layoutfuzz.oracles.tensor_map import ATOM_SWIZZLES
    from layoutfuzz.oracles.tma_copy import moves

    seed, start, stop = span
    counts: Counter = Counter()
    for i in range(start, stop):
        p = tensor_copy(source_for("tma.copy", seed, i))
        copy = copy_from_params(p)
        m = moves(copy)
        counts[f"{copy.direction}s"] += 1
        if copy.box.swizzle.spec.cuda in ATOM_SWIZZLES:  # refused on sm_90 (the validity oracle's observed rule): no bytes move
            counts[f"{copy.direction}: tensor map refused on sm_90 (atomicity sub-mode)"] += 1
            continue
        if copy.direction == "store":
            if (m.stored & ~m.inside).any():
                counts["store: granule written past the innermost bound"] += 1
                if len(copy.global_dims) == 1:
                    counts["store: ... at rank 1, past the tensor's last byte"] += 1
            if not m.stored.all() and m.stored.any():
                counts["store: some elements not written (outside an outer bound or past the granule)"] += 1
            if not m.stored.any():
                counts["store: nothing written (the box wholly past a bound)"] += 1
        else:
            if (~m.inside).any() and m.inside.any():
                counts["load: zero fill beside data"] += 1
            if min(copy.coords) < 0:
                counts["load: box starting before a bound"] += 1
            if not m.inside.any():
                counts["load: all zero fill"] += 1
            if copy.cluster > 1:
                counts[f"load: multicast, cluster of {copy.cluster}"] += 1
                if copy.multicast != (1 << copy.cluster) - 1:
                    counts["load: multicast to some CTAs of the cluster"] += 1
                if not copy.multicast >> copy.issuer & 1:
                    counts["load: multicast issued by a CTA outside its mask"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    step = -(-args.cases // (args.jobs * 8))
    spans = [(args.seed, s, min(s + step, args.cases)) for s in range(0, args.cases, step)]
    total: Counter = Counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        for part in pool.map(classify, spans):
            total.update(part)
    table = pd.DataFrame([(rule, n, round(100 * n / args.cases, 2)) for rule, n in sorted(total.items())],
                         columns=["rule exercised", "cases", "% of cases"])
    print(f"tma.copy, seed {args.seed}, {args.cases} cases")
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()
