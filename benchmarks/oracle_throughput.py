"""The batched oracles' figures, cases/s on one core, each against its one-case oracle in the same run: the TMA window
oracle (``oracles.tma_windows.expected_window`` against ``oracles.tma_windows``, with the comparison of observed windows over
arrays) and the wgmma address oracle (``CanonicalLayout.addresses`` against ``oracles.wgmma_addresses``).

    python benchmarks/oracle_throughput.py [--cases 20000] [--batch 4096]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from layoutfuzz.generators.source import source_for  # noqa: E402
from layoutfuzz.generators.tma import device_box  # noqa: E402
from layoutfuzz.generators.wgmma import device_case  # noqa: E402
from layoutfuzz.oracles.tma_windows import (  # noqa: E402
    FILL,
    expected_window,
    expected_windows,
    placements,
    source_words,
    window_mismatches,
)
from layoutfuzz.oracles.wgmma import probe_layout  # noqa: E402
from layoutfuzz.oracles.wgmma_addresses import canonical_addresses  # noqa: E402

WINDOW = 24 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=4096, help="boxes per array call (4096)")
    args = parser.parse_args()
    boxes = [device_box(source_for("tma.swizzle", 0, i)) for i in range(args.cases)]
    words = source_words(boxes)
    batches = [boxes[i:i + args.batch] for i in range(0, len(boxes), args.batch)]

    started = time.perf_counter()
    for box in boxes[:500]:
        expected_window(box, WINDOW)
    one_box = 500 / (time.perf_counter() - started)

    started = time.perf_counter()
    placed = [placements(b) for b in batches]
    arrays = len(boxes) / (time.perf_counter() - started)

    observed = [expected_windows(p, words, WINDOW, FILL) for p in placed]  # what a GPU that agrees would give
    started = time.perf_counter()
    wrong = sum(int(window_mismatches(p, words, o, FILL).sum()) for p, o in zip(placed, observed))
    compared = len(boxes) / (time.perf_counter() - started)
    assert wrong == 0
    both = 1 / (1 / arrays + 1 / compared)
    rows = [
        {"what": "one-box oracle (expected_window)", "cases/s (1 core)": round(one_box), "x one-box": 1.0},
        {"what": "oracle over arrays (placements)", "cases/s (1 core)": round(arrays), "x one-box": round(arrays / one_box, 1)},
        {"what": "comparison over arrays (window_mismatches)", "cases/s (1 core)": round(compared), "x one-box": "-"},
        {"what": "oracle + comparison over arrays", "cases/s (1 core)": round(both), "x one-box": round(both / one_box, 1)},
    ]
    print(f"{len(boxes)} tma.swizzle cases (seed 0), {len(batches)} batches of up to {args.batch}, "
          f"{sum(p.case.size for p in placed) / len(boxes):.0f} granules a case")
    print(pd.DataFrame(rows).to_markdown(index=False))

    layouts = [probe_layout(device_case(source_for("wgmma.descriptor", 0, i))) for i in range(args.cases)]
    started = time.perf_counter()
    for layout in layouts[:500]:
        layout.addresses()
    one_layout = 500 / (time.perf_counter() - started)
    started = time.perf_counter()
    for i in range(0, len(layouts), args.batch):
        canonical_addresses(layouts[i:i + args.batch])
    arrays = len(layouts) / (time.perf_counter() - started)
    print(f"\n{len(layouts)} wgmma.descriptor cases (seed 0), batches of up to {args.batch}")
    print(pd.DataFrame([
        {"what": "one-layout oracle (CanonicalLayout.addresses)", "cases/s (1 core)": round(one_layout), "x one-layout": 1.0},
        {"what": "oracle over arrays (canonical_addresses)", "cases/s (1 core)": round(arrays), "x one-layout": round(arrays / one_layout, 1)},
    ]).to_markdown(index=False))


if __name__ == "__main__":
    main()
