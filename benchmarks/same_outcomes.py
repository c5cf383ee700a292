"""Whether two campaign stores hold the same outcome rows (batch mode vs one case per call).

    python benchmarks/same_outcomes.py DIR_A DIR_B

Compares, case by case, target, seed, index, family, outcome, root-cause signature, bucket, mismatch count and
the case's params; prints the rows compared, the outcome counts, and each difference. Exit 1 on any difference.
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter

QUERY = ("SELECT target, seed, idx, family, outcome, signature, bucket, mismatch_count, case_json FROM outcomes "
         "ORDER BY target, seed, idx")


def rows(directory: str) -> list[tuple]:
    return sqlite3.connect(f"{directory}/layoutfuzz.sqlite").execute(QUERY).fetchall()


def main() -> int:
    a, b = rows(sys.argv[1]), rows(sys.argv[2])
    differ = [(x, y) for x, y in zip(a, b) if x != y]
    print(f"{len(a)} and {len(b)} rows; outcomes {dict(Counter(r[4] for r in a))}; {len(differ)} differ")
    for x, y in differ[:20]:
        print(f"  {x[:8]}\n  {y[:8]}")
    return 0 if len(a) == len(b) and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
